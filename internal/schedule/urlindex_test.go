package schedule

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// The index agrees with a map under random adds, removals and lookups:
// through growth, through removals in probe runs that wrap around the end
// of the table (every entry left is still found after each removal, so
// the backward shift never strands one), and through the compaction of
// the paths' chunks, after which every entry still has its URL; every
// slot's tag stays its entry's. The URLs
// include ones with no scheme, no path, and paths longer than a chunk
// takes.
func TestURLIndexMatchesMap(t *testing.T) {
	for seed := range uint64(3) {
		rng := rand.New(rand.NewPCG(seed, 7))
		ents := &entryStore{}
		x := newURLIndex(ents)
		want := map[string]*entry{}
		keys := make([]string, 400)
		for i := range keys {
			switch i % 10 {
			case 0:
				keys[i] = fmt.Sprintf("https://h%d.example", i)
			case 1:
				keys[i] = fmt.Sprintf("no-scheme-%d", i)
			case 2:
				keys[i] = fmt.Sprintf("http://h%d.example/%d/", i%7, i) + strings.Repeat("x", chunkSize/8)
			case 3, 4:
				// Long shared prefixes, more than a record's
				// shared-length byte can say.
				keys[i] = fmt.Sprintf("http://h%d.example/", i%7) + strings.Repeat("s", 100+rng.IntN(300)) + fmt.Sprint(i)
			default:
				keys[i] = fmt.Sprintf("http://h%d.example/%d/", i%7, i) + strings.Repeat("p", rng.IntN(chunkSize/32))
			}
		}
		compactions := 0
		for op := range 30_000 {
			k := keys[rng.IntN(len(keys))]
			switch rng.IntN(3) {
			case 0:
				if _, ok := want[k]; !ok {
					e := ents.alloc()
					want[k] = e
					x.put(e, k)
				}
			case 1:
				if e, ok := want[k]; ok {
					delete(want, k)
					dead := x.dead
					x.remove(e)
					ents.release(e)
					if x.dead < dead {
						compactions++
					}
				}
			default:
				e, ok := x.get(k)
				if w, wok := want[k]; ok != wok || e != w {
					t.Fatalf("seed %d op %d: get(%.40s) = %p %v, want %p %v", seed, op, k, e, ok, w, wok)
				}
			}
			if x.len() != len(want) {
				t.Fatalf("seed %d op %d: len %d, want %d", seed, op, x.len(), len(want))
			}
			if op%500 == 0 {
				for k, w := range want {
					if e, ok := x.get(k); !ok || e != w || x.url(e) != k {
						t.Fatalf("seed %d op %d: %.40s lost", seed, op, k)
					}
				}
				// Every slot's tag is its entry's (through growth and
				// the backward shifts of removals).
				for i, id := range x.slots {
					if e := ents.at(id); id != 0 && x.tags[i] != tagOf(x.hashOf(e)) {
						t.Fatalf("seed %d op %d: slot %d has tag %#x, its entry %#x", seed, op, i, x.tags[i], tagOf(x.hashOf(e)))
					}
				}
			}
		}
		if compactions == 0 {
			t.Fatalf("seed %d: the chunks were never compacted", seed)
		}
	}
}

// TestPathsFrontCoded: the paths of one host's URLs added in key order,
// as a restart adds them, take much less than their bytes in the chunks
// (each shares most of its path with the one before), and every URL is
// found and read back whole, also after half of them are removed and the
// chunks compacted.
func TestPathsFrontCoded(t *testing.T) {
	ents := &entryStore{}
	x := newURLIndex(ents)
	var urls []string
	for i := range 5000 {
		urls = append(urls, fmt.Sprintf("https://www.example.com/news/2026/%02d/story-%05d.html", 1+i/500, i))
	}
	pathBytes := 0
	byURL := map[string]*entry{}
	for _, u := range urls {
		e := ents.alloc()
		x.put(e, u)
		byURL[u] = e
		pathBytes += len(u) - originEnd(u)
	}
	stored := 0
	for _, c := range x.chunks {
		stored += len(c)
	}
	if stored*2 > pathBytes {
		t.Fatalf("%d bytes of paths stored in %d bytes", pathBytes, stored)
	}
	check := func() {
		t.Helper()
		for u, want := range byURL {
			if e, ok := x.get(u); !ok || e != want || x.url(e) != u {
				t.Fatalf("%s not found or read back", u)
			}
		}
	}
	check()
	for i, u := range urls {
		if i%2 == 1 {
			e := byURL[u]
			delete(byURL, u)
			x.remove(e)
			ents.release(e)
		}
	}
	// Too few bytes removed for remove to compact: compact now.
	x.compact()
	check()
	t.Logf("%d bytes of paths stored in %d bytes", pathBytes, stored)
}

// BenchmarkURLIndexAdd adds URLs as a restart does (each looked up first,
// then put) to an index sized for them, then looks each up once: the
// cost of a lookup is in reading the entries its probe run holds.
func BenchmarkURLIndexAdd(b *testing.B) {
	const n = 1 << 20
	urls := make([]string, n)
	for i := range urls {
		urls[i] = fmt.Sprintf("https://www.site-%d.example.com/news/2026/05/%d-market-update", i%10_000, i)
	}
	b.ReportAllocs()
	for b.Loop() {
		ents := &entryStore{}
		ents.reserve(n)
		x := newURLIndex(ents)
		x.reserve(n)
		for _, u := range urls {
			if _, ok := x.get(u); !ok {
				x.put(ents.alloc(), u)
			}
		}
		for _, u := range urls {
			if _, ok := x.get(u); !ok {
				b.Fatalf("%s lost", u)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(2*n), "ns/lookup")
}
