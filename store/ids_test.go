package store

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestURLsByID: every stored URL is spelled by its id, a deleted one's id
// and an unknown id are skipped, and URLIDs gives 0 for a URL not stored.
func TestURLsByID(t *testing.T) {
	db := open(t, t.TempDir())
	defer db.Close()
	var recs []URL
	var urls []string
	for i := range 50 {
		u := fmt.Sprintf("http://h%d.example/p/%d", i%5, i)
		urls = append(urls, u)
		recs = append(recs, URL{URL: u, Host: fmt.Sprintf("h%d.example", i%5), Weight: 1, Mode: "freshness"})
	}
	if _, err := db.Upsert(recs); err != nil {
		t.Fatal(err)
	}
	ids, err := db.URLIDs(append(slices.Clone(urls), "http://nosuch/"))
	if err != nil {
		t.Fatal(err)
	}
	if ids[50] != 0 {
		t.Errorf("a URL not stored has id %d", ids[50])
	}
	got, err := db.Get(urls[7])
	if err != nil || got.ID != ids[7] {
		t.Errorf("Get gives id %d, URLIDs %d (%v)", got.ID, ids[7], err)
	}
	if _, err := db.Delete(urls[3:4], true, got.AddedAt); err != nil {
		t.Fatal(err)
	}
	spelled := map[int]string{}
	if err := db.URLsByID(append(ids[:50:50], 0, 1<<40), func(i int, url string) { spelled[i] = url }); err != nil {
		t.Fatal(err)
	}
	for i, u := range urls {
		if want := map[bool]string{true: u}[i != 3]; spelled[i] != want {
			t.Errorf("id %d: %q, want %q", ids[i], spelled[i], want)
		}
	}
	if len(spelled) != 49 {
		t.Errorf("%d URLs spelled, want 49", len(spelled))
	}
}

// BenchmarkURLsByID is what a dispatch costs a coordinator to spell its
// URL (schedule.URLSource): one read transaction and one id, among 100 000
// stored URLs.
func BenchmarkURLsByID(b *testing.B) {
	const n = 100_000
	db, ids := benchStore(b, n, nil)
	rng := rand.New(rand.NewPCG(1, 2))
	b.ReportAllocs()
	b.ResetTimer()
	one := make([]uint64, 1)
	for range b.N {
		one[0] = ids[rng.IntN(n)]
		if err := db.URLsByID(one, func(int, string) {}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestEstimatesByID: the estimator state stored with each URL is read by
// its id, in any order of the ids, as written by the seeding or by a
// later fold; a URL without one gives an empty state, and a deleted URL's
// id, 0 and an unknown id are skipped.
func TestEstimatesByID(t *testing.T) {
	db := open(t, t.TempDir())
	defer db.Close()
	var recs []URL
	var urls []string
	want := map[string][]byte{}
	for i := range 40 {
		u := fmt.Sprintf("http://h%d.example/p/%d", i%4, i)
		urls = append(urls, u)
		r := URL{URL: u, Host: fmt.Sprintf("h%d.example", i%4), Weight: 1, Mode: "freshness"}
		if i%3 != 0 {
			// Mostly zero bytes, as an estimator state is (stored packed).
			r.Estimate = make([]byte, 40+i)
			r.Estimate[i] = byte(i)
			want[u] = r.Estimate
		}
		recs = append(recs, r)
	}
	if _, err := db.Upsert(recs); err != nil {
		t.Fatal(err)
	}
	// A fold replaces one state.
	folded := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9}
	if _, err := db.Fold("task-1", func(tx *Tx) error {
		u, _, err := tx.Get(urls[5])
		if err != nil {
			return err
		}
		u.Estimate = folded
		return tx.Put(u)
	}); err != nil {
		t.Fatal(err)
	}
	want[urls[5]] = folded
	ids, err := db.URLIDs(urls)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Delete(urls[7:8], true, time.Now()); err != nil {
		t.Fatal(err)
	}
	// Reversed, with 0 and an unknown id among them.
	asked := append([]uint64{0, 1 << 40}, ids...)
	slices.Reverse(asked)
	got := map[int][]byte{}
	if err := db.EstimatesByID(asked, func(i int, est []byte) { got[i] = slices.Clone(est) }); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(urls)-1 {
		t.Errorf("%d states read, want %d", len(got), len(urls)-1)
	}
	for i, id := range asked {
		k := slices.Index(ids, id)
		est, ok := got[i]
		switch {
		case k < 0 || k == 7:
			if ok {
				t.Errorf("id %d (not stored) gave a state", id)
			}
		case !ok:
			t.Errorf("%s: no state read", urls[k])
		case !bytes.Equal(est, want[urls[k]]):
			t.Errorf("%s: state %v, want %v", urls[k], est, want[urls[k]])
		}
	}
}

// BenchmarkEstimatesByID is what a plan of the coordinator's scheduler
// costs the store (schedule.URLSource.Estimates): the estimator states of
// 20 000 random URLs (a plan's re-summaries; its refit sample takes as
// many more when due) among 200 000 stored with a state of 60 bytes.
func BenchmarkEstimatesByID(b *testing.B) {
	const n = 200_000
	rng := rand.New(rand.NewPCG(1, 3))
	db, ids := benchStore(b, n, func() []byte {
		est := make([]byte, 112)
		for range 60 {
			est[rng.IntN(len(est))] = byte(1 + rng.IntN(255))
		}
		return est
	})
	ask := make([]uint64, 20_000)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for i := range ask {
			ask[i] = ids[rng.IntN(n)]
		}
		read := 0
		if err := db.EstimatesByID(ask, func(int, []byte) { read++ }); err != nil {
			b.Fatal(err)
		}
		if read != len(ask) {
			b.Fatalf("%d states read, want %d", read, len(ask))
		}
	}
}

// benchStore is a store of n URLs on 1 000 hosts, each with the estimator
// state est gives (none if est is nil), closed when b ends, and their ids
// in the order added.
func benchStore(b *testing.B, n int, est func() []byte) (*DB, []uint64) {
	b.Helper()
	db, err := OpenDir(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	batch := make([]URL, 0, 10_000)
	urls := make([]string, 0, n)
	for i := range n {
		u := URL{URL: fmt.Sprintf("http://h%03d.example/page/%07d/some-slug", i%1000, i), Host: fmt.Sprintf("h%03d.example", i%1000), Weight: 1, Mode: "freshness"}
		if est != nil {
			u.Estimate = est()
		}
		urls = append(urls, u.URL)
		batch = append(batch, u)
		if len(batch) == cap(batch) || i == n-1 {
			if _, err := db.Upsert(batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	ids, err := db.URLIDs(urls)
	if err != nil {
		b.Fatal(err)
	}
	return db, ids
}
