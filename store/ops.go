package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/freshcrawl/freshcrawl/internal/failpoint"
)

// Upsert inserts new URL records and updates the seed fields (weight,
// selector, mode, ignore rules, period, polls) of known ones, in one
// transaction, leaving their history alone. It returns how many were added.
//
// The records are written in URL order (a stable sort, so of two records
// for one URL the later still wins): bbolt then touches each page once,
// which is what makes a batch of 100 000 seeds cheap.
func (db *DB) Upsert(recs []URL) (added int, err error) {
	sorted := slices.Clone(recs)
	slices.SortStableFunc(sorted, func(a, b URL) int { return strings.Compare(a.URL, b.URL) })
	err = db.update(func(tx *bolt.Tx) error {
		added = 0
		b := tx.Bucket(bucketURLs)
		// New URLs take ids in order, and start with the same sort values
		// (no rate, no changes): their url_ids and ix_sort keys are
		// appended, and full pages keep those trees small.
		tx.Bucket(bucketURLIDs).FillPercent = 1
		tx.Bucket(bucketIxSort).FillPercent = 0.9
		iw := &ixWriter{tx: tx, batched: true, ops: make([]ixOp, 0, 8*len(sorted))}
		for _, r := range sorted {
			key := []byte(r.URL)
			var cur URL
			found, err := getJSON(b, key, &cur)
			if err != nil {
				return err
			}
			var prev *URL
			if !found {
				added++
				if r.AddedAt.IsZero() {
					r.AddedAt = time.Now()
				}
				cur = r
				// A deleted URL added again starts over; its history stays.
				if err := dropDeleted(tx, key); err != nil {
					return err
				}
			} else {
				old := cur
				prev = &old
				cur.Weight, cur.Selector, cur.Mode, cur.Ignore = r.Weight, r.Selector, r.Mode, r.Ignore
				cur.Period, cur.Polls, cur.KeepRaw, cur.Webhook = r.Period, r.Polls, r.KeepRaw, r.Webhook
				// Seeded again: a gone URL is wanted after all, and its
				// failures start afresh.
				cur.Gone, cur.ErrStreak, cur.NotFoundSince = false, 0, time.Time{}
			}
			if err := putURL(tx, prev, cur, false, iw); err != nil {
				return err
			}
		}
		if err := iw.flush(); err != nil {
			return err
		}
		return addCount(tx, int64(added))
	})
	if err != nil {
		return 0, fmt.Errorf("upsert %d URLs: %w", len(recs), err)
	}
	return added, nil
}

// Get returns the record of url.
func (db *DB) Get(url string) (URL, error) {
	var u URL
	err := db.view(func(tx *bolt.Tx) error {
		found, err := getJSON(tx.Bucket(bucketURLs), []byte(url), &u)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("url %s: %w", url, ErrNotFound)
		}
		return nil
	})
	return u, err
}

// Content returns the latest extracted text of url, live or deleted with
// its history kept ("" if none yet).
func (db *DB) Content(url string) (string, error) {
	var text string
	err := db.view(func(tx *bolt.Tx) error {
		rec := tx.Bucket(bucketURLs).Get([]byte(url))
		if rec == nil {
			rec = tx.Bucket(bucketDeleted).Get([]byte(url))
		}
		text = string(textOf(tx, []byte(url), rec))
		return nil
	})
	return text, err
}

// scanChunk is how many records one read transaction visits: short
// transactions keep a long scan from pinning old pages (bbolt grows the
// file while a reader holds them).
const scanChunk = 10000

// ForEach calls fn for every URL record in key order, in chunks of short
// read transactions; fn runs outside them, so it may read the store.
func (db *DB) ForEach(fn func(URL) error) error {
	var after []byte
	for {
		batch, err := db.readChunk(after, nil, decodeURL)
		if err != nil {
			return err
		}
		for _, u := range batch {
			if err := fn(u); err != nil {
				return err
			}
		}
		if len(batch) < scanChunk {
			return nil
		}
		after = []byte(batch[len(batch)-1].URL)
	}
}

// readChunk appends to batch up to scanChunk URL records in key order,
// from the first key after after (from the first key when after is nil),
// in one read transaction.
func (db *DB) readChunk(after []byte, batch []URL, decode func(key, v []byte, u *URL) error) ([]URL, error) {
	err := db.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketURLs).Cursor()
		var k, v []byte
		if after == nil {
			k, v = c.First()
		} else {
			k, v = c.Seek(after)
			if k != nil && bytes.Equal(k, after) {
				k, v = c.Next()
			}
		}
		for ; k != nil && len(batch) < scanChunk; k, v = c.Next() {
			batch = append(batch, URL{})
			if err := decode(k, v, &batch[len(batch)-1]); err != nil {
				return fmt.Errorf("%w: decode url %q: %w", ErrCorrupt, k, err)
			}
		}
		return nil
	})
	return batch, err
}

// ForEachBatch calls fn with every URL record in key order, scanChunk at
// a time. The next batch is read and decoded on another goroutine while
// fn runs: a coordinator's restart adds ten million URLs to its schedule
// on one core while the other decodes. fn must not keep the slice.
func (db *DB) ForEachBatch(fn func([]URL) error) error {
	return db.forEachBatch(fn, decodeURL)
}

// ForEachScheduleBatch is ForEachBatch for a restart: each record holds
// what a schedule is built from (the URL, host, weight, mode, flags,
// period and polls, times, counters, estimator state, rate, interval and
// next due), and leaves the rest empty: the validators (ETag, LastMod,
// Hash), the selector, ignore rules, webhook and the errors. That spares
// building three strings a record the schedule never reads. A record stored as
// JSON (before the binary format) is decoded in full.
func (db *DB) ForEachScheduleBatch(fn func([]URL) error) error {
	return db.forEachBatch(fn, decodeScheduled)
}

func (db *DB) forEachBatch(fn func([]URL) error, decode func(key, v []byte, u *URL) error) error {
	type chunk struct {
		urls []URL
		err  error
	}
	// Unbuffered: a batch is handed over only when fn is done with the
	// one before, so the two buffers are never both in use by fn.
	ch := make(chan chunk)
	stop := make(chan struct{})
	// The reader has ended, its last read transaction closed, when this
	// returns: nothing of the scan outlives it (a Close just after would
	// wait on that transaction).
	var reader sync.WaitGroup
	defer func() {
		close(stop)
		reader.Wait()
	}()
	reader.Go(func() {
		defer close(ch)
		var after []byte
		// Two buffers: one fn works on, one being filled.
		bufs := [2][]URL{make([]URL, 0, scanChunk), make([]URL, 0, scanChunk)}
		for i := 0; ; i++ {
			batch, err := db.readChunk(after, bufs[i%2][:0], decode)
			if err == nil && len(batch) == 0 {
				return
			}
			if len(batch) > 0 {
				after = []byte(batch[len(batch)-1].URL)
			}
			select {
			case ch <- chunk{batch, err}:
			case <-stop:
				return
			}
			if err != nil || len(batch) < scanChunk {
				return
			}
		}
	})
	for c := range ch {
		if c.err != nil {
			return c.err
		}
		if err := fn(c.urls); err != nil {
			return err
		}
	}
	return nil
}

// count returns the number of URL records.
func (db *DB) count() (int, error) {
	n := 0
	err := db.view(func(tx *bolt.Tx) error {
		n = tx.Bucket(bucketURLs).Stats().KeyN
		return nil
	})
	return n, err
}

// URLCount returns the number of URL records: from the store's counter
// when its indexes are built (one read), else by walking the bucket. A
// restart sizes its schedule with it before loading.
func (db *DB) URLCount() (int, error) {
	n := 0
	err := db.view(func(tx *bolt.Tx) error {
		n = countTx(tx)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("count urls: %w", err)
	}
	return n, nil
}

// Tx is the view of the store a fold has: everything it writes commits
// together with the mark that the task was folded.
type Tx struct {
	tx *bolt.Tx
	// totals are the running totals AddTotals changed, written once
	// before the commit (flushTotals).
	totals *Totals
}

// Get returns the URL record (found=false if the URL is not known).
func (t *Tx) Get(url string) (URL, bool, error) {
	var u URL
	found, err := getJSON(t.tx.Bucket(bucketURLs), []byte(url), &u)
	return u, found, err
}

// Put writes the URL record (and moves its index keys).
func (t *Tx) Put(u URL) error {
	var old URL
	found, err := getJSON(t.tx.Bucket(bucketURLs), []byte(u.URL), &old)
	if err != nil {
		return err
	}
	if !found {
		return putURL(t.tx, nil, u, true)
	}
	return putURL(t.tx, &old, u, true)
}

// PutOver writes u over prev, the record Get returned for u.URL in this
// transaction (before any change): Put without reading and decoding the
// stored record again. Only prev's indexed fields are read, to move
// u's index keys.
func (t *Tx) PutOver(prev *URL, u URL) error { return putURL(t.tx, prev, u, true) }

// SetContent stores the latest extracted text of url.
// It is shared with every URL whose latest text is the same (texts.go);
// the record must be stored first (its later Put keeps the reference).
func (t *Tx) SetContent(url, text string) error {
	return setText(t.tx, bucketURLs, []byte(url), text)
}

// Content returns the latest extracted text of url.
func (t *Tx) Content(url string) string {
	return string(textOf(t.tx, []byte(url), t.tx.Bucket(bucketURLs).Get([]byte(url))))
}

// AddVersion appends a version of a capture URL; Seq is assigned.
func (t *Tx) AddVersion(v Version) (uint64, error) {
	b := t.tx.Bucket(bucketVersions)
	// The next sequence number per URL is one past the last key with its
	// prefix.
	seq := uint64(1)
	c := b.Cursor()
	prefix := prefixOf(v.URL)
	k, _ := c.Seek(versionKey(v.URL, ^uint64(0)))
	if k == nil {
		k, _ = c.Last()
	} else {
		k, _ = c.Prev()
	}
	if k != nil && hasPrefix(k, prefix) && len(k) == len(prefix)+8 {
		seq = binary.BigEndian.Uint64(k[len(prefix):]) + 1
	}
	v.Seq = seq
	return seq, putJSON(b, versionKey(v.URL, seq), v)
}

// AddChange appends to the change log; Seq is assigned.
func (t *Tx) AddChange(c Change) (uint64, error) {
	b := t.tx.Bucket(bucketChanges)
	seq, err := b.NextSequence()
	if err != nil {
		return 0, err
	}
	c.Seq = seq
	if err := t.tx.Bucket(bucketIxChanges).Put(changeIndexKey(c.URL, seq), nil); err != nil {
		return 0, err
	}
	return seq, putJSON(b, u64(seq), c)
}

// GetHost returns the politeness state of host.
func (t *Tx) GetHost(host string) (Host, bool, error) {
	var h Host
	found, err := getJSON(t.tx.Bucket(bucketHosts), []byte(host), &h)
	return h, found, err
}

// PutHost stores the politeness state of a host.
func (t *Tx) PutHost(h Host) error { return putJSON(t.tx.Bucket(bucketHosts), []byte(h.Host), h) }

// Fold applies fn and marks taskID folded, atomically. If taskID was
// already folded, fn is not called and applied is false: a redelivered
// result changes nothing twice.
func (db *DB) Fold(taskID string, fn func(*Tx) error) (applied bool, err error) {
	err = db.update(func(tx *bolt.Tx) error {
		applied = false
		folded := tx.Bucket(bucketFolded)
		if folded.Get([]byte(taskID)) != nil {
			return nil
		}
		t := &Tx{tx: tx}
		if err := fn(t); err != nil {
			return err
		}
		if err := t.flushTotals(); err != nil {
			return err
		}
		applied = true
		return folded.Put([]byte(taskID), u64(uint64(time.Now().UnixNano())))
	})
	if err != nil {
		return false, fmt.Errorf("fold task %s: %w", taskID, err)
	}
	return applied, nil
}

// View runs fn in a read-only transaction.
func (db *DB) View(fn func(*Tx) error) error {
	return db.view(func(tx *bolt.Tx) error { return fn(&Tx{tx: tx}) })
}

// folded reports whether taskID was folded.
func (db *DB) folded(taskID string) (bool, error) {
	var ok bool
	err := db.view(func(tx *bolt.Tx) error {
		ok = tx.Bucket(bucketFolded).Get([]byte(taskID)) != nil
		return nil
	})
	return ok, err
}

// foldScanChunk is how many fold marks PruneFolded reads per transaction.
const foldScanChunk = 16384

// PruneFolded forgets fold marks older than cutoff. A result can only be
// redelivered while its message lives in the results stream, so marks older
// than the stream's retention protect nothing.
//
// Marks are keyed by task id, not by time, so every mark is read: a day of
// marks at a few hundred fetches a second is millions. The scan goes in
// chunks, each read in a short read transaction and its old marks deleted
// in a short write transaction, so a fold never waits for the whole scan.
func (db *DB) PruneFolded(cutoff time.Time) (int, error) {
	n := 0
	limit := uint64(cutoff.UnixNano())
	old := func(v []byte) bool { return len(v) == 8 && binary.BigEndian.Uint64(v) < limit }
	var from []byte
	for {
		var stale [][]byte
		var next []byte
		err := db.view(func(tx *bolt.Tx) error {
			c := tx.Bucket(bucketFolded).Cursor()
			k, v := c.First()
			if from != nil {
				k, v = c.Seek(from)
			}
			for scanned := 0; k != nil; k, v = c.Next() {
				if scanned == foldScanChunk {
					next = bytes.Clone(k)
					return nil
				}
				scanned++
				if old(v) {
					stale = append(stale, bytes.Clone(k))
				}
			}
			return nil
		})
		if err == nil && len(stale) > 0 {
			err = db.update(func(tx *bolt.Tx) error {
				b := tx.Bucket(bucketFolded)
				for _, k := range stale {
					if !old(b.Get(k)) {
						continue
					}
					if err := b.Delete(k); err != nil {
						return err
					}
					n++
				}
				return nil
			})
		}
		if err != nil {
			return n, fmt.Errorf("prune fold marks: %w", err)
		}
		if next == nil {
			return n, nil
		}
		from = next
	}
}

// Versions lists the stored versions of url, oldest first, without text.
func (db *DB) Versions(url string) ([]Version, error) {
	var out []Version
	err := db.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketVersions).Cursor()
		p := prefixOf(url)
		for k, v := c.Seek(p); k != nil && hasPrefix(k, p); k, v = c.Next() {
			var ver Version
			if err := json.Unmarshal(v, &ver); err != nil {
				return fmt.Errorf("%w: decode version %q: %w", ErrCorrupt, k, err)
			}
			ver.Text = ""
			out = append(out, ver)
		}
		return nil
	})
	return out, err
}

// Version returns version seq of url, with its text.
func (db *DB) Version(url string, seq uint64) (Version, error) {
	var ver Version
	err := db.view(func(tx *bolt.Tx) error {
		found, err := getJSON(tx.Bucket(bucketVersions), versionKey(url, seq), &ver)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("version %d of %s: %w", seq, url, ErrNotFound)
		}
		return nil
	})
	return ver, err
}

// Changes returns up to limit change-log entries with Seq > after.
func (db *DB) Changes(after uint64, limit int) ([]Change, error) {
	var out []Change
	err := db.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketChanges).Cursor()
		for k, v := c.Seek(u64(after + 1)); k != nil && len(out) < limit; k, v = c.Next() {
			var ch Change
			if err := json.Unmarshal(v, &ch); err != nil {
				return fmt.Errorf("%w: decode change %x: %w", ErrCorrupt, k, err)
			}
			out = append(out, ch)
		}
		return nil
	})
	return out, err
}

// Hosts returns the politeness state of every known host.
func (db *DB) Hosts() ([]Host, error) {
	var out []Host
	err := db.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketHosts).ForEach(func(k, v []byte) error {
			var h Host
			if err := decodeHost(k, v, &h); err != nil {
				return fmt.Errorf("%w: decode host %q: %w", ErrCorrupt, k, err)
			}
			out = append(out, h)
			return nil
		})
	})
	return out, err
}

// FoldMany folds several results in one transaction: each id is checked and
// marked like Fold, and fn is called only for ids not folded before. One
// commit (one fsync) for a batch is what lets the coordinator keep up with
// many workers.
func (db *DB) FoldMany(ids []string, fn func(i int, tx *Tx) error) (applied []bool, err error) {
	applied = make([]bool, len(ids))
	err = db.update(func(tx *bolt.Tx) error {
		clear(applied)
		folded := tx.Bucket(bucketFolded)
		now := u64(uint64(time.Now().UnixNano()))
		t := &Tx{tx: tx}
		for i, id := range ids {
			if folded.Get([]byte(id)) != nil {
				continue
			}
			if err := fn(i, t); err != nil {
				return fmt.Errorf("task %s: %w", id, err)
			}
			if err := folded.Put([]byte(id), now); err != nil {
				return err
			}
			applied[i] = true
		}
		if err := t.flushTotals(); err != nil {
			return err
		}
		return failpoint.Hit(failpoint.FoldBeforeCommit)
	})
	if err != nil {
		return nil, fmt.Errorf("fold %d results: %w", len(ids), err)
	}
	return applied, nil
}
