package estimate

import "math"

// RateUncertainty returns the estimate s.Rate(prior) and its standard
// error: the inverse square root of the observed information, the
// curvature of the log posterior at the estimate (a Laplace approximation).
//
// The log posterior whose stationary point Rate solves is
//
//	L(λ) = a·ln λ − r·λ + Σ_k c_k·ln(1 − e^{−λ t̄_k}),
//
// a = α + X_LM, r = β + exposure, so
//
//	−L''(λ) = a/λ² + Σ_k c_k·t̄_k²·e^{−λt̄_k}/(1 − e^{−λt̄_k})².
//
// With only Last-Modified changes this is exact for the Gamma density
// λ^a·e^{−rλ}: the standard error is √a/r. With no change information at
// all (rate 0) the error is +Inf, as it is for an infinite estimate.
func (s State) RateUncertainty(prior Prior) (rate, stdErr float64) {
	rate = s.Rate(prior)
	if !(rate > 0) || math.IsInf(rate, 1) {
		return rate, math.Inf(1)
	}
	info := (prior.Alpha + float64(s.lmChanges)) / (rate * rate)
	for k := range s.count {
		if s.count[k] <= 0 {
			continue
		}
		c, t := float64(s.count[k]), float64(s.sumT[k]/s.count[k])
		q, om := expPair(rate * t)
		info += c * t * t * q / (om * om)
	}
	if !(info > 0) {
		return rate, math.Inf(1)
	}
	return rate, 1 / math.Sqrt(info)
}

// RateInterval returns an approximate two-sided interval for a rate
// estimated as rate with standard error stdErr: rate·exp(±z·stdErr/rate),
// symmetric on the log scale so it never goes below zero (z = 1.645 for
// about 90%). An infinite error gives [0, +Inf).
func RateInterval(rate, stdErr, z float64) (lo, hi float64) {
	if !(rate > 0) || math.IsInf(stdErr, 1) || math.IsNaN(stdErr) {
		return 0, math.Inf(1)
	}
	f := math.Exp(z * stdErr / rate)
	return rate / f, rate * f
}
