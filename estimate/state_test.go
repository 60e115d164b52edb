package estimate

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"unsafe"
)

// noFade is a Config that keeps every observation at full weight, so the
// online State can be compared with the batch estimators.
var noFade = Config{HalfLife: math.Inf(1), MergeRatio: 1.25}

func TestStateSize(t *testing.T) {
	if got := unsafe.Sizeof(State{}); got > 112 {
		t.Errorf("State is %d bytes, want <= 112", got)
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	if err := noFade.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cfg   Config
		field string
	}{
		{Config{HalfLife: 0, MergeRatio: 1.25}, "HalfLife"},
		{Config{HalfLife: math.NaN(), MergeRatio: 1.25}, "HalfLife"},
		{Config{HalfLife: 1, MergeRatio: 0.9}, "MergeRatio"},
		{Config{HalfLife: 1, MergeRatio: math.Inf(1)}, "MergeRatio"},
	} {
		if err := c.cfg.Validate(); err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "Config."+c.field) {
			t.Errorf("%+v.Validate() = %v, want error naming %s", c.cfg, err, c.field)
		}
	}
}

func TestStateEmptyIsPriorMean(t *testing.T) {
	var s State
	p := Prior{Alpha: 3, Beta: 6}
	if got := s.Rate(p); got != 0.5 {
		t.Errorf("empty State.Rate = %v, want prior mean 0.5", got)
	}
	if got := s.Rate(Prior{}); got != 0 {
		t.Errorf("empty State.Rate(no prior) = %v, want 0", got)
	}
	if err := s.Observe(1, 0, true, noFade); err == nil || !strings.Contains(err.Error(), "interval") {
		t.Errorf("Observe(interval 0) error = %v", err)
	}
	if err := s.Observe(math.NaN(), 1, true, noFade); err == nil || !strings.Contains(err.Error(), "at") {
		t.Errorf("Observe(at NaN) error = %v", err)
	}
}

// TestStateMatchesBatch: without fading, the State's statistics are exact
// for a single interval and for Last-Modified data.
func TestStateMatchesBatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(20, 21))
	prior := Prior{Alpha: 2, Beta: 2}
	var s State
	var obs []Observation
	now := 0.0
	for range 300 {
		now += 0.5
		c := changedBit(rng, 3, 0.5)
		obs = append(obs, Observation{0.5, c})
		if err := s.Observe(now, 0.5, c, noFade); err != nil {
			t.Fatal(err)
		}
	}
	want, _ := Posterior(obs, prior)
	if got := s.Rate(prior); math.Abs(got-want) > 1e-5*want {
		t.Errorf("State.Rate = %.8g, Posterior = %.8g", got, want)
	}
	if got := s.Observations(); got != 300 {
		t.Errorf("Observations = %v, want 300", got)
	}

	// Last-Modified: with the zero prior the State reproduces X/T exactly.
	var lmState State
	p := newPage(rng, 2)
	var lmObs []LastModifiedObservation
	p.advance(0)
	for i := range 300 {
		prev, at := float64(i)*0.8, float64(i+1)*0.8
		l := p.advance(at)
		lmObs = append(lmObs, LastModifiedObservation{prev, at, l})
		if err := lmState.ObserveLastModified(at, 0.8, l, noFade); err != nil {
			t.Fatal(err)
		}
	}
	want, _ = FromLastModified(lmObs)
	if got := lmState.Rate(Prior{}); math.Abs(got-want) > 1e-6*want {
		t.Errorf("Last-Modified State.Rate = %.8g, FromLastModified = %.8g", got, want)
	}
	// With a prior it is the conjugate posterior mean (α+X)/(β+T).
	x, tt := 0.0, 0.0
	for _, o := range lmObs {
		c, e := o.changedExposure()
		if c {
			x++
		}
		tt += e
	}
	if got, want := lmState.Rate(prior), (prior.Alpha+x)/(prior.Beta+tt); math.Abs(got-want) > 1e-6*want {
		t.Errorf("Last-Modified State.Rate(prior) = %.8g, want (α+X)/(β+T) = %.8g", got, want)
	}
}

// TestStateVaryingIntervals checks the bucket approximation against the exact
// batch MLE on the same data, for a scheduler-like history (interval fixed
// between re-plans, more distinct intervals than buckets) and for intervals
// drawn continuously over a factor of 32.
func TestStateVaryingIntervals(t *testing.T) {
	const lambda = 1.0
	plans := []float64{0.3, 1, 3, 0.5, 2, 8, 0.2, 1.2}
	for _, c := range []struct {
		name     string
		interval func(rng *rand.Rand, i int) float64
		maxRel   float64
	}{
		{"re-planned", func(_ *rand.Rand, i int) float64 { return plans[(i/250)%len(plans)] }, 0.005},
		{"log-uniform ×32", func(rng *rand.Rand, _ int) float64 { return 0.25 * math.Exp(rng.Float64()*math.Log(32)) }, 0.01},
		{"jittered ±5%", func(rng *rand.Rand, _ int) float64 { return 1 + 0.1*(rng.Float64()-0.5) }, 0.002},
	} {
		rng := rand.New(rand.NewPCG(30, 31))
		var worst, sumOnline, sumBatch float64
		const reps = 20
		for range reps {
			var s State
			var obs []Observation
			now := 0.0
			for i := range 4000 {
				iv := c.interval(rng, i)
				now += iv
				ch := changedBit(rng, lambda, iv)
				obs = append(obs, Observation{iv, ch})
				if err := s.Observe(now, iv, ch, noFade); err != nil {
					t.Fatal(err)
				}
			}
			online := s.Rate(Prior{})
			batch, err := MLE(obs)
			if err != nil {
				t.Fatal(err)
			}
			worst = math.Max(worst, math.Abs(online-batch)/batch)
			sumOnline += online
			sumBatch += batch
		}
		t.Logf("%-16s online mean %.4f, batch MLE mean %.4f, worst |online−batch|/batch %.4f",
			c.name, sumOnline/reps, sumBatch/reps, worst)
		if worst > c.maxRel {
			t.Errorf("%s: online differs from batch MLE by %.4f, want <= %v", c.name, worst, c.maxRel)
		}
		if m := sumOnline / reps; math.Abs(m-lambda) > 0.03 {
			t.Errorf("%s: online mean %.4f, want within 0.03 of %v", c.name, m, lambda)
		}
	}
}

// TestStateFading: the rate jumps from 0.5 to 2 per day halfway through a
// 600-day history fetched every 6 hours. With a 30-day half-life the State
// follows the jump; without fading it reports a blend.
func TestStateFading(t *testing.T) {
	const (
		interval = 0.25
		days     = 300
		reps     = 80
	)
	fade := Config{HalfLife: 30, MergeRatio: 1.25}
	prior := Prior{Alpha: 0.5, Beta: 0.5}
	rng := rand.New(rand.NewPCG(40, 41))
	var before, after, stale []float64
	for range reps {
		var faded, flat State
		now := 0.0
		const half = int(days / interval)
		for i := range 2 * half {
			lambda := 0.5
			if i >= half {
				lambda = 2
			}
			now += interval
			c := changedBit(rng, lambda, interval)
			_ = faded.Observe(now, interval, c, fade)
			_ = flat.Observe(now, interval, c, noFade)
			if i == half-1 {
				before = append(before, faded.Rate(prior))
			}
		}
		after = append(after, faded.Rate(prior))
		stale = append(stale, flat.Rate(prior))
	}
	mb, sdb := meanSD(before)
	ma, sda := meanSD(after)
	ms, _ := meanSD(stale)
	t.Logf("faded: day 300 %.4f±%.4f (truth 0.5), day 600 %.4f±%.4f (truth 2); unfaded day 600 %.4f",
		mb, sdb, ma, sda, ms)
	// Faded weights give an effective sample (Σw)²/Σw² ≈ 346 fetches, so
	// the asymptotic relative sd is ≈ 16% at λ = 0.5 (λI small: few
	// changes) and ≈ 9% at λ = 2; the means of 80 replicates have standard
	// errors of ≈ 1.8% and 1%.
	if math.Abs(mb-0.5) > 0.06*0.5 {
		t.Errorf("faded estimate before the jump %.4f, want 0.5 ± 6%%", mb)
	}
	if math.Abs(ma-2) > 0.05*2 {
		t.Errorf("faded estimate after the jump %.4f, want 2 ± 5%%", ma)
	}
	if math.Abs(ms-2) < 3*math.Abs(ma-2) || ms > 1.5 {
		t.Errorf("unfaded estimate %.4f should lag far behind the faded %.4f", ms, ma)
	}
}

// TestStateShrinkage: few observations stay near the prior mean, many follow
// the data — the online counterpart of TestPosteriorShrinkage.
func TestStateShrinkage(t *testing.T) {
	prior := Prior{Alpha: 2, Beta: 2} // mean 1 per day
	const truth, interval = 3.0, 0.5
	cfg := Config{HalfLife: 1e6, MergeRatio: 1.25} // fading irrelevant here
	rng := rand.New(rand.NewPCG(50, 51))
	for r := range 100 {
		var s State
		if got := s.Rate(prior); got != 1 {
			t.Fatalf("0 observations: %v, want prior mean 1", got)
		}
		for i := range 2 {
			_ = s.Observe(float64(i+1)*interval, interval, changedBit(rng, truth, interval), cfg)
			if got := s.Rate(prior); math.Abs(got-1) >= math.Abs(got-truth) || got < 0.5 {
				t.Fatalf("rep %d, %d observations: %.3f, want near prior mean 1", r, i+1, got)
			}
		}
	}
	est := make([]float64, 50)
	for r := range est {
		var s State
		for i := range 500 {
			_ = s.Observe(float64(i+1)*interval, interval, changedBit(rng, truth, interval), cfg)
		}
		est[r] = s.Rate(prior)
	}
	m, sd := meanSD(est)
	t.Logf("State, 500 observations: mean %.4f sd %.4f (truth %v)", m, sd, truth)
	if math.Abs(m-truth) > 0.03*truth || sd > 0.1*truth {
		t.Errorf("500 observations: mean %.4f sd %.4f, want ≈ %v", m, sd, truth)
	}
}

func TestStateOutOfOrderAndFaded(t *testing.T) {
	cfg := Config{HalfLife: 10, MergeRatio: 1.25}
	var s State
	// Negative unit-free times work: the first observation sets the clock.
	_ = s.Observe(-100, 1, false, cfg)
	_ = s.Observe(-90, 1, false, cfg)
	if got, want := s.Observations(), 1.5; math.Abs(got-want) > 1e-6 {
		t.Errorf("after one half-life: Observations = %v, want %v", got, want)
	}
	// An observation 10 older than the newest counts half and does not
	// move the clock back.
	_ = s.Observe(-100, 1, false, cfg)
	if got, want := s.Observations(), 2.0; math.Abs(got-want) > 1e-6 || s.LastObserved() != -90 {
		t.Errorf("out of order: Observations = %v (want %v), last = %v", got, want, s.LastObserved())
	}
	// Faded lets an idle URL drift back toward the prior.
	for i := range 100 {
		_ = s.Observe(float64(i), 1, true, cfg)
	}
	prior := Prior{Alpha: 0.5, Beta: 5}
	busy := s.Rate(prior)
	idle := s.Faded(99+200, cfg).Rate(prior)
	if !(busy > 5*prior.Mean()) || math.Abs(idle-prior.Mean()) > 0.01 {
		t.Errorf("busy %.3f, idle after 20 half-lives %.4f, want large and ≈ prior mean %.2f", busy, idle, prior.Mean())
	}
}

func TestStateBinaryRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(60, 61))
	var s State
	cfg := DefaultConfig()
	for i := range 200 {
		iv := []float64{3600, 86400, 7200}[i%3]
		_ = s.Observe(1.7e9+float64(i)*86400, iv, rng.IntN(2) == 0, cfg)
	}
	_ = s.ObserveLastModified(1.8e9, 86400, 1.8e9-500, cfg)
	b, err := s.MarshalBinary()
	if err != nil || len(b) != EncodedSize {
		t.Fatalf("MarshalBinary: %d bytes, %v", len(b), err)
	}
	var u State
	if err := u.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if u != s {
		t.Errorf("round trip changed the State:\n got %+v\nwant %+v", u, s)
	}
	if err := u.UnmarshalBinary(b[:10]); err == nil {
		t.Error("short input: want error")
	}
	b[0] = 99
	if err := u.UnmarshalBinary(b); err == nil || !strings.Contains(err.Error(), "version") {
		t.Errorf("bad version error = %v", err)
	}
}

func BenchmarkStateObserve(b *testing.B) {
	cfg := DefaultConfig()
	var s State
	for i := 0; b.Loop(); i++ {
		_ = s.Observe(float64(i)*3600, 3600, i%3 == 0, cfg)
	}
}

// BenchmarkStateObserveReplan alternates among seven intervals, more than
// there are buckets, so every changed fetch goes through the merge path.
func BenchmarkStateObserveReplan(b *testing.B) {
	cfg := DefaultConfig()
	ivs := []float64{600, 3600, 7200, 21600, 86400, 3 * 86400, 7 * 86400}
	var s State
	now := 0.0
	for i := 0; b.Loop(); i++ {
		iv := ivs[i%len(ivs)]
		now += iv
		_ = s.Observe(now, iv, true, cfg)
	}
}

func BenchmarkStateRate(b *testing.B) {
	cfg := DefaultConfig()
	prior := DefaultPrior()
	rng := rand.New(rand.NewPCG(1, 1))
	var s State
	now := 0.0
	for i := range 500 {
		iv := []float64{3600, 21600, 86400, 7200, 600}[i/100]
		now += iv
		_ = s.Observe(now, iv, changedBit(rng, 1.0/43200, iv), cfg)
	}
	var sink float64
	for b.Loop() {
		sink += s.Rate(prior)
	}
	_ = sink
}

// Counted events give the Gamma posterior in closed form, (α + Σn)/(β + Σt),
// and stay accurate where change bits saturate: at λt = 20 almost every
// fetch sees a change, so bits alone cannot tell 20 from 200.
func TestStateObserveCount(t *testing.T) {
	prior := Prior{Alpha: 0.5, Beta: 2}
	cfg := Config{HalfLife: math.Inf(1), MergeRatio: 1.25}
	var s State
	var sumN, sumT float64
	rng := rand.New(rand.NewPCG(60, 61))
	const truth = 20.0
	at := 0.0
	for i := range 200 {
		iv := 0.5 + float64(i%3) // irregular intervals
		at += iv
		n := float64(poisson(rng, truth*iv))
		if err := s.ObserveCount(at, iv, n, cfg); err != nil {
			t.Fatal(err)
		}
		sumN += n
		sumT += iv
	}
	want := (prior.Alpha + sumN) / (prior.Beta + sumT)
	if got := s.Rate(prior); math.Abs(got-want) > 1e-4*want {
		t.Errorf("rate %v, closed-form posterior mean %v", got, want)
	}
	if got := s.Rate(prior); math.Abs(got-truth) > 0.05*truth {
		t.Errorf("rate %v, truth %v", got, truth)
	}
	var bits State
	at = 0
	for range 200 {
		at++
		_ = bits.Observe(at, 1, changedBit(rng, truth, 1), cfg)
	}
	if b, c := bits.Rate(prior), s.Rate(prior); math.Abs(b-truth) <= math.Abs(c-truth) {
		t.Errorf("bits alone %v no worse than counts %v (truth %v): bits should saturate", b, c, truth)
	}
	for _, bad := range []float64{-1, math.NaN(), math.Inf(1)} {
		if err := s.ObserveCount(at+1, 1, bad, cfg); err == nil {
			t.Errorf("n = %v: want an error", bad)
		}
	}
	if err := s.ObserveCount(at+1, 0, 1, cfg); err == nil {
		t.Error("interval 0: want an error")
	}
}

// poisson draws a Poisson(mean) count by summing exponential gaps.
func poisson(rng *rand.Rand, mean float64) int {
	n, t := 0, rng.ExpFloat64()
	for t < mean {
		n++
		t += rng.ExpFloat64()
	}
	return n
}
