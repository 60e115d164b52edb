// Package store is the coordinator's durable truth, one bbolt file: URL
// records with their change statistics and schedule, the latest extracted
// version of every URL, every version of capture URLs, a change log, host
// politeness state, and the ids of the results already folded.
//
// Invariants:
//   - A result is folded at most once: Fold records its task id in the same
//     transaction as its effects, so a redelivered result changes nothing.
//   - Nothing here depends on a message that was not yet folded: the stream
//     may lose an acknowledged message in an OS crash (see docs/design.md §5), but
//     then the URL is simply fetched again at its next due time.
package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Bucket names. Keys are documented per bucket.
var (
	bucketURLs     = []byte("urls")      // url → URL (JSON)
	bucketContent  = []byte("content")   // url → latest extracted text, in stores written before texts (texts.go)
	bucketTexts    = []byte("texts")     // sha256(text) → text: the latest texts, shared (texts.go)
	bucketTextRefs = []byte("text_refs") // sha256(text) → uvarint number of records naming it
	bucketVersions = []byte("versions")  // url 0x00 seq(8) → Version (JSON); capture URLs only
	bucketChanges  = []byte("changes")   // seq(8) → Change (JSON)
	bucketFolded   = []byte("folded")    // task id → fold time (8, unix nanos)
	bucketHosts    = []byte("hosts")     // host → Host (JSON)
	bucketMeta     = []byte("meta")      // format version, identity, fence, cursors
	bucketItems    = []byte("items")     // source 0x00 item id → Item (JSON)
	bucketDeleted  = []byte("deleted")   // url → URL (JSON) of a deleted URL whose history is kept
	bucketRaw      = []byte("raw")       // url → raw body of the latest version (rawEnvelope)
	bucketFetchLog = []byte("fetchlog")  // url → the last fetchLogLen fetches (encodeFetchLog)
	bucketURLIDs   = []byte("url_ids")   // id (appendOrdered) → url: the URLs the indexes name by id
	// Secondary indexes, maintained in the transaction that writes the
	// record (index.go).
	bucketIxFilter  = []byte("ix_filter")  // kind(1) value 0x00 url id → nil: host, mode, record state
	bucketIxSort    = []byte("ix_sort")    // sort id(1) value url id (appendOrdered) → nil
	bucketIxChanges = []byte("ix_changes") // url 0x00 seq(8) → nil: the change log by URL
	allBuckets      = [][]byte{bucketURLs, bucketContent, bucketVersions, bucketChanges, bucketFolded, bucketHosts, bucketMeta, bucketItems,
		bucketDeleted, bucketRaw, bucketFetchLog, bucketURLIDs, bucketTexts, bucketTextRefs, bucketIxFilter, bucketIxSort, bucketIxChanges, bucketHookQueue, bucketHookDead}
	indexBuckets = [][]byte{bucketIxFilter, bucketIxSort, bucketIxChanges}
)

// formatVersion is the store's format, kept in the meta bucket under
// metaFormat: Open writes it, and refuses a store of a newer format
// (ErrNewerFormat), which this binary could misread or damage. A store
// without one is taken to be of this format. It goes up when a binary of
// the previous format would misread the file or write it wrongly:
// format 2 added the secondary indexes, which a binary that knows only
// format 1 would not update; format 3 packs the estimator state and names
// LastOK by LastFetch in URL records (codec.go), which a format-2 binary
// would misread. testdata/golden holds records of this format.
const formatVersion = 3

// metaFormat is the meta key of the format version, an 8-byte big-endian
// number. Every release has read it under this name, so an older binary
// refuses a newer store too.
var metaFormat = []byte("schema")

// Errors callers can test for with errors.Is; bbolt's own errors stay
// wrapped behind them.
var (
	// ErrNotFound is returned when a key is absent.
	ErrNotFound = errors.New("not found")
	// ErrLocked is returned by Open when another process holds the store
	// (a running coordinator): stop it, or go through its API.
	ErrLocked = errors.New("store is locked by another process (is a coordinator running on this data directory? stop it, or reach it through its API with --api)")
	// ErrNewerFormat is returned by Open for a store written by a newer
	// freshcrawl, in a format this one does not understand; the error
	// names the file and both formats. Open leaves the file as it was.
	ErrNewerFormat = errors.New("upgrade freshcrawl")
)

// Options tune Open.
type Options struct {
	// Timeout bounds the wait for the file lock: a second coordinator on
	// the same data directory fails fast instead of hanging.
	Timeout time.Duration
	// ReadOnly opens for inspection (status, plan, versions) while a
	// coordinator may hold the write lock... bbolt's lock is exclusive for
	// writers and shared for readers.
	ReadOnly bool
	// fullCheck walks every page at open even after a clean close (Check).
	fullCheck bool
}

// DB is an open store.
type DB struct {
	bolt *bolt.DB
	path string
	// writable: Close marks a clean close (clean.go).
	writable bool
	closed   atomic.Bool
	// fence is the lease revision this process writes under (TakeFence);
	// 0 until a coordinator takes the store.
	fence atomic.Uint64
}

// FileName is the store's file inside a data directory.
const FileName = "freshcrawl.db"

// OpenDir opens (creating if needed) the store in data directory dir.
func OpenDir(dir string, opt Options) (*DB, error) {
	if !opt.ReadOnly {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("create data directory: %w", err)
		}
	}
	return Open(filepath.Join(dir, FileName), opt)
}

// Open opens (creating if needed) the store file at path.
func Open(path string, opt Options) (*DB, error) {
	if opt.Timeout <= 0 {
		opt.Timeout = 2 * time.Second
	}
	if opt.ReadOnly {
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("open store %s: %w", path, err)
		}
	}
	// Take the lock before reading the file: a coordinator may be writing
	// it, and its lock is the one error that must say so.
	lock, err := lockFile(path, opt)
	if err != nil {
		return nil, err
	}
	// bbolt maps the file and trusts what it finds: check it first, every
	// page unless it was closed cleanly and is unchanged since (clean.go).
	err = verifyFile(path, opt.fullCheck || !closedCleanly(path))
	// bbolt takes its own lock on its own descriptor, which ours would
	// block: a writer that slips in between makes bbolt wait, then fail
	// with ErrLocked, and whatever it wrote was written under the lock.
	lock.release()
	if err != nil {
		if errors.Is(err, ErrCorrupt) {
			return nil, err
		}
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	var b *bolt.DB
	err = guard(path, func() error {
		var err error
		b, err = bolt.Open(path, 0o600, &bolt.Options{
			Timeout:  opt.Timeout,
			ReadOnly: opt.ReadOnly,
			// Millions of keys: the hashmap freelist keeps allocation O(1) and
			// not syncing it keeps commits small (it is rebuilt on open).
			FreelistType:   bolt.FreelistMapType,
			NoFreelistSync: true,
		})
		return err
	})
	if err != nil {
		if errors.Is(err, berrors.ErrTimeout) {
			return nil, fmt.Errorf("open store %s: %w: %w", path, ErrLocked, err)
		}
		if errors.Is(err, ErrCorrupt) {
			return nil, err
		}
		if errors.Is(err, berrors.ErrInvalid) || errors.Is(err, berrors.ErrChecksum) || errors.Is(err, berrors.ErrVersionMismatch) {
			return nil, corrupt(path, "%v", err)
		}
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	db := &DB{bolt: b, path: path, writable: !opt.ReadOnly}
	// A newer format is refused before anything is written, the
	// clean-close marker included, so the newer binary finds the file as
	// it left it. bbolt writes nothing when it opens an existing file.
	err = db.checkFormat(opt.ReadOnly)
	if err == nil && !opt.ReadOnly {
		// Whatever happens from here on, only a clean Close marks it again.
		if err = unmarkClean(path); err != nil {
			err = fmt.Errorf("open store %s: %w", path, err)
		} else {
			err = db.init()
		}
	}
	if err != nil {
		b.Close()
		return nil, err
	}
	return db, nil
}

func (db *DB) init() error {
	err := db.update(func(tx *bolt.Tx) error {
		for _, name := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("create bucket %s: %w", name, err)
			}
		}
		meta := tx.Bucket(bucketMeta)
		if meta.Get(metaStoreID) == nil {
			if err := meta.Put(metaStoreID, []byte(newStoreID())); err != nil {
				return err
			}
		}
		return meta.Put(metaFormat, u64(formatVersion))
	})
	if err != nil {
		return fmt.Errorf("initialise store: %w", err)
	}
	return db.ensureIndexes()
}

// checkFormat refuses a store of a newer format than formatVersion (and,
// to read, a file that is no store: one a writable open would make one).
func (db *DB) checkFormat(readOnly bool) error {
	return db.view(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta == nil {
			if readOnly {
				return fmt.Errorf("store %s is not a freshcrawl store (no meta bucket)", db.path)
			}
			return nil
		}
		v := meta.Get(metaFormat)
		switch {
		case v == nil:
			return nil
		case len(v) != 8:
			return corrupt(db.path, "format version of %d bytes, want 8", len(v))
		}
		if got := binary.BigEndian.Uint64(v); got > formatVersion {
			return fmt.Errorf("open %s: store format %d is newer than this freshcrawl understands (format %d): %w", db.path, got, formatVersion, ErrNewerFormat)
		}
		return nil
	})
}

// Close closes the file, and after a writable open marks it closed
// cleanly, so the next open need not walk every page (clean.go).
func (db *DB) Close() error {
	if db.closed.Swap(true) {
		return nil
	}
	// bbolt does not write its free list (NoFreelistSync), so an open
	// rebuilds it by reading every page: 26 s at ten million URLs. The
	// last commit of a clean close writes it once, and the next open reads
	// that instead; the next commit after the open drops it again, so a
	// crash later leaves the file as it would have been.
	var syncErr error
	if db.writable {
		syncErr = db.update(func(*bolt.Tx) error {
			db.bolt.NoFreelistSync = false // read by this commit, under the writer lock
			return nil
		})
		if errors.Is(syncErr, ErrFenced) {
			syncErr = nil // another coordinator owns the file now: write nothing
		}
	}
	if err := db.bolt.Close(); err != nil {
		return err
	}
	if !db.writable {
		return nil
	}
	if syncErr != nil {
		// The free list may not be written: leave no marker, and the next
		// open checks the file.
		return fmt.Errorf("close store %s: write the free list: %w", db.path, syncErr)
	}
	// bbolt released its lock: take ours while the marker is written, so
	// that it stamps the file as this process left it. If another process
	// has the store already, it marks its own close.
	lock, err := lockFile(db.path, Options{Timeout: time.Nanosecond})
	if err != nil {
		return nil
	}
	defer lock.release()
	if err := markClean(db.path); err != nil {
		return fmt.Errorf("close store %s: mark the clean close: %w", db.path, err)
	}
	return nil
}

// Path is the file's path.
func (db *DB) Path() string { return db.path }

func u64(v uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, v)
	return b
}

func versionKey(url string, seq uint64) []byte {
	k := make([]byte, 0, len(url)+9)
	k = append(k, url...)
	k = append(k, 0)
	return binary.BigEndian.AppendUint64(k, seq)
}

func prefixOf(url string) []byte { return append([]byte(url), 0) }

func getJSON(b *bolt.Bucket, key []byte, v any) (bool, error) {
	raw := b.Get(key)
	if raw == nil {
		return false, nil
	}
	if err := decodeRecord(key, raw, v); err != nil {
		// Every record was written by this package: one that does not
		// decode is a damaged store, not bad input.
		return true, fmt.Errorf("%w: decode record %q: %w", ErrCorrupt, key, err)
	}
	return true, nil
}

// view runs fn in a read transaction, with a damaged page reported as a
// CorruptError rather than a panic (guard).
func (db *DB) view(fn func(*bolt.Tx) error) error {
	return guard(db.path, func() error { return db.bolt.View(fn) })
}

// update runs fn in a write transaction, as view, and fails it with
// ErrFenced if a coordinator under a newer lease took the store over
// (checkFence): every write goes through it.
func (db *DB) update(fn func(*bolt.Tx) error) error {
	return guard(db.path, func() error {
		return db.bolt.Update(func(tx *bolt.Tx) error {
			if err := db.checkFence(tx); err != nil {
				return err
			}
			return fn(tx)
		})
	})
}

func putJSON(b *bolt.Bucket, key []byte, v any) error {
	raw, err := encodeRecord(v)
	if err != nil {
		return fmt.Errorf("encode %q: %w", key, err)
	}
	return b.Put(key, raw)
}

// hasPrefix reports whether k starts with p.
func hasPrefix(k, p []byte) bool { return bytes.HasPrefix(k, p) }
