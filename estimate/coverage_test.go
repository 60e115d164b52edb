package estimate

import (
	"math"
	"math/rand/v2"
	"testing"
)

// coverageRun is what TestPosteriorCoverage measures over a simulated
// population: how often each URL's true rate fell inside its posterior's
// central 90 % interval, and the model's freshness of copies of random
// ages (E[e^{−λa}] over each posterior) against the truth (e^{−λa} at the
// true rate).
type coverageRun struct {
	urls, inside   int
	model, truth   float64
	allChanged     int // URLs whose every fetch saw a change
	allChangedIn   int
	allChangedMod  float64
	allChangedTrue float64
}

func (c coverageRun) coverage() float64 { return float64(c.inside) / float64(c.urls) }

func (c *coverageRun) add(post RatePosterior, lambda, age float64, allChanged bool) {
	in := lambda >= post.Quantile(0.05) && lambda <= post.Quantile(0.95)
	m := post.Expect(func(l float64) float64 { return math.Exp(-l * age) })
	tr := math.Exp(-lambda * age)
	c.urls++
	c.model += m
	c.truth += tr
	if in {
		c.inside++
	}
	if allChanged {
		c.allChanged++
		c.allChangedMod += m
		c.allChangedTrue += tr
		if in {
			c.allChangedIn++
		}
	}
}

// drawRate draws a rate from p as GridPrior defines it: node k with
// probability w_k, then ln λ uniform over the node's bin.
func drawRate(rng *rand.Rand, p GridPrior) float64 {
	w := p.Weights()
	x := rng.Float64()
	k := 0
	for ; k < len(w)-1 && x >= w[k]; k++ {
		x -= w[k]
	}
	g := p.Grid()
	return math.Exp(g.U(k) + (rng.Float64()-0.5)*g.Step)
}

// TestPosteriorCoverage checks the posterior of censored observations
// (the changed bit only, fetches at irregular random intervals, as a
// peer's adaptive schedule makes them, and the scheduler's fading: a
// 90-day half-life, never under eight of the URL's intervals) by
// simulation. Rates are drawn from a known population prior (a Table 6
// mix of daily to yearly pages on a broad floor); each URL is fetched a
// random number of times at intervals drawn log-uniformly from a range,
// and its copy is looked at a random age after its last fetch. Under the
// true prior the posterior must be calibrated: its central 90 % interval
// holds the true rate for 90 % of the URLs (within sampling error), also
// among the URLs seen changed at every fetch, whose likelihood has no
// upper bound, and the model's freshness E[e^{−λa}] matches the truth on
// average. Under the prior FitGridPrior fits to the same URLs, where the
// intervals are short enough to resolve every rate of the mix, the same
// must hold within a little more. Under the model's prior
// (FitSilentGridPrior) it must hold in both cases: also with intervals of
// two weeks to three months, where FitGridPrior's intervals hold the true
// rate of only a third of the URLs seen changed at every fetch (it piles
// their mass at the slowest rate their faded data allow; not asserted,
// docs/benchmarks.md, "Model versus truth"), and the model of a crawler
// that fetches them every few weeks is too kind.
func TestPosteriorCoverage(t *testing.T) {
	const day = 86400.0
	g, err := NewLogGrid(1.0/(30*365*day), 50/day, 72)
	if err != nil {
		t.Fatal(err)
	}
	// The population: Table 6 classes at their nodes over a 5 % floor.
	w := make([]float64, g.N)
	for k := range w {
		w[k] = 0.05 / float64(g.N)
	}
	for _, c := range []struct{ rate, share float64 }{{1, 0.23}, {1.0 / 7, 0.15}, {1.0 / 30, 0.16}, {1.0 / 90, 0.16}, {1.0 / 365, 0.25}} {
		k := int(math.Round((math.Log(c.rate/day) - g.Lo) / g.Step))
		w[k] += c.share
	}
	truePrior, err := NewGridPrior(g, w)
	if err != nil {
		t.Fatal(err)
	}
	base, err := LogNormalGridPrior(g, 0.25/day, 2.5)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{MergeRatio: DefaultConfig().MergeRatio}
	for _, tc := range []struct {
		name         string
		minIv, maxIv float64 // days
		// checkFit: check the fitted prior too (the intervals resolve
		// every rate of the mix).
		checkFit bool
		seed     uint64
	}{
		// Intervals from 6 hours to two months: every class resolved.
		{name: "wide intervals", minIv: 0.25, maxIv: 60, checkFit: true, seed: 1},
		// Intervals of two weeks to three months: daily and weekly pages
		// change at nearly every fetch, so about 40 % of the URLs are
		// censored from above; the true prior still makes the posterior
		// exact.
		{name: "long intervals", minIv: 14, maxIv: 90, seed: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(tc.seed, 11))
			const urls = 3000
			states := make([]State, urls)
			rates := make([]float64, urls)
			ages := make([]float64, urls)
			allChanged := make([]bool, urls)
			for i := range states {
				lambda := drawRate(rng, truePrior)
				rates[i] = lambda
				fetches := 3 + rng.IntN(12)
				at := 0.0
				all := true
				for range fetches {
					iv := tc.minIv * math.Pow(tc.maxIv/tc.minIv, rng.Float64()) * day
					at += iv
					ch := changedBit(rng, lambda, iv)
					all = all && ch
					// The scheduler's fading: a 90-day half-life, but never
					// under eight of the URL's intervals.
					c := cfg
					c.HalfLife = max(90*day, 8*iv)
					if err := states[i].Observe(at, iv, ch, c); err != nil {
						t.Fatal(err)
					}
				}
				allChanged[i] = all
				ages[i] = rng.Float64() * tc.maxIv * day
			}
			// check asserts coverage of 0.9 within a tolerance, or, when
			// wide, at least 0.9 less it: the model's prior spreads the
			// mass where the data are silent in its parent's broad shape,
			// so its intervals may be wider than they need be (the safe
			// side for a model), never narrower.
			check := func(label string, p GridPrior, slack float64, wide bool) {
				t.Helper()
				off := func(cov, tol float64) bool { return cov < 0.9-tol || (!wide && cov > 0.9+tol) }
				var c coverageRun
				for i := range states {
					c.add(p.Posterior(states[i]), rates[i], ages[i], allChanged[i])
				}
				n := float64(c.urls)
				// The binomial standard error of a 90 % coverage over n
				// URLs is 0.3/√n (0.0055 for 3 000): four of them, plus
				// the slack allowed a fitted prior.
				se := 0.3 / math.Sqrt(n)
				if off(c.coverage(), 4*se+slack) {
					t.Errorf("%s: the 90%% interval held the true rate for %.3f of %d URLs (want 0.9 ± %.3f)", label, c.coverage(), c.urls, 4*se+slack)
				}
				if d := (c.model - c.truth) / n; math.Abs(d) > 0.01+slack {
					t.Errorf("%s: model freshness %.4f, truth %.4f (%+.4f)", label, c.model/n, c.truth/n, d)
				}
				if c.allChanged < 100 {
					t.Fatalf("%s: only %d URLs changed at every fetch", label, c.allChanged)
				}
				na := float64(c.allChanged)
				seA := 0.3 / math.Sqrt(na)
				if off(float64(c.allChangedIn)/na, 4*seA+slack) {
					t.Errorf("%s: %d URLs changed at every fetch: the 90%% interval held the true rate for %.3f (want 0.9 ± %.3f)", label, c.allChanged, float64(c.allChangedIn)/na, 4*seA+slack)
				}
				if d := (c.allChangedMod - c.allChangedTrue) / na; math.Abs(d) > 0.02+slack {
					t.Errorf("%s: %d URLs changed at every fetch: model freshness %.4f, truth %.4f (%+.4f)", label, c.allChanged, c.allChangedMod/na, c.allChangedTrue/na, d)
				}
				t.Logf("%s: coverage %.3f (all changed: %.3f of %d), model %.4f truth %.4f (all changed: %.4f, %.4f)", label, c.coverage(),
					float64(c.allChangedIn)/na, c.allChanged, c.model/n, c.truth/n, c.allChangedMod/na, c.allChangedTrue/na)
			}
			check("true prior", truePrior, 0, false)
			silent, used, err := FitSilentGridPrior(base, GridPrior{}, states, 1, 300)
			if err != nil || used != urls {
				t.Fatalf("FitSilentGridPrior: %d URLs used, %v", used, err)
			}
			check("model's prior", silent, 0.02, true)
			fit, used, err := FitGridPrior(base, GridPrior{}, states, 1, 300)
			if err != nil || used != urls {
				t.Fatalf("FitGridPrior: %d URLs used, %v", used, err)
			}
			if !tc.checkFit {
				var c coverageRun
				for i := range states {
					c.add(fit.Posterior(states[i]), rates[i], ages[i], allChanged[i])
				}
				t.Logf("plan's prior (not asserted): coverage %.3f (all changed: %.3f of %d), model %.4f truth %.4f (all changed: %.4f, %.4f)", c.coverage(),
					float64(c.allChangedIn)/float64(c.allChanged), c.allChanged, c.model/float64(c.urls), c.truth/float64(c.urls), c.allChangedMod/float64(c.allChanged), c.allChangedTrue/float64(c.allChanged))
				return
			}
			check("fitted prior", fit, 0.02, false)
		})
	}
}
