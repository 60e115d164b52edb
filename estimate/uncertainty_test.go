package estimate

import (
	"math"
	"math/rand/v2"
	"testing"
)

// logPosterior is L(λ) written from the raw observations, independently of
// State's buckets: a·ln λ − r·λ + Σ ln(1 − e^{−λ t}) over changed fetches.
func logPosterior(lambda float64, prior Prior, changedIntervals []float64, unchanged, lmChanges float64) float64 {
	l := (prior.Alpha+lmChanges)*math.Log(lambda) - (prior.Beta+unchanged)*lambda
	for _, t := range changedIntervals {
		l += math.Log(-math.Expm1(-lambda * t))
	}
	return l
}

func TestRateUncertaintyGammaExact(t *testing.T) {
	// Only Last-Modified observations: the posterior is λ^a·e^{−rλ}, whose
	// curvature at the mode a/r gives √a/r exactly.
	var s State
	cfg := noFade
	at := 0.0
	for i := range 20 {
		at += 10
		lm := at - 3 // changed 3 s before every fetch
		if i%4 == 0 {
			lm = at - 20 // unchanged since the previous fetch
		}
		if err := s.ObserveLastModified(at, 10, lm, cfg); err != nil {
			t.Fatal(err)
		}
	}
	prior := NewPrior(0.1, 0.5)
	rate, se := s.RateUncertainty(prior)
	a := prior.Alpha + float64(s.lmChanges)
	r := prior.Beta + s.exposure
	if want := a / r; math.Abs(rate-want) > 1e-9*want {
		t.Fatalf("rate %v, want a/r = %v", rate, want)
	}
	if want := math.Sqrt(a) / r; math.Abs(se-want) > 1e-9*want {
		t.Errorf("standard error %v, want √a/r = %v", se, want)
	}
}

func TestRateUncertaintyMatchesNumericCurvature(t *testing.T) {
	// Random histories with at most numBuckets distinct intervals (so the
	// buckets are exact): the standard error must match the curvature of
	// the log posterior computed by finite differences from the raw
	// observations.
	rng := rand.New(rand.NewPCG(7, 11))
	for trial := range 200 {
		var s State
		var changed []float64
		unchanged := 0.0
		intervals := make([]float64, 1+rng.IntN(numBuckets))
		for i := range intervals {
			intervals[i] = math.Pow(2, float64(i*2)) * (0.5 + rng.Float64())
		}
		trueRate := math.Exp(rng.Float64()*4 - 3)
		at := 0.0
		for range 5 + rng.IntN(60) {
			iv := intervals[rng.IntN(len(intervals))]
			at += iv
			c := rng.Float64() < -math.Expm1(-trueRate*iv)
			if err := s.Observe(at, iv, c, noFade); err != nil {
				t.Fatal(err)
			}
			if c {
				changed = append(changed, iv)
			} else {
				unchanged += iv
			}
		}
		prior := NewPrior(0.3, 0.5)
		rate, se := s.RateUncertainty(prior)
		if !(rate > 0) || math.IsInf(se, 0) {
			t.Fatalf("trial %d: rate %v, se %v", trial, rate, se)
		}
		h := rate * 1e-4
		lp := func(l float64) float64 { return logPosterior(l, prior, changed, unchanged, 0) }
		curv := -(lp(rate+h) - 2*lp(rate) + lp(rate-h)) / (h * h)
		want := 1 / math.Sqrt(curv)
		// float32 bucket sums and the finite difference agree to ~1e-4.
		if math.Abs(se-want) > 2e-3*want {
			t.Errorf("trial %d: se %v, numeric %v (rate %v, %d changed)", trial, se, want, rate, len(changed))
		}
		// The rate is the posterior's stationary point.
		if d := (lp(rate+h) - lp(rate-h)) / (2 * h); math.Abs(d)*se > 1e-3 {
			t.Errorf("trial %d: slope %v at the estimate", trial, d)
		}
	}
}

func TestRateIntervalCoverage(t *testing.T) {
	// Simulated Poisson pages fetched at a regular interval: the 90%
	// interval must contain the true rate about 90% of the time.
	rng := rand.New(rand.NewPCG(3, 5))
	const trials = 3000
	hits := 0
	for range trials {
		trueRate := math.Exp(rng.Float64()*2 - 1) // 0.37 .. 2.7
		var s State
		at := 0.0
		for range 80 {
			at += 0.5
			if err := s.Observe(at, 0.5, rng.Float64() < -math.Expm1(-trueRate*0.5), noFade); err != nil {
				t.Fatal(err)
			}
		}
		rate, se := s.RateUncertainty(NewPrior(1, 0.5))
		lo, hi := RateInterval(rate, se, 1.645)
		if lo <= trueRate && trueRate <= hi {
			hits++
		}
	}
	cov := float64(hits) / trials
	t.Logf("90%% interval coverage %.3f over %d trials", cov, trials)
	if cov < 0.86 || cov > 0.94 {
		t.Errorf("90%% interval covered the true rate in %.3f of %d trials", cov, trials)
	}
}

func TestRateUncertaintyNoInformation(t *testing.T) {
	var s State
	if r, se := s.RateUncertainty(Prior{}); r != 0 || !math.IsInf(se, 1) {
		t.Errorf("no observations, no prior: rate %v se %v, want 0 and +Inf", r, se)
	}
	if lo, hi := RateInterval(0, math.Inf(1), 1.645); lo != 0 || !math.IsInf(hi, 1) {
		t.Errorf("interval [%v, %v], want [0, +Inf)", lo, hi)
	}
	// A prior alone gives the Gamma prior's own spread.
	p := NewPrior(2, 4)
	r, se := s.RateUncertainty(p)
	if math.Abs(r-2) > 1e-12 || math.Abs(se-math.Sqrt(p.Alpha)/p.Beta) > 1e-12 {
		t.Errorf("prior only: rate %v se %v, want 2 and %v", r, se, math.Sqrt(p.Alpha)/p.Beta)
	}
}
