package estimate

import (
	"math"
	"math/rand/v2"
	"testing"
)

// table6Prior is Cho & Garcia-Molina's Table 6 mix (rates per day) as a
// grid prior: 23 % daily, 15 % weekly, 16 % monthly, 16 % quarterly,
// 30 % yearly.
func table6Prior(t testing.TB) GridPrior {
	t.Helper()
	g := testGrid(t)
	w := make([]float64, g.N)
	for _, c := range []struct{ rate, share float64 }{{1, 0.23}, {1.0 / 7, 0.15}, {1.0 / 30, 0.16}, {1.0 / 90, 0.16}, {1.0 / 365, 0.30}} {
		k := int(math.Round((math.Log(c.rate) - g.Lo) / g.Step))
		w[k] += c.share
	}
	p, err := NewGridPrior(g, w)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// testHazard is the prior hazard of the tests: one rate change in 20
// half-lives of 90 days, per day.
const testHazard = 1.0 / (20 * 90)

// bayesConfig is what the scheduler's estimator runs the State with: no
// fading and no likelihood-ratio test, so that only TestChange forgets.
var bayesConfig = Config{HalfLife: math.Inf(1), MergeRatio: 1.25}

// obs is one observation of a brute-force history.
type obs struct {
	t       float64
	changed bool
}

func (o obs) logLik(lambda float64) float64 {
	if o.changed {
		return math.Log(-math.Expm1(-lambda * o.t))
	}
	return -lambda * o.t
}

// bruteLogEvidence is ln ∫ prior(u)·Π L(obs | e^u) du by the midpoint rule
// on a very fine grid over the prior's range.
func bruteLogEvidence(p GridPrior, hist []obs) float64 {
	const m = 20_000
	g := p.grid
	lo, hi := g.U(0)-g.Step/2, g.U(g.N-1)+g.Step/2
	h := (hi - lo) / m
	lps := make([]float64, m)
	top := math.Inf(-1)
	for j := range lps {
		u := lo + (float64(j)+0.5)*h
		lps[j] = p.logDensity(u)
		for _, o := range hist {
			lps[j] += o.logLik(math.Exp(u))
		}
		top = math.Max(top, lps[j])
	}
	z := 0.0
	for _, lp := range lps {
		z += math.Exp(lp - top)
	}
	return top + math.Log(z*h)
}

// TestChangeMatchesBruteForce: on 20 random histories the probability of a
// change among the newest eight observations, and the most probable
// change position, agree with enumerating the hypotheses and integrating
// each one's evidence directly.
func TestChangeMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	p := table6Prior(t)
	intervals := []float64{1, 3, 10, 30} // distinct buckets: the State's sums are exact
	for trial := range 20 {
		rOld, rNew := 1.0/365, 1.0
		if trial%2 == 1 {
			rOld, rNew = rNew, rOld
		}
		nOld := 3 + rng.IntN(10)
		nNew := rng.IntN(5)
		var hist []obs
		var s State
		now := 0.0
		for k := range nOld + nNew {
			lam := rOld
			if k >= nOld {
				lam = rNew
			}
			iv := intervals[rng.IntN(len(intervals))]
			now += iv
			c := changedBit(rng, lam, iv)
			hist = append(hist, obs{iv, c})
			_ = s.Observe(now, iv, c, bayesConfig)
		}
		hazard := testHazard * math.Exp(rng.Float64()*math.Log(100)) // up to 100× the prior
		got := p.TestChange(&s, hazard)
		// Brute force: the window is the newest min(8, n) observations.
		m := min(recentSize, len(hist))
		w := hist[len(hist)-m:]
		lpNone := bruteLogEvidence(p, hist)
		tail := 0.0
		for _, o := range w {
			tail += o.t
		}
		lpNone -= hazard * tail
		lps := make([]float64, m)
		after := 0.0
		for i := m - 1; i >= 0; i-- {
			split := len(hist) - m + i
			lps[i] = math.Log(-math.Expm1(-hazard*w[i].t)) - hazard*after + bruteLogEvidence(p, hist[:split]) + bruteLogEvidence(p, hist[split:])
			after += w[i].t
		}
		top := lpNone
		best := 0
		for i, lp := range lps {
			top = math.Max(top, lp)
			if lp > lps[best] {
				best = i
			}
		}
		num, den := 0.0, math.Exp(lpNone-top)
		for _, lp := range lps {
			num += math.Exp(lp - top)
			den += math.Exp(lp - top)
		}
		want := num / den
		if math.Abs(got.Prob-want) > 0.01 || (want > 0.05 && got.Newest != m-best) {
			t.Errorf("trial %d (%d old, %d new, hazard %.3g): got %+v, want prob %.4f newest %d", trial, nOld, nNew, hazard, got, want, m-best)
		}
	}
}

// bayesPage feeds a page's fetches to a State as the scheduler's
// estimator does: Observe, then TestChange at the hazard, Restart above ½.
type bayesPage struct {
	s   State
	p   GridPrior
	now float64
}

func (b *bayesPage) fetch(iv float64, changed bool) bool {
	b.now += iv
	_ = b.s.Observe(b.now, iv, changed, bayesConfig)
	if ct := b.p.TestChange(&b.s, testHazard); ct.Prob > 0.5 {
		b.s.Restart(ct.Newest, 0, bayesConfig)
		return true
	}
	return false
}

// TestChangeFalseAlarms: on steady pages of every Table-6 class, fetched
// from ten times faster to three times slower than they change, restarts
// are at most twice as frequent as the rate changes the prior hazard
// expects over the same time (one in 1800 days), so the test adds about
// as much forgetting as the model it assumes, not more (a calibrated
// posterior crosses ½ on steady data about as often as the prior expects a
// change; measured: about 1×). Intervals at which the window of eight observations
// spans more than the hazard's mean time between changes are left out:
// there a change within the window is likely a priori, and a restart is
// the model's belief, not an alarm.
func TestChangeFalseAlarms(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 44))
	p := table6Prior(t)
	alarms, days := 0, 0.0
	for _, lambda := range []float64{1, 1.0 / 7, 1.0 / 30, 1.0 / 90, 1.0 / 365} {
		for _, iv := range []float64{0.1 / lambda, 1 / lambda, 3 / lambda, 30} {
			if recentSize*iv > 1/testHazard {
				continue
			}
			b := bayesPage{p: p}
			for range 400 {
				if b.fetch(iv, changedBit(rng, lambda, iv)) {
					alarms++
				}
			}
			days += b.now
		}
	}
	rate := float64(alarms) / days
	t.Logf("%d restarts in %.0f page-days: %.3g a day against the prior hazard %.3g", alarms, days, rate, testHazard)
	if rate > 2*testHazard {
		t.Errorf("false restarts at %.3g a day, above twice the hazard %.3g", rate, testHazard)
	}
}

// TestChangeDetectionDelay: after a switch the test restarts within a few
// fetches, and the estimate then follows the new rate.
func TestChangeDetectionDelay(t *testing.T) {
	rng := rand.New(rand.NewPCG(45, 46))
	p := table6Prior(t)
	for _, c := range []struct {
		before, after, interval float64
		within, minHits         int // restarted within this many fetches in at least minHits of 50 runs
	}{
		{1.0 / 365, 1, 30, 3, 40},       // yearly turns daily, fetched monthly: a run of changes
		{1.0 / 90, 1, 30, 8, 40},        // quarterly turns daily, fetched monthly
		{1.0 / 365, 1.0 / 7, 14, 8, 40}, // yearly turns weekly, fetched fortnightly
		{1, 1.0 / 365, 3, 3, 40},        // daily turns yearly, fetched every 3 days
		{1.0 / 7, 1.0 / 365, 7, 8, 40},  // weekly turns yearly, fetched weekly
	} {
		hits, delays := 0, 0
		var errs []float64
		for range 50 {
			b := bayesPage{p: p}
			for range 40 {
				b.fetch(c.interval, changedBit(rng, c.before, c.interval))
			}
			found := false
			for k := 1; k <= 20; k++ {
				if b.fetch(c.interval, changedBit(rng, c.after, c.interval)) && !found {
					found = true
					delays += k
					if k <= c.within {
						hits++
					}
				}
			}
			post := p.Posterior(b.s)
			errs = append(errs, math.Log(post.Quantile(0.5)/c.after))
		}
		m, _ := meanSD(errs)
		t.Logf("%.4g → %.4g a day at %v days: restarted within %d fetches in %d of 50 (mean delay %.1f), mean log error of the median after 20 fetches %.2f", c.before, c.after, c.interval, c.within, hits, float64(delays)/50, m)
		if hits < c.minHits {
			t.Errorf("%.4g → %.4g at %v days: restarted within %d fetches in %d of 50 runs, want ≥ %d", c.before, c.after, c.interval, c.within, hits, c.minHits)
		}
		if math.Abs(m) > 1 {
			t.Errorf("%.4g → %.4g: mean log error of the posterior median after the switch %.2f", c.before, c.after, m)
		}
	}
}

// TestChangeTrivial: no window, no hazard or an invalid prior is no change.
func TestChangeTrivial(t *testing.T) {
	p := table6Prior(t)
	var s State
	if ct := p.TestChange(&s, testHazard); ct != (ChangeTest{}) {
		t.Errorf("empty State: %+v", ct)
	}
	_ = s.Observe(1, 1, true, bayesConfig)
	if ct := p.TestChange(&s, 0); ct != (ChangeTest{}) {
		t.Errorf("zero hazard: %+v", ct)
	}
	if ct := (GridPrior{}).TestChange(&s, testHazard); ct != (ChangeTest{}) {
		t.Errorf("zero prior: %+v", ct)
	}
	if ct := p.TestChange(&s, math.Inf(1)); ct != (ChangeTest{}) {
		t.Errorf("infinite hazard: %+v", ct)
	}
}
