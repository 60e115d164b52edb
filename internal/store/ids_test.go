package store

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestURLsByID: every stored URL is spelled by its id, a deleted one's id
// and an unknown id are skipped, and URLIDs gives 0 for a URL not stored.
func TestURLsByID(t *testing.T) {
	db, err := OpenDir(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
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
	db, err := OpenDir(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	const n = 100_000
	batch := make([]URL, 0, 10_000)
	var urls []string
	for i := range n {
		u := fmt.Sprintf("http://h%03d.example/page/%07d/some-slug", i%1000, i)
		urls = append(urls, u)
		batch = append(batch, URL{URL: u, Host: fmt.Sprintf("h%03d.example", i%1000), Weight: 1, Mode: "freshness"})
		if len(batch) == cap(batch) {
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
