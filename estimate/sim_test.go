package estimate

import (
	"math"
	"math/rand/v2"
)

// page simulates a Poisson change process of a fixed rate; it yields the
// Last-Modified time a fetch would see (the latest change so far).
type page struct {
	rng        *rand.Rand
	rate       float64
	next       float64 // next change time
	lastChange float64
}

func newPage(rng *rand.Rand, rate float64) *page {
	p := &page{rng: rng, rate: rate, lastChange: math.Inf(-1)}
	p.next = rng.ExpFloat64() / rate
	return p
}

// advance moves the clock to t and returns the time of the latest change so
// far.
func (p *page) advance(t float64) float64 {
	for p.next <= t {
		p.lastChange = p.next
		p.next += p.rng.ExpFloat64() / p.rate
	}
	return p.lastChange
}

// changedBit draws "changed over an interval t" for rate λ directly.
func changedBit(rng *rand.Rand, lambda, t float64) bool {
	return rng.Float64() < -math.Expm1(-lambda*t)
}

func meanSD(xs []float64) (mean, sd float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		sd += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(sd / float64(len(xs)-1))
}

func rmse(xs []float64, truth float64) float64 {
	var s float64
	for _, x := range xs {
		s += (x - truth) * (x - truth)
	}
	return math.Sqrt(s / float64(len(xs)))
}
