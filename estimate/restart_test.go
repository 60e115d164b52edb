package estimate

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSoftRestartMixesStatistics: a restart that keeps the older
// statistics at weight keep leaves the mixture keep·(all observations) +
// (1 − keep)·(the newest ones) in every sufficient statistic, so that
// keep = 0 is the hard restart and a restart on a false alarm does not
// keep only the observations that raised it (docs/design.md §3.3).
func TestSoftRestartMixesStatistics(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	sum := func(a [numBuckets]float32) float64 {
		var s float64
		for _, v := range a {
			s += float64(v)
		}
		return s
	}
	near := func(got, want, tol float64) bool { return math.Abs(got-want) <= tol*math.Max(1, math.Abs(want)) }
	for trial := range 200 {
		s := randomHistory(t, rng, 4+rng.IntN(20), 0.2, 30, 0.5)
		newest := 1 + rng.IntN(int(s.nRecent))
		keep := rng.Float64()
		hard, soft := s, s
		hard.Restart(newest, 0, bayesConfig)
		soft.Restart(newest, keep, bayesConfig)
		mix := func(all, nw float64) float64 { return keep*all + (1-keep)*nw }
		// The changed fetches' intervals are within 1 %: adding the
		// newest ones to the kept buckets may merge two buckets
		// (Config.MergeRatio), which keeps their count but approximates
		// their intervals.
		checks := []struct {
			name      string
			got, want float64
			tol       float64
		}{
			{"exposure", soft.exposure, mix(s.exposure, hard.exposure), 1e-4},
			{"observations", float64(soft.n), mix(float64(s.n), float64(hard.n)), 1e-4},
			{"changed fetches", sum(soft.count), mix(sum(s.count), sum(hard.count)), 1e-4},
			{"their intervals", sum(soft.sumT), mix(sum(s.sumT), sum(hard.sumT)), 1e-2},
			{"Last-Modified changes", float64(soft.lmChanges), mix(float64(s.lmChanges), float64(hard.lmChanges)), 1e-4},
		}
		for _, c := range checks {
			if !near(c.got, c.want, c.tol) {
				t.Errorf("trial %d (newest %d of %d, keep %.3f): %s %.6g, want %.6g", trial, newest, s.nRecent, keep, c.name, c.got, c.want)
			}
		}
		if soft.cps != s.cps+1 || hard.cps != s.cps+1 {
			t.Errorf("trial %d: change points %d (soft), %d (hard), want %d", trial, soft.cps, hard.cps, s.cps+1)
		}
		if soft.nRecent != hard.nRecent || int(hard.nRecent) != newest {
			t.Errorf("trial %d: recent window %d (soft), %d (hard), want %d", trial, soft.nRecent, hard.nRecent, newest)
		}
	}
}

// TestHeldChange: the probability of a change with at least two
// observations after it is part of the probability of any change, and
// names a split with at least two.
func TestHeldChange(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	p := table6Prior(t)
	for trial := range 300 {
		s := randomHistory(t, rng, 1+rng.IntN(12), 0.5, 20, 0.4)
		ct := p.TestChange(&s, testHazard)
		if ct.Held < 0 || ct.Held > ct.Prob*(1+1e-12) {
			t.Errorf("trial %d: held %.6g, want within [0, prob %.6g]", trial, ct.Held, ct.Prob)
		}
		if s.nRecent < 3 && ct.Held != 0 {
			t.Errorf("trial %d: held %.6g with %d recent observations, want 0", trial, ct.Held, s.nRecent)
		}
		if ct.Held > 0 && (ct.HeldNewest < 2 || ct.HeldNewest > int(s.nRecent)) {
			t.Errorf("trial %d: held newest %d of %d, want at least 2", trial, ct.HeldNewest, s.nRecent)
		}
	}
}

// randomHistory is a State after n fetches at intervals drawn uniformly
// from [minIv, minIv+spanIv), each seeing a change with probability
// pChanged.
func randomHistory(t *testing.T, rng *rand.Rand, n int, minIv, spanIv, pChanged float64) State {
	t.Helper()
	var s State
	now := 0.0
	for range n {
		iv := minIv + rng.Float64()*spanIv
		now += iv
		if err := s.Observe(now, iv, rng.Float64() < pChanged, bayesConfig); err != nil {
			t.Fatal(err)
		}
	}
	return s
}
