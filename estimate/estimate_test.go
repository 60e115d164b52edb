package estimate

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestRegularIntervalBias reproduces the point of Cho & Garcia-Molina's
// bias-reduced estimator: at λI of 1 and above the naive X/(nI) is far too
// low, while −ln((n−X+0.5)/(n+0.5))/I stays nearly unbiased.
func TestRegularIntervalBias(t *testing.T) {
	const (
		lambda = 1.0
		n      = 50
		reps   = 20000
	)
	rng := rand.New(rand.NewPCG(1, 1))
	for _, c := range []struct {
		lambdaI, maxBiasBR float64
	}{
		// Exact biases (binomial sums) are ≤ 0.003 up to λI = 3 and −0.048
		// at λI = 4; the simulation's standard error is ≈ 0.002.
		{0.25, 0.015}, {0.5, 0.015}, {1, 0.015}, {2, 0.015}, {3, 0.015}, {4, 0.07},
	} {
		interval := c.lambdaI / lambda
		br := make([]float64, reps)
		nv := make([]float64, reps)
		for r := range reps {
			x := 0
			for range n {
				if changedBit(rng, lambda, interval) {
					x++
				}
			}
			br[r] = RegularInterval(n, x, interval)
			nv[r] = NaiveRegular(n, x, interval)
		}
		mBR, sdBR := meanSD(br)
		mNV, sdNV := meanSD(nv)
		biasBR, biasNV := mBR-lambda, mNV-lambda
		t.Logf("λI=%-4g bias-reduced: bias %+.4f sd %.4f rmse %.4f | naive: bias %+.4f sd %.4f rmse %.4f",
			c.lambdaI, biasBR, sdBR, rmse(br, lambda), biasNV, sdNV, rmse(nv, lambda))
		if math.Abs(biasBR) > c.maxBiasBR {
			t.Errorf("λI=%v: bias-reduced bias %.4f, want |bias| <= %v", c.lambdaI, biasBR, c.maxBiasBR)
		}
		if math.Abs(biasBR) > math.Abs(biasNV)/3 {
			t.Errorf("λI=%v: bias-reduced bias %.4f not well below naive %.4f", c.lambdaI, biasBR, biasNV)
		}
		// The naive estimator's mean is (1−e^{−λI})/I exactly.
		if want := -math.Expm1(-c.lambdaI) / interval; math.Abs(mNV-want) > 0.01 {
			t.Errorf("λI=%v: naive mean %.4f, want %.4f", c.lambdaI, mNV, want)
		}
	}
}

func TestRegularIntervalEdges(t *testing.T) {
	if got := RegularInterval(0, 0, 1); got != 0 {
		t.Errorf("RegularInterval(0,0,1) = %v, want 0", got)
	}
	if got, want := RegularInterval(10, 10, 2), math.Log(21)/2; math.Abs(got-want) > 1e-15 {
		t.Errorf("RegularInterval(10,10,2) = %v, want ln(21)/2 = %v", got, want)
	}
	for _, a := range [][3]float64{{5, 6, 1}, {-1, 0, 1}, {5, 1, 0}, {5, 1, math.Inf(1)}, {5, 1, math.NaN()}} {
		if got := RegularInterval(int(a[0]), int(a[1]), a[2]); !math.IsNaN(got) {
			t.Errorf("RegularInterval%v = %v, want NaN", a, got)
		}
	}
}

func TestMLEMatchesClosedFormForRegularIntervals(t *testing.T) {
	// With equal intervals the score equation solves to −ln((n−X)/n)/I.
	for _, c := range []struct{ n, x int }{{10, 1}, {10, 5}, {10, 9}, {1000, 999}, {3, 1}} {
		const interval = 0.7
		obs := make([]Observation, c.n)
		for i := range obs {
			obs[i] = Observation{Interval: interval, Changed: i < c.x}
		}
		got, err := MLE(obs)
		if err != nil {
			t.Fatal(err)
		}
		want := -math.Log(float64(c.n-c.x)/float64(c.n)) / interval
		if math.Abs(got-want) > 1e-12*want {
			t.Errorf("n=%d x=%d: MLE = %.15g, want %.15g", c.n, c.x, got, want)
		}
	}
}

func TestMLEEdgeCases(t *testing.T) {
	none := []Observation{{1, false}, {2, false}, {0.5, false}}
	if got, err := MLE(none); err != nil || got != 0 {
		t.Errorf("MLE(no changes) = %v, %v; want 0", got, err)
	}
	// All changed, equal intervals: the documented fallback equals the
	// bias-reduced estimator.
	all := []Observation{{2, true}, {2, true}, {2, true}, {2, true}}
	got, err := MLE(all)
	if want := RegularInterval(4, 4, 2); err != nil || math.Abs(got-want) > 1e-12*want {
		t.Errorf("MLE(all changed) = %v, %v; want RegularInterval = %v", got, err, want)
	}
	// All changed, irregular: finite and governed by the shortest interval.
	got, err = MLE([]Observation{{0.1, true}, {5, true}, {1, true}})
	if err != nil || math.IsInf(got, 0) || got < math.Log(2*3+1)/5 {
		t.Errorf("MLE(all changed, irregular) = %v, %v; want finite and large", got, err)
	}
	if _, err := MLE(nil); err == nil || !errors.Is(err, ErrInvalid) {
		t.Errorf("MLE(nil) error = %v, want ErrInvalid", err)
	}
	_, err = MLE([]Observation{{1, true}, {-1, false}})
	if err == nil || !strings.Contains(err.Error(), "obs[1].Interval") {
		t.Errorf("MLE(negative interval) error = %v, want it to name obs[1].Interval", err)
	}
}

// TestMLEConsistencyIrregular: for intervals drawn log-uniformly over a
// factor of 50, the MLE's error shrinks like 1/√n.
func TestMLEConsistencyIrregular(t *testing.T) {
	const (
		lambda = 1.0
		reps   = 200
	)
	rng := rand.New(rand.NewPCG(2, 3))
	var prev float64
	for _, n := range []int{30, 300, 3000} {
		est := make([]float64, reps)
		obs := make([]Observation, n)
		for r := range reps {
			for i := range obs {
				iv := 0.1 * math.Exp(rng.Float64()*math.Log(50))
				obs[i] = Observation{Interval: iv, Changed: changedBit(rng, lambda, iv)}
			}
			var err error
			if est[r], err = MLE(obs); err != nil {
				t.Fatal(err)
			}
		}
		m, _ := meanSD(est)
		e := rmse(est, lambda)
		t.Logf("n=%-5d mean %.4f bias %+.4f rmse %.4f", n, m, m-lambda, e)
		if prev != 0 && e > prev/2.5 {
			t.Errorf("n=%d: rmse %.4f did not shrink ~√10 from %.4f", n, e, prev)
		}
		prev = e
		if n == 3000 && (e > 0.04 || math.Abs(m-lambda) > 0.01) {
			t.Errorf("n=3000: rmse %.4f bias %.4f, want < 0.04 and < 0.01", e, m-lambda)
		}
	}
}

func TestPosteriorShrinkage(t *testing.T) {
	prior := Prior{Alpha: 2, Beta: 2} // mean 1 per day
	const truth, interval = 3.0, 0.5
	rng := rand.New(rand.NewPCG(4, 5))
	if got, err := Posterior(nil, prior); err != nil || got != 1 {
		t.Errorf("Posterior(no obs) = %v, %v; want prior mean 1", got, err)
	}
	// With one or two fetches every possible outcome stays nearer the prior
	// mean than the truth.
	for _, n := range []int{1, 2} {
		for r := range 50 {
			obs := make([]Observation, n)
			for i := range obs {
				obs[i] = Observation{interval, changedBit(rng, truth, interval)}
			}
			got, _ := Posterior(obs, prior)
			if math.Abs(got-1) >= math.Abs(got-truth) || got < 0.5 {
				t.Fatalf("n=%d rep %d: %v → %.3f, want near prior mean 1", n, r, obs, got)
			}
		}
	}
	// With 500 fetches the data win.
	est := make([]float64, 50)
	obs := make([]Observation, 500)
	for r := range est {
		for i := range obs {
			obs[i] = Observation{interval, changedBit(rng, truth, interval)}
		}
		est[r], _ = Posterior(obs, prior)
		if math.Abs(est[r]-truth) > 0.2*truth {
			t.Errorf("n=500 rep %d: %.3f, want within 20%% of %v", r, est[r], truth)
		}
	}
	m, sd := meanSD(est)
	t.Logf("n=500: mean %.4f sd %.4f (truth %v, prior mean 1)", m, sd, truth)
	if math.Abs(m-truth) > 0.03*truth {
		t.Errorf("n=500: mean %.4f, want within 3%% of %v", m, truth)
	}
}

func TestPriorValidateAndFit(t *testing.T) {
	for _, c := range []struct {
		p     Prior
		field string
	}{
		{Prior{-1, 1}, "Alpha"}, {Prior{1, 0}, "Beta"}, {Prior{0, 1}, "Alpha"},
		{Prior{math.NaN(), 1}, "Alpha"}, {Prior{1, math.Inf(1)}, "Beta"},
	} {
		if err := c.p.Validate(); err == nil || !strings.Contains(err.Error(), "Prior."+c.field) {
			t.Errorf("%+v.Validate() = %v, want error naming %s", c.p, err, c.field)
		}
	}
	if err := (Prior{}).Validate(); err != nil {
		t.Errorf("zero Prior: %v", err)
	}
	if err := DefaultPrior().Validate(); err != nil {
		t.Errorf("DefaultPrior: %v", err)
	}
	if got, want := DefaultPrior().Mean(), 0.25/86400; math.Abs(got-want) > 1e-18 {
		t.Errorf("DefaultPrior().Mean() = %v, want %v", got, want)
	}

	// Method of moments recovers a Gamma(3, 2) population (mean 1.5,
	// variance 0.75): standard errors at n = 20000 are ≈ 2–3%.
	rng := rand.New(rand.NewPCG(7, 8))
	rates := make([]float64, 20000)
	for i := range rates {
		rates[i] = (rng.ExpFloat64() + rng.ExpFloat64() + rng.ExpFloat64()) / 2
	}
	p, err := FitPrior(rates)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("FitPrior on Gamma(3,2) sample: α=%.4f β=%.4f", p.Alpha, p.Beta)
	if math.Abs(p.Alpha-3) > 0.2 || math.Abs(p.Beta-2) > 0.15 {
		t.Errorf("FitPrior = %+v, want ≈ {3 2}", p)
	}
	for _, bad := range [][]float64{nil, {1}, {1, -1}, {1, math.NaN()}, {2, 2, 2}, {0, 0}} {
		if _, err := FitPrior(bad); err == nil || !errors.Is(err, ErrInvalid) {
			t.Errorf("FitPrior(%v) error = %v, want ErrInvalid", bad, err)
		}
	}
}

func TestFromChangeTimes(t *testing.T) {
	got, err := FromChangeTimes([]float64{1, 2, 2, 3, 3, 3, 10, -1}, 0, 5)
	if err != nil || got != 3.0/5 {
		t.Errorf("FromChangeTimes = %v, %v; want 3 distinct in window / 5 = 0.6", got, err)
	}
	if _, err := FromChangeTimes(nil, 5, 5); err == nil || !strings.Contains(err.Error(), "window") {
		t.Errorf("empty window error = %v", err)
	}
	// Simulated complete histories: X/T is unbiased.
	rng := rand.New(rand.NewPCG(9, 9))
	est := make([]float64, 500)
	for r := range est {
		var times []float64
		for s := rng.ExpFloat64() / 2; s <= 100; s += rng.ExpFloat64() / 2 {
			times = append(times, s)
		}
		est[r], _ = FromChangeTimes(times, 0, 100)
	}
	// Standard error of the mean: √(2/100)/√500 ≈ 0.0063.
	if m, _ := meanSD(est); math.Abs(m-2) > 0.025 {
		t.Errorf("FromChangeTimes mean %.4f, want 2", m)
	}
}

// TestLastModifiedBeatsBitsAtHighRate: with Last-Modified the MLE X/T is
// consistent, and it is more precise than the bit-only MLE when λI is large
// and most fetches just say "changed". Fisher information per fetch at
// λ = 2, I = 1.5: (1−e^{−3})/λ² = 0.238 with Last-Modified against
// I²e^{−λI}/(1−e^{−λI}) = 0.118 bit-only, so the asymptotic RMSEs are 0.145
// and 0.206 (ratio 0.70).
func TestLastModifiedBeatsBitsAtHighRate(t *testing.T) {
	const (
		lambda, interval = 2.0, 1.5 // λI = 3: 95% of fetches see a change
		n, reps          = 200, 300
	)
	rng := rand.New(rand.NewPCG(10, 11))
	lm := make([]float64, reps)
	bits := make([]float64, reps)
	for r := range reps {
		p := newPage(rng, lambda)
		lmObs := make([]LastModifiedObservation, n)
		bitObs := make([]Observation, n)
		prevLM := p.advance(0)
		for i := range n {
			prev, at := float64(i)*interval, float64(i+1)*interval
			l := p.advance(at)
			lmObs[i] = LastModifiedObservation{Prev: prev, At: at, LastModified: l}
			bitObs[i] = Observation{Interval: interval, Changed: l != prevLM}
			prevLM = l
		}
		var err error
		if lm[r], err = FromLastModified(lmObs); err != nil {
			t.Fatal(err)
		}
		if bits[r], err = MLE(bitObs); err != nil {
			t.Fatal(err)
		}
	}
	mLM, _ := meanSD(lm)
	mB, _ := meanSD(bits)
	eLM, eB := rmse(lm, lambda), rmse(bits, lambda)
	t.Logf("λI=3, n=200: Last-Modified mean %.4f rmse %.4f | bit-only MLE mean %.4f rmse %.4f", mLM, eLM, mB, eB)
	if math.Abs(mLM-lambda) > 0.02*lambda {
		t.Errorf("Last-Modified mean %.4f, want within 2%% of %v", mLM, lambda)
	}
	if eLM > 0.8*eB || eLM > 0.17 {
		t.Errorf("Last-Modified rmse %.4f, want < 0.8 × bit-only %.4f and < 0.17", eLM, eB)
	}
}

func TestFromLastModifiedEdges(t *testing.T) {
	got, err := FromLastModified([]LastModifiedObservation{
		{Prev: 0, At: 10, LastModified: -5},            // no change: exposure 10
		{Prev: 10, At: 20, LastModified: 14},           // change: exposure 6
		{Prev: math.Inf(-1), At: 30, LastModified: 26}, // first fetch: change, exposure 4
	})
	if want := 2.0 / 20; err != nil || math.Abs(got-want) > 1e-15 {
		t.Errorf("FromLastModified = %v, %v; want %v", got, err, want)
	}
	if _, err := FromLastModified([]LastModifiedObservation{{Prev: 0, At: 1, LastModified: 1}}); err == nil {
		t.Error("zero exposure with a change: want error")
	}
	if _, err := FromLastModified([]LastModifiedObservation{{Prev: 2, At: 1, LastModified: 0}}); err == nil || !strings.Contains(err.Error(), "obs[0]") {
		t.Errorf("At <= Prev error = %v, want it to name obs[0]", err)
	}
}

func TestTrust(t *testing.T) {
	cfg := DefaultTrustConfig()
	// A well-behaved server: Last-Modified moves exactly with content.
	good := []Fetch{
		{At: 1000, LastModified: 500, HasLastModified: true, ContentHash: 1},
		{At: 2000, LastModified: 500, HasLastModified: true, ContentHash: 1},
		{At: 3000, LastModified: 2500, HasLastModified: true, ContentHash: 2},
		{At: 4000, LastModified: 2500, HasLastModified: true, ContentHash: 2},
		{At: 5000, LastModified: 4700, HasLastModified: true, ContentHash: 3},
		{At: 6000, LastModified: 4700, HasLastModified: true, ContentHash: 3},
	}
	if ok, err := Trustworthy(good, cfg); err != nil || !ok {
		t.Errorf("good history: %v, %v; want trusted", ok, err)
	}
	mutate := func(i int, f func(*Fetch)) []Fetch {
		h := append([]Fetch(nil), good...)
		f(&h[i])
		return h
	}
	cases := []struct {
		name string
		h    []Fetch
		want Violation
		at   int
	}{
		{"stamps response time", mutate(3, func(f *Fetch) { f.LastModified = f.At }), AtFetchTime, 3},
		{"future", mutate(3, func(f *Fetch) { f.LastModified = f.At + 3600 }), InFuture, 3},
		{"moves without change", mutate(3, func(f *Fetch) { f.LastModified = 3500 }), MovedWithoutChange, 3},
		{"change without move", mutate(2, func(f *Fetch) { f.LastModified = 500 }), ChangeWithoutMove, 2},
		{"change dated before previous fetch", mutate(2, func(f *Fetch) { f.LastModified = 1500 }), ChangeWithoutMove, 2},
		{"backwards", mutate(3, func(f *Fetch) { f.LastModified = 2400 }), WentBackwards, 3},
		{"missing", mutate(3, func(f *Fetch) { f.HasLastModified = false }), Missing, 3},
	}
	for _, c := range cases {
		if v := CheckLastModified(c.h[c.at-1], c.h[c.at], cfg.ClockSkew); v != c.want {
			t.Errorf("%s: CheckLastModified = %v, want %v", c.name, v, c.want)
		}
		if ok, _ := Trustworthy(c.h, cfg); ok {
			t.Errorf("%s: history trusted, want distrusted", c.name)
		}
	}
	// A header that never moved has not shown it tracks changes.
	static := make([]Fetch, 8)
	for i := range static {
		static[i] = Fetch{At: float64(i+1) * 1000, LastModified: 10, HasLastModified: true, ContentHash: 7}
	}
	if ok, _ := Trustworthy(static, cfg); ok {
		t.Error("static history trusted, want too few changes")
	}
	// A date that moves on every request is consistent with a page that
	// changes at every fetch; only an unchanged fetch can expose it, so a
	// history with none is not trusted.
	moving := make([]Fetch, 8)
	for i := range moving {
		at := float64(i+1) * 1000
		moving[i] = Fetch{At: at, LastModified: at - 300, HasLastModified: true, ContentHash: uint64(i)}
	}
	if ok, _ := Trustworthy(moving, cfg); ok {
		t.Error("history with no unchanged fetch trusted, want no steady pair")
	}
	if _, err := Trustworthy(good, TrustConfig{MinChecks: 0}); err == nil || !strings.Contains(err.Error(), "MinChecks") {
		t.Errorf("bad TrustConfig error = %v", err)
	}
}
