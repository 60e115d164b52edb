package estimate

import (
	"fmt"
	"math"
	"sort"
)

// LogGrid is a grid of change rates equally spaced in u = ln λ: node k is
// u_k = Lo + k·Step, k = 0 … N−1. It carries the population priors of
// GridPrior, so that a prior can take any shape (a mixture of the daily,
// weekly and yearly pages of a real collection is far from a Gamma).
type LogGrid struct {
	Lo   float64 // ln λ of the first node
	Step float64 // spacing in ln λ
	N    int     // number of nodes
}

// MaxGridNodes bounds LogGrid.N, so that a posterior fits in fixed arrays.
const MaxGridNodes = 128

// NewLogGrid returns the grid of n nodes from rate lo to rate hi.
func NewLogGrid(lo, hi float64, n int) (LogGrid, error) {
	if !(lo > 0) || !(hi > lo) || math.IsInf(hi, 1) {
		return LogGrid{}, fmt.Errorf("%w: grid rates [%v, %v], want 0 < lo < hi < +Inf", ErrInvalid, lo, hi)
	}
	g := LogGrid{Lo: math.Log(lo), N: n}
	if n >= 2 {
		g.Step = (math.Log(hi) - g.Lo) / float64(n-1)
	}
	return g, g.Validate()
}

// Validate reports the first invalid field.
func (g LogGrid) Validate() error {
	switch {
	case math.IsNaN(g.Lo) || math.IsInf(g.Lo, 0):
		return fmt.Errorf("%w: LogGrid.Lo = %v, want finite", ErrInvalid, g.Lo)
	case !(g.Step > 0) || math.IsInf(g.Step, 1):
		return fmt.Errorf("%w: LogGrid.Step = %v, want positive and finite", ErrInvalid, g.Step)
	case g.N < 2 || g.N > MaxGridNodes:
		return fmt.Errorf("%w: LogGrid.N = %d, want in [2, %d]", ErrInvalid, g.N, MaxGridNodes)
	}
	return nil
}

// U is ln λ at node k.
func (g LogGrid) U(k int) float64 { return g.Lo + float64(k)*g.Step }

// Rate is λ at node k.
func (g LogGrid) Rate(k int) float64 { return math.Exp(g.U(k)) }

// priorFloor is the share of every prior spread evenly over the grid, so
// that no rate the grid covers is ever impossible: a page unlike any seen
// before still gets a posterior that follows its own data.
const priorFloor = 1e-4

// GridPrior is a prior on ln λ over a LogGrid: a histogram whose bin k,
// [u_k − Step/2, u_k + Step/2], holds mass w_k spread evenly (so that a
// posterior can be integrated on a grid finer than the prior's). The zero
// value is not usable; build one with NewGridPrior, LogNormalGridPrior or
// FitGridPrior. A GridPrior is immutable, so one may be shared by
// goroutines.
type GridPrior struct {
	grid LogGrid
	logW []float64 // ln of the node masses, Σ w = 1
}

// NewGridPrior returns the prior with masses proportional to weights (one
// per node, ≥ 0, not all 0), mixed with priorFloor of the uniform
// distribution over the nodes.
func NewGridPrior(g LogGrid, weights []float64) (GridPrior, error) {
	if err := g.Validate(); err != nil {
		return GridPrior{}, err
	}
	if len(weights) != g.N {
		return GridPrior{}, fmt.Errorf("%w: %d prior weights for a grid of %d nodes", ErrInvalid, len(weights), g.N)
	}
	sum := 0.0
	for k, w := range weights {
		if !(w >= 0) || math.IsInf(w, 1) {
			return GridPrior{}, fmt.Errorf("%w: prior weight[%d] = %v, want finite and >= 0", ErrInvalid, k, w)
		}
		sum += w
	}
	if !(sum > 0) {
		return GridPrior{}, fmt.Errorf("%w: prior weights sum to %v, want > 0", ErrInvalid, sum)
	}
	p := GridPrior{grid: g, logW: make([]float64, g.N)}
	for k, w := range weights {
		p.logW[k] = math.Log((1-priorFloor)*w/sum + priorFloor/float64(g.N))
	}
	return p, nil
}

// LogNormalGridPrior is the prior whose ln λ is normal with the given
// median rate and standard deviation sigma, on grid g: a broad,
// uncommitted start before the collection has taught anything. Unlike a
// Gamma prior it has no sharp upper tail, so a page that changes far
// faster than the median is not held down by the prior's pseudo-exposure.
func LogNormalGridPrior(g LogGrid, median, sigma float64) (GridPrior, error) {
	if !(median > 0) || math.IsInf(median, 1) || !(sigma > 0) || math.IsInf(sigma, 1) {
		return GridPrior{}, fmt.Errorf("%w: log-normal prior median %v sigma %v, want both positive and finite", ErrInvalid, median, sigma)
	}
	w := make([]float64, g.N)
	mu := math.Log(median)
	for k := range w {
		d := (g.U(k) - mu) / sigma
		w[k] = math.Exp(-0.5 * d * d)
	}
	return NewGridPrior(g, w)
}

// Grid is the prior's grid.
func (p GridPrior) Grid() LogGrid { return p.grid }

// Valid reports whether p was built by one of the constructors.
func (p GridPrior) Valid() bool { return len(p.logW) == p.grid.N && p.grid.N >= 2 }

// Weights returns the node masses (a copy).
func (p GridPrior) Weights() []float64 {
	w := make([]float64, len(p.logW))
	for k, l := range p.logW {
		w[k] = math.Exp(l)
	}
	return w
}

// Mean is the prior mean of λ.
func (p GridPrior) Mean() float64 {
	h := p.grid.Step / 2
	m := 0.0
	for k, l := range p.logW {
		m += math.Exp(l+p.grid.U(k)) * math.Sinh(h) / h
	}
	return m
}

// CDF is the prior probability that λ ≤ lambda.
func (p GridPrior) CDF(lambda float64) float64 {
	u := math.Log(lambda)
	g := p.grid
	c := 0.0
	for k, l := range p.logW {
		lo := g.U(k) - g.Step/2
		switch {
		case u >= lo+g.Step:
			c += math.Exp(l)
		case u > lo:
			c += math.Exp(l) * (u - lo) / g.Step
		}
	}
	return math.Min(c, 1)
}

// logDensity is the log of the prior density of u: its bin's mass over
// the bin's width, −Inf outside the grid.
func (p GridPrior) logDensity(u float64) float64 {
	g := p.grid
	k := int(math.Floor((u-g.Lo)/g.Step + 0.5))
	if k < 0 || k >= g.N {
		return math.Inf(-1)
	}
	return p.logW[k] - math.Log(g.Step)
}

// likelihood is the log-likelihood of a State's statistics as a function
// of u = ln λ:
//
//	ℓ(u) = a·u − r·e^u + Σ_k c_k·ln(1 − e^{−e^u·t_k}),
//
// with a the Last-Modified changes, r the exposure and (c_k, t_k) the
// buckets of changed bit-only fetches (State's doc).
type likelihood struct {
	a, r float64
	c, t [numBuckets + recentSize]float64
	k    int
}

// likelihoodOf is the likelihood of the statistics x.
func likelihoodOf(x *sums) likelihood {
	l := likelihood{a: x.lm, r: x.exposure}
	for _, k := range x.changed {
		if k.c > 0 && l.k < len(l.c) {
			l.c[l.k], l.t[l.k] = k.c, k.t
			l.k++
		}
	}
	return l
}

func (s *State) likelihood() likelihood {
	l := likelihood{a: float64(s.lmChanges), r: s.exposure}
	for k := range s.count {
		if s.count[k] > 0 {
			l.c[l.k], l.t[l.k] = float64(s.count[k]), float64(s.sumT[k]/s.count[k])
			l.k++
		}
	}
	return l
}

func (l *likelihood) at(u float64) float64 {
	lam := math.Exp(u)
	v := l.a*u - l.r*lam
	for i := 0; i < l.k; i++ {
		v += l.c[i] * log1mexp(lam*l.t[i])
	}
	return v
}

// log1mexp is ln(1 − e^{−x}) for x > 0, accurate at both ends.
func log1mexp(x float64) float64 {
	if x < math.Ln2 {
		return math.Log(-math.Expm1(-x))
	}
	return math.Log1p(-math.Exp(-x))
}

// posteriorPoints bounds the points a posterior is integrated on.
const posteriorPoints = 256

// posteriorSpan is how far (in log-posterior) below its peak the
// posterior is still integrated: e^{−30} of the peak is far below any
// figure the scheduler uses.
const posteriorSpan = 30

// RatePosterior is the posterior distribution of λ for one URL: masses on
// points of ln λ, each the centre of a cell of equal width. It is a value
// type of fixed size, so computing one allocates nothing.
type RatePosterior struct {
	n    int
	h    float64 // cell width in ln λ
	u, w [posteriorPoints]float64
}

// Posterior is the posterior of λ given the observations summarised in s,
// under the prior p: prior density × likelihood, normalised. The
// likelihood is the censored one of the changed bit (a run of changed
// fetches bounds λ from below only, so there the prior decides the upper
// tail: the collection's own distribution of rates, when p was fitted by
// FitGridPrior) together with the exact one of trusted Last-Modified
// times.
//
// It is computed in two passes: the log-posterior at the prior's nodes
// finds where the mass is (every bin whose node is within e^{−30} of the
// peak, plus one bin each side), and the posterior is then integrated by
// the midpoint rule on about 96 cells across them, two to 32 a bin: finer
// than the prior's bins, because a well-observed rate is known far more
// precisely than their width, and aligned with them, so that the prior is
// constant over every cell. The tests check it against numerical
// integration.
func (p GridPrior) Posterior(s State) RatePosterior {
	l := s.likelihood()
	post, _ := p.integrate(&l)
	return post
}

// integrate is the posterior under likelihood l (see Posterior) and the
// log of its normalising constant, the marginal likelihood
// ∫ prior(u)·e^{ℓ(u)} du of the data behind l.
func (p GridPrior) integrate(l *likelihood) (RatePosterior, float64) {
	var post RatePosterior
	g := p.grid
	var lp [MaxGridNodes]float64
	peak := math.Inf(-1)
	for k := 0; k < g.N; k++ {
		lp[k] = p.logW[k] + l.at(g.U(k))
		peak = math.Max(peak, lp[k])
	}
	lo, hi := -1, -1
	for k := 0; k < g.N; k++ {
		if lp[k] >= peak-posteriorSpan {
			if lo < 0 {
				lo = k
			}
			hi = k
		}
	}
	if lo < 0 {
		// No node has a finite posterior (cannot happen with a valid
		// prior and State): fall back to the prior.
		lo, hi = 0, g.N-1
		*l = likelihood{}
	}
	a, b := max(lo-1, 0), min(hi+1, g.N-1)
	per := min(max(96/(b-a+1), 2), 32)
	post.n = per * (b - a + 1)
	post.h = g.Step / float64(per)
	var fl [posteriorPoints]float64
	top := math.Inf(-1)
	for k := a; k <= b; k++ {
		for m := range per {
			j := (k-a)*per + m
			u := g.U(k) - g.Step/2 + (float64(m)+0.5)*post.h
			post.u[j] = u
			fl[j] = p.logW[k] + l.at(u)
			top = math.Max(top, fl[j])
		}
	}
	sum := 0.0
	for j := 0; j < post.n; j++ {
		post.w[j] = math.Exp(fl[j] - top)
		sum += post.w[j]
	}
	post.normalise(sum)
	// Each cell holds the prior density w_k/Step over width h.
	return post, top + math.Log(sum*post.h/g.Step)
}

func (p *RatePosterior) normalise(sum float64) {
	for j := 0; j < p.n; j++ {
		p.w[j] /= sum
	}
}

// Mean is the posterior mean of λ.
func (p *RatePosterior) Mean() float64 {
	m := 0.0
	for j := 0; j < p.n; j++ {
		m += p.w[j] * math.Exp(p.u[j])
	}
	return m
}

// HarmonicMean is 1/E[1/λ]. For a decision between fetching a page and
// giving it up it is the rate that decides: one more fetch per unit time
// of a page fetched rarely buys w/λ (docs/design.md §3.2), so under
// uncertainty it buys E[w/λ] = w/HarmonicMean. It is far less swayed than
// the mean by a posterior's long upper tail (a page seen changed at every
// fetch may change very fast, or merely fast).
func (p *RatePosterior) HarmonicMean() float64 {
	m := 0.0
	for j := 0; j < p.n; j++ {
		m += p.w[j] * math.Exp(-p.u[j])
	}
	return 1 / m
}

// Expect is the posterior expectation of f(λ).
func (p *RatePosterior) Expect(f func(lambda float64) float64) float64 {
	m := 0.0
	for j := 0; j < p.n; j++ {
		m += p.w[j] * f(math.Exp(p.u[j]))
	}
	return m
}

// CDF is the posterior probability that λ ≤ lambda, each mass spread
// evenly over its cell.
func (p *RatePosterior) CDF(lambda float64) float64 {
	if !(lambda > 0) {
		return 0
	}
	u := math.Log(lambda)
	c := 0.0
	for j := 0; j < p.n; j++ {
		lo := p.u[j] - p.h/2
		switch {
		case u >= lo+p.h:
			c += p.w[j]
		case u > lo:
			c += p.w[j] * (u - lo) / p.h
		}
	}
	return math.Min(c, 1)
}

// Quantile is the λ below which the posterior has mass q (0 < q < 1).
func (p *RatePosterior) Quantile(q float64) float64 {
	c := 0.0
	for j := 0; j < p.n; j++ {
		if c+p.w[j] >= q && p.w[j] > 0 {
			f := (q - c) / p.w[j]
			return math.Exp(p.u[j] - p.h/2 + f*p.h)
		}
		c += p.w[j]
	}
	return math.Exp(p.u[p.n-1] + p.h/2)
}

// SummaryQuantiles is the number of quantiles a Summary keeps.
const SummaryQuantiles = 8

// Summary is a posterior in 48 bytes, as the scheduler keeps one per URL:
// its mean and harmonic mean, and the quantiles of ln λ at probabilities
// (j + ½)/8, which serve both as eight equally likely rates
// (expectations) and as knots of the distribution function. The zero
// Summary means "no posterior".
type Summary struct {
	Mean, Harmonic float64
	Q              [SummaryQuantiles]float32
}

// Summary compresses the posterior.
func (p *RatePosterior) Summary() Summary {
	s := Summary{Mean: p.Mean(), Harmonic: p.HarmonicMean()}
	j, c := 0, 0.0
	for k := range SummaryQuantiles {
		q := (float64(k) + 0.5) / SummaryQuantiles
		for j < p.n-1 && c+p.w[j] < q {
			c += p.w[j]
			j++
		}
		f := 0.5
		if p.w[j] > 0 {
			f = math.Min(math.Max((q-c)/p.w[j], 0), 1)
		}
		s.Q[k] = float32(p.u[j] - p.h/2 + f*p.h)
	}
	return s
}

// Valid reports whether s holds a posterior.
func (s *Summary) Valid() bool { return s.Mean > 0 && !math.IsInf(s.Mean, 1) }

// Rate is the j-th of the eight equally likely rates.
func (s *Summary) Rate(j int) float64 { return math.Exp(float64(s.Q[j])) }

// ExpectFresh is E[e^{−λa}]: the probability that a copy taken a ago is
// still current (docs/design.md §3.3, "an honest model").
func (s *Summary) ExpectFresh(a float64) float64 {
	if !(a > 0) {
		return 1
	}
	m := 0.0
	for j := range SummaryQuantiles {
		m += math.Exp(-a * s.Rate(j))
	}
	return m / SummaryQuantiles
}

// Expect is the posterior expectation of f(λ) over the eight rates.
func (s *Summary) Expect(f func(lambda float64) float64) float64 {
	m := 0.0
	for j := range SummaryQuantiles {
		m += f(s.Rate(j))
	}
	return m / SummaryQuantiles
}

// CDF is the probability that λ ≤ lambda: piecewise linear in ln λ
// through the quantile knots, reaching 0 and 1 half a knot spacing beyond
// the first and last knots.
func (s *Summary) CDF(lambda float64) float64 {
	if !(lambda > 0) {
		return 0
	}
	u := math.Log(lambda)
	const k = SummaryQuantiles
	q := func(j int) float64 { return float64(s.Q[j]) }
	lo := q(0) - 0.5*(q(1)-q(0))
	hi := q(k-1) + 0.5*(q(k-1)-q(k-2))
	switch {
	case u <= lo:
		return 0
	case u >= hi:
		return 1
	case u < q(0):
		return 0.5 / k * (u - lo) / (q(0) - lo)
	case u >= q(k-1):
		if hi == q(k-1) {
			return 1
		}
		return (k-0.5)/k + 0.5/k*(u-q(k-1))/(hi-q(k-1))
	}
	j := sort.Search(k, func(i int) bool { return q(i) > u }) - 1
	span := q(j+1) - q(j)
	f := 0.5
	if span > 0 {
		f = (u - q(j)) / span
	}
	return (float64(j) + 0.5 + f) / k
}

// Reweighted is the posterior p would have been under the prior to had it
// been computed under from (both on one grid): each cell's mass times the
// ratio of the two priors' densities there, renormalised. Both priors are
// constant over each of p's cells (they are aligned with the grid's bins),
// so this is exact wherever p was integrated, and p is integrated wherever
// its posterior is within e^{−30} of its peak: only mass that to puts where
// from and the data together make the posterior e^{−30} below it is lost.
// It costs one pass over p's cells and no evaluation of the likelihood.
// A prior that is invalid or on another grid returns p unchanged.
func (p *RatePosterior) Reweighted(from, to GridPrior) RatePosterior {
	out := *p
	if !from.Valid() || !to.Valid() || from.grid != to.grid || p.n == 0 {
		return out
	}
	g := from.grid
	lr := make([]float64, 0, MaxGridNodes)
	for k := range g.N {
		lr = append(lr, to.logW[k]-from.logW[k])
	}
	top := math.Inf(-1)
	var l [posteriorPoints]float64
	for j := 0; j < out.n; j++ {
		k := min(max(int(math.Floor((out.u[j]-g.Lo)/g.Step+0.5)), 0), g.N-1)
		l[j] = lr[k]
		if out.w[j] > 0 {
			top = math.Max(top, l[j])
		}
	}
	if math.IsInf(top, -1) {
		return out
	}
	sum := 0.0
	for j := 0; j < out.n; j++ {
		out.w[j] *= math.Exp(l[j] - top)
		sum += out.w[j]
	}
	if !(sum > 0) {
		return *p
	}
	out.normalise(sum)
	return out
}

// Sketch is a posterior in 8 bytes, for the model freshness of every URL
// beside the plan's Summary: its eight quantiles of ln λ (as Summary's),
// each coded in a byte on the span of the grid it was computed on, 255
// steps of 0.082 in ln λ on the scheduler's grid (a rate within ±4.2 %).
// Code 0 is "no posterior", so the zero Sketch is none.
type Sketch [SummaryQuantiles]uint8

// sketchSpan is where a Sketch's codes 1 … 255 lie on grid g: from the
// lower edge of its first bin (code ½) to the upper edge of its last (code
// 255½), in ln λ.
func sketchSpan(g LogGrid) (lo, step float64) {
	return g.Lo - g.Step/2, float64(g.N) * g.Step / 255
}

// Sketch codes the posterior's eight quantiles (Summary's) on grid g.
func (p *RatePosterior) Sketch(g LogGrid) Sketch {
	s := p.Summary()
	return s.Sketch(g)
}

// Sketch codes s's eight quantiles on grid g (rates beyond it at its ends);
// an invalid Summary gives the zero Sketch.
func (s *Summary) Sketch(g LogGrid) Sketch {
	var out Sketch
	if !s.Valid() || g.Validate() != nil {
		return out
	}
	lo, step := sketchSpan(g)
	for j := range SummaryQuantiles {
		c := math.Round((float64(s.Q[j])-lo)/step + 0.5)
		out[j] = uint8(min(max(c, 1), 255))
	}
	return out
}

// PointSketch is the Sketch of a posterior with all its mass at rate (the
// zero Sketch if rate is not positive and finite).
func PointSketch(g LogGrid, rate float64) Sketch {
	if !(rate > 0) || math.IsInf(rate, 1) {
		return Sketch{}
	}
	u := float32(math.Log(rate))
	s := Summary{Mean: rate, Harmonic: rate}
	for j := range s.Q {
		s.Q[j] = u
	}
	return s.Sketch(g)
}

// Valid reports whether s holds a posterior.
func (s Sketch) Valid() bool { return s[0] != 0 }

// ExpectFresh is E[e^{−λa}] over the eight rates of s, coded on grid g: the
// probability that a copy taken a ago is still current (Summary.ExpectFresh).
func (s Sketch) ExpectFresh(g LogGrid, a float64) float64 {
	return s.Expect(g, func(l float64) float64 { return math.Exp(-a * l) })
}

// Expect is the expectation of f(λ) over the eight rates of s, coded on
// grid g.
func (s Sketch) Expect(g LogGrid, f func(lambda float64) float64) float64 {
	lo, step := sketchSpan(g)
	m := 0.0
	for _, c := range s {
		m += f(math.Exp(lo + (float64(c)-0.5)*step))
	}
	return m / SummaryQuantiles
}

// RateSwitch is the model freshness of copies whose page's rate may itself
// change (docs/design.md §3.7, "An honest model"): at hazard h per unit
// time the rate, drawn from a URL's Sketch, switches to a fresh draw from
// next. Built once for many Sketches on one grid.
type RateSwitch struct {
	grid   LogGrid
	hazard float64
	next   [SummaryQuantiles]float64 // next's eight rates (none if !valid)
	valid  bool
	rate   [256]float64 // the rate of each Sketch code on grid
}

// NewRateSwitch is the switch at hazard h (per unit time) to a draw from
// next, for Sketches coded on grid g. With h not positive and finite, or
// next not valid, there is no switch.
func NewRateSwitch(g LogGrid, h float64, next Sketch) *RateSwitch {
	r := &RateSwitch{grid: g, hazard: h, valid: h > 0 && !math.IsInf(h, 1) && next.Valid()}
	lo, step := sketchSpan(g)
	for c := range r.rate {
		r.rate[c] = math.Exp(lo + (float64(c)-0.5)*step)
	}
	for k, c := range next {
		r.next[k] = r.rate[c]
	}
	return r
}

// ExpectFresh is the probability that a copy taken a ago is still
// current when its page's rate is a draw from s that may have switched
// since. With the first switch at s′ < a (density h·e^{−h s′}), the copy
// survives e^{−λ s′} under the old rate and e^{−λ′(a−s′)} under the new
// one, so
//
//	P = e^{−h a}·E_s[e^{−λ a}] + ∫₀ᵃ h e^{−h s′} E_s[e^{−λ s′}] E_next[e^{−λ′(a−s′)}] ds′,
//
// which, over the eight rates of each Sketch, is a sum of closed-form
// integrals. A second switch is not modelled: it would redraw the new
// rate, which can only lower the survival (e^{−λs} and e^{−λt} rise and
// fall together, so one held draw survives at least as well as two), and
// it happens with probability about (h·a)²/2, a percent or two for copies
// years old at the hazards seen. Without a switch it is s.ExpectFresh.
func (r *RateSwitch) ExpectFresh(s Sketch, a float64) float64 {
	if !r.valid || !(a > 0) {
		return s.ExpectFresh(r.grid, a)
	}
	h := r.hazard
	var emu [SummaryQuantiles]float64
	for k, mu := range r.next {
		emu[k] = math.Exp(-mu * a)
	}
	eh := math.Exp(-h * a)
	stay, switched := 0.0, 0.0
	for _, c := range s {
		l := r.rate[c] + h
		el := math.Exp(-r.rate[c]*a) * eh
		stay += el
		for k, mu := range r.next {
			// ∫₀ᵃ h e^{−(h+λ)s′} e^{−μ(a−s′)} ds′ = h (e^{−μa} − e^{−(h+λ)a}) / (h+λ−μ).
			d := l - mu
			if x := d * a; math.Abs(x) > 1e-6 {
				switched += h * (emu[k] - el) / d
			} else {
				switched += h * a * emu[k] * (1 - x/2)
			}
		}
	}
	const n = SummaryQuantiles
	p := stay/n + switched/(n*n)
	return math.Min(math.Max(p, 0), 1)
}
