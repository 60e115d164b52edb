package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/freshcrawl/freshcrawl/internal/optcheck"
)

// Retention bounds the history the store keeps: the versions of capture
// URLs and the change log. Everything else is bounded by the URLs seeded
// (records, latest content, hosts) or pruned on its own schedule (fold
// marks). Start from DefaultRetention. A zero count or age sets no bound;
// when both bounds of a kind are set, an entry goes as soon as either
// says so.
type Retention struct {
	// Versions is the most versions kept per URL, the newest.
	Versions int
	// VersionsAge deletes versions captured longer ago than this, except
	// each URL's newest: what a page says now is never history.
	VersionsAge time.Duration
	// Changes is the most change-log entries kept, the newest.
	Changes int
	// ChangesAge deletes change-log entries older than this.
	ChangesAge time.Duration
	// FoldMarksAge is how long a fold mark outlives its fold. A mark only
	// has to outlive every redelivery of its result, which the results
	// stream makes within seconds; the coordinator also keeps every mark
	// as old as the oldest result still in the stream.
	FoldMarksAge time.Duration
}

// DefaultRetention keeps all history, and fold marks an hour: far beyond
// any redelivery while the coordinator runs, and at 200 fetches a second
// 720 000 marks (about 120 MiB of store), where a day would be 17 million.
// The config takes its keep-* defaults from here.
func DefaultRetention() Retention {
	return Retention{FoldMarksAge: time.Hour}
}

// minFoldMarksAge is the shortest fold-mark age allowed: longer than the
// results stream's duplicate window and any redelivery of a running
// coordinator's unacknowledged results.
const minFoldMarksAge = 5 * time.Minute

// Validate reports every field out of range, each by its name.
func (r Retention) Validate() error {
	var errs optcheck.Errors
	errs.Check("Versions", checkRetentionCount(r.Versions))
	errs.Check("VersionsAge", checkRetentionAge(r.VersionsAge))
	errs.Check("Changes", checkRetentionCount(r.Changes))
	errs.Check("ChangesAge", checkRetentionAge(r.ChangesAge))
	if r.FoldMarksAge < minFoldMarksAge {
		errs.Check("FoldMarksAge", fmt.Errorf("must be at least %s, got %s", minFoldMarksAge, r.FoldMarksAge))
	}
	return errs.Err()
}

// checkRetentionCount reports whether n is a valid count bound: ≥ 0
// (0: no bound).
func checkRetentionCount(n int) error {
	if n < 0 {
		return fmt.Errorf("must be ≥ 0 (0 keeps all), got %d", n)
	}
	return nil
}

// checkRetentionAge reports whether d is a valid age bound: ≥ 0 (0: no
// bound).
func checkRetentionAge(d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("must be ≥ 0 (0 keeps all), got %s", d)
	}
	return nil
}

func (r Retention) versions() bool { return r.Versions > 0 || r.VersionsAge > 0 }
func (r Retention) changes() bool  { return r.Changes > 0 || r.ChangesAge > 0 }

// Pruned counts the entries a prune deleted.
type Pruned struct {
	Versions int `json:"versions"`
	Changes  int `json:"changes"`
}

// Bounds of one Pruner step. A step is one write transaction, and bbolt
// has one writer: folds wait for it, so it stays short however large the
// backlog, and the backlog is worked off over successive steps.
const (
	pruneDeletes = 4096  // entries deleted per step, of each kind
	pruneScan    = 16384 // version keys read per step
)

// Pruner applies a Retention while the store is in use, a bounded step at
// a time: the change log from its oldest end, the versions URL by URL in
// key order, resuming where the previous step stopped and starting over
// once every URL has been visited. It is not safe for concurrent use.
type Pruner struct {
	db   *DB
	r    Retention
	next []byte // first version key of the next step; nil: the beginning
}

// NewPruner returns a Pruner of db for r.
func NewPruner(db *DB, r Retention) *Pruner { return &Pruner{db: db, r: r} }

// Step deletes, in one transaction, up to a bounded number of entries that
// r no longer allows at now. done reports that the step found nothing more
// to delete in the change log and ended a pass over the versions: until
// more history accrues, further steps delete nothing.
func (p *Pruner) Step(now time.Time) (n Pruned, done bool, err error) {
	if !p.r.versions() && !p.r.changes() {
		return n, true, nil
	}
	changesDone, versionsDone := true, true
	err = p.db.update(func(tx *bolt.Tx) error {
		n = Pruned{}
		if p.r.changes() {
			k, err := pruneChanges(tx.Bucket(bucketChanges), tx.Bucket(bucketIxChanges), p.r, now)
			if err != nil {
				return err
			}
			n.Changes, changesDone = k, k < pruneDeletes
		}
		if p.r.versions() {
			k, next, err := pruneVersions(tx.Bucket(bucketVersions), p.r, now, p.next)
			if err != nil {
				return err
			}
			n.Versions, versionsDone = k, next == nil
			p.next = next
		}
		return nil
	})
	if err != nil {
		return Pruned{}, false, fmt.Errorf("apply retention: %w", err)
	}
	return n, changesDone && versionsDone, nil
}

// pruneChanges deletes change-log entries from the oldest on, while the
// count or the age bound says so, up to pruneDeletes. Sequence numbers
// come from the bucket's sequence and entries are only ever deleted from
// the oldest end, so the keys are contiguous and the newest r.Changes are
// those above last − r.Changes. Entries are appended in fold order, so
// their times grow with the key; the age bound stops at the first entry
// young enough. Each entry's key in the change log's URL index (ix, nil
// in a store opened before the indexes) goes with it, or the index would
// keep growing after the log stopped.
func pruneChanges(b, ix *bolt.Bucket, r Retention, now time.Time) (int, error) {
	c := b.Cursor()
	last, _ := c.Last()
	if last == nil {
		return 0, nil
	}
	var upTo uint64 // delete every seq ≤ upTo
	if lastSeq := binary.BigEndian.Uint64(last); r.Changes > 0 && lastSeq > uint64(r.Changes) {
		upTo = lastSeq - uint64(r.Changes)
	}
	cutoff := now.Add(-r.ChangesAge)
	n := 0
	// Each deletion removes the first key, so the cursor starts over at
	// First rather than stepping on from a deleted position.
	for k, v := c.First(); k != nil && n < pruneDeletes; k, v = c.First() {
		seq := binary.BigEndian.Uint64(k)
		var ch struct {
			URL string    `json:"url"`
			At  time.Time `json:"at"`
		}
		if err := json.Unmarshal(v, &ch); err != nil && seq > upTo {
			// Past the count bound only the age decides, and an entry that
			// does not decode has none: stop rather than guess.
			return n, fmt.Errorf("decode change %d: %w", seq, err)
		}
		if seq > upTo && !(r.ChangesAge > 0 && ch.At.Before(cutoff)) {
			break
		}
		if err := c.Delete(); err != nil {
			return n, err
		}
		if ix != nil {
			if err := ix.Delete(changeIndexKey(ch.URL, seq)); err != nil {
				return n, err
			}
		}
		n++
	}
	return n, nil
}

// pruneVersions visits URLs' versions in key order from the key from
// (nil: the first), deleting those r no longer allows, until it has read
// about pruneScan keys or deleted pruneDeletes entries. It returns where
// the next call resumes, nil once the last URL was visited.
func pruneVersions(b *bolt.Bucket, r Retention, now time.Time, from []byte) (int, []byte, error) {
	c := b.Cursor()
	k, _ := c.First()
	if from != nil {
		k, _ = c.Seek(from)
	}
	cutoff := now.Add(-r.VersionsAge)
	deleted, scanned := 0, 0
	for k != nil {
		if scanned >= pruneScan || deleted >= pruneDeletes {
			return deleted, bytes.Clone(k), nil
		}
		// One URL's versions: keys url 0x00 seq, oldest first. Count
		// them, then pick the oldest that must go: beyond the count
		// bound, then older than the age bound, never the newest.
		prefix := bytes.Clone(urlPrefix(k))
		own := func(k []byte) bool { return k != nil && bytes.HasPrefix(k, prefix) && len(k) == len(prefix)+8 }
		m := 0
		for ; own(k); k, _ = c.Next() {
			m++
		}
		scanned += m
		if m == 0 {
			// A key of another shape (none are written): step over it.
			k, _ = c.Next()
			continue
		}
		overCount := 0
		if r.Versions > 0 && m > r.Versions {
			overCount = m - r.Versions
		}
		var drop [][]byte
		i := 0
		for dk, v := c.Seek(prefix); own(dk) && i < m-1 && deleted+len(drop) < pruneDeletes; dk, v = c.Next() {
			if i >= overCount {
				if r.VersionsAge <= 0 {
					break
				}
				at, err := capturedAt(v)
				if err != nil {
					return deleted, nil, fmt.Errorf("decode version %q: %w", dk, err)
				}
				if !at.Before(cutoff) {
					break
				}
			}
			drop = append(drop, bytes.Clone(dk))
			i++
		}
		for _, dk := range drop {
			if err := b.Delete(dk); err != nil {
				return deleted, nil, err
			}
		}
		deleted += len(drop)
		if deleted >= pruneDeletes {
			// This URL may have more to go: the next step starts here.
			return deleted, prefix, nil
		}
		// Past this URL's keys: url 0x01 sorts after every url 0x00 seq.
		next := append(prefix[:len(prefix)-1:len(prefix)-1], 0x01)
		k, _ = c.Seek(next)
	}
	return deleted, nil, nil
}

// urlPrefix returns the "url 0x00" prefix of a version key.
func urlPrefix(k []byte) []byte {
	if len(k) < 9 {
		return k
	}
	return k[:len(k)-8]
}

// capturedAt reads a stored version's capture time without decoding its
// text: the field is written before the text, and the decoder stops there.
func capturedAt(raw []byte) (time.Time, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // {
		return time.Time{}, err
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return time.Time{}, err
		}
		if key == "captured_at" {
			var at time.Time
			err := dec.Decode(&at)
			return at, err
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return time.Time{}, err
		}
	}
	return time.Time{}, io.ErrUnexpectedEOF
}

// History counts the parts of the store that grow with time: versions,
// change-log entries and fold marks.
type History struct {
	Versions, Changes, FoldMarks int
}

// History reads the counts from the buckets' statistics, in one read
// transaction (it walks the buckets' pages, not their values).
func (db *DB) History() (History, error) {
	var h History
	err := db.view(func(tx *bolt.Tx) error {
		h.Versions = tx.Bucket(bucketVersions).Stats().KeyN
		h.Changes = tx.Bucket(bucketChanges).Stats().KeyN
		h.FoldMarks = tx.Bucket(bucketFolded).Stats().KeyN
		return nil
	})
	if err != nil {
		return h, fmt.Errorf("count history: %w", err)
	}
	return h, nil
}
