package store

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// buildStore writes a store with every kind of record and page: many URL
// records (branch pages), large contents (overflow pages), versions,
// changes, hosts, fold marks and an empty bucket (inline).
func buildStore(t *testing.T, dir string, urls int) string {
	t.Helper()
	db := open(t, dir)
	defer db.Close()
	var recs []URL
	for i := range urls {
		recs = append(recs, URL{URL: fmt.Sprintf("http://h%d.example/p/%d", i%7, i), Host: fmt.Sprintf("h%d.example", i%7), Weight: 1, Mode: "freshness"})
	}
	if _, err := db.Upsert(recs); err != nil {
		t.Fatal(err)
	}
	// One transaction (one fsync) for all the folds: the tests that build
	// stores run under -race on a shared machine.
	ids := make([]string, urls)
	for i := range ids {
		ids[i] = fmt.Sprintf("task-%d", i)
	}
	if _, err := db.FoldMany(ids, func(i int, tx *Tx) error {
		u := recs[i].URL
		r, _, err := tx.Get(u)
		if err != nil {
			return err
		}
		r.Fetches++
		r.Hash = fmt.Sprintf("h%d", i)
		text := strings.Repeat(fmt.Sprintf("text of %d ", i), 1+(i%5)*(i%5)*40)
		if i%50 == 0 {
			text = strings.Repeat("big ", 5000) // several pages: overflow
		}
		if err := tx.SetContent(u, text); err != nil {
			return err
		}
		if i%3 == 0 {
			if _, err := tx.AddVersion(Version{URL: u, CapturedAt: time.Now(), Before: time.Now(), Hash: r.Hash, Text: text}); err != nil {
				return err
			}
			if _, err := tx.AddChange(Change{URL: u, At: time.Now(), Hash: r.Hash}); err != nil {
				return err
			}
		}
		if err := tx.PutHost(Host{Host: r.Host}); err != nil {
			return err
		}
		return tx.Put(r)
	}); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, FileName)
}

// readAll exercises every read path on db; it may fail, it must not crash.
func readAll(db *DB) error {
	var errs []error
	n := 0
	errs = append(errs, db.ForEach(func(u URL) error {
		n++
		if _, err := db.Versions(u.URL); err != nil {
			return err
		}
		_, err := db.Content(u.URL)
		return err
	}))
	_, err := db.Changes(0, 1<<20)
	errs = append(errs, err)
	_, err = db.Hosts()
	errs = append(errs, err)
	errs = append(errs, db.FoldMarks(func(string, time.Time) error { return nil }))
	_, err = db.Backup(io.Discard)
	errs = append(errs, err)
	return errors.Join(errs...)
}

func copyFile(t *testing.T, src, dst string, mutate func([]byte) []byte) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, mutate(bytes.Clone(b)), 0o600); err != nil {
		t.Fatal(err)
	}
}

// A valid store passes the open check, bbolt's own check and the record
// check, and a good store and its backup agree.
func TestCheckAcceptsValidStore(t *testing.T) {
	path := buildStore(t, t.TempDir(), 600)
	r, err := Check(path)
	if err != nil {
		t.Fatalf("Check of a valid store: %v (%+v)", err, r)
	}
	if r.Records["urls"] != 600 || r.Records["folded"] != 600 || r.Records["versions"] != 200 || r.StoreID == "" || r.Schema != formatVersion {
		t.Errorf("report %+v: want 600 URLs, 600 fold marks, 200 versions, a store id and schema %d", r, formatVersion)
	}
	if r.Pages < 100 {
		t.Errorf("only %d pages: the store should span branch and overflow pages", r.Pages)
	}
}

// A store cut short anywhere (every page boundary, and inside pages) is
// refused at open with ErrCorrupt, or, if the cut is past what its last
// transaction uses, opens and reads in full. Nothing panics or faults.
func TestTruncatedStoreNeverCrashes(t *testing.T) {
	src := buildStore(t, t.TempDir(), 300)
	st, _ := os.Stat(src)
	r, err := Check(src)
	if err != nil {
		t.Fatal(err)
	}
	used := int64(r.Pages) * int64(r.PageSize)
	dir := t.TempDir()
	var cuts []int64
	// Every page boundary and mid-page of the first pages (the header
	// pages, the free list, the roots), then about 24 more spread over the
	// file: each cut past the pages in use opens and reads the whole store.
	ps := int64(r.PageSize)
	pages := (st.Size() + ps - 1) / ps
	stride := max(1, pages/24)
	for p := int64(0); p < pages; p++ {
		if p < 8 || p%stride == 0 || p == pages-1 {
			cuts = append(cuts, p*ps, p*ps+ps/2)
		}
	}
	cuts = append(cuts, 1, 100, st.Size()/2, st.Size()-1)
	refused := 0
	for i, cut := range cuts {
		path := filepath.Join(dir, fmt.Sprintf("cut-%d.db", i))
		copyFile(t, src, path, func(b []byte) []byte { return b[:cut] })
		db, err := Open(path, Options{})
		switch {
		case cut == 0:
			// An empty file is a new store.
			if err != nil {
				t.Errorf("cut at 0: %v, want a new store", err)
			} else {
				db.Close()
			}
		case err != nil:
			refused++
			if !errors.Is(err, ErrCorrupt) {
				t.Errorf("cut at %d of %d: %v, want ErrCorrupt", cut, st.Size(), err)
			}
			if cut < used && !strings.Contains(err.Error(), "restore a backup") {
				t.Errorf("cut at %d: error %q does not say how to recover", cut, err)
			}
		case cut < used:
			t.Errorf("cut at %d opened, but the last transaction uses %d bytes", cut, used)
			db.Close()
		default:
			if err := readAll(db); err != nil {
				t.Errorf("cut at %d (past the %d bytes in use): %v", cut, used, err)
			}
			db.Close()
		}
		os.Remove(path)
	}
	if refused < len(cuts)/2 {
		t.Errorf("only %d of %d cuts refused", refused, len(cuts))
	}
}

// A backup taken while folds go on is a consistent store that passes Check
// and holds every record committed before it started.
func TestBackupWhileWriting(t *testing.T) {
	dir := t.TempDir()
	path := buildStore(t, dir, 200)
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			_, err := db.Upsert([]URL{{URL: fmt.Sprintf("http://late.example/%d", i), Host: "late.example", Weight: 1}})
			if err != nil {
				t.Error(err)
				return
			}
		}
	}()
	out := filepath.Join(t.TempDir(), "backup.db")
	err = WriteFileAtomic(out, func(w io.Writer) error {
		_, err := db.Backup(w)
		return err
	})
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	r, err := Check(out)
	if err != nil {
		t.Fatalf("backup does not check: %v", err)
	}
	if r.Records["urls"] < 200 || r.Records["folded"] != 200 {
		t.Errorf("backup %+v: want at least the 200 URLs and 200 fold marks committed before it", r)
	}
	id, _, _ := db.Identity()
	if r.StoreID != id {
		t.Errorf("backup store id %q, want the store's %q", r.StoreID, id)
	}
}

// A store taken over under a newer lease refuses the writes of the older
// holder.
func TestFenceRefusesOlderHolder(t *testing.T) {
	db := open(t, t.TempDir())
	defer db.Close()
	if _, err := db.Upsert([]URL{{URL: "http://a.example/", Host: "a.example", Weight: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := db.TakeFence(7); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Fold("t1", func(*Tx) error { return nil }); err != nil {
		t.Fatalf("fold under our own fence: %v", err)
	}
	// Another coordinator takes the store over under lease 9.
	if err := db.update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(metaFence, u64(9)) }); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Fold("t2", func(*Tx) error { return nil }); !errors.Is(err, ErrFenced) {
		t.Errorf("fold after a takeover: %v, want ErrFenced", err)
	}
	if _, err := db.Upsert([]URL{{URL: "http://b.example/", Host: "b.example", Weight: 1}}); !errors.Is(err, ErrFenced) {
		t.Errorf("upsert after a takeover: %v, want ErrFenced", err)
	}
	if err := db.TakeFence(8); !errors.Is(err, ErrFenced) {
		t.Errorf("taking an older fence: %v, want ErrFenced", err)
	}
	_, fence, err := db.Identity()
	if err != nil || fence != 9 {
		t.Errorf("fence %d, %v; want 9", fence, err)
	}
}

// A record that does not decode is reported as damage, with its key.
func TestUndecodableRecordIsCorrupt(t *testing.T) {
	db := open(t, t.TempDir())
	defer db.Close()
	if err := db.update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketURLs).Put([]byte("http://x.example/"), []byte("{not json"))
	}); err != nil {
		t.Fatal(err)
	}
	_, err := db.Get("http://x.example/")
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "http://x.example/") {
		t.Errorf("Get of a damaged record: %v, want ErrCorrupt naming the key", err)
	}
}
