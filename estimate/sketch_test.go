package estimate

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestReweightedMatchesPosterior: a posterior computed under one prior
// and reweighted to another is the posterior computed under the other,
// for random priors and random histories (censored runs included): its
// mean and its expected freshness at ages from an hour to a year agree.
func TestReweightedMatchesPosterior(t *testing.T) {
	g := testGrid(t)
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 300 {
		from, to := randomPrior(t, rng, g), randomPrior(t, rng, g)
		lambda := math.Exp(math.Log(1.0/365) + rng.Float64()*math.Log(365*5))
		s := randomState(rng, lambda, 1+rng.IntN(30), rng.IntN(3) == 0)
		pf := from.Posterior(s)
		got := pf.Reweighted(from, to)
		want := to.Posterior(s)
		// The two are integrated on cells of different widths (each
		// posterior's where its own mass is): a few parts in a thousand.
		if d := math.Abs(got.Mean()/want.Mean() - 1); d > 3e-3 {
			t.Errorf("trial %d (λ %.4g/day, %v observations): reweighted mean %.6g, direct %.6g", trial, lambda, s.Observations(), got.Mean(), want.Mean())
		}
		for _, a := range []float64{1.0 / 24, 1, 7, 30, 365} {
			fresh := func(l float64) float64 { return math.Exp(-l * a) }
			if d := math.Abs(got.Expect(fresh) - want.Expect(fresh)); d > 1e-3 {
				t.Errorf("trial %d (λ %.4g/day): E[e^{-λa}] at a = %v days: reweighted %.5f, direct %.5f", trial, lambda, a, got.Expect(fresh), want.Expect(fresh))
			}
		}
	}
	// A prior on another grid, or an invalid one, changes nothing.
	other, err := NewLogGrid(1e-3, 10, 20)
	if err != nil {
		t.Fatal(err)
	}
	p := randomPrior(t, rng, g)
	q := randomPrior(t, rng, other)
	post := p.Posterior(randomState(rng, 0.1, 10, false))
	if r := post.Reweighted(p, q); r.Mean() != post.Mean() {
		t.Errorf("prior on another grid: mean %v, want %v", r.Mean(), post.Mean())
	}
	if r := post.Reweighted(p, GridPrior{}); r.Mean() != post.Mean() {
		t.Errorf("invalid prior: mean %v, want %v", r.Mean(), post.Mean())
	}
}

// TestSketch: a Sketch keeps a posterior's expected freshness to within
// what coding each of its eight quantiles in a byte costs (a rate within
// ±4.2 % on the scheduler's grid), at every age; the zero Sketch is no
// posterior, and a point Sketch is its rate.
func TestSketch(t *testing.T) {
	g := testGrid(t)
	rng := rand.New(rand.NewPCG(7, 8))
	_, step := sketchSpan(g)
	for trial := range 200 {
		p := randomPrior(t, rng, g)
		lambda := math.Exp(math.Log(1.0/365) + rng.Float64()*math.Log(365*5))
		post := p.Posterior(randomState(rng, lambda, 1+rng.IntN(30), rng.IntN(3) == 0))
		sum := post.Summary()
		sk := post.Sketch(g)
		if !sk.Valid() {
			t.Fatalf("trial %d: sketch of a posterior is not valid", trial)
		}
		for _, a := range []float64{0, 1.0 / 24, 1, 7, 30, 365} {
			// e^{−λa} moves by at most λa·e^{−λa}·δ ≤ δ/e for a rate
			// off by a factor e^δ, δ half a code.
			want := sum.ExpectFresh(a)
			if d := math.Abs(sk.ExpectFresh(g, a) - want); d > step/2/math.E+1e-9 {
				t.Errorf("trial %d: E[e^{-λa}] at a = %v days: sketch %.5f, summary %.5f", trial, a, sk.ExpectFresh(g, a), want)
			}
		}
	}
	var zero Sketch
	if zero.Valid() {
		t.Error("the zero Sketch is valid")
	}
	if s := PointSketch(g, 0); s.Valid() {
		t.Error("a point Sketch at rate 0 is valid")
	}
	if s := PointSketch(g, math.Inf(1)); s.Valid() {
		t.Error("a point Sketch at rate +Inf is valid")
	}
	pt := PointSketch(g, 0.1)
	if m := pt.Expect(g, func(l float64) float64 { return l }); math.Abs(math.Log(m/0.1)) > step/2+1e-9 {
		t.Errorf("point Sketch at 0.1/day: mean %v", m)
	}
	// Rates beyond the grid are held at its ends.
	if m := PointSketch(g, 1e6).Expect(g, func(l float64) float64 { return l }); m > 50*math.Exp(g.Step) {
		t.Errorf("point Sketch at 1e6/day: mean %v, want at most the grid's top bin", m)
	}
}

// TestRateSwitch: the probability that a copy is current when
// the rate may switch at hazard h to a draw from another Sketch is the
// integral over the first switch, checked by the midpoint rule on 8 000
// steps over random Sketches, ages and hazards (the equal-rate case of
// the closed form included); no hazard is ExpectFresh, and a hazard far
// above 1/a is the new rate's own ExpectFresh.
func TestRateSwitch(t *testing.T) {
	g := testGrid(t)
	rng := rand.New(rand.NewPCG(9, 10))
	sketch := func() Sketch {
		p := randomPrior(t, rng, g)
		lambda := math.Exp(math.Log(1.0/365) + rng.Float64()*math.Log(365*5))
		post := p.Posterior(randomState(rng, lambda, 1+rng.IntN(30), rng.IntN(3) == 0))
		return post.Sketch(g)
	}
	for trial := range 80 {
		s, next := sketch(), sketch()
		if trial%10 == 0 {
			next = s // equal rates: the closed form's limit
		}
		a := math.Exp(math.Log(0.1) + rng.Float64()*math.Log(2e4))
		h := math.Exp(math.Log(1e-4) + rng.Float64()*math.Log(1e3))
		const steps = 8000
		ds := a / steps
		want := math.Exp(-h*a) * s.ExpectFresh(g, a)
		for i := range steps {
			x := (float64(i) + 0.5) * ds
			want += ds * h * math.Exp(-h*x) * s.ExpectFresh(g, x) * next.ExpectFresh(g, a-x)
		}
		if got := NewRateSwitch(g, h, next).ExpectFresh(s, a); math.Abs(got-want) > 1e-5 {
			t.Errorf("trial %d: a = %.4g days, h = %.4g/day: %.7f, by quadrature %.7f", trial, a, h, got, want)
		}
		if got, want := NewRateSwitch(g, 0, next).ExpectFresh(s, a), s.ExpectFresh(g, a); got != want {
			t.Errorf("trial %d: no hazard: %v, want ExpectFresh %v", trial, got, want)
		}
		if got, want := NewRateSwitch(g, 1e10/a, next).ExpectFresh(s, a), next.ExpectFresh(g, a); math.Abs(got-want) > 1e-5 {
			t.Errorf("trial %d: hazard 1e10/a: %v, want the new rate's ExpectFresh %v", trial, got, want)
		}
	}
}

// BenchmarkSketchExpectFresh is the model freshness's cost per URL
// without a rate switch (Sketch.ExpectFresh) and with one
// (RateSwitch.ExpectFresh).
func BenchmarkSketchExpectFresh(b *testing.B) {
	g := testGrid(b)
	rng := rand.New(rand.NewPCG(11, 12))
	p := randomPrior(b, rng, g)
	post, pop := p.Posterior(randomState(rng, 0.1, 10, false)), p.Posterior(State{})
	s, next := post.Sketch(g), pop.Sketch(g)
	b.Run("plain", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			_ = s.ExpectFresh(g, float64(i%1000))
		}
	})
	sw := NewRateSwitch(g, 1e-4, next)
	b.Run("switching", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			_ = sw.ExpectFresh(s, float64(i%1000))
		}
	})
}
