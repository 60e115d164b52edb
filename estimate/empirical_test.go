package estimate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

// refitStates are n states as a scheduler's refit sample holds them:
// Table 6 rates, 2 to 21 fetches each at 0.3 to 30 days, so that many
// likelihoods are flat toward an end of the grid (the silent fit's case).
func refitStates(n int, seed uint64) []State {
	rng := rand.New(rand.NewPCG(seed, 5))
	rates := []float64{1, 1.0 / 7, 1.0 / 30, 1.0 / 90, 1.0 / 365}
	states := make([]State, n)
	for i := range states {
		states[i] = randomState(rng, rates[rng.IntN(len(rates))], 2+rng.IntN(20), i%3 == 0)
	}
	return states
}

// TestFitGridPriorSameOnAnyCores: the E-step splits its rows and then its
// nodes between the cores, and every sum keeps the order of a single pass,
// so a fit large enough to be split is the same bit for bit on one, two
// and three cores, plain and silent, cold and warm-started.
func TestFitGridPriorSameOnAnyCores(t *testing.T) {
	g := testGrid(t)
	base, err := LogNormalGridPrior(g, 0.25, 3)
	if err != nil {
		t.Fatal(err)
	}
	states := refitStates(3000, 1)
	if 3000*g.N < parallelLikelihoods {
		t.Fatalf("%d states on %d nodes are not split between cores", len(states), g.N)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	fit := func(procs int, silent bool, start GridPrior) []float64 {
		runtime.GOMAXPROCS(procs)
		p, used, err := fitGridPrior("test", base, start, states, 1, 40, silent)
		if err != nil || used != len(states) {
			t.Fatalf("%d cores: used %d of %d, %v", procs, used, len(states), err)
		}
		return p.Weights()
	}
	warm := randomPrior(t, rand.New(rand.NewPCG(3, 3)), g)
	plain, silent := fit(2, false, GridPrior{}), fit(2, true, GridPrior{})
	if same := func() bool {
		for k := range plain {
			if plain[k] != silent[k] {
				return false
			}
		}
		return true
	}(); same {
		t.Fatal("the silent fit is the plain one: no state has a flat likelihood, and the silent E-step goes untested")
	}
	for _, silent := range []bool{false, true} {
		for _, start := range []GridPrior{{}, warm} {
			one := fit(1, silent, start)
			for _, procs := range []int{2, 3} {
				got := fit(procs, silent, start)
				for k := range one {
					if math.Float64bits(got[k]) != math.Float64bits(one[k]) {
						t.Fatalf("silent %v, warm %v: node %d: %v on %d cores, %v on one", silent, start.Valid(), k, got[k], procs, one[k])
					}
				}
			}
		}
	}
}

// BenchmarkFitGridPrior is the first refit of a plan: 300 EM iterations
// over the 20 000 states of the refit sample, the plan's fit and the
// model's (silent) one.
func BenchmarkFitGridPrior(b *testing.B) {
	g := testGrid(b)
	base, err := LogNormalGridPrior(g, 0.25, 3)
	if err != nil {
		b.Fatal(err)
	}
	states := refitStates(20_000, 2)
	for _, silent := range []bool{false, true} {
		b.Run(fmt.Sprintf("silent=%v", silent), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := fitGridPrior("bench", base, GridPrior{}, states, 1, 300, silent); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
