package store

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Raw is the raw response body of a URL's latest version, kept apart from
// its extracted text for URLs seeded with keep_raw.
type Raw struct {
	ContentType string    `json:"content_type,omitempty"`
	FetchedAt   time.Time `json:"fetched_at"`
	// Hash is the hash of the extracted text this body gave.
	Hash string `json:"hash,omitempty"`
	// Size is the body's full length; Truncated says Body holds only the
	// first bytes (the worker caps what it sends).
	Size      int64  `json:"size"`
	Truncated bool   `json:"truncated,omitempty"`
	Body      []byte `json:"body,omitempty"`
}

// rawEnvelope stores a Raw as a 4-byte header length, the header (Raw
// without its body, JSON) and the body as it is, so a large body is not
// base64-inflated in the file.
func rawEnvelope(r Raw) ([]byte, error) {
	body := r.Body
	r.Body = nil
	hdr, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, 4+len(hdr)+len(body))
	out = binary.BigEndian.AppendUint32(out, uint32(len(hdr)))
	out = append(out, hdr...)
	return append(out, body...), nil
}

func openRawEnvelope(b []byte, withBody bool) (Raw, error) {
	var r Raw
	if len(b) < 4 {
		return r, errors.New("raw copy: short record")
	}
	n := binary.BigEndian.Uint32(b)
	if uint64(n) > uint64(len(b)-4) {
		return r, errors.New("raw copy: header longer than the record")
	}
	if err := json.Unmarshal(b[4:4+n], &r); err != nil {
		return r, fmt.Errorf("raw copy header: %w", err)
	}
	if withBody {
		r.Body = append([]byte(nil), b[4+n:]...)
	}
	return r, nil
}

// SetRaw stores the raw body of url's latest version.
func (t *Tx) SetRaw(url string, r Raw) error {
	b, err := rawEnvelope(r)
	if err != nil {
		return fmt.Errorf("encode raw copy of %s: %w", url, err)
	}
	return t.tx.Bucket(bucketRaw).Put([]byte(url), b)
}

// DropRaw deletes the raw body stored for url, if any.
func (t *Tx) DropRaw(url string) error { return t.tx.Bucket(bucketRaw).Delete([]byte(url)) }

// HasRaw reports whether a raw body is stored for url.
func (t *Tx) HasRaw(url string) bool { return t.tx.Bucket(bucketRaw).Get([]byte(url)) != nil }

// Raw returns the raw body stored for url (found=false if none); withBody
// false reads only its description.
func (db *DB) Raw(url string, withBody bool) (r Raw, found bool, err error) {
	err = db.view(func(tx *bolt.Tx) error {
		b := get(tx, bucketRaw, []byte(url))
		if b == nil {
			return nil
		}
		found = true
		r, err = openRawEnvelope(b, withBody)
		return err
	})
	return r, found, err
}

// Fetch is one fetch of a URL as its fetch history keeps it.
type Fetch struct {
	At       time.Time     `json:"at"`
	Duration time.Duration `json:"duration"`
	Status   int           `json:"status,omitempty"`
	// Outcome is ok, not_modified, changed or error.
	Outcome string `json:"outcome"`
	ErrKind string `json:"err_kind,omitempty"`
	Bytes   int64  `json:"bytes,omitempty"`
}

// Fetch outcomes.
const (
	OutcomeOK          = "ok"
	OutcomeNotModified = "not_modified"
	OutcomeChanged     = "changed"
	OutcomeError       = "error"
)

// outcomeCodes are the outcomes' one-byte codes in a fetch history. They
// are on disk, so each is written out: an outcome inserted in the list
// would take an index another already has, and not compile.
var outcomeCodes = [...]string{0: OutcomeOK, 1: OutcomeNotModified, 2: OutcomeChanged, 3: OutcomeError}

// fetchLogLen is how many fetches the history of a URL keeps.
const fetchLogLen = 20

// encodeFetchLog writes fetches compactly (about 20 bytes each): one value
// per URL, rewritten by each fold, costs one key per fetch instead of a
// key and a delete.
func encodeFetchLog(fs []Fetch) []byte {
	b := []byte{1}
	for _, f := range fs {
		b = appendFetch(b, f)
	}
	return b
}

// appendFetch appends one fetch of a history in encodeFetchLog's form.
func appendFetch(b []byte, f Fetch) []byte {
	b = binary.AppendVarint(b, f.At.UnixNano())
	b = binary.AppendUvarint(b, uint64(max(f.Duration, 0)))
	b = binary.AppendUvarint(b, uint64(max(f.Status, 0)))
	code := byte(0)
	for i, o := range outcomeCodes {
		if o == f.Outcome {
			code = byte(i)
		}
	}
	b = append(b, code)
	b = binary.AppendUvarint(b, uint64(max(f.Bytes, 0)))
	b = binary.AppendUvarint(b, uint64(len(f.ErrKind)))
	return append(b, f.ErrKind...)
}

// fetchLogTail returns the last n encoded fetches of the history b
// (without the leading encoding byte), and false if b is not a readable
// history. It reads the lengths only: a fold appends to a history
// without decoding it.
func fetchLogTail(b []byte, n int) ([]byte, bool) {
	if len(b) == 0 {
		return nil, true
	}
	if b[0] != 1 {
		return nil, false
	}
	b = b[1:]
	var buf [fetchLogLen + 1]int
	starts := buf[:0] // where each fetch begins
	for off := 0; off < len(b); {
		starts = append(starts, off)
		size, ok := fetchSize(b[off:])
		if !ok {
			return nil, false
		}
		off += size
	}
	switch {
	case len(starts) <= n:
		return b, true
	case n <= 0:
		return nil, true
	}
	return b[starts[len(starts)-n]:], true
}

// fetchSize is the length of the encoded fetch at the start of b.
func fetchSize(b []byte) (int, bool) {
	_, off := binary.Varint(b) // the time
	if off <= 0 {
		return 0, false
	}
	uv := func() (uint64, bool) {
		v, k := binary.Uvarint(b[off:])
		if k <= 0 {
			return 0, false
		}
		off += k
		return v, true
	}
	for range 2 { // duration, status
		if _, ok := uv(); !ok {
			return 0, false
		}
	}
	if off >= len(b) || int(b[off]) >= len(outcomeCodes) {
		return 0, false
	}
	off++
	if _, ok := uv(); !ok { // bytes
		return 0, false
	}
	kl, ok := uv()
	if !ok || kl > uint64(len(b)-off) {
		return 0, false
	}
	return off + int(kl), true
}

func decodeFetchLog(b []byte) ([]Fetch, error) {
	if len(b) == 0 {
		return nil, nil
	}
	if b[0] != 1 {
		return nil, fmt.Errorf("fetch history: unknown encoding %d", b[0])
	}
	b = b[1:]
	bad := errors.New("fetch history: truncated record")
	uv := func() (uint64, error) {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return 0, bad
		}
		b = b[n:]
		return v, nil
	}
	var out []Fetch
	for len(b) > 0 {
		at, n := binary.Varint(b)
		if n <= 0 {
			return nil, bad
		}
		b = b[n:]
		var f Fetch
		f.At = time.Unix(0, at)
		d, err := uv()
		if err != nil {
			return nil, err
		}
		st, err := uv()
		if err != nil {
			return nil, err
		}
		if len(b) == 0 {
			return nil, bad
		}
		code := int(b[0])
		b = b[1:]
		if code >= len(outcomeCodes) {
			return nil, fmt.Errorf("fetch history: unknown outcome %d", code)
		}
		size, err := uv()
		if err != nil {
			return nil, err
		}
		kl, err := uv()
		if err != nil {
			return nil, err
		}
		if kl > uint64(len(b)) {
			return nil, bad
		}
		f.Duration, f.Status, f.Outcome, f.Bytes, f.ErrKind = time.Duration(d), int(st), outcomeCodes[code], int64(size), string(b[:kl])
		b = b[kl:]
		out = append(out, f)
	}
	return out, nil
}

// AddFetch appends f to url's fetch history, keeping the last fetchLogLen.
// An unreadable history is started afresh rather than failing the fold.
func (t *Tx) AddFetch(url string, f Fetch) error {
	b := t.tx.Bucket(bucketFetchLog)
	key := []byte(url)
	kept, _ := fetchLogTail(b.Get(key), fetchLogLen-1)
	v := make([]byte, 0, 1+len(kept)+32+len(f.ErrKind))
	v = append(append(v, 1), kept...)
	return b.Put(key, appendFetch(v, f))
}

// FetchLog returns url's last fetches, oldest first.
func (db *DB) FetchLog(url string) ([]Fetch, error) {
	var out []Fetch
	err := db.view(func(tx *bolt.Tx) error {
		var err error
		out, err = decodeFetchLog(get(tx, bucketFetchLog, []byte(url)))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("fetch history of %s: %w", url, err)
	}
	return out, nil
}

// ChangesOf returns up to limit change-log entries of url with Seq > after,
// through the change log's URL index.
func (db *DB) ChangesOf(url string, after uint64, limit int) ([]Change, error) {
	var out []Change
	if after == ^uint64(0) {
		return nil, nil
	}
	err := db.view(func(tx *bolt.Tx) error {
		if !indexedTx(tx) {
			return errNotIndexed
		}
		c := tx.Bucket(bucketIxChanges).Cursor()
		log := tx.Bucket(bucketChanges)
		p := prefixOf(url)
		for k, _ := c.Seek(changeIndexKey(url, after+1)); k != nil && hasPrefix(k, p) && len(out) < limit; k, _ = c.Next() {
			if len(k) != len(p)+8 {
				continue
			}
			seq := k[len(p):]
			var ch Change
			found, err := getJSON(log, seq, &ch)
			if err != nil {
				return err
			}
			if found {
				out = append(out, ch)
			}
		}
		return nil
	})
	return out, err
}

// Deleted returns the record of a deleted URL whose history is kept.
func (db *DB) Deleted(url string) (URL, error) {
	var u URL
	err := db.view(func(tx *bolt.Tx) error {
		raw := get(tx, bucketDeleted, []byte(url))
		if raw == nil {
			return fmt.Errorf("deleted url %s: %w", url, ErrNotFound)
		}
		if err := decodeURL([]byte(url), raw, &u); err != nil {
			return fmt.Errorf("decode deleted url %s: %w", url, err)
		}
		return nil
	})
	return u, err
}

// get reads key from bucket name, or nil when the bucket does not exist (a
// store from before the bucket was added, opened read-only).
func get(tx *bolt.Tx, name, key []byte) []byte {
	b := tx.Bucket(name)
	if b == nil {
		return nil
	}
	return b.Get(key)
}

// LastChangesOf returns url's newest n change-log entries, newest first.
func (db *DB) LastChangesOf(url string, n int) ([]Change, error) {
	var out []Change
	err := db.view(func(tx *bolt.Tx) error {
		if !indexedTx(tx) {
			return errNotIndexed
		}
		log := tx.Bucket(bucketChanges)
		p := prefixOf(url)
		return scan(tx.Bucket(bucketIxChanges), p, nil, true, func(k []byte) bool {
			if len(k) != len(p)+8 {
				return true
			}
			var ch Change
			if found, err := getJSON(log, k[len(p):], &ch); err == nil && found {
				out = append(out, ch)
			}
			return len(out) < n
		})
	})
	return out, err
}
