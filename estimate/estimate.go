// Package estimate estimates the change rate λ of a web page from what a
// crawler can observe (docs/design.md §3.3): for each fetch only whether the
// content changed since the previous fetch, sometimes with a Last-Modified
// time. Changes are modelled as a Poisson process (Cho & Garcia-Molina,
// "Synchronizing a database to improve freshness", §2) and estimated after
// Cho & Garcia-Molina, "Estimating frequency of change".
//
// The package offers batch estimators (RegularInterval, MLE, FromLastModified,
// FromChangeTimes), a Gamma population prior for shrinkage (Prior, FitPrior)
// and a fixed-size online State that combines all of them with exponential
// fading, meant to be stored per URL.
//
// Time is unit-free: any unit works as long as times, intervals and
// Config.HalfLife share it, and rates come out per that unit. DefaultConfig
// and DefaultPrior assume seconds. The package is pure: no I/O, no globals.
package estimate

import (
	"errors"
	"fmt"
	"math"
)

// ErrInvalid is wrapped by every argument error; messages name the argument
// or field at fault.
var ErrInvalid = errors.New("estimate: invalid argument")

// RegularInterval returns the bias-reduced estimate of Cho & Garcia-Molina
// for n fetches at a fixed interval I of which x detected a change:
//
//	λ̂ = −ln((n − x + 0.5)/(n + 0.5)) / I.
//
// The plain MLE −ln((n−x)/n)/I is infinite when every fetch saw a change and
// strongly biased when λI is large; the +0.5 terms remove most of that bias
// and keep the estimate finite (ln(2n+1)/I at x = n). The naive x/(nI) of
// NaiveRegular is far worse: it cannot exceed 1/I because at most one change
// per interval is detected. It returns 0 for n = 0 and NaN for x outside
// [0, n], n < 0 or an interval that is not positive and finite.
func RegularInterval(n, x int, interval float64) float64 {
	if n < 0 || x < 0 || x > n || !(interval > 0) || math.IsInf(interval, 1) {
		return math.NaN()
	}
	nf, xf := float64(n), float64(x)
	// −ln((n−x+0.5)/(n+0.5)) = −log1p(−x/(n+0.5)), accurate for small x.
	return -math.Log1p(-xf/(nf+0.5)) / interval
}

// NaiveRegular returns x/(n·I), the change count over the time observed. It
// is kept as the baseline the tests compare RegularInterval against: it
// counts at most one change per interval and so underestimates λ badly once
// λI is not small. It returns NaN for the arguments RegularInterval rejects
// and for n = 0.
func NaiveRegular(n, x int, interval float64) float64 {
	if n <= 0 || x < 0 || x > n || !(interval > 0) || math.IsInf(interval, 1) {
		return math.NaN()
	}
	return float64(x) / (float64(n) * interval)
}

// Observation is one fetch result: over Interval (the time since the
// previous fetch) the content changed or did not.
type Observation struct {
	Interval float64
	Changed  bool
}

// MLE returns the maximum-likelihood change rate for fetches at irregular
// intervals t_j, the root of
//
//	Σ_{changed} t_j/(e^{λt_j} − 1) = Σ_{unchanged} t_j.
//
// (Each fetch contributes log(1 − e^{−λt_j}) if it saw a change and −λt_j if
// not; the equation sets the derivative to zero. The left side decreases
// strictly in λ, so the root is unique.)
//
// Edge cases: no change at all gives 0. When every fetch saw a change the
// likelihood increases without bound and there is no finite MLE; MLE then
// adds half an unchanged fetch at the shortest observed interval t_min, the
// pseudo-observation behind the +0.5 of RegularInterval, and returns the
// resulting finite root. For equal intervals this is exactly
// RegularInterval(n, n, I) = ln(2n+1)/I, so the two estimators agree where
// they overlap. An empty slice or an interval that is not positive and finite
// is an error naming the index.
func MLE(obs []Observation) (float64, error) {
	return mleWithPrior(obs, Prior{}, "estimate.MLE")
}

// Posterior is MLE with shrinkage toward a Gamma prior: it returns the root
// of
//
//	α/λ + Σ_{changed} t_j/(e^{λt_j} − 1) = β + Σ_{unchanged} t_j.
//
// With no observations this is the prior mean α/β; with many it tends to
// the MLE. The α/λ and β terms are exactly what α pseudo-changes seen over β
// time contribute, which makes the result the conjugate posterior mean
// (α+X)/(β+T) whenever change times are known exactly (FromLastModified
// data); for bit-only data it is the mode of the posterior under a
// Gamma(α+1, β) prior. With a zero Prior it equals MLE.
func Posterior(obs []Observation, prior Prior) (float64, error) {
	if err := prior.Validate(); err != nil {
		return 0, fmt.Errorf("estimate.Posterior: %w", err)
	}
	return mleWithPrior(obs, prior, "estimate.Posterior")
}

func mleWithPrior(obs []Observation, prior Prior, op string) (float64, error) {
	if len(obs) == 0 && prior.isZero() {
		return 0, fmt.Errorf("%s: %w: obs is empty", op, ErrInvalid)
	}
	terms := make([]term, 0, len(obs))
	var exposure float64
	for i, o := range obs {
		if !(o.Interval > 0) || math.IsInf(o.Interval, 1) {
			return 0, fmt.Errorf("%s: %w: obs[%d].Interval = %v, want positive and finite", op, ErrInvalid, i, o.Interval)
		}
		if o.Changed {
			terms = append(terms, term{c: 1, t: o.Interval})
		} else {
			exposure += o.Interval
		}
	}
	return solveRate(prior.Alpha, prior.Beta+exposure, terms), nil
}

// term is a group of fetches that all saw a change over (about) interval t,
// with total weight c.
type term struct{ c, t float64 }

// solveRate returns the λ ≥ 0 solving
//
//	a/λ + Σ_k c_k·t_k/(e^{λ t_k} − 1) = r
//
// for a ≥ 0, c_k > 0, t_k > 0, r ≥ 0: the score equation shared by every
// estimator in this package (a counts exactly observed changes plus prior
// pseudo-changes, r is the exposure without change plus prior time).
//
// The left side is convex and strictly decreasing in λ, so Newton's method
// started left of the root climbs to it monotonically without overshooting.
// The start λ₀ = (a + Σc)/(r + Σ c·t/2) is left of the root because
// x/(eˣ − 1) ≥ 1 − x/2, and is already close to it when λt is small.
//
// No change information (a = 0, no terms) gives 0. With r = 0 and terms
// present there is no finite root; half an unchanged fetch at the shortest
// interval is added (see MLE).
func solveRate(a, r float64, terms []term) float64 {
	sumC, sumCT, tMin := 0.0, 0.0, math.Inf(1)
	for _, k := range terms {
		sumC += k.c
		sumCT += k.c * k.t
		tMin = math.Min(tMin, k.t)
	}
	if a+sumC <= 0 {
		return 0
	}
	if r <= 0 {
		if len(terms) == 0 {
			return math.Inf(1)
		}
		r = 0.5 * tMin
	}
	lambda := (a + sumC) / (r + sumCT/2)
	for range 200 {
		h := a/lambda - r
		dh := -a / (lambda * lambda)
		for _, k := range terms {
			q, om := expPair(lambda * k.t)
			h += k.c * k.t * q / om
			dh -= k.c * k.t * k.t * q / (om * om)
		}
		if h <= 0 || dh == 0 {
			// At (or, by rounding, just past) the root.
			return lambda
		}
		step := -h / dh
		if step <= 1e-9*lambda {
			// Quadratic convergence: after this step the relative
			// error is of order step², far below float64 resolution.
			return lambda + step
		}
		lambda += step
	}
	return lambda
}

// expPair returns q = e^{−x} and 1 − q for x ≥ 0 with one transcendental
// call, keeping 1 − q accurate for small x and q accurate for large x. With
// them t/(e^{λt}−1) = t·q/(1−q) neither overflows nor loses precision.
func expPair(x float64) (q, oneMinusQ float64) {
	if x < 1 {
		em := math.Expm1(-x)
		return 1 + em, -em
	}
	q = math.Exp(-x)
	return q, 1 - q
}
