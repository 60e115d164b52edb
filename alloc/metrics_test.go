package alloc

import (
	"math"
	"testing"
)

// quadrature returns (E[(1−e^{−λT})/λ], E[integrated age over a gap])/E[T]
// for a gap T with density pdf on [0, hi], by composite Simpson: the
// definitions behind Table 2, evaluated without the closed forms.
func quadrature(lam float64, pdf func(float64) float64, hi float64) (fresh, age float64) {
	const n = 200000
	h := hi / n
	var ef, ea, et float64
	for i := 0; i <= n; i++ {
		x := float64(i) * h
		wgt := 2.0
		switch {
		case i == 0 || i == n:
			wgt = 1
		case i%2 == 1:
			wgt = 4
		}
		p := pdf(x) * wgt
		ef += p * -math.Expm1(-lam*x) / lam
		ea += p * (x*x/2 - x/lam - math.Expm1(-lam*x)/(lam*lam))
		et += p * x
	}
	return ef / et, ea / et
}

func TestTable2AgainstQuadrature(t *testing.T) {
	const freq = 2.0
	I := 1 / freq
	tri := func(x float64) float64 { return max(0, 1-math.Abs(x-I)/I) / I } // I(1+U₂−U₁)
	exp := func(x float64) float64 { return freq * math.Exp(-freq*x) }
	for _, lam := range []float64{0.05, 0.7, 2, 5, 30} {
		for _, tc := range []struct {
			p   Policy
			pdf func(float64) float64
			hi  float64
		}{
			{RandomOrder, tri, 2 * I},
			{PurelyRandom, exp, 60 * I},
		} {
			wf, wa := quadrature(lam, tc.pdf, tc.hi)
			if got := tc.p.Freshness(lam, freq); math.Abs(got-wf) > 1e-9 {
				t.Errorf("%v λ=%v: freshness %v, quadrature %v", tc.p, lam, got, wf)
			}
			if got := tc.p.Age(lam, freq); math.Abs(got-wa) > 1e-8*max(1, wa) {
				t.Errorf("%v λ=%v: age %v, quadrature %v", tc.p, lam, got, wa)
			}
		}
		// Fixed order: every gap is exactly I. (The naive closed forms
		// below lose digits at small r, hence the tolerance.)
		r := lam / freq
		if got, want := FixedOrder.Freshness(lam, freq), (1-math.Exp(-r))/r; math.Abs(got-want) > 1e-13 {
			t.Errorf("fixed λ=%v: %v want %v", lam, got, want)
		}
		if got, want := FixedOrder.Age(lam, freq), I*(0.5-1/r+(1-math.Exp(-r))/(r*r)); math.Abs(got-want) > 1e-9*want {
			t.Errorf("fixed age λ=%v: %v want %v", lam, got, want)
		}
	}
}

func TestPolicyEdgeCases(t *testing.T) {
	inf := math.Inf(1)
	for _, p := range []Policy{FixedOrder, RandomOrder, PurelyRandom} {
		for _, tc := range []struct{ rate, freq, fresh, age float64 }{
			{0, 0, 1, 0},
			{0, 3, 1, 0},
			{2, 0, 0, inf},
			{2, inf, 1, 0},
		} {
			if got := p.Freshness(tc.rate, tc.freq); got != tc.fresh {
				t.Errorf("%v.Freshness(%v, %v) = %v, want %v", p, tc.rate, tc.freq, got, tc.fresh)
			}
			if got := p.Age(tc.rate, tc.freq); got != tc.age {
				t.Errorf("%v.Age(%v, %v) = %v, want %v", p, tc.rate, tc.freq, got, tc.age)
			}
		}
		if !math.IsNaN(p.Freshness(-1, 1)) || !math.IsNaN(p.Age(1, math.NaN())) {
			t.Errorf("%v: invalid input not NaN", p)
		}
		// Tiny r: limits F → 1 − c·r, A → c'·r·I, never NaN, and the
		// series agree with the closed form where they meet (r = 1).
		for _, r := range []float64{1e-300, 1e-12, 1e-6, 0.3, 1 - 1e-12, 1, 1 + 1e-12, 700, 1e300} {
			f, a := p.Freshness(r, 1), p.Age(r, 1)
			if math.IsNaN(f) || math.IsNaN(a) || f < 0 || f > 1 || a < 0 {
				t.Errorf("%v r=%v: F=%v A=%v", p, r, f, a)
			}
		}
		below, above := p.Freshness(1-1e-12, 1), p.Freshness(1+1e-12, 1)
		if math.Abs(below-above) > 1e-11 {
			t.Errorf("%v: freshness jumps at r=1: %v %v", p, below, above)
		}
		below, above = p.Age(1-1e-12, 1), p.Age(1+1e-12, 1)
		if math.Abs(below-above) > 1e-11 {
			t.Errorf("%v: age jumps at r=1: %v %v", p, below, above)
		}
	}
	// λ = +Inf: the r → ∞ limits of Table 2.
	if a := RandomOrder.Age(inf, 2); a != 7.0/24 {
		t.Errorf("random-order age at λ=Inf: %v", a)
	}
	// Small-r slopes: F ≈ 1 − r/2 (fixed), 1 − 7r/12 (random), 1 − r (purely).
	r := 1e-7
	for _, tc := range []struct {
		p Policy
		c float64
	}{{FixedOrder, 0.5}, {RandomOrder, 7.0 / 12}, {PurelyRandom, 1}} {
		if got := (1 - tc.p.Freshness(r, 1)) / r; math.Abs(got-tc.c) > 1e-6 {
			t.Errorf("%v: (1−F)/r = %v, want %v", tc.p, got, tc.c)
		}
	}
	// Paper §4: at r = 1 fixed-order freshness is (e−1)/e and its age a
	// quarter of random-order's.
	if f := FixedOrder.Freshness(1, 1); math.Abs(f-(math.E-1)/math.E) > 1e-15 {
		t.Errorf("fixed F(r=1) = %v", f)
	}
}

func TestCollection(t *testing.T) {
	elems := []Element{{1, 1, -1}, {2, 3, -1}, {0, 1, -1}, {5, 0, -1}}
	freq := []float64{1, 1, 0, 0}
	want := (FixedOrder.Freshness(1, 1) + 3*FixedOrder.Freshness(2, 1) + 1) / 5
	if got := CollectionFreshness(FixedOrder, elems, freq); math.Abs(got-want) > 1e-15 {
		t.Errorf("CollectionFreshness = %v, want %v", got, want)
	}
	wantA := (FixedOrder.Age(1, 1) + 3*FixedOrder.Age(2, 1)) / 5
	if got := CollectionAge(FixedOrder, elems, freq); math.Abs(got-wantA) > 1e-15 {
		t.Errorf("CollectionAge = %v, want %v", got, wantA)
	}
	if got := CollectionFreshness(FixedOrder, nil, nil); got != 1 {
		t.Errorf("empty collection freshness %v", got)
	}
}
