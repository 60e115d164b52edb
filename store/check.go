package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Report is what Check found in a store file.
type Report struct {
	Path     string `json:"path"`
	Size     int64  `json:"size_bytes"`
	PageSize int    `json:"page_size"`
	// Pages is the high-water mark: pages in use, free ones included.
	Pages   uint64         `json:"pages"`
	TxID    uint64         `json:"txid"`
	StoreID string         `json:"store_id,omitempty"`
	Fence   uint64         `json:"fence,omitempty"`
	Schema  uint64         `json:"schema"` // the format version (formatVersion)
	Records map[string]int `json:"records"`
	Errors  []string       `json:"errors,omitempty"`
	More    int            `json:"more_errors,omitempty"`
	Elapsed time.Duration  `json:"elapsed_ns"`
}

// OK reports whether the check found nothing wrong.
func (r *Report) OK() bool { return len(r.Errors) == 0 }

// maxReported bounds the problems a report lists; the rest are counted.
const maxReported = 50

func (r *Report) add(err error) {
	if len(r.Errors) < maxReported {
		r.Errors = append(r.Errors, err.Error())
	} else {
		r.More++
	}
}

// Check verifies the store file at path without writing to it: the header
// pages and the file size, the page tree (as Open checks it), bbolt's own
// consistency check (every page reachable or free, keys in order), and
// that every record decodes. It needs the file not to be held by a
// running coordinator (it returns ErrLocked then: check a backup taken
// through its API instead). A damaged store gives a Report listing what
// is wrong and an error that matches ErrCorrupt.
func Check(path string) (*Report, error) {
	start := time.Now()
	r := &Report{Path: path, Records: map[string]int{}}
	st, err := os.Stat(path)
	if err != nil {
		return r, fmt.Errorf("check store: %w", err)
	}
	r.Size = st.Size()
	if r.Size == 0 {
		r.add(errors.New("the file is empty"))
		return r, corrupt(path, "the file is empty")
	}
	if f, err := os.Open(path); err == nil {
		if m, err := readMeta(f, r.Size); err == nil {
			r.PageSize, r.Pages, r.TxID = int(m.pageSize), m.pgid, m.txid
		}
		f.Close()
	}
	db, err := Open(path, Options{ReadOnly: true, Timeout: 300 * time.Millisecond, fullCheck: true})
	if err != nil {
		if errors.Is(err, ErrCorrupt) {
			r.add(err)
		}
		r.Elapsed = time.Since(start)
		return r, err
	}
	defer db.Close()
	db.checkInto(r)
	r.Elapsed = time.Since(start)
	if !r.OK() {
		return r, corrupt(path, "%d problems found, the first: %s", len(r.Errors)+r.More, r.Errors[0])
	}
	return r, nil
}

// checkInto runs bbolt's consistency check, decodes every record and
// checks the texts' reference counts.
// bbolt's check reads the free list, which a concurrent writer changes, so
// it is only run on a file no one writes (Check opens it read-only, under
// the shared lock).
func (db *DB) checkInto(r *Report) {
	err := db.view(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			r.add(fmt.Errorf("page check: %w", err))
		}
		meta := tx.Bucket(bucketMeta)
		if meta == nil {
			r.add(errors.New("no meta bucket: not a freshcrawl store"))
			return nil
		}
		if v := meta.Get(metaFormat); len(v) == 8 {
			r.Schema = binary.BigEndian.Uint64(v)
		}
		r.StoreID = string(meta.Get(metaStoreID))
		if v := meta.Get(metaFence); len(v) == 8 {
			r.Fence = binary.BigEndian.Uint64(v)
		}
		if v := meta.Get(metaHazard); v != nil {
			if _, err := decodeHazard(v); err != nil {
				r.add(err)
			}
		}
		if _, err := readTotals(tx); err != nil {
			r.add(err)
		}
		for _, name := range allBuckets {
			b := tx.Bucket(name)
			if b == nil {
				r.add(fmt.Errorf("bucket %s is missing", name))
				continue
			}
			n := 0
			err := b.ForEach(func(k, v []byte) error {
				n++
				if err := checkRecord(name, k, v); err != nil {
					r.add(err)
				}
				return nil
			})
			if err != nil {
				r.add(fmt.Errorf("bucket %s: %w", name, err))
			}
			r.Records[string(name)] = n
		}
		if tx.Bucket(bucketURLs) != nil && tx.Bucket(bucketDeleted) != nil && tx.Bucket(bucketTexts) != nil && tx.Bucket(bucketTextRefs) != nil {
			checkTexts(tx, r)
		}
		return nil
	})
	if err != nil {
		r.add(err)
	}
}

// checkRecord decodes one record the way the store reads it.
func checkRecord(bucket, k, v []byte) error {
	var dst any
	switch string(bucket) {
	case string(bucketURLs):
		dst = &URL{}
	case string(bucketVersions):
		dst = &Version{}
	case string(bucketChanges):
		dst = &Change{}
	case string(bucketHosts):
		dst = &Host{}
	case string(bucketItems):
		dst = &Item{}
	case string(bucketFolded):
		if len(v) != 8 {
			return fmt.Errorf("fold mark %q: %d bytes, want 8", k, len(v))
		}
		return nil
	default:
		return nil
	}
	if v == nil {
		return fmt.Errorf("bucket %s: key %q is a bucket, want a record", bucket, k)
	}
	if err := decodeRecord(k, v, dst); err != nil {
		return fmt.Errorf("bucket %s: record %q does not decode: %w", bucket, k, err)
	}
	return nil
}

// Backup writes a consistent copy of the store to w: the state of one read
// transaction, so folds go on while it is written. It returns the bytes
// written.
func (db *DB) Backup(w io.Writer) (int64, error) { return db.BackupSized(w, nil) }

// BackupSized is Backup that first tells size the copy's size (an HTTP
// response's Content-Length).
func (db *DB) BackupSized(w io.Writer, size func(int64)) (int64, error) {
	var n int64
	err := db.view(func(tx *bolt.Tx) error {
		if size != nil {
			size(tx.Size())
		}
		var err error
		n, err = tx.WriteTo(w)
		return err
	})
	if err != nil {
		return n, fmt.Errorf("back up store %s: %w", db.path, err)
	}
	return n, nil
}

// WriteFileAtomic writes what fill writes to path through a temporary file
// in the same directory, synced before it is renamed into place, so path
// never holds half a copy.
func WriteFileAtomic(path string, fill func(io.Writer) error) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := fill(f); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("write %s: sync: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Chmod(tmp, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	ok = true
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// FoldMarks calls fn for every fold mark: the id of a task whose result (or
// failure) was folded, and when.
func (db *DB) FoldMarks(fn func(taskID string, at time.Time) error) error {
	return db.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketFolded).ForEach(func(k, v []byte) error {
			var at time.Time
			if len(v) == 8 {
				at = time.Unix(0, int64(binary.BigEndian.Uint64(v)))
			}
			return fn(string(k), at)
		})
	})
}
