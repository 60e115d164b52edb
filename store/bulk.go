package store

import (
	"bufio"
	"bytes"
	"cmp"
	"container/heap"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
)

// BulkLoader upserts more URL records than fit in memory, in URL order:
// it sorts them in runs, spills each full run to a temporary file, and
// merges the runs into Upsert batches at Load. Seeding ten million URLs
// in file order inserts each batch all over the urls tree, so that every
// commit rewrites most of its pages and the cost per URL grows with the
// store; in URL order every tree (urls, and the url_ids, filter and sort
// keys of new URLs, whose ids then follow URL order) is written from left
// to right, once.
//
// Of two records for one URL the one added later wins, as with Upsert
// calls in file order. Nothing is stored before Load.
type BulkLoader struct {
	db       *DB
	dir      string
	runBytes int
	// The current run, encoded as it is spilled (per record the URL and
	// its binary record, each length-prefixed) in one arena: a tenth of
	// the memory of URL structs, and nothing for the collector to scan.
	arena []byte
	offs  []uint32
	runs  []string
	rec   []byte
}

// defaultBulkRun is the bytes of encoded records a BulkLoader sorts in
// memory at a time (about 400 000 new URLs).
const defaultBulkRun = 64 << 20

// NewBulkLoader returns a loader spilling runs of about runBytes bytes
// (<= 0: defaultBulkRun) to temporary files in dir ("" for os.TempDir()).
// Close removes them.
func (db *DB) NewBulkLoader(dir string, runBytes int) *BulkLoader {
	if runBytes <= 0 {
		runBytes = defaultBulkRun
	}
	runBytes = min(runBytes, math.MaxUint32)
	return &BulkLoader{db: db, dir: dir, runBytes: runBytes}
}

// Add takes one record (AddedAt should be set: a record's fields are
// stored as given).
func (l *BulkLoader) Add(u URL) error {
	if l.arena == nil {
		l.arena = make([]byte, 0, min(l.runBytes, 1<<20))
	}
	l.offs = append(l.offs, uint32(len(l.arena)))
	l.arena = appendString(l.arena, u.URL)
	l.rec = appendURL(l.rec[:0], &u, recMeta{})
	l.arena = appendBytes(l.arena, l.rec)
	if len(l.arena) < l.runBytes {
		return nil
	}
	return l.spill()
}

// entry returns the URL and record at offset off of the arena, and the
// whole entry.
func (l *BulkLoader) entry(off uint32) (key, rec, whole []byte) {
	r := &reader{b: l.arena[off:]}
	key = r.bytes()
	rec = r.bytes()
	return key, rec, l.arena[off : len(l.arena)-len(r.b)]
}

// sortRun orders the run by URL; of equal URLs, the one added first comes
// first (offsets grow as records are added).
func (l *BulkLoader) sortRun() {
	slices.SortFunc(l.offs, func(a, b uint32) int {
		ka, _, _ := l.entry(a)
		kb, _, _ := l.entry(b)
		return cmp.Or(bytes.Compare(ka, kb), cmp.Compare(a, b))
	})
}

// spill writes the current run, sorted, to a temporary file.
func (l *BulkLoader) spill() error {
	l.sortRun()
	f, err := os.CreateTemp(l.dir, "freshcrawl-seed-run-*")
	if err != nil {
		return fmt.Errorf("spill a sorted run: %w", err)
	}
	l.runs = append(l.runs, f.Name())
	w := bufio.NewWriterSize(f, 1<<20)
	for _, off := range l.offs {
		_, _, whole := l.entry(off)
		if _, err := w.Write(whole); err != nil {
			f.Close()
			return fmt.Errorf("spill a sorted run: %w", err)
		}
	}
	err = w.Flush()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("spill a sorted run: %w", err)
	}
	l.arena, l.offs = l.arena[:0], l.offs[:0]
	return nil
}

// runReader reads one spilled run back.
type runReader struct {
	r   *bufio.Reader
	f   *os.File
	cur URL
	idx int // the run's place: earlier runs win ties
}

func (rr *runReader) next() (bool, error) {
	key, err := readChunk(rr.r)
	if errors.Is(err, io.EOF) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	rec, err := readChunk(rr.r)
	if err != nil {
		return false, fmt.Errorf("a sorted run ends early: %w", err)
	}
	if err := decodeURL(key, rec, &rr.cur); err != nil {
		return false, fmt.Errorf("a sorted run: %w", err)
	}
	return true, nil
}

func readChunk(r *bufio.Reader) ([]byte, error) {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, err
	}
	if n > 1<<26 {
		return nil, fmt.Errorf("a sorted run holds a chunk of %d bytes", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	return b, nil
}

// runHeap orders the runs by their current URL, then by their place.
type runHeap []*runReader

func (h runHeap) Len() int { return len(h) }
func (h runHeap) Less(i, j int) bool {
	return cmp.Or(strings.Compare(h[i].cur.URL, h[j].cur.URL), cmp.Compare(h[i].idx, h[j].idx)) < 0
}
func (h runHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *runHeap) Push(x any)   { *h = append(*h, x.(*runReader)) }
func (h *runHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// Load merges every record added into the store, in URL order, batch
// records a transaction (Upsert), and calls onBatch (if set) with each
// batch once it is committed. A cancelled ctx stops it between batches:
// what was committed stays, and stored says how many records that was.
func (l *BulkLoader) Load(ctx context.Context, batch int, onBatch func([]URL)) (stored, added int, err error) {
	batch = max(batch, 1)
	out := make([]URL, 0, batch)
	flush := func() error {
		if len(out) == 0 {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := l.db.Upsert(out)
		if err != nil {
			return err
		}
		stored += len(out)
		added += n
		if onBatch != nil {
			onBatch(out)
		}
		out = out[:0]
		return nil
	}
	if len(l.runs) == 0 {
		// One run: no file, no merge.
		l.sortRun()
		for _, off := range l.offs {
			key, rec, _ := l.entry(off)
			var u URL
			if err := decodeURL(key, rec, &u); err != nil {
				return stored, added, fmt.Errorf("a sorted run: %w", err)
			}
			out = append(out, u)
			if len(out) == batch {
				if err := flush(); err != nil {
					return stored, added, err
				}
			}
		}
		return stored, added, flush()
	}
	if len(l.offs) > 0 {
		if err := l.spill(); err != nil {
			return 0, 0, err
		}
	}
	var h runHeap
	defer func() {
		for _, rr := range h {
			rr.f.Close()
		}
	}()
	for i, name := range l.runs {
		f, err := os.Open(name)
		if err != nil {
			return 0, 0, fmt.Errorf("read a sorted run: %w", err)
		}
		rr := &runReader{r: bufio.NewReaderSize(f, 256<<10), f: f, idx: i}
		ok, err := rr.next()
		if err != nil {
			f.Close()
			return 0, 0, fmt.Errorf("read a sorted run: %w", err)
		}
		if !ok {
			f.Close()
			continue
		}
		h = append(h, rr)
	}
	heap.Init(&h)
	for len(h) > 0 {
		rr := h[0]
		out = append(out, rr.cur)
		ok, err := rr.next()
		if err != nil {
			return stored, added, fmt.Errorf("read a sorted run: %w", err)
		}
		if ok {
			heap.Fix(&h, 0)
		} else {
			rr.f.Close()
			heap.Pop(&h)
		}
		if len(out) == batch {
			if err := flush(); err != nil {
				return stored, added, err
			}
		}
	}
	return stored, added, flush()
}

// Close removes the spilled runs.
func (l *BulkLoader) Close() error {
	var errs []error
	for _, name := range l.runs {
		if err := os.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	l.runs, l.arena, l.offs = nil, nil, nil
	return errors.Join(errs...)
}
