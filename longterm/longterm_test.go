package longterm

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestLambertWm1KnownValues(t *testing.T) {
	// Reference values from mpmath.lambertw(x, -1) at 30 digits.
	cases := []struct{ x, want float64 }{
		{-1 / math.E, -1},
		{-0.367879, -1.0015494951912754258},
		{-0.3, -1.781337023421627612},
		{-0.2, -2.5426413577735264243},
		{-0.1, -3.5771520639572972184},
		{-0.01, -6.4727751243940046947},
		{-1e-5, -14.163600815810183009},
		{-1e-300, -697.322776295460161},
	}
	for _, c := range cases {
		got := LambertWm1(c.x)
		if math.Abs(got-c.want) > 1e-13*math.Abs(c.want) {
			t.Errorf("LambertWm1(%v) = %.17g, want %.17g", c.x, got, c.want)
		}
		// And it must actually invert w·eʷ on the lower branch.
		if got > -1 || math.Abs(got*math.Exp(got)-c.x) > 1e-14*math.Abs(c.x)+1e-16 {
			t.Errorf("LambertWm1(%v) = %v does not satisfy w·e^w = x", c.x, got)
		}
	}
	if !math.IsInf(LambertWm1(0), -1) {
		t.Errorf("LambertWm1(0) = %v, want -Inf", LambertWm1(0))
	}
	for _, x := range []float64{-0.37, 0.1, math.NaN()} {
		if !math.IsNaN(LambertWm1(x)) {
			t.Errorf("LambertWm1(%v) = %v, want NaN", x, LambertWm1(x))
		}
	}
}

func TestLambertW0KnownValues(t *testing.T) {
	cases := []struct{ x, want float64 }{
		{-1 / math.E, -1},
		{-0.2, -0.25917110181907374506},
		{-0.1, -0.11183255915896296483},
		{0, 0},
		{0.5, 0.35173371124919582602},
		{1, 0.567143290409783873},
		{math.E, 1},
		{10, 1.7455280027406993831},
		{1000, 5.2496028524015962271},
		{1e300, 684.24720862976084924},
	}
	for _, c := range cases {
		got := LambertW0(c.x)
		if math.Abs(got-c.want) > 1e-13*math.Max(1, math.Abs(c.want)) {
			t.Errorf("LambertW0(%v) = %.17g, want %.17g", c.x, got, c.want)
		}
	}
	if !math.IsNaN(LambertW0(-0.4)) {
		t.Errorf("LambertW0(-0.4) = %v, want NaN", LambertW0(-0.4))
	}
}

// TestPaperTable reproduces the table of Example 3 in Razniewski & Nutt §5
// (B = C = 1 per year, exponential decay).
func TestPaperTable(t *testing.T) {
	cases := []struct{ lambda, u, ni float64 }{
		{0.457, 3.38, 0.21},
		{0.316, 3.61, 0.32},
		{0.163, 4.42, 0.49},
		{0.098, 5.36, 0.59},
	}
	for _, c := range cases {
		r, err := Optimal(c.lambda, 1, 1, Exponential)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("λ=%.3f: U=%.4f NI=%.4f F=%.4f", c.lambda, r.Interval, r.NetIncome, r.Freshness)
		if math.Abs(r.Interval-c.u) > 0.01 || math.Abs(r.NetIncome-c.ni) > 0.01 || r.Futile {
			t.Errorf("λ=%v: got U=%.4f NI=%.4f futile=%v, want U=%.2f NI=%.2f",
				c.lambda, r.Interval, r.NetIncome, r.Futile, c.u, c.ni)
		}
		// The closed form NI = B·e^{−λU} must agree with Eq. 3 evaluated at U.
		if ni := NetIncome(c.lambda, 1, 1, r.Interval, Exponential); math.Abs(ni-r.NetIncome) > 1e-12 {
			t.Errorf("λ=%v: NetIncome(U*) = %v, Optimal reported %v", c.lambda, ni, r.NetIncome)
		}
	}
}

// TestOptimalEquation6 checks the W₋₁-free evaluation inside Optimal against
// the literal Eq. 6 of Razniewski & Nutt using the public LambertWm1.
func TestOptimalEquation6(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	for range 1000 {
		lambda := math.Exp(rng.Float64()*8 - 6)
		b := math.Exp(rng.Float64()*8 - 2)
		c := math.Exp(rng.Float64()*4 - 2)
		r, err := Optimal(lambda, b, c, Exponential)
		if err != nil {
			t.Fatal(err)
		}
		if r.Futile {
			continue
		}
		ratio := b / c
		u := (-LambertWm1((lambda-ratio)/(ratio*math.E)) - 1) / lambda
		// Eq. 6 loses digits near the branch point (slowly decaying
		// elements), so compare loosely; Optimal is the accurate one.
		if math.Abs(u-r.Interval) > 1e-6*r.Interval {
			t.Errorf("λ=%g B=%g C=%g: Eq.6 U=%.12g, Optimal U=%.12g", lambda, b, c, u, r.Interval)
		}
	}
}

// bruteMax maximises NI over U by a log-spaced scan followed by golden-section
// refinement; it knows nothing about the closed forms.
func bruteMax(lambda, b, c float64, d Decay) (u, ni float64) {
	f := func(logU float64) float64 { return NetIncome(lambda, b, c, math.Exp(logU), d) }
	lo, hi := math.Log(1e-6/lambda), math.Log(1e4/lambda)
	const n = 4000
	best, bestI := math.Inf(-1), 0
	for i := 0; i <= n; i++ {
		if v := f(lo + (hi-lo)*float64(i)/n); v > best {
			best, bestI = v, i
		}
	}
	step := (hi - lo) / n
	a, z := lo+step*float64(bestI-1), lo+step*float64(bestI+1)
	g := (math.Sqrt(5) - 1) / 2
	for range 200 {
		x1, x2 := z-g*(z-a), a+g*(z-a)
		if f(x1) > f(x2) {
			z = x2
		} else {
			a = x1
		}
	}
	m := (a + z) / 2
	return math.Exp(m), f(m)
}

func TestOptimalMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, d := range []Decay{Exponential, Linear} {
		checked := 0
		for range 300 {
			lambda := math.Exp(rng.Float64()*10 - 7) // 1e-3 .. 20
			b := math.Exp(rng.Float64()*10 - 3)
			c := math.Exp(rng.Float64()*6 - 3)
			r, err := Optimal(lambda, b, c, d)
			if err != nil {
				t.Fatal(err)
			}
			u, ni := bruteMax(lambda, b, c, d)
			if r.Futile {
				// No interval may earn strictly more than nothing.
				if ni > 1e-9*b {
					t.Errorf("%v λ=%g B=%g C=%g: futile but NI(%g) = %g > 0", d, lambda, b, c, u, ni)
				}
				continue
			}
			checked++
			if math.Abs(ni-r.NetIncome) > 1e-9*math.Max(1, math.Abs(ni)) {
				t.Errorf("%v λ=%g B=%g C=%g: NI closed %.12g, brute %.12g", d, lambda, b, c, r.NetIncome, ni)
			}
			// NI is flat at its maximum, so U is only determined to about
			// √(machine ε); 1e-5 relative is well inside that.
			if math.Abs(u-r.Interval) > 1e-5*r.Interval {
				t.Errorf("%v λ=%g B=%g C=%g: U closed %.10g, brute %.10g", d, lambda, b, c, r.Interval, u)
			}
		}
		if checked < 100 {
			t.Errorf("%v: only %d non-futile cases checked", d, checked)
		}
	}
}

func TestFutilityBoundaries(t *testing.T) {
	// Exponential: futile iff B/λ ≤ C. With B = C = 1 that is λ ≥ 1
	// (Razniewski & Nutt §5, Example 4).
	for _, c := range []struct {
		lambda float64
		d      Decay
		futile bool
	}{
		{0.999, Exponential, false},
		{1, Exponential, true},
		{1.001, Exponential, true},
		{0.499, Linear, false},
		{0.5, Linear, true},
		{0.501, Linear, true},
	} {
		r, err := Optimal(c.lambda, 1, 1, c.d)
		if err != nil {
			t.Fatal(err)
		}
		if r.Futile != c.futile {
			t.Errorf("%v λ=%v: futile = %v, want %v", c.d, c.lambda, r.Futile, c.futile)
		}
		if r.Futile && (!math.IsInf(r.Interval, 1) || r.NetIncome != 0 || r.Rate() != 0) {
			t.Errorf("%v λ=%v: futile result %+v should be U=+Inf, NI=0", c.d, c.lambda, r)
		}
		if !r.Futile && (r.NetIncome <= 0 || r.NetIncome > 1e-2) {
			// Just inside the boundary the optimum is barely profitable.
			t.Errorf("%v λ=%v: NI = %v, want small positive", c.d, c.lambda, r.NetIncome)
		}
	}
	// Approaching the boundary from inside, U grows without bound for
	// exponential decay (only logarithmically: λU ≈ −ln(1 − λC/B)) and tends
	// to 1/λ for linear.
	prev := 0.0
	for _, eps := range []float64{1e-3, 1e-6, 1e-9, 1e-12} {
		r, _ := Optimal(1-eps, 1, 1, Exponential)
		if r.Interval <= prev || r.Interval < -math.Log(eps) {
			t.Errorf("exp λ=1-%g: U = %v, want > %v and > -ln ε", eps, r.Interval, prev)
		}
		prev = r.Interval
	}
	r, _ := Optimal(0.5-1e-12, 1, 1, Linear)
	if math.Abs(r.Interval-2) > 1e-6 {
		t.Errorf("linear near boundary: U = %v, want 1/λ = 2", r.Interval)
	}
	// Zero benefit is futile for both decays.
	for _, d := range []Decay{Exponential, Linear} {
		if r, _ := Optimal(0.1, 0, 1, d); !r.Futile {
			t.Errorf("%v: B = 0 should be futile", d)
		}
	}
}

func TestZeroRateNeverDecays(t *testing.T) {
	for _, d := range []Decay{Exponential, Linear} {
		r, err := Optimal(0, 2, 1, d)
		if err != nil {
			t.Fatal(err)
		}
		if !math.IsInf(r.Interval, 1) || r.NetIncome != 2 || r.Futile || r.Freshness != 1 {
			t.Errorf("%v λ=0: got %+v, want U=+Inf NI=B not futile", d, r)
		}
	}
	// Continuity: tiny λ gives a huge but finite interval, ≈ √(2C/(Bλ))
	// for exponential decay too (the branch-point limit of Eq. 6).
	r, _ := Optimal(1e-12, 1, 1, Exponential)
	if want := math.Sqrt(2 / 1e-12); math.Abs(r.Interval-want) > 1e-4*want {
		t.Errorf("exp λ=1e-12: U = %v, want ≈ %v", r.Interval, want)
	}
}

func TestArgumentErrors(t *testing.T) {
	for _, c := range []struct {
		lambda, b, cost float64
		d               Decay
		name            string
	}{
		{-1, 1, 1, Exponential, "lambda"},
		{math.NaN(), 1, 1, Exponential, "lambda"},
		{math.Inf(1), 1, 1, Linear, "lambda"},
		{1, -1, 1, Exponential, "benefit"},
		{1, 1, -1, Exponential, "cost"},
		{1, 1, 0, Linear, "cost"},
		{1, 1, 1, Decay(7), "decay"},
	} {
		_, err := Optimal(c.lambda, c.b, c.cost, c.d)
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.name) {
			t.Errorf("Optimal(%v, %v, %v, %v) error = %v, want ErrInvalid naming %q", c.lambda, c.b, c.cost, c.d, err, c.name)
		}
	}
	_, err := Plan([]Element{{0.1, 1, 1}, {0.1, 1, -2}}, Exponential)
	if err == nil || !strings.Contains(err.Error(), "element 1") || !strings.Contains(err.Error(), "cost") {
		t.Errorf("Plan error = %v, want it to name element 1 and cost", err)
	}
	if _, err := Workers(10, 0); err == nil || !strings.Contains(err.Error(), "perWorkerRate") {
		t.Errorf("Workers(10, 0) error = %v", err)
	}
	if _, err := Workers(-1, 1); err == nil || !strings.Contains(err.Error(), "totalBudget") {
		t.Errorf("Workers(-1, 1) error = %v", err)
	}
}

func TestPlanAndWorkers(t *testing.T) {
	els := []Element{
		{Rate: 0.457, Benefit: 1, Cost: 1},
		{Rate: 0.098, Benefit: 1, Cost: 1},
		{Rate: 2, Benefit: 1, Cost: 1}, // futile
		{Rate: 0, Benefit: 1, Cost: 1}, // never decays
	}
	s, err := Plan(els, Exponential)
	if err != nil {
		t.Fatal(err)
	}
	wantBudget := 1/s.Results[0].Interval + 1/s.Results[1].Interval
	if math.Abs(s.TotalBudget-wantBudget) > 1e-15 || s.Futile != 1 {
		t.Errorf("TotalBudget = %v (want %v), Futile = %d (want 1)", s.TotalBudget, wantBudget, s.Futile)
	}
	if want := s.Results[0].NetIncome + s.Results[1].NetIncome + 1; math.Abs(s.NetIncome-want) > 1e-15 {
		t.Errorf("NetIncome = %v, want %v", s.NetIncome, want)
	}
	t.Logf("plan: budget %.4f fetches/yr, NI %.4f/yr", s.TotalBudget, s.NetIncome)

	for _, c := range []struct {
		budget, per float64
		want        int
	}{
		{0, 5, 0}, {10, 5, 2}, {10.0000001, 5, 3}, {0.3 * 3, 0.3, 3}, {1e6, 7, 142858},
	} {
		got, err := Workers(c.budget, c.per)
		if err != nil || got != c.want {
			t.Errorf("Workers(%v, %v) = %d, %v; want %d", c.budget, c.per, got, err, c.want)
		}
	}
}

func BenchmarkOptimalExponential(b *testing.B) {
	var sink float64
	for i := 0; b.Loop(); i++ {
		r, _ := Optimal(0.05+float64(i%100)*0.009, 1, 1, Exponential)
		sink += r.Interval
	}
	_ = sink
}

func BenchmarkOptimalLinear(b *testing.B) {
	var sink float64
	for i := 0; b.Loop(); i++ {
		r, _ := Optimal(0.05+float64(i%100)*0.004, 1, 1, Linear)
		sink += r.Interval
	}
	_ = sink
}
