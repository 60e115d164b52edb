package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"
)

// TestBulkLoaderMatchesUpsert: records added to a BulkLoader with small
// runs (many spilled files, duplicates within and across runs, URLs that
// were stored before) leave the store as Upserts of the same records in
// the same order would, ids follow URL order for the new URLs, and Close
// removes every run.
func TestBulkLoaderMatchesUpsert(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	at := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	var recs []URL
	for i := range 3000 {
		n := rng.IntN(1500)
		recs = append(recs, URL{URL: fmt.Sprintf("https://h%d.example/p/%d", n%37, n), Host: fmt.Sprintf("h%d.example", n%37),
			Weight: float64(1 + i%5), Mode: "freshness", Selector: fmt.Sprintf("s%d", i), AddedAt: at.Add(time.Duration(i) * time.Second)})
	}
	old := recs[:100:100] // stored before the bulk load
	bulk, want, runs := open(t, t.TempDir()), open(t, t.TempDir()), t.TempDir()
	for _, db := range []*DB{bulk, want} {
		if _, err := db.Upsert(old); err != nil {
			t.Fatal(err)
		}
	}
	// One Upsert applies its records in the order given (a stable sort by
	// URL), as one Upsert a record would.
	wantAdded, err := want.Upsert(recs[100:])
	if err != nil {
		t.Fatal(err)
	}
	l := bulk.NewBulkLoader(runs, 8<<10)
	for _, r := range recs[100:] {
		if err := l.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	if files, _ := os.ReadDir(runs); len(files) < 5 {
		t.Fatalf("%d runs spilled, want several", len(files))
	}
	var batches int
	stored, added, err := l.Load(context.Background(), 97, func([]URL) { batches++ })
	if err != nil {
		t.Fatal(err)
	}
	if stored != len(recs)-100 || added != wantAdded || batches != (stored+96)/97 {
		t.Errorf("stored %d, added %d in %d batches; want %d, %d", stored, added, batches, len(recs)-100, wantAdded)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if files, _ := os.ReadDir(runs); len(files) != 0 {
		t.Errorf("%d run files left after Close", len(files))
	}
	all := func(db *DB) []URL {
		var out []URL
		if err := db.ForEach(func(u URL) error { out = append(out, u); return nil }); err != nil {
			t.Fatal(err)
		}
		return out
	}
	got, exp := all(bulk), all(want)
	if !reflect.DeepEqual(got, exp) {
		t.Fatalf("bulk load left %d records, Upserts %d; first difference:\n%s", len(got), len(exp), firstDiff(got, exp))
	}
	// New URLs got their ids in URL order: the host listing of a host
	// (id order) is in URL order for the URLs the bulk load added.
	page, err := bulk.ListURLs(Query{Host: "h3.example", Limit: MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	var added3 []string
	for _, u := range page.URLs {
		if !slices.ContainsFunc(old, func(o URL) bool { return o.URL == u.URL }) {
			added3 = append(added3, u.URL)
		}
	}
	if len(added3) < 10 || !slices.IsSorted(added3) {
		t.Errorf("host listing of the bulk-added URLs not in URL order: %v", added3)
	}
}

func firstDiff(a, b []URL) string {
	for i := range min(len(a), len(b)) {
		if !reflect.DeepEqual(a[i], b[i]) {
			return fmt.Sprintf("%+v\n%+v", a[i], b[i])
		}
	}
	return "one is a prefix of the other"
}

// TestBulkLoaderStops: a cancelled load keeps the batches committed before
// and counts them.
func TestBulkLoaderStops(t *testing.T) {
	db := open(t, t.TempDir())
	l := db.NewBulkLoader(t.TempDir(), 1<<10)
	defer l.Close()
	for i := range 500 {
		if err := l.Add(URL{URL: fmt.Sprintf("https://a.example/%04d", i), Host: "a.example", Weight: 1, Mode: "freshness"}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	batches := 0
	stored, added, err := l.Load(ctx, 40, func([]URL) {
		if batches++; batches == 3 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) || stored != 120 || added != 120 {
		t.Fatalf("Load: stored %d, added %d, %v; want 120, 120 and the cancellation", stored, added, err)
	}
	n := 0
	if err := db.ForEach(func(u URL) error {
		if want := fmt.Sprintf("https://a.example/%04d", n); u.URL != want {
			return fmt.Errorf("record %d is %s, want %s", n, u.URL, want)
		}
		n++
		return nil
	}); err != nil || n != 120 {
		t.Fatalf("%d records stored, %v; want the first 120", n, err)
	}
}

// TestCleanCloseMarker: a clean close leaves a marker that lets the next
// open skip the page walk; a writable open removes it (so a crash leaves
// none); a file changed after the close, or a copy without the marker, is
// walked again and its damage found; Check walks whatever the marker says.
func TestCleanCloseMarker(t *testing.T) {
	dir := t.TempDir()
	path := buildStore(t, dir, 200)
	if !closedCleanly(path) {
		t.Fatal("no valid marker after a clean close")
	}
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cleanPath(path)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the marker is still there while the store is open for writing: %v", err)
	}
	if _, err := db.Upsert([]URL{{URL: "https://new.example/", Host: "new.example"}}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if !closedCleanly(path) {
		t.Fatal("no valid marker after the second clean close")
	}
	rep, err := Check(path)
	if err != nil {
		t.Fatal(err)
	}
	ps := int64(rep.PageSize)

	// Damage pages in place: the marker no longer matches (the file's
	// time changed), so the open walks and refuses.
	damaged := filepath.Join(t.TempDir(), FileName)
	copyFile(t, path, damaged, func(b []byte) []byte { return b })
	if err := markClean(damaged); err != nil {
		t.Fatal(err)
	}
	if !closedCleanly(damaged) {
		t.Fatal("the copy's own marker does not match")
	}
	f, err := os.OpenFile(damaged, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.Stat()
	page := make([]byte, ps)
	for i := range page {
		page[i] = 0xA5
	}
	for p := int64(2); p < int64(rep.Pages); p += 5 {
		if _, err := f.WriteAt(page, p*ps); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	later := st.ModTime().Add(time.Second)
	if err := os.Chtimes(damaged, later, later); err != nil {
		t.Fatal(err)
	}
	if closedCleanly(damaged) {
		t.Fatal("a file changed after its clean close still matches its marker")
	}
	if db2, err := Open(damaged, Options{}); !errors.Is(err, ErrCorrupt) {
		if err == nil {
			db2.Close()
		}
		t.Fatalf("open of a file damaged after its clean close: %v, want ErrCorrupt", err)
	}

	// Check walks even with a marker that matches the damaged file.
	if err := markClean(damaged); err != nil {
		t.Fatal(err)
	}
	if !closedCleanly(damaged) {
		t.Fatal("the new marker does not match")
	}
	if _, err := Check(damaged); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Check of a damaged file with a matching marker: %v, want ErrCorrupt", err)
	}

	// A truncated file does not match its marker.
	trunc := filepath.Join(t.TempDir(), FileName)
	copyFile(t, path, trunc, func(b []byte) []byte { return b })
	if err := markClean(trunc); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(trunc, int64(rep.Pages-1)*ps); err != nil {
		t.Fatal(err)
	}
	if closedCleanly(trunc) {
		t.Error("a truncated file matches its marker")
	}
	if _, err := Open(trunc, Options{}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("open of a truncated file: %v, want ErrCorrupt", err)
	}
}

// TestCleanCloseWritesTheFreeList: the last commit of a clean close writes
// bbolt's free list, so that the next open reads it instead of walking
// every page; the first commit after that open drops it again, as every
// commit does (NoFreelistSync), and the file stays whole either way.
func TestCleanCloseWritesTheFreeList(t *testing.T) {
	dir := t.TempDir()
	path := buildStore(t, dir, 300)
	freelistOf := func() uint64 {
		t.Helper()
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		m, err := readMeta(f, st.Size())
		if err != nil {
			t.Fatal(err)
		}
		return m.freelist
	}
	if freelistOf() == noFreelist {
		t.Fatal("no free list written by the clean close")
	}
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Upsert([]URL{{URL: "https://new.example/", Host: "new.example"}}); err != nil {
		t.Fatal(err)
	}
	if got := freelistOf(); got != noFreelist {
		t.Fatalf("a commit after the open left the free list at page %d; commits while open write none", got)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if freelistOf() == noFreelist {
		t.Fatal("no free list written by the second clean close")
	}
	rep, err := Check(path)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("check after two clean closes: %+v", rep)
	}
	// A read-only open changes nothing.
	ro, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	if freelistOf() == noFreelist {
		t.Fatal("a read-only open dropped the free list")
	}
}
