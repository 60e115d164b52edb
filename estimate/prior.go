package estimate

import (
	"fmt"
	"math"
)

// Prior is a Gamma(Alpha, Beta) prior on λ (shape α, rate β; mean α/β,
// variance α/β²). It acts as α pseudo-changes seen over β time: with few
// observations an estimate stays near the population mean instead of
// swinging to 0 or to the capped all-changed value, and with many the data
// dominate (docs/design.md §3.3). β is in the package's time unit.
//
// The zero Prior means "no prior": estimators then reduce to the plain MLE.
type Prior struct {
	Alpha, Beta float64
}

// DefaultPrior is a weak prior (half a pseudo-change) with mean 0.25 changes
// per day, expressed per second. The mean is roughly that of the page
// population Cho & Garcia-Molina measured (Cho & Garcia-Molina, Figure 12: 23% daily,
// 15% weekly, 16% monthly, 16% quarterly, 30% yearly). It is a cold-start
// placeholder: replace it with FitPrior on the crawl's own estimates.
func DefaultPrior() Prior {
	const day = 86400.0
	return NewPrior(0.25/day, 0.5)
}

// NewPrior returns the Gamma prior with the given mean rate whose weight
// equals pseudoChanges observed changes (α = pseudoChanges, β = α/mean).
// It does not validate; call Validate on the result.
func NewPrior(mean, pseudoChanges float64) Prior {
	return Prior{Alpha: pseudoChanges, Beta: pseudoChanges / mean}
}

// Mean returns the prior mean α/β (0 for the zero Prior).
func (p Prior) Mean() float64 {
	if p.isZero() {
		return 0
	}
	return p.Alpha / p.Beta
}

func (p Prior) isZero() bool { return p.Alpha == 0 && p.Beta == 0 }

// Validate reports whether p is usable: both parameters finite and positive,
// or both zero (no prior).
func (p Prior) Validate() error {
	switch {
	case p.isZero():
		return nil
	case !(p.Alpha > 0) || math.IsInf(p.Alpha, 1):
		return fmt.Errorf("%w: Prior.Alpha = %v, want positive and finite (or Alpha = Beta = 0)", ErrInvalid, p.Alpha)
	case !(p.Beta > 0) || math.IsInf(p.Beta, 1):
		return fmt.Errorf("%w: Prior.Beta = %v, want positive and finite (or Alpha = Beta = 0)", ErrInvalid, p.Beta)
	}
	return nil
}

// FitPrior fits a Gamma prior to a population of rate estimates by the method
// of moments: α = m²/v, β = m/v for sample mean m and variance v.
//
// The estimates carry their own sampling noise, so v overstates the spread of
// the true rates and the fitted prior is weaker (smaller α) than the truth:
// the safe direction, as it lets each URL's own data win sooner. Rates must
// be finite and non-negative; at least two are needed, and a population with
// zero mean or zero variance has no Gamma fit and is an error.
func FitPrior(rates []float64) (Prior, error) {
	if len(rates) < 2 {
		return Prior{}, fmt.Errorf("estimate.FitPrior: %w: %d rates, need at least 2", ErrInvalid, len(rates))
	}
	// Welford's algorithm: one pass, no cancellation.
	var mean, m2 float64
	for i, r := range rates {
		if !(r >= 0) || math.IsInf(r, 1) {
			return Prior{}, fmt.Errorf("estimate.FitPrior: %w: rates[%d] = %v, want finite and >= 0", ErrInvalid, i, r)
		}
		d := r - mean
		mean += d / float64(i+1)
		m2 += d * (r - mean)
	}
	v := m2 / float64(len(rates)-1)
	if mean <= 0 || v <= 0 {
		return Prior{}, fmt.Errorf("estimate.FitPrior: %w: rates have mean %v and variance %v, need both > 0", ErrInvalid, mean, v)
	}
	return Prior{Alpha: mean * mean / v, Beta: mean / v}, nil
}
