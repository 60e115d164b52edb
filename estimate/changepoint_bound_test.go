package estimate

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestChangeEvidenceBoundHolds: on random histories (steady pages of every
// Table-6 class and pages that switch, bit-only and Last-Modified, under
// the Table-6 prior and random priors) the bounded evidence has the exact
// evidence of no change, every change evidence at least the exact one,
// and so at every hazard (the prior's, 10× and 100× it) a probability of change at least the exact one;
// a decision taken on it (no change when the bound is at most ½) is the
// exact test's. It also settles most steady observations at the prior hazard, else it saves
// nothing.
func TestChangeEvidenceBoundHolds(t *testing.T) {
	rng := rand.New(rand.NewPCG(47, 48))
	g := testGrid(t)
	priors := []GridPrior{table6Prior(t), randomPrior(t, rng, g), randomPrior(t, rng, g)}
	rates := []float64{1, 1.0 / 7, 1.0 / 30, 1.0 / 90, 1.0 / 365}
	checked, settled, steady, steadySettled := 0, 0, 0, 0
	for trial := range 60 {
		p := priors[trial%len(priors)]
		rOld := rates[rng.IntN(len(rates))]
		rNew := rOld
		switched := trial%2 == 1
		if switched {
			rNew = rates[rng.IntN(len(rates))]
		}
		lm := trial%5 == 4
		ivs := []float64{rng.ExpFloat64() / rOld, 1, 7, 30}
		var s State
		now := 0.0
		for k := range 60 {
			lam := rOld
			if k >= 30 {
				lam = rNew
			}
			iv := ivs[rng.IntN(len(ivs))] * (0.8 + 0.4*rng.Float64())
			now += iv
			if lm {
				// A Last-Modified time drawn from the page's last change
				// before now, if it changed during the interval.
				at := now
				if rng.Float64() < -math.Expm1(-lam*iv) {
					at = now - rng.Float64()*iv
				} else {
					at = now - iv - rng.ExpFloat64()
				}
				_ = s.ObserveLastModified(now, iv, at, bayesConfig)
			} else {
				_ = s.Observe(now, iv, changedBit(rng, lam, iv), bayesConfig)
			}
			exact := p.ChangeEvidence(&s)
			bound, ok := p.ChangeEvidenceBound(&s)
			if !ok {
				continue
			}
			checked++
			if bound.m != exact.m || bound.t != exact.t || bound.none != exact.none {
				t.Fatalf("trial %d obs %d: bound m %d t %v none %v, exact m %d t %v none %v", trial, k, bound.m, bound.t, bound.none, exact.m, exact.t, exact.none)
			}
			for i := range exact.m {
				if !(bound.change[i] >= exact.change[i]) {
					t.Fatalf("trial %d obs %d: change evidence %d: bound %v below exact %v", trial, k, i, bound.change[i], exact.change[i])
				}
			}
			for _, h := range []float64{testHazard, 10 * testHazard, 100 * testHazard} {
				b, e := bound.Test(h), exact.Test(h)
				if !(b.Prob >= e.Prob-1e-12) { // the division rounds
					t.Fatalf("trial %d obs %d hazard %.3g: bound prob %v below exact %v", trial, k, h, b.Prob, e.Prob)
				}
				if b.Prob <= 0.5 && e.Prob > 0.5 {
					t.Fatalf("trial %d obs %d hazard %.3g: bound prob %v settles what exact %v does not", trial, k, h, b.Prob, e.Prob)
				}
			}
			all := bound.Test(testHazard).Prob <= 0.5
			if all {
				settled++
			}
			if !switched {
				steady++
				if all {
					steadySettled++
				}
			}
			// Restart as the scheduler's estimator does, so that the
			// histories after a change are tested too.
			if ct := exact.Test(testHazard); ct.Prob > 0.5 {
				s.Restart(ct.Newest, 0, bayesConfig)
			}
		}
	}
	t.Logf("%d observations checked, %d settled by the bound (steady pages: %d of %d)", checked, settled, steadySettled, steady)
	if checked < 3000 {
		t.Errorf("only %d of 3600 observations had a bound", checked)
	}
	if steadySettled < steady*3/4 {
		t.Errorf("the bound settled %d of %d steady observations, want at least 3/4", steadySettled, steady)
	}
}

// benchChangeState is a steady daily-fetched weekly page with a full
// window: the common case of the fold.
func benchChangeState() State {
	rng := rand.New(rand.NewPCG(49, 50))
	var s State
	for k := range 60 {
		_ = s.Observe(float64(k+1), 1, changedBit(rng, 1.0/7, 1), bayesConfig)
	}
	return s
}

func BenchmarkChangeEvidence(b *testing.B) {
	p := table6Prior(b)
	s := benchChangeState()
	var sink float64
	for b.Loop() {
		ev := p.ChangeEvidence(&s)
		sink += ev.Test(testHazard).Prob
	}
	_ = sink
}

func BenchmarkChangeEvidenceBound(b *testing.B) {
	p := table6Prior(b)
	s := benchChangeState()
	var sink float64
	for b.Loop() {
		ev, _ := p.ChangeEvidenceBound(&s)
		sink += ev.Test(testHazard).Prob
	}
	_ = sink
}
