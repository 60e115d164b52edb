package longterm

import "math"

// negInvE is −1/e, the branch point shared by W₀ and W₋₁.
const negInvE = -1 / math.E

// branchTol absorbs the rounding of −1/e itself: inputs this close below the
// branch point are treated as sitting on it rather than as out of domain.
const branchTol = 1e-15

// branchDelta is the rounding noise of δ = 1 + e·x computed in float64 (e and
// x each carry ~1e-16 relative error). Below it, x is on the branch point as
// far as float64 can tell and W = −1 exactly; otherwise the float nearest
// −1/e would yield −1 ± 6e-9 from √(2δ) amplifying the noise.
const branchDelta = 4e-16

// LambertWm1 returns W₋₁(x), the lower real branch of the Lambert W function
// (the solution w ≤ −1 of w·eʷ = x), for x in [−1/e, 0). It returns −1 at
// the branch point, −Inf at x = 0 (the limit from below) and NaN outside the
// domain, in the style of package math.
//
// Paper 001 §5 (Eq. 6) gives the optimal refresh interval under exponential
// decay in terms of W₋₁. Rather than iterating on w·eʷ = x directly, which
// loses all precision near the branch point where the optimum for slowly
// decaying elements lives, we substitute w = −1 − y (y ≥ 0). The equation
// becomes y − ln(1+y) = s with s = −1 − ln(−x), which is well conditioned for
// every x and is solved by Halley iteration (see shiftedWm1).
func LambertWm1(x float64) float64 {
	switch {
	case math.IsNaN(x) || x >= 0:
		if x == 0 {
			return math.Inf(-1)
		}
		return math.NaN()
	case x < negInvE-branchTol:
		return math.NaN()
	}
	// δ = 1 + e·x measures the distance from the branch point. Near it, s is
	// best computed as −ln(1−δ) with δ from a fused multiply-add; away from it
	// (including x → 0⁻ where δ rounds to 1), −1 − ln(−x) is exact enough.
	var s float64
	if d := math.FMA(math.E, x, 1); d < 0.5 {
		if d <= branchDelta {
			return -1
		}
		s = -math.Log1p(-d)
	} else {
		s = -1 - math.Log(-x)
	}
	return -1 - shiftedWm1(s)
}

// shiftedWm1 returns the y ≥ 0 with y − ln(1+y) = s, i.e. −1 − W₋₁(−e^{−1−s}).
// Halley iteration from a series guess (small s, from the branch-point
// expansion y = p + p²/3 + p³/36 with p = √(2s)) or from the asymptote
// y ≈ s + ln(1+y) (large s) converges in two to four steps.
func shiftedWm1(s float64) float64 {
	switch {
	case s <= 0:
		return 0
	case math.IsInf(s, 1):
		return s
	}
	var y float64
	if s < 2 {
		p := math.Sqrt(2 * s)
		y = p + p*p/3 + p*p*p/36
	} else {
		y = s + math.Log1p(s)
		y = s + math.Log1p(y)
	}
	for range 50 {
		f := phi(y) - s
		d1 := y / (1 + y)
		d2 := 1 / ((1 + y) * (1 + y))
		step := 2 * f * d1 / (2*d1*d1 - f*d2)
		next := y - step
		if next <= 0 {
			next = y / 2
		}
		if math.Abs(next-y) <= 4*math.SmallestNonzeroFloat64 || math.Abs(next-y) <= 1e-15*next {
			return next
		}
		y = next
	}
	return y
}

// phi computes y − ln(1+y) without the cancellation the direct formula
// suffers for small y, where it is summed as the series Σ_{k≥2} (−y)^k/k.
func phi(y float64) float64 {
	if y >= 0.2 {
		return y - math.Log1p(y)
	}
	var sum float64
	term := y // (−1)^{k+1} y^{k−1} ... built incrementally
	for k := 2; k < 40; k++ {
		term *= -y
		t := -term / float64(k) // (−1)^k y^k / k
		sum += t
		if math.Abs(t) <= 1e-18*math.Abs(sum) {
			break
		}
	}
	return sum
}

// LambertW0 returns W₀(x), the principal real branch of the Lambert W
// function (the solution w ≥ −1 of w·eʷ = x), for x ≥ −1/e, and NaN below
// the domain. It is not needed for the optimum itself but completes the pair
// and is handy for inverting related expressions.
func LambertW0(x float64) float64 {
	switch {
	case math.IsNaN(x) || x < negInvE-branchTol:
		return math.NaN()
	case math.IsInf(x, 1):
		return x
	case x == 0:
		return 0
	}
	d := math.FMA(math.E, x, 1)
	if d <= branchDelta {
		return -1
	}
	var w float64
	switch {
	case d < 0.3:
		// Branch-point series w = −1 + p − p²/3 + 11p³/72.
		p := math.Sqrt(2 * d)
		w = -1 + p - p*p/3 + 11*p*p*p/72
	case x < 3:
		w = math.Log1p(x)
	default:
		l1 := math.Log(x)
		l2 := math.Log(l1)
		w = l1 - l2 + l2/l1
	}
	if x > math.E {
		// Newton on w + ln w = ln x avoids overflowing eʷ for huge x.
		lx := math.Log(x)
		for range 50 {
			next := w - (w+math.Log(w)-lx)/(1+1/w)
			if math.Abs(next-w) <= 1e-15*math.Abs(next) {
				return next
			}
			w = next
		}
		return w
	}
	for range 50 {
		ew := math.Exp(w)
		f := w*ew - x
		wp1 := w + 1
		if wp1 == 0 {
			return w
		}
		next := w - f/(ew*wp1-(w+2)*f/(2*wp1))
		if math.Abs(next-w) <= 1e-15*(1+math.Abs(next)) {
			return next
		}
		w = next
	}
	return w
}
