package store

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func open(t *testing.T, dir string) *DB {
	t.Helper()
	db, err := OpenDir(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func TestUpsertKeepsHistory(t *testing.T) {
	db := open(t, t.TempDir())
	defer db.Close()
	added, err := db.Upsert([]URL{{URL: "http://a.com/", Host: "a.com", Weight: 1, Mode: "freshness"}, {URL: "http://b.com/", Host: "b.com", Weight: 1}})
	if err != nil || added != 2 {
		t.Fatalf("added %d, %v", added, err)
	}
	if _, err := db.Fold("t1", func(tx *Tx) error {
		u, _, _ := tx.Get("http://a.com/")
		u.Fetches, u.Hash = 3, "h"
		return tx.Put(u)
	}); err != nil {
		t.Fatal(err)
	}
	added, err = db.Upsert([]URL{{URL: "http://a.com/", Host: "a.com", Weight: 5, Selector: "h1"}})
	if err != nil || added != 0 {
		t.Fatalf("re-seed added %d, %v", added, err)
	}
	u, _ := db.Get("http://a.com/")
	if u.Weight != 5 || u.Selector != "h1" || u.Fetches != 3 || u.Hash != "h" {
		t.Errorf("re-seed should update seed fields and keep history: %+v", u)
	}
	if n, _ := db.count(); n != 2 {
		t.Errorf("count %d, want 2 (no duplicates)", n)
	}
}

func TestFoldIsIdempotent(t *testing.T) {
	db := open(t, t.TempDir())
	defer db.Close()
	if _, err := db.Upsert([]URL{{URL: "http://a.com/", Host: "a.com", Weight: 1}}); err != nil {
		t.Fatal(err)
	}
	inc := func(tx *Tx) error {
		u, _, _ := tx.Get("http://a.com/")
		u.Fetches++
		if _, err := tx.AddChange(Change{URL: u.URL, At: time.Now()}); err != nil {
			return err
		}
		return tx.Put(u)
	}
	for range 3 {
		if _, err := db.Fold("task-1", inc); err != nil {
			t.Fatal(err)
		}
	}
	applied, err := db.FoldMany([]string{"task-1", "task-2", "task-2"}, func(i int, tx *Tx) error { return inc(tx) })
	if err != nil {
		t.Fatal(err)
	}
	if applied[0] || !applied[1] || applied[2] {
		t.Errorf("applied %v, want [false true false]", applied)
	}
	u, _ := db.Get("http://a.com/")
	ch, _ := db.Changes(0, 10)
	if u.Fetches != 2 || len(ch) != 2 {
		t.Errorf("fetches %d, changes %d; want 2 and 2 (each task folded once)", u.Fetches, len(ch))
	}
	// A failing fold leaves nothing behind, not even its mark.
	boom := errors.New("boom")
	if _, err := db.Fold("task-3", func(tx *Tx) error { _ = inc(tx); return boom }); !errors.Is(err, boom) {
		t.Fatalf("err %v", err)
	}
	if ok, _ := db.folded("task-3"); ok {
		t.Error("a failed fold was marked folded")
	}
	if u, _ := db.Get("http://a.com/"); u.Fetches != 2 {
		t.Errorf("a failed fold changed the record: %d", u.Fetches)
	}
}

func TestVersionsAndRestart(t *testing.T) {
	dir := t.TempDir()
	db := open(t, dir)
	urls := []string{"http://a.com/x", "http://a.com/x2", "http://a.com/"}
	for _, u := range urls {
		if _, err := db.Upsert([]URL{{URL: u, Host: "a.com", Weight: 1, Mode: "capture"}}); err != nil {
			t.Fatal(err)
		}
	}
	due := time.Now().Add(time.Hour).Round(0)
	for i := range 3 {
		if _, err := db.Fold("v"+string(rune('a'+i)), func(tx *Tx) error {
			for _, u := range urls {
				if _, err := tx.AddVersion(Version{URL: u, Hash: u + string(rune('a'+i)), Text: "text " + string(rune('a'+i))}); err != nil {
					return err
				}
			}
			r, _, _ := tx.Get("http://a.com/x")
			r.NextDue, r.Interval = due, time.Minute
			return tx.Put(r)
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = open(t, dir) // restart
	defer db.Close()
	for _, u := range urls {
		vs, err := db.Versions(u)
		if err != nil || len(vs) != 3 {
			t.Fatalf("%s: %d versions (%v)", u, len(vs), err)
		}
		for i, v := range vs {
			if v.Seq != uint64(i+1) || v.Text != "" || !strings.HasPrefix(v.Hash, u) {
				t.Errorf("%s version %d: %+v", u, i, v)
			}
		}
	}
	v, err := db.Version("http://a.com/x", 2)
	if err != nil || v.Text != "text b" {
		t.Errorf("version 2: %+v %v", v, err)
	}
	if _, err := db.Version("http://a.com/x", 9); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing version: %v", err)
	}
	r, _ := db.Get("http://a.com/x")
	if !r.NextDue.Equal(due) || r.Interval != time.Minute {
		t.Errorf("schedule not restored: %v %v", r.NextDue, r.Interval)
	}
}

// A second Open of a held store gives up after its Timeout with ErrLocked
// instead of waiting for the lock for ever. The deadline only bounds a
// broken run; how long the Timeout takes is not asserted.
func TestSecondOpenFailsFast(t *testing.T) {
	dir := t.TempDir()
	db := open(t, dir)
	defer db.Close()
	done := make(chan error, 1)
	go func() {
		db2, err := Open(filepath.Join(dir, FileName), Options{Timeout: 200 * time.Millisecond})
		if err == nil {
			db2.Close()
		}
		done <- err
	}()
	deadline := time.NewTimer(time.Minute)
	defer deadline.Stop()
	select {
	case err := <-done:
		if !errors.Is(err, ErrLocked) {
			t.Fatalf("second open: %v, want ErrLocked", err)
		}
	case <-deadline.C:
		t.Fatal("second open still waiting for the lock after a minute: Timeout is not applied")
	}
}

func TestForEachVisitsAllInChunks(t *testing.T) {
	db := open(t, t.TempDir())
	defer db.Close()
	n := scanChunk*2 + 17
	batch := make([]URL, 0, 1000)
	for i := range n {
		batch = append(batch, URL{URL: fmt.Sprintf("http://h.com/%c/%d", 'a'+i%26, i), Host: "h.com", Weight: 1})
		if len(batch) == cap(batch) {
			if _, err := db.Upsert(batch); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	if _, err := db.Upsert(batch); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	if err := db.ForEach(func(u URL) error { seen[u.URL] = true; return nil }); err != nil {
		t.Fatal(err)
	}
	if len(seen) != n {
		t.Errorf("ForEach saw %d of %d", len(seen), n)
	}
}

// TestForEachBatchSeesEveryRecordOnce: the pipelined scan hands over every
// record once, in key order, across chunk boundaries, and stops at fn's
// error; so does the restart's scan (ForEachScheduleBatch), whose
// records hold the schedule's fields as the full scan's do, and no
// validators.
func TestForEachBatchSeesEveryRecordOnce(t *testing.T) {
	db := open(t, t.TempDir())
	defer db.Close()
	var recs []URL
	n := 2*scanChunk + 17
	for i := range n {
		recs = append(recs, URL{URL: fmt.Sprintf("http://h%d.example/%06d", i%7, i), Host: fmt.Sprintf("h%d.example", i%7), Weight: 1, Mode: "freshness",
			ETag: fmt.Sprintf(`"%d"`, i), Hash: fmt.Sprintf("%064x", i), Rate: float64(i+1) / 86400, Interval: time.Duration(i+1) * time.Minute})
	}
	if _, err := db.Upsert(recs); err != nil {
		t.Fatal(err)
	}
	want := make([]string, 0, n)
	for _, r := range recs {
		want = append(want, r.URL)
	}
	slices.Sort(want)
	var full []URL
	if err := db.ForEachBatch(func(b []URL) error {
		full = append(full, b...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var lean []URL
	if err := db.ForEachScheduleBatch(func(b []URL) error {
		lean = append(lean, b...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string][]URL{"ForEachBatch": full, "ForEachScheduleBatch": lean} {
		urls := make([]string, len(got))
		for i, u := range got {
			urls[i] = u.URL
		}
		if !slices.Equal(urls, want) {
			t.Fatalf("%s: %d URLs seen, want %d (in key order)", name, len(urls), len(want))
		}
	}
	for i := range full {
		if full[i].ETag == "" || full[i].Hash == "" {
			t.Fatalf("%s: the full scan lost its validators", full[i].URL)
		}
		w := full[i]
		w.ETag, w.Hash = "", ""
		if !reflect.DeepEqual(lean[i], w) {
			t.Fatalf("restart scan of %s:\n got %+v\nwant %+v", w.URL, lean[i], w)
		}
	}
	stop := errors.New("stop")
	for name, scan := range map[string]func(func([]URL) error) error{"ForEachBatch": db.ForEachBatch, "ForEachScheduleBatch": db.ForEachScheduleBatch} {
		calls := 0
		// Stopped early, the scan's reader is reading the next chunk:
		// it must be done with its transaction when the scan returns.
		if err := scan(func([]URL) error { calls++; return stop }); !errors.Is(err, stop) || calls != 1 {
			t.Errorf("%s: fn's error: %v after %d calls", name, err, calls)
		}
		if open := db.bolt.Stats().OpenTxN; open != 0 {
			t.Errorf("%s: %d read transactions still open after it returned", name, open)
		}
	}
}

// TestURLCount checks the count a restart sizes its schedule with
// against the records: after adds, a re-seed of a known URL and a
// deletion, and after a reopen.
func TestURLCount(t *testing.T) {
	dir := t.TempDir()
	db := open(t, dir)
	want := func(n int) {
		t.Helper()
		got, err := db.URLCount()
		if err != nil || got != n {
			t.Fatalf("URLCount = %d, %v; want %d", got, err, n)
		}
		if walked, _ := db.count(); walked != n {
			t.Fatalf("the bucket holds %d records, want %d", walked, n)
		}
	}
	want(0)
	var recs []URL
	for i := range 25 {
		recs = append(recs, URL{URL: fmt.Sprintf("http://h%d.example/p/%d", i%3, i), Host: fmt.Sprintf("h%d.example", i%3), Weight: 1})
	}
	if _, err := db.Upsert(recs); err != nil {
		t.Fatal(err)
	}
	want(25)
	if _, err := db.Upsert(recs[:5]); err != nil {
		t.Fatal(err)
	}
	want(25)
	if _, err := db.Delete([]string{recs[0].URL, recs[7].URL}, true, time.Now()); err != nil {
		t.Fatal(err)
	}
	want(23)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = open(t, dir)
	defer db.Close()
	want(23)
}
