package alloc

import (
	"fmt"
	"math"
)

// Policy is a synchronisation-order policy (paper §3, item 3; Table 2): in
// which order the elements are visited within each synchronisation period.
type Policy int

const (
	// FixedOrder visits the elements in the same order every period, so each
	// element is synchronised exactly every I = 1/f. It is the best policy
	// for both metrics (paper §4) and the one the optimiser assumes.
	FixedOrder Policy = iota
	// RandomOrder visits every element once per period, in a fresh random
	// order each period: the gap between visits is I·(1+U₂−U₁), triangular
	// on [0, 2I].
	RandomOrder
	// PurelyRandom picks an arbitrary element at every synchronisation
	// point: the gap between visits is exponential with mean I.
	PurelyRandom
)

func (p Policy) String() string {
	switch p {
	case FixedOrder:
		return "fixed-order"
	case RandomOrder:
		return "random-order"
	case PurelyRandom:
		return "purely-random"
	}
	return fmt.Sprintf("Policy(%d)", int(p))
}

// Freshness is the time-averaged probability that the local copy of one
// element equals the real one, when the element changes as a Poisson
// process of rate `rate` and is synchronised `freq` times per unit time
// under policy p (paper Table 2, r = rate/freq):
//
//	fixed-order    F = (1 − e^{−r}) / r
//	random-order   F = (1/r)·(1 − ((1 − e^{−r})/r)²)
//	purely-random  F = 1 / (1 + r)
//
// Edge cases are exact, never NaN: rate = 0 gives 1 (an element that never
// changes is always fresh, whatever freq, including 0); otherwise freq = 0
// gives 0, freq = +Inf gives 1 and rate = +Inf gives 0. For small r the
// closed forms cancel catastrophically, so series are used instead.
// Negative or NaN inputs are invalid and yield NaN. It panics on an unknown
// Policy.
func (p Policy) Freshness(rate, freq float64) float64 {
	r, ok := ratio(rate, freq)
	if !ok {
		return math.NaN()
	}
	switch {
	case r == 0:
		return 1
	case math.IsInf(r, 1):
		return 0
	}
	switch p {
	case FixedOrder:
		return fixedFreshness(r)
	case RandomOrder:
		return randomOrderFreshness(r)
	case PurelyRandom:
		return 1 / (1 + r)
	}
	panic(fmt.Sprintf("alloc: unknown %v", p))
}

// Age is the time-averaged age of one element's local copy (how long ago
// the real element first changed since the copy was taken; 0 while fresh)
// under policy p (paper Table 2, I = 1/freq, r = rate/freq):
//
//	fixed-order    A = I·(1/2 − 1/r + (1 − e^{−r})/r²)
//	random-order   A = I·(1/3 + (1/2 − 1/r)² − ((1 − e^{−r})/r²)²)
//	purely-random  A = I·r/(1 + r)
//
// The random-order row follows from averaging the integrated age of a gap of
// length T, T²/2 − T/λ + (1 − e^{−λT})/λ², over the triangular gap
// distribution (E[T²] = 7I²/6, E[e^{−λT}] = ((1−e^{−r})/r)²); the
// purely-random row from the exponential gap. Both agree with Table 2.
//
// Edge cases: rate = 0 gives 0; otherwise freq = 0 gives +Inf (the copy
// grows older forever), freq = +Inf gives 0, and rate = +Inf gives the
// limit r → ∞ (I/2, 7I/12 and I respectively). Negative or NaN inputs yield
// NaN. It panics on an unknown Policy.
func (p Policy) Age(rate, freq float64) float64 {
	r, ok := ratio(rate, freq)
	if !ok {
		return math.NaN()
	}
	switch {
	case rate == 0 || math.IsInf(freq, 1):
		return 0
	case freq == 0:
		return math.Inf(1)
	}
	interval := 1 / freq
	switch p {
	case FixedOrder:
		if math.IsInf(r, 1) {
			return interval / 2
		}
		if r < 1 {
			// (1/2 − 1/r + (1−e^{−r})/r²) = r·Σ_{k≥3} (−r)^{k−3}/k!
			return interval * r * seriesC(r)
		}
		return interval * (0.5 - 1/r - math.Expm1(-r)/(r*r))
	case RandomOrder:
		if math.IsInf(r, 1) {
			return interval * 7 / 12
		}
		if r < 1 {
			return interval * randomOrderAgeSeries(r)
		}
		q := -math.Expm1(-r) / r
		return interval * (7.0/12 - 1/r + (1-q*q)/(r*r))
	case PurelyRandom:
		if math.IsInf(r, 1) {
			return interval
		}
		return interval * r / (1 + r)
	}
	panic(fmt.Sprintf("alloc: unknown %v", p))
}

// ratio returns r = rate/freq with the conventions of Freshness and Age:
// rate = 0 → 0 (whatever freq); freq = 0 → +Inf; freq = +Inf → 0.
// ok is false for negative or NaN inputs.
func ratio(rate, freq float64) (r float64, ok bool) {
	if !(rate >= 0) || !(freq >= 0) {
		return 0, false
	}
	switch {
	case rate == 0, math.IsInf(freq, 1):
		return 0, true
	case freq == 0:
		return math.Inf(1), true
	}
	return rate / freq, true
}

// fixedFreshness is (1 − e^{−r})/r for finite r > 0; expm1 keeps it exact
// for tiny r.
func fixedFreshness(r float64) float64 {
	return -math.Expm1(-r) / r
}

// seriesC returns Σ_{k≥3} (−r)^{k−3}/k! = (r²/2 − r + 1 − e^{−r})/r³, the
// cancellation-free core of the fixed-order age, for 0 ≤ r ≤ 1.
func seriesC(r float64) float64 {
	// 19! is ~1.2e17, so terms beyond k = 20 are below 1 ulp for r ≤ 1.
	sum, term := 0.0, 1.0/6
	for k := 3; k <= 20; k++ {
		sum += term
		term *= -r / float64(k+1)
	}
	return sum
}

// randomOrderFreshnessSeries is the random-order freshness for r ≤ 1 as a
// power series, free of the cancellation in 1 − q². It uses
// m_k/k! = (2^{k+2} − 2)/(k+2)!, where m_k = E[W^k] for W triangular on
// [0, 2] is the k-th moment of the random-order gap in units of I.
func randomOrderFreshnessSeries(r float64) float64 {
	// F = E[(1 − e^{−λT})]/(λI) = Σ_{k≥1} (−1)^{k+1} r^{k−1} m_k/k!.
	sum := 0.0
	pow := 1.0  // r^{k−1}·(−1)^{k+1}
	fact := 6.0 // (k+2)!
	two := 8.0  // 2^{k+2}
	for k := 1; k <= 30; k++ {
		sum += pow * (two - 2) / fact
		pow *= -r
		fact *= float64(k + 3)
		two *= 2
	}
	return sum
}

func randomOrderFreshness(r float64) float64 {
	if r < 1 {
		return randomOrderFreshnessSeries(r)
	}
	q := -math.Expm1(-r) / r
	return (1 - q*q) / r
}

// randomOrderAgeSeries is A/I = Σ_{k≥3} (−1)^{k+1} r^{k−2} m_k/k! for r ≤ 1.
func randomOrderAgeSeries(r float64) float64 {
	sum := 0.0
	pow := r      // (−1)^{k+1} r^{k−2} at k = 3
	fact := 120.0 // (k+2)! at k = 3
	two := 32.0   // 2^{k+2} at k = 3
	for k := 3; k <= 32; k++ {
		sum += pow * (two - 2) / fact
		pow *= -r
		fact *= float64(k + 3)
		two *= 2
	}
	return sum
}

// CollectionFreshness is the weighted freshness Σ w_i F(λ_i, f_i) / Σ w_i of
// a collection under policy p, with λ_i = elems[i].Rate, w_i =
// elems[i].Weight and f_i = freq[i] (paper §2.2, with the importance weights
// of its §8). A collection of total weight 0 has nothing that can be stale
// and reports 1. It panics if the slices differ in length.
func CollectionFreshness(p Policy, elems []Element, freq []float64) float64 {
	return collection(p.Freshness, elems, freq, 1)
}

// CollectionAge is the weighted age Σ w_i A(λ_i, f_i) / Σ w_i under policy
// p. It is +Inf as soon as one element with positive weight and rate is
// never synchronised (f_i = 0). Total weight 0 reports 0. It panics if the
// slices differ in length.
func CollectionAge(p Policy, elems []Element, freq []float64) float64 {
	return collection(p.Age, elems, freq, 0)
}

func collection(metric func(rate, freq float64) float64, elems []Element, freq []float64, empty float64) float64 {
	if len(elems) != len(freq) {
		panic(fmt.Sprintf("alloc: %d elements but %d frequencies", len(elems), len(freq)))
	}
	var num, den float64
	for i, e := range elems {
		if e.Weight == 0 {
			continue
		}
		num += e.Weight * metric(e.Rate, freq[i])
		den += e.Weight
	}
	if den == 0 {
		return empty
	}
	return num / den
}
