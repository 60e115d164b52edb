package store

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"
)

// BenchmarkListURLs pages through a store of FRESHCRAWL_BENCH_URLS URLs
// (default 1,000,000) on 1000 hosts, the way the console and `freshcrawl
// urls` do:
//
//	FRESHCRAWL_BENCH_URLS=1000000 go test ./store -run '^$' -bench ListURLs -benchtime 200x
func BenchmarkListURLs(b *testing.B) {
	n := 1_000_000
	if v := os.Getenv("FRESHCRAWL_BENCH_URLS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	db, err := OpenDir(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	rng := rand.New(rand.NewPCG(1, 1))
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	start := time.Now()
	batch := make([]URL, 0, 10000)
	for i := range n {
		host := fmt.Sprintf("h%03d.example", rng.IntN(1000))
		u := URL{URL: fmt.Sprintf("http://%s/page/%07d", host, i), Host: host, Weight: 1, Mode: "freshness",
			Rate: rng.ExpFloat64() / 86400, NextDue: base.Add(time.Duration(rng.IntN(86400)) * time.Second), Changes: int64(rng.IntN(50))}
		if i%10 == 0 {
			u.Mode = "capture"
		}
		if i%1000 == 0 {
			u.Paused = true
		}
		batch = append(batch, u)
		if len(batch) == cap(batch) || i == n-1 {
			if _, err := db.Upsert(batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	b.Logf("%d URLs stored and indexed in %s", n, time.Since(start).Round(time.Millisecond))
	cases := []struct {
		name string
		q    Query
	}{
		{"first-page", Query{}},
		{"host", Query{Host: "h500.example"}},
		{"prefix", Query{Prefix: "http://h250.example/"}},
		{"sort-rate-desc", Query{Sort: SortRate, Desc: true}},
		{"sort-next-due", Query{Sort: SortNextDue}},
		{"capture-by-changes", Query{Mode: "capture", Sort: SortChanges, Desc: true}},
		{"paused", Query{State: StatePaused}},
		{"active-by-rate", Query{State: StateActive, Sort: SortRate}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			q := c.q
			q.Limit = 50
			for b.Loop() {
				p, err := db.ListURLs(q)
				if err != nil {
					b.Fatal(err)
				}
				if len(p.URLs) == 0 {
					b.Fatal("empty page")
				}
				// Walk forward page after page, starting over at the end, so
				// the cost is that of pages deep in the listing too.
				q.After = p.Next
			}
		})
	}
}
