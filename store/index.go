package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Record states: what the URL record itself says about a URL, in order of
// precedence. A URL in none of them is active; the scheduler then tells
// whether it is given up, due or scheduled (see the README's URL states).
const (
	StatePaused     = "paused"     // paused by the operator
	StateGone       = "gone"       // 410, or 404 for gone-after: not fetched until seeded again or resumed
	StateDisallowed = "disallowed" // robots.txt disallows it (or is unreachable)
	StateFailed     = "failed"     // its last fetch attempt failed
)

// recordStates lists the record states.
var recordStates = []string{StatePaused, StateGone, StateDisallowed, StateFailed}

// RecordState is the state the record gives u: paused, gone, disallowed,
// failed or "" (active).
func RecordState(u *URL) string {
	switch {
	case u.Paused:
		return StatePaused
	case u.Gone:
		return StateGone
	case u.Disallowed:
		return StateDisallowed
	case u.LastErrKind != "":
		return StateFailed
	}
	return ""
}

// Filter index kinds (first byte of an ix_filter key).
const (
	ixHost  = 'h'
	ixMode  = 'm'
	ixState = 's'
)

// Sort orders with an index, besides the URL itself (the primary key) and
// the host (the host filter index).
const (
	SortURL        = "url"
	SortHost       = "host"
	SortRate       = "rate"
	SortNextDue    = "next_due"
	SortChanges    = "changes"
	SortLastChange = "last_change"
	SortErrors     = "errors"
	SortWeight     = "weight"
)

// sortIDs maps an indexed numeric sort to its key prefix; sortFields reads
// the value from a record, order-preserving as a uint64.
var sortIDs = map[string]byte{SortRate: 'r', SortNextDue: 'n', SortChanges: 'c', SortLastChange: 'l', SortErrors: 'e', SortWeight: 'w'}

// Sorts lists every sort order ListURLs accepts.
var Sorts = []string{SortURL, SortHost, SortRate, SortNextDue, SortChanges, SortLastChange, SortErrors, SortWeight}

const numSorts = 6

var sortOrder = [numSorts]string{SortRate, SortNextDue, SortChanges, SortLastChange, SortErrors, SortWeight}

// ixVals are the indexed values of one record; comparing two tells which
// index keys a write must move.
type ixVals struct {
	host, mode, state string
	sorts             [numSorts]uint64
}

func ixOf(u *URL) ixVals {
	v := ixVals{host: u.Host, mode: indexedMode(u.Mode), state: RecordState(u)}
	v.sorts = [numSorts]uint64{orderedFloat(u.Rate), orderedTime(u.NextDue), uint64(max(u.Changes, 0)), orderedTime(u.LastChange), uint64(max(u.Errors, 0)), orderedFloat(u.Weight)}
	return v
}

// indexedMode is the mode a URL's mode filter key names: none for the
// default mode (freshness, or "" in old records), which nearly every URL
// has, so that index is not a key per URL (20 bytes and bbolt's 16 of
// each); a listing by the default mode reads the records instead.
func indexedMode(mode string) string {
	if mode == "freshness" {
		return ""
	}
	return mode
}

// orderedFloat maps a float64 to a uint64 with the same order.
func orderedFloat(f float64) uint64 {
	if math.IsNaN(f) {
		f = 0
	}
	b := math.Float64bits(f)
	if b&(1<<63) != 0 {
		return ^b
	}
	return b | 1<<63
}

// orderedTime maps a time to a uint64 with the same order; the zero time
// (never) sorts first.
func orderedTime(t time.Time) uint64 {
	if t.IsZero() {
		return 0
	}
	return uint64(t.UnixNano()) ^ 1<<63
}

// appendOrdered appends v in an order-preserving variable-length form:
// the number of its significant bytes, then those bytes, big-endian. A
// smaller number has fewer bytes or, with as many, smaller ones, so the
// forms sort as the numbers do, and a count of 0 or an id below 2^24 takes
// one to four bytes instead of eight.
func appendOrdered(b []byte, v uint64) []byte {
	n := (bits.Len64(v) + 7) / 8
	b = append(b, byte(n))
	for i := n - 1; i >= 0; i-- {
		b = append(b, byte(v>>(8*i)))
	}
	return b
}

// readOrdered reads a number written by appendOrdered from the start of
// b, and returns the bytes after it.
func readOrdered(b []byte) (v uint64, rest []byte, ok bool) {
	if len(b) == 0 || b[0] > 8 || len(b) < 1+int(b[0]) {
		return 0, nil, false
	}
	n := int(b[0])
	if n > 0 && b[1] == 0 {
		return 0, nil, false // not the shortest form
	}
	for _, c := range b[1 : 1+n] {
		v = v<<8 | uint64(c)
	}
	return v, b[1+n:], true
}

// idKey is the url_ids key of id.
func idKey(id uint64) []byte { return appendOrdered(make([]byte, 0, 9), id) }

// filterKey is an ix_filter key: kind, value, 0, and the URL's id (the
// url_ids bucket) rather than the URL itself, which keeps a host or mode
// key at about 20 bytes instead of 100. A filter's URLs are listed in the
// order they were added.
func filterKey(kind byte, value string, id uint64) []byte {
	k := make([]byte, 0, 11+len(value))
	k = append(k, kind)
	k = append(k, value...)
	k = append(k, 0)
	return appendOrdered(k, id)
}

func filterPrefix(kind byte, value string) []byte {
	k := append([]byte{kind}, value...)
	return append(k, 0)
}

// sortKey is an ix_sort key: sort id, value, URL id, the numbers in
// appendOrdered form. The URL is named by its id (the url_ids bucket)
// rather than spelled out, and small values (a count of 0, the zero time)
// take a byte: six keys a URL at 6 to 14 bytes each instead of 9 plus the
// URL. URLs with equal values are listed in the order they were added.
func sortKey(sort byte, v, id uint64) []byte {
	k := make([]byte, 0, 19)
	k = append(k, sort)
	k = appendOrdered(k, v)
	return appendOrdered(k, id)
}

// urlOfFilterKey returns the URL of an ix_filter key, through ids (the
// url_ids bucket).
func urlOfFilterKey(ids *bolt.Bucket, k []byte) []byte {
	i := bytes.IndexByte(k, 0)
	if i < 1 {
		return nil
	}
	return urlOfID(ids, k[i+1:])
}

// urlOfSortKey returns the URL of an ix_sort key, through ids.
func urlOfSortKey(ids *bolt.Bucket, k []byte) []byte {
	if len(k) < 1 {
		return nil
	}
	_, rest, ok := readOrdered(k[1:])
	if !ok {
		return nil
	}
	return urlOfID(ids, rest)
}

// urlOfID returns the URL whose id is the whole of b (appendOrdered).
func urlOfID(ids *bolt.Bucket, b []byte) []byte {
	if _, rest, ok := readOrdered(b); !ok || len(rest) != 0 {
		return nil
	}
	return ids.Get(b)
}

// ixWriter writes index keys: at once, or (batched) at flush, sorted.
// bbolt splits pages only at commit, so within one transaction a leaf
// takes every key inserted into it, and each insert moves the keys after
// it: a batch of 100 000 URLs writing their six sort keys in URL order
// moves each other's keys quadratically. In key order, each insert lands
// at the end of what was inserted before.
type ixWriter struct {
	tx      *bolt.Tx
	batched bool
	ops     []ixOp
}

type ixOp struct {
	bucket []byte
	key    []byte
	del    bool
	seq    int // the order of the write: of two writes to a key, the later wins
}

func (w *ixWriter) put(bucket, key []byte) error {
	if w.batched {
		w.ops = append(w.ops, ixOp{bucket: bucket, key: key, seq: len(w.ops)})
		return nil
	}
	return w.tx.Bucket(bucket).Put(key, nil)
}

func (w *ixWriter) del(bucket, key []byte) error {
	if w.batched {
		w.ops = append(w.ops, ixOp{bucket: bucket, key: key, del: true, seq: len(w.ops)})
		return nil
	}
	return w.tx.Bucket(bucket).Delete(key)
}

// flush applies the batched writes in key order; writes to one key keep
// their order (seq), so the last one wins as it would have. (An unstable
// sort with seq is O(n log n); the stable one merges in O(n log² n).)
func (w *ixWriter) flush() error {
	slices.SortFunc(w.ops, func(a, b ixOp) int {
		if c := bytes.Compare(a.bucket, b.bucket); c != 0 {
			return c
		}
		if c := bytes.Compare(a.key, b.key); c != 0 {
			return c
		}
		return a.seq - b.seq
	})
	for _, op := range w.ops {
		b := w.tx.Bucket(op.bucket)
		var err error
		if op.del {
			err = b.Delete(op.key)
		} else {
			err = b.Put(op.key, nil)
		}
		if err != nil {
			return err
		}
	}
	w.ops = w.ops[:0]
	return nil
}

// index moves the index keys of url, whose id is id, from old (nil: none)
// to cur (nil: none).
func index(tx *bolt.Tx, id uint64, old, cur *ixVals) error {
	return indexTo(&ixWriter{tx: tx}, id, old, cur)
}

func indexTo(w *ixWriter, id uint64, old, cur *ixVals) error {
	f, s := bucketIxFilter, bucketIxSort
	hasOld, hasCur := old != nil, cur != nil
	var was, now ixVals
	if hasOld {
		was = *old
	}
	if hasCur {
		now = *cur
	}
	filters := [...]struct {
		kind     byte
		was, now string
	}{{ixHost, was.host, now.host}, {ixMode, was.mode, now.mode}, {ixState, was.state, now.state}}
	for _, fl := range filters {
		if hasOld && hasCur && fl.was == fl.now {
			continue
		}
		if hasOld && fl.was != "" {
			if err := w.del(f, filterKey(fl.kind, fl.was, id)); err != nil {
				return err
			}
		}
		if hasCur && fl.now != "" {
			if err := w.put(f, filterKey(fl.kind, fl.now, id)); err != nil {
				return err
			}
		}
	}
	for i, name := range sortOrder {
		sid := sortIDs[name]
		if hasOld && hasCur && was.sorts[i] == now.sorts[i] {
			continue
		}
		if hasOld {
			if err := w.del(s, sortKey(sid, was.sorts[i], id)); err != nil {
				return err
			}
		}
		if hasCur {
			if err := w.put(s, sortKey(sid, now.sorts[i], id)); err != nil {
				return err
			}
		}
	}
	return nil
}

// putURL writes u and moves its index keys; old is the record it replaces
// (nil if new). A new URL gets the next id, and is counted unless count
// is false (the caller counts a batch at once). w, when not nil, takes
// the index writes (batched).
func putURL(tx *bolt.Tx, old *URL, u URL, count bool, w ...*ixWriter) error {
	iw := &ixWriter{tx: tx}
	if len(w) > 0 {
		iw = w[0]
	}
	urls := tx.Bucket(bucketURLs)
	key := []byte(u.URL)
	cur := ixOf(&u)
	var was *ixVals
	var m recMeta
	if old != nil {
		v := ixOf(old)
		was = &v
		m = metaOf(urls.Get(key))
	}
	if m.id == 0 {
		// A new URL, or (in a store indexed before ids) one without.
		id, err := newURLID(tx, key)
		if err != nil {
			return fmt.Errorf("index %s: %w", u.URL, err)
		}
		m.id, was = id, nil
	} else {
		// The texts key is aliased from the page being rewritten.
		m.content = bytes.Clone(m.content)
	}
	if err := indexTo(iw, m.id, was, &cur); err != nil {
		return fmt.Errorf("index %s: %w", u.URL, err)
	}
	if old == nil && count {
		if err := addCount(tx, 1); err != nil {
			return err
		}
	}
	return urls.Put(key, appendURL(make([]byte, 0, 256), &u, m))
}

// newURLID assigns the next id to the URL key and records it in url_ids.
func newURLID(tx *bolt.Tx, key []byte) (uint64, error) {
	ids := tx.Bucket(bucketURLIDs)
	id, err := ids.NextSequence()
	if err != nil {
		return 0, err
	}
	return id, ids.Put(idKey(id), key)
}

// deleteURL removes the record of old and its index keys, and returns the
// record's texts key (nil: none) for the caller to keep or release.
func deleteURL(tx *bolt.Tx, old *URL) ([]byte, error) {
	urls := tx.Bucket(bucketURLs)
	key := []byte(old.URL)
	m := metaOf(urls.Get(key))
	content := bytes.Clone(m.content)
	if m.id != 0 {
		v := ixOf(old)
		if err := index(tx, m.id, &v, nil); err != nil {
			return nil, fmt.Errorf("unindex %s: %w", old.URL, err)
		}
		if err := tx.Bucket(bucketURLIDs).Delete(idKey(m.id)); err != nil {
			return nil, err
		}
	}
	if err := addCount(tx, -1); err != nil {
		return nil, err
	}
	return content, urls.Delete(key)
}

func changeIndexKey(url string, seq uint64) []byte { return versionKey(url, seq) }

// metaIndexed marks a complete index build in the meta bucket; metaCount
// is the number of URL records, kept with the indexes so a listing's total
// costs no walk over a million keys.
var (
	metaIndexed = []byte("indexed")
	metaCount   = []byte("url_count")
)

func addCount(tx *bolt.Tx, d int64) error {
	m := tx.Bucket(bucketMeta)
	n := int64(0)
	if v := m.Get(metaCount); len(v) == 8 {
		n = int64(binary.BigEndian.Uint64(v))
	}
	return m.Put(metaCount, u64(uint64(max(n+d, 0))))
}

// countTx is the number of URL records (from the counter when the indexes
// are built, else by walking the bucket).
func countTx(tx *bolt.Tx) int {
	if indexedTx(tx) {
		if v := tx.Bucket(bucketMeta).Get(metaCount); len(v) == 8 {
			return int(binary.BigEndian.Uint64(v))
		}
	}
	return tx.Bucket(bucketURLs).Stats().KeyN
}

// indexVersion is bumped when the index layout changes: a store built with
// another version is re-indexed on open. Version 2 names URLs in ix_sort
// by an id (url_ids) and rewrites every URL record in binary with its id:
// the one-time migration of a store written by an older binary. Version 3
// names URLs in ix_filter by id too.
const indexVersion = 3

// ensureIndexes builds the secondary indexes of a store written before
// they existed (or whose build was interrupted), in chunks of short
// transactions so a million URLs do not make one huge commit.
func (db *DB) ensureIndexes() error {
	var done bool
	if err := db.view(func(tx *bolt.Tx) error {
		done = indexedTx(tx)
		return nil
	}); err != nil {
		return err
	}
	if done {
		return nil
	}
	err := db.update(func(tx *bolt.Tx) error {
		for _, name := range append([][]byte{bucketURLIDs}, indexBuckets...) {
			if err := tx.DeleteBucket(name); err != nil && !errors.Is(err, berrors.ErrBucketNotFound) {
				return err
			}
			if _, err := tx.CreateBucket(name); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketMeta).Put(metaCount, u64(0))
	})
	if err != nil {
		return fmt.Errorf("reset indexes: %w", err)
	}
	if err := db.reindexURLs(); err != nil {
		return fmt.Errorf("index URLs: %w", err)
	}
	if err := db.chunked(bucketChanges, func(tx *bolt.Tx, k, v []byte) error {
		var ch Change
		if err := json.Unmarshal(v, &ch); err != nil {
			return fmt.Errorf("decode change %x: %w", k, err)
		}
		return tx.Bucket(bucketIxChanges).Put(changeIndexKey(ch.URL, ch.Seq), nil)
	}); err != nil {
		return fmt.Errorf("index the change log: %w", err)
	}
	return db.update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put(metaIndexed, u64(indexVersion))
	})
}

// reindexURLs gives every URL record an id and its index keys, and
// rewrites it in binary, in chunks of short transactions (a cursor is not
// moved over a bucket it writes: each chunk is read, then written).
func (db *DB) reindexURLs() error {
	var after []byte
	for {
		n := 0
		err := db.update(func(tx *bolt.Tx) error {
			urls := tx.Bucket(bucketURLs)
			c := urls.Cursor()
			k, v := c.First()
			if after != nil {
				k, v = c.Seek(after)
				if k != nil && bytes.Equal(k, after) {
					k, v = c.Next()
				}
			}
			type rec struct {
				u       URL
				content []byte
			}
			var recs []rec
			for ; k != nil && len(recs) < scanChunk; k, v = c.Next() {
				var u URL
				if err := decodeURL(k, v, &u); err != nil {
					return fmt.Errorf("%w: decode url %q: %w", ErrCorrupt, k, err)
				}
				recs = append(recs, rec{u, bytes.Clone(metaOf(v).content)})
				after = append(after[:0], k...)
			}
			n = len(recs)
			for _, r := range recs {
				key := []byte(r.u.URL)
				id, err := newURLID(tx, key)
				if err != nil {
					return err
				}
				cur := ixOf(&r.u)
				if err := index(tx, id, nil, &cur); err != nil {
					return err
				}
				if err := addCount(tx, 1); err != nil {
					return err
				}
				if err := urls.Put(key, appendURL(nil, &r.u, recMeta{id: id, content: r.content})); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		if n < scanChunk {
			return nil
		}
	}
}

// chunked calls fn for every key of bucket in write transactions of
// scanChunk keys each. fn must not modify bucket itself.
func (db *DB) chunked(bucket []byte, fn func(tx *bolt.Tx, k, v []byte) error) error {
	var after []byte
	for {
		n := 0
		err := db.update(func(tx *bolt.Tx) error {
			c := tx.Bucket(bucket).Cursor()
			k, v := c.First()
			if after != nil {
				k, v = c.Seek(after)
				if k != nil && bytes.Equal(k, after) {
					k, v = c.Next()
				}
			}
			for ; k != nil && n < scanChunk; k, v = c.Next() {
				if err := fn(tx, k, v); err != nil {
					return err
				}
				after = append(after[:0], k...)
				n++
			}
			return nil
		})
		if err != nil {
			return err
		}
		if n < scanChunk {
			return nil
		}
	}
}

// indexedTx reports whether the secondary indexes are complete (false only
// for a store opened read-only before a writable open built them).
func indexedTx(tx *bolt.Tx) bool {
	m := tx.Bucket(bucketMeta)
	if m == nil {
		return false
	}
	v := m.Get(metaIndexed)
	return len(v) == 8 && binary.BigEndian.Uint64(v) == indexVersion
}

// errNotIndexed is returned by queries that need the indexes on a store
// that has none yet.
var errNotIndexed = errors.New("the store has no URL indexes yet: open it once with a coordinator or a writable command (freshcrawl seed, urls without a running coordinator) to build them")
