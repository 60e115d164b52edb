package alloc

import "math"

// This file holds the per-element inner solves: for a multiplier m, the
// frequency f = λ/r at which the element's marginal value equals m, and the
// elasticity el = −d ln f / d ln m that the outer Newton step needs.
//
// They run once per element per pass, so they are written for speed: one
// transcendental call per Halley step, a warm start from the element's
// previous frequency, and a stopping rule that trusts Halley's cubic
// convergence instead of paying for a confirming step, with an accuracy
// target that the outer iteration loosens while it is still far away.

// smallR is where gFunc and aFunc switch from series to closed form. The
// closed forms subtract numbers near 1 to get g ≈ r²/2 and a ≈ r³/3, so at
// r = 0.25 they keep ~14 digits; the series below it need 13 terms.
const smallR = 0.25

// gSmall returns g(r)/r² = Σ_{k≥2} (−1)^k (k−1) r^{k−2}/k! for 0 ≤ r < 0.25,
// where g(r) = 1 − (1+r)e^{−r}. The first omitted term is below 1e−18.
func gSmall(r float64) float64 {
	return 1.0/2 + r*(-2.0/6+r*(3.0/24+r*(-4.0/120+r*(5.0/720+r*(-6.0/5040+
		r*(7.0/40320+r*(-8.0/362880+r*(9.0/3628800+r*(-10.0/39916800+
			r*(11.0/479001600+r*(-12.0/6227020800+r*(13.0/87178291200))))))))))))
}

// aSmall returns a(r)/r³ = Σ_{k≥3} (−1)^{k+1} (k−1) r^{k−3}/k! for
// 0 ≤ r < 0.25, where a(r) = r²/2 − 1 + (1+r)e^{−r} = r²/2 − g(r).
func aSmall(r float64) float64 {
	return 2.0/6 + r*(-3.0/24+r*(4.0/120+r*(-5.0/720+r*(6.0/5040+r*(-7.0/40320+
		r*(8.0/362880+r*(-9.0/3628800+r*(10.0/39916800+r*(-11.0/479001600+
			r*(12.0/6227020800+r*(-13.0/87178291200+r*(14.0/1307674368000))))))))))))
}

// gFunc is g(r) = 1 − (1+r)e^{−r}, the marginal freshness gain
// λ·∂F/∂f of the fixed-order policy (paper §5.3 Lagrange condition).
// e must be e^{−r}.
func gFunc(r, e float64) float64 {
	if r < smallR {
		return r * r * gSmall(r)
	}
	return 1 - (1+r)*e
}

// aFunc is a(r) = r²/2 − 1 + (1+r)e^{−r}, the marginal age reduction
// −λ²·∂A/∂f of the fixed-order policy. e must be e^{−r}.
func aFunc(r, e float64) float64 {
	if r < smallR {
		return r * r * r * aSmall(r)
	}
	return r*r/2 - 1 + (1+r)*e
}

// fullAcc is the relative accuracy of a fully converged inner solve.
const fullAcc = 1e-17

// maxInner bounds the inner iterations; from the starting points used they
// need at most ~6.
const maxInner = 60

// innerTol holds the step sizes below which a Halley (cubic) or Newton
// (quadratic) inner iteration may stop. tolFor computes them once per pass,
// not per element (a cube root per element would cost a quarter of a pass).
type innerTol struct{ halley, newton float64 }

// tolFor returns the stopping steps for relative accuracy acc. Outer passes
// far from the answer ask for less accuracy and so usually stop after a
// single Halley step from the warm start.
func tolFor(acc float64) innerTol {
	acc = max(acc, fullAcc)
	return innerTol{math.Cbrt(acc), math.Sqrt(acc)}
}

// rampWidth δ and rampR = g⁻¹(1−δ) define the give-up ramp. Exactly,
// f(y) = λ/g⁻¹(y) falls to 0 at y = 1 only logarithmically: in float64 the
// last representable y < 1 still has f ≈ λ/40, so Σ f_i would jump at every
// element's threshold and Σ f_i = B could have no solution. For
// y ∈ [1−δ, 1) f is therefore interpolated linearly from λ/rampR to 0. Such
// an element's marginal value differs from μ by less than δ relatively, far
// below any estimate's precision, and Σ f_i becomes continuous.
const (
	rampWidth = 1e-9
	rampR     = 23.93972786557397 // (1+r)e^{−r} = 1e−9
)

// freshFreq returns the freshness-optimal frequency of an element with rate
// lam > 0 and weight w > 0 at multiplier m > 0, i.e. f = λ/r with
// g(r) = y := mλ/w, or 0 when y ≥ 1 (the element is given up: even f → 0+
// gains less than m per fetch). prev is the element's previous frequency,
// used as a warm start when positive, tol the stopping rule.
// el is the elasticity −d ln f/d ln m = y/(r·g'(r)) with g'(r) = r e^{−r}.
// Within rampWidth of the threshold f follows the give-up ramp.
func freshFreq(lam, w, m, prev float64, tol innerTol) (f, el float64) {
	y := m * lam / w
	if !(y < 1) {
		return 0, 0
	}
	if z := 1 - y; z <= rampWidth {
		return lam / rampR * (z / rampWidth), y / z
	}
	if y < 1e-100 {
		// g(r) = r²/2·(1 + O(r)), so r = √(2y) to far below an ulp. Written
		// with separate roots so that neither λ·w nor λ/m can under/overflow.
		return math.Sqrt(lam) * math.Sqrt(w) / math.Sqrt(2*m), 0.5
	}
	r := 0.0
	if prev > 0 {
		r = lam / prev
	}
	if y >= 0.9 {
		return freshFreqTail(lam, y, r, tol)
	}
	// The root lies in [√(2y), 3.9] (g(r) ≤ r²/2 and g(3.9) > 0.9); a warm
	// start outside it is ignored. From inside it the iteration converges
	// monotonically after at most one step.
	warm := r*r >= 2*y && r <= 4
	if !warm {
		// Series inversion of g(r) = r²/2 − r³/3 + r⁴/8 − …
		s := math.Sqrt(2 * y)
		r = min(s*(1+s/3+s*s*(11.0/72)), 4)
	}
	var d float64
	for it := 0; ; it++ {
		if it == maxInner {
			return coldRetry(warm, func() (float64, float64) { return freshFreq(lam, w, m, 0, tol) })
		}
		e := math.Exp(-r)
		d = r * e // g'(r)
		nt := (gFunc(r, e) - y) / d
		// Halley: g''/g' = (1−r)/r. Fall back to Newton when the
		// correction would blow up (far from the root).
		step, stop := nt, tol.newton
		if den := 1 - nt*(1-r)/(2*r); den > 0.5 {
			step, stop = nt/den, tol.halley
		}
		rn := r - step
		if rn <= 0 {
			rn = 0.25 * r
		}
		done := math.Abs(step) <= stop*rn
		r = rn
		if done {
			break
		}
	}
	return lam / r, y / (r * d)
}

// freshFreqTail solves g(r) = y for y ≥ 0.9 (r ≳ 3.9) in the logarithmic
// form r − ln(1+r) = L with L = −ln(1−y) = −ln((1+r)e^{−r}): in r the
// equation is exponentially flat and rounding in 1 − (1+r)e^{−r} would
// dominate, while this form is nearly linear (derivative r/(1+r)) and well
// conditioned. r0 is a warm start, ignored if not plausible.
func freshFreqTail(lam, y, r0 float64, tol innerTol) (f, el float64) {
	z := 1 - y // exact for y ∈ [0.5, 1] (Sterbenz)
	L := -math.Log(z)
	r := r0
	warm := r >= 3 && r <= 2*L+4
	if !warm {
		// r = L + ln(1+r) is a contraction; two rounds from r = L+ln(1+L)
		// land within a few per cent.
		r = L + math.Log1p(L)
		r = L + math.Log1p(r)
	}
	for it := 0; ; it++ {
		if it == maxInner {
			return coldRetry(warm, func() (float64, float64) { return freshFreqTail(lam, y, 0, tol) })
		}
		h := r - math.Log1p(r) - L
		hp := r / (1 + r)
		hpp := 1 / ((1 + r) * (1 + r))
		nt := h / hp
		step, stop := nt, tol.newton
		if den := 1 - nt*hpp/(2*hp); den > 0.5 {
			step, stop = nt/den, tol.halley
		}
		rn := r - step
		if rn < 1 {
			rn = 0.5 * (r + 1)
		}
		done := math.Abs(step) <= stop*rn
		r = rn
		if done {
			break
		}
	}
	// el = y/(r·g'(r)) with e^{−r} = z/(1+r).
	return lam / r, y * (1 + r) / (r * r * z)
}

// ageFreq returns the age-optimal frequency of an element with rate lam > 0
// and weight w > 0 at multiplier m > 0: f = λ/r with a(r) = y := mλ²/w. a is
// unbounded, so there is always a solution with f > 0. prev is a warm
// start. el = y/(r·a'(r)) with a'(r) = r(1 − e^{−r}) lies in [1/3, 1/2]:
// f ∝ m^{−1/3} for rarely changing elements and f → √(w/(2m)) for
// elements that change much faster than they can be fetched.
func ageFreq(lam, w, m, prev float64, tol innerTol) (f, el float64) {
	// y = s² is formed through s so that λ² cannot overflow.
	s := lam * math.Sqrt(m/w)
	switch {
	case s > 1e8:
		// a(r) = r²/2 − 1 + O(r e^{−r}) and 1/y < 1e−16: f = λ/√(2y).
		return math.Sqrt(w) / math.Sqrt(2*m), 0.5
	case s < 1e-50:
		// a(r) = r³/3·(1 + O(r)): f = λ/∛(3y) = ∛(λw/(3m)).
		return math.Cbrt(lam) * math.Cbrt(w) / math.Cbrt(3*m), 1.0 / 3
	}
	y := s * s
	r := 0.0
	if prev > 0 {
		r = lam / prev
	}
	// a(r) ≥ r²/2 − 1 bounds the root above by √(2y+2), a(r) ≤ r³/3 below
	// by ∛(3y); a warm start outside is ignored.
	warm := r*r*r >= 3*y && r*r <= 2*y+2
	if !warm {
		if y < 0.2 {
			// Series inversion of a(r) = r³/3 − r⁴/8 + r⁵/30 − …
			t := math.Cbrt(3 * y)
			r = t * (1 + t/8 + t*t*(13.0/960))
		} else {
			rhi := math.Sqrt(2*y + 2)
			r = math.Sqrt(2 * (y + 1 - (1+rhi)*math.Exp(-rhi)))
		}
	}
	var d float64
	for it := 0; ; it++ {
		if it == maxInner {
			return coldRetry(warm, func() (float64, float64) { return ageFreq(lam, w, m, 0, tol) })
		}
		e := math.Exp(-r)
		om := 1 - e
		if r < 1e-3 {
			om = -math.Expm1(-r)
		}
		d = r * om // a'(r)
		nt := (aFunc(r, e) - y) / d
		// Halley with a''(r) = 1 − e^{−r} + r e^{−r}.
		step, stop := nt, tol.newton
		if den := 1 - nt*(om+r*e)/(2*d); den > 0.5 {
			step, stop = nt/den, tol.halley
		}
		rn := r - step
		if rn <= 0 {
			rn = 0.25 * r
		}
		done := math.Abs(step) <= stop*rn
		r = rn
		if done {
			break
		}
	}
	return lam / r, y / (r * d)
}

// coldRetry restarts an inner solve that ran out of iterations from its
// cold starting point. That cannot happen from the bounded starts used, so
// a cold solve that still fails is a bug.
func coldRetry(warm bool, cold func() (float64, float64)) (float64, float64) {
	if !warm {
		panic("alloc: inner solve did not converge from its cold start")
	}
	return cold()
}

// FreshnessFrequency is the freshness-optimal frequency of one element at
// multiplier mu (docs/design.md §3.2): the f at which its marginal
// weighted freshness (w/λ)·g(λ/f) equals μ, or 0 when μλ/w ≥ 1 (the
// element is given up) or it never changes. It is what Solve gives each
// element once μ is known, for a caller that weighs one element's
// options against the multiplier of a plan.
func FreshnessFrequency(rate, weight, mu float64) float64 {
	if !(rate > 0) || !(weight > 0) || !(mu > 0) || math.IsInf(rate, 1) || math.IsInf(weight, 1) || math.IsInf(mu, 1) {
		return 0
	}
	f, _ := freshFreq(rate, weight, mu, 0, tolFor(fullAcc))
	return f
}

// MarginalFreshness is w·∂F/∂f = (w/λ)·g(λ/f), the weighted freshness one
// more fetch per unit time buys an element fetched at freq under the
// fixed-order policy (0 for a rate of 0: it is always fresh; w/λ as
// f → 0).
func MarginalFreshness(rate, weight, freq float64) float64 {
	if !(rate > 0) || !(weight > 0) {
		return 0
	}
	if !(freq > 0) {
		return weight / rate
	}
	r := rate / freq
	return weight / rate * gFunc(r, math.Exp(-r))
}
