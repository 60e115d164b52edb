package schedule

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/freshcrawl/freshcrawl/alloc"
)

// fixedOrderFreshness is Cho & Garcia-Molina Table 2's fixed-order
// freshness, (1 − e^{−r})/r with r = λ/f, written out here as the reference.
func fixedOrderFreshness(rate, freq float64) float64 {
	r := rate / freq
	return (1 - math.Exp(-r)) / r
}

// fixedOrderAge is Table 2's fixed-order age, (1/f)(1/2 − 1/r + (1 − e^{−r})/r²).
func fixedOrderAge(rate, freq float64) float64 {
	r := rate / freq
	return (0.5 - 1/r + (1-math.Exp(-r))/(r*r)) / freq
}

func TestModelFreshnessMatchesTable2(t *testing.T) {
	in := PlanInput{Rates: []float64{0.5, 2, 0.1}, Weights: []float64{1, 3, 0.5}}
	freq := []float64{1, 1.5, 0.2}
	var wf, wa, ws float64
	for i, r := range in.Rates {
		wf += in.Weights[i] * fixedOrderFreshness(r, freq[i])
		wa += in.Weights[i] * fixedOrderAge(r, freq[i])
		ws += in.Weights[i]
	}
	f, a := modelFreshness(in, freq)
	if math.Abs(f-wf/ws) > 1e-12 || math.Abs(a-wa/ws) > 1e-12 {
		t.Fatalf("freshness %v age %v, want %v and %v", f, a, wf/ws, wa/ws)
	}
}

// On plans where every element that changes is fetched, the model is
// alloc's collection freshness and age.
func TestModelFreshnessIsAllocCollection(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		n := 1 + rng.IntN(20)
		in := PlanInput{Rates: make([]float64, n), Weights: make([]float64, n)}
		freq := make([]float64, n)
		el := make([]alloc.Element, n)
		for i := range n {
			in.Rates[i] = rng.ExpFloat64() * float64(rng.IntN(2))   // some never change
			in.Weights[i] = rng.ExpFloat64() * float64(rng.IntN(4)) // some weigh nothing
			freq[i] = rng.ExpFloat64() + 1e-3
			el[i] = alloc.Element{Rate: in.Rates[i], Weight: in.Weights[i]}
		}
		f, a := modelFreshness(in, freq)
		wf, wa := alloc.CollectionFreshness(alloc.FixedOrder, el, freq), alloc.CollectionAge(alloc.FixedOrder, el, freq)
		if math.Abs(f-wf) > 1e-12 || math.Abs(a-wa) > 1e-12 {
			t.Fatalf("freshness %v age %v, alloc %v and %v", f, a, wf, wa)
		}
	}
}

// Degenerate plans never make the model's freshness or age NaN or
// infinite, so status and metrics can always carry them.
func TestModelFreshnessDegenerate(t *testing.T) {
	inf := math.Inf(1)
	cases := []struct {
		name             string
		rates, w, freq   []float64
		wantF, wantA     float64
		checkF, checkAge bool
	}{
		{name: "empty", wantF: 1, wantA: 0, checkF: true, checkAge: true},
		{name: "all weights 0 (every URL disallowed)", rates: []float64{0.5, 1}, w: []float64{0, 0}, freq: []float64{0, 0}, wantF: 1, wantA: 0, checkF: true, checkAge: true},
		// A disallowed URL (weight 0, f = 0) beside a fetched one: it
		// counts for nothing; before, its 0·∞ age made the plan's age NaN.
		{name: "one disallowed", rates: []float64{1, 1}, w: []float64{0, 1}, freq: []float64{0, 1},
			wantF: fixedOrderFreshness(1, 1), wantA: fixedOrderAge(1, 1), checkF: true, checkAge: true},
		// Rate +Inf: never fresh; its age is half the interval.
		{name: "rate +Inf", rates: []float64{inf, 1}, w: []float64{1, 1}, freq: []float64{2, 1},
			wantF: fixedOrderFreshness(1, 1) / 2, wantA: (0.25 + fixedOrderAge(1, 1)) / 2, checkF: true, checkAge: true},
		// f = 0 with λ > 0: given up. Freshness 0 for it; the age is that
		// of the URLs the plan keeps.
		{name: "f = 0 < λ", rates: []float64{0.3, 1}, w: []float64{1, 1}, freq: []float64{0, 1},
			wantF: fixedOrderFreshness(1, 1) / 2, wantA: fixedOrderAge(1, 1), checkF: true, checkAge: true},
		{name: "everything given up", rates: []float64{0.3, 1}, w: []float64{1, 1}, freq: []float64{0, 0}, wantF: 0, wantA: 0, checkF: true, checkAge: true},
		{name: "never changes, never fetched", rates: []float64{0}, w: []float64{1}, freq: []float64{0}, wantF: 1, wantA: 0, checkF: true, checkAge: true},
		{name: "f = +Inf", rates: []float64{1}, w: []float64{1}, freq: []float64{inf}, wantF: 1, wantA: 0, checkF: true, checkAge: true},
		{name: "NaN rate", rates: []float64{math.NaN(), 1}, w: []float64{1, 1}, freq: []float64{1, 1}},
		{name: "negative rate and frequency", rates: []float64{-1, 1}, w: []float64{1, 1}, freq: []float64{1, -1}},
		{name: "weight +Inf and NaN", rates: []float64{1, 1, 1}, w: []float64{inf, math.NaN(), -2}, freq: []float64{1, 1, 1}, wantF: 1, wantA: 0, checkF: true, checkAge: true},
	}
	for _, c := range cases {
		f, a := modelFreshness(PlanInput{Rates: c.rates, Weights: c.w}, c.freq)
		if math.IsNaN(f) || math.IsInf(f, 0) || math.IsNaN(a) || math.IsInf(a, 0) || f < 0 || f > 1 || a < 0 {
			t.Errorf("%s: freshness %v age %v", c.name, f, a)
			continue
		}
		if c.checkF && math.Abs(f-c.wantF) > 1e-12 {
			t.Errorf("%s: freshness %v, want %v", c.name, f, c.wantF)
		}
		if c.checkAge && math.Abs(a-c.wantA) > 1e-12 {
			t.Errorf("%s: age %v, want %v", c.name, a, c.wantA)
		}
	}
}

// The uniform policy is alloc.Uniform: B/N each, a capped host gets its
// cap spread over its URLs and the excess goes to the others.
func TestUniformPolicy(t *testing.T) {
	in := PlanInput{
		Rates: []float64{1, 1, 1, 1, 1}, Weights: []float64{1, 1, 1, 1, 0},
		Hosts: []int32{0, 0, 1, 1, 1}, HostCaps: []float64{0.5, 0}, Budget: 5,
	}
	out, err := uniformPolicy{}.Plan(in)
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{0.25, 0.25, 1.5, 1.5, 1.5}
	for i := range want {
		if math.Abs(out.Freq[i]-want[i]) > 1e-12 {
			t.Fatalf("frequencies %v, want %v", out.Freq, want)
		}
	}
	if out.CappedHosts != 1 || out.Unabsorbed != 0 {
		t.Errorf("capped hosts %d, unabsorbed %v", out.CappedHosts, out.Unabsorbed)
	}
	if f, a := modelFreshness(in, out.Freq); out.Freshness != f || out.Age != a {
		t.Errorf("plan says freshness %v age %v, model %v and %v", out.Freshness, out.Age, f, a)
	}
	// Every host capped below the budget: the rest is unabsorbed.
	in.HostCaps = []float64{0.5, 1}
	if out, err = (uniformPolicy{}).Plan(in); err != nil || math.Abs(out.Unabsorbed-3.5) > 1e-12 {
		t.Errorf("unabsorbed %v (err %v), want 3.5", out.Unabsorbed, err)
	}
	in.Budget = math.NaN()
	if _, err := (uniformPolicy{}).Plan(in); err == nil {
		t.Error("NaN budget accepted")
	}
}

// A plan with a URL robots.txt disallows reports a model freshness and age
// that status can encode as JSON, for every kind of policy.
func TestReplanWithDisallowedURLEncodes(t *testing.T) {
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, name := range []string{"optimal", "uniform", "proportional", "nutch", "lambdacrawl"} {
		pol, err := PolicyByName(name, "freshness")
		if err != nil {
			t.Fatal(err)
		}
		s := newTestScheduler(t, func(o *SchedulerOptions) { o.Budget, o.HostRate, o.Policy = 1, 1, pol })
		s.Add(URLInfo{URL: "http://a/1", Host: "a", Weight: 1, Rate: 1e-3}, start)
		s.Add(URLInfo{URL: "http://a/2", Host: "a", Weight: 1, Rate: 1e-3, Disallowed: true}, start)
		s.Add(URLInfo{URL: "http://a/3", Host: "a", Weight: 1, Rate: 50}, start)
		out, err := s.Replan(start)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := json.Marshal(struct{ F, A float64 }{out.Freshness, out.Age}); err != nil {
			t.Errorf("%s: freshness %v age %v: %v", name, out.Freshness, out.Age, err)
		}
	}
}
