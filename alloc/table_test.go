package alloc

import (
	"math"
	"testing"
)

// TestTable5 reproduces the paper's Table 5 (Example 4): λ = 1..5, w = 1,
// B = 5 fetches per day.
func TestTable5(t *testing.T) {
	elems := make([]Element, 5)
	for i := range elems {
		elems[i] = Element{Rate: float64(i + 1), Weight: 1, Host: -1}
	}
	for _, tc := range []struct {
		obj  Objective
		want []float64
	}{
		{Freshness, []float64{1.15, 1.36, 1.35, 1.14, 0.00}},
		{Age, []float64{0.84, 0.97, 1.03, 1.07, 1.09}},
	} {
		sol, err := Solve(Problem{Elements: elems, Budget: 5, Objective: tc.obj})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%v: f = %.4f μ = %.6g passes = %d F = %.4f A = %.4f", tc.obj, sol.Freq, sol.Mu, sol.Iterations, sol.Freshness, sol.Age)
		for i, w := range tc.want {
			if math.Abs(sol.Freq[i]-w) > 0.01 {
				t.Errorf("%v: f[%d] = %.4f, paper %.2f", tc.obj, i, sol.Freq[i], w)
			}
		}
		wantGiven := 0
		if tc.obj == Freshness {
			wantGiven = 1
		}
		if sol.GivenUp != wantGiven {
			t.Errorf("%v: GivenUp = %d, want %d", tc.obj, sol.GivenUp, wantGiven)
		}
		checkKKT(t, Problem{Elements: elems, Budget: 5, Objective: tc.obj}, sol)
	}
}

// table6 builds the paper's §6.3 population as 100 pages: 23 % change daily,
// 15 % weekly, 16 % monthly, 16 % quarterly and 30 % yearly (the pages that
// did not change in four months), with every page fetched once a month on
// average: B = 100/30 fetches per day.
func table6() Problem {
	classes := []struct {
		n      int
		period float64 // days between changes
	}{{23, 1}, {15, 7}, {16, 30}, {16, 90}, {30, 365}}
	var p Problem
	for _, c := range classes {
		for range c.n {
			p.Elements = append(p.Elements, Element{Rate: 1 / c.period, Weight: 1, Host: -1})
		}
	}
	p.Budget = float64(len(p.Elements)) / 30
	return p
}

func TestTable6(t *testing.T) {
	p := table6()
	prop, err := Proportional(p)
	if err != nil {
		t.Fatal(err)
	}
	uni, err := Uniform(p)
	if err != nil {
		t.Fatal(err)
	}
	opt, err := Solve(p)
	if err != nil {
		t.Fatal(err)
	}
	p.Objective = Age
	optAge, err := Solve(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("freshness: proportional %.4f uniform %.4f optimal %.4f (paper 0.12 0.57 0.62)", prop.Freshness, uni.Freshness, opt.Freshness)
	t.Logf("age (days): proportional %.1f uniform %.2f optimal-age %.2f (paper 400 5.6 4.3); freshness-optimal age %v", prop.Age, uni.Age, optAge.Age, opt.Age)
	for _, c := range []struct {
		name      string
		got, want float64
		tol       float64
	}{
		{"freshness proportional", prop.Freshness, 0.12, 0.01},
		{"freshness uniform", uni.Freshness, 0.57, 0.01},
		{"freshness optimal", opt.Freshness, 0.62, 0.01},
		{"age proportional", prop.Age, 400, 0.05 * 400},
		{"age uniform", uni.Age, 5.6, 0.05 * 5.6},
		{"age optimal", optAge.Age, 4.3, 0.05 * 4.3},
	} {
		if math.Abs(c.got-c.want) > c.tol {
			t.Errorf("%s = %.4g, paper %.4g (±%.2g)", c.name, c.got, c.want, c.tol)
		}
	}
}

// checkKKT verifies the constraints and the optimality conditions of sol
// directly from the formulas, independently of the solver's internals.
func checkKKT(t *testing.T, p Problem, sol Solution) {
	t.Helper()
	sum := 0.0
	hostSum := make([]float64, len(p.HostCaps))
	for i, e := range p.Elements {
		f := sol.Freq[i]
		if !(f >= 0) || math.IsInf(f, 0) {
			t.Fatalf("f[%d] = %v", i, f)
		}
		sum += f
		if e.Host >= 0 {
			hostSum[e.Host] += f
		}
	}
	if want := p.Budget - sol.Unabsorbed; math.Abs(sum-want) > 1e-9*p.Budget {
		t.Errorf("Σf = %.15g, want %.15g", sum, want)
	}
	for h, c := range p.HostCaps {
		if c > 0 && hostSum[h] > c*(1+1e-9) {
			t.Errorf("host %d: Σf = %v > cap %v", h, hostSum[h], c)
		}
	}
	for i, e := range p.Elements {
		if e.Rate == 0 || e.Weight == 0 {
			if sol.Freq[i] != 0 {
				t.Errorf("element %d (λ=%v w=%v): f = %v, want 0", i, e.Rate, e.Weight, sol.Freq[i])
			}
			continue
		}
		m := sol.Mu
		if e.Host >= 0 && len(sol.HostNu) > 0 {
			m += sol.HostNu[e.Host]
		}
		f := sol.Freq[i]
		if f == 0 {
			if p.Objective == Age || m*e.Rate/e.Weight < 1-1e-9 {
				t.Errorf("element %d given up at μ+ν = %v, but w/λ = %v", i, m, e.Weight/e.Rate)
			}
			continue
		}
		r := e.Rate / f
		var marg float64
		if p.Objective == Freshness {
			marg = e.Weight / e.Rate * gFunc(r, math.Exp(-r))
		} else {
			marg = e.Weight / e.Rate / e.Rate * aFunc(r, math.Exp(-r))
		}
		if math.Abs(marg/m-1) > 1e-8 {
			t.Errorf("element %d: marginal %v, multiplier %v (rel %v)", i, marg, m, marg/m-1)
		}
	}
}
