package estimate

import (
	"fmt"
	"math"
	"runtime"
	"sync"
)

// FitGridPrior fits a population prior to what a collection of URLs
// showed: empirical Bayes (docs/design.md §3.3, "Priors from the
// collection"). The prior is a mixture over the nodes of parent's grid,
// and its masses maximise
//
//	Σ_i ln Σ_k w_k·L_i(u_k)  +  Σ_k κ·π_k·ln w_k,
//
// the marginal likelihood of every URL's data (each URL's likelihood L_i
// integrated over the prior) plus a Dirichlet(κ·π) term that shrinks the
// fit toward parent's masses π by κ pseudo-URLs. The maximiser is found by
// EM: each step gives node k the prior mass κπ_k plus every URL's
// posterior mass at k, divided by κ + n. EM never decreases the objective,
// and started from a prior with every mass positive it keeps them
// positive.
//
// With κ small and many URLs the fit approaches the nonparametric
// maximum-likelihood mixture, which for a population of daily, weekly and
// yearly pages puts its mass at those rates; with few URLs it stays near
// parent. A host's or a path template's prior is fitted with the
// population's as parent, which is the hierarchical shrinkage of §3.3.
//
// start, when valid (on parent's grid), warm-starts EM, so that a refit
// after a few new observations needs few iterations. States with no
// observation carry no information and are skipped. The fit is smoothed
// once over neighbouring nodes (¼, ½, ¼) so that the prior of a rate
// between two populated nodes is not zero. It returns the prior and the
// number of URLs that informed it.
func FitGridPrior(parent, start GridPrior, states []State, kappa float64, iters int) (GridPrior, int, error) {
	return fitGridPrior("estimate.FitGridPrior", parent, start, states, kappa, iters, false)
}

// flatNats is how close to its maximum (in log-likelihood) a URL's
// likelihood must stay, at every rate from some rate to an end of the
// grid, for its data to count as silent about the rates beyond: a
// likelihood ratio under e, evidence "not worth more than a bare mention"
// on Jeffreys's scale. A page that changed at every one of its monthly
// fetches is silent above a rate (daily and weekly fit it alike), one
// never seen changed over long intervals below one.
const flatNats = 1.0

// FitSilentGridPrior is FitGridPrior for calibration: the prior of the
// model's posteriors, those the model freshness is computed with
// (docs/design.md §3.7, "An honest model"), not the plan's. Where a URL's
// likelihood is flat (within flatNats of its maximum from some rate to
// the top of the grid, or from the bottom up to some rate), its E-step
// spreads its mass there in the shape of parent, not of the current fit.
//
// Plain EM keeps whatever shape the fit has in a direction the data
// cannot see, and there it is the fit's own echo: under the fading of
// §3.3, which leaves a page fetched every few weeks about ten fetches'
// worth of data, pages whose likelihood merely leans at the edge of the
// flat region (a weekly page's rare unchanged fetch) pull the mass to the
// slowest rate the data allow, and every page silent above it follows.
// Pages seen changed at every fetch are then believed to change about
// weekly: under intervals of two weeks to three months their posteriors'
// 90 % intervals hold the true rate of a third of them, and the models of
// crawlers that fetch them every few weeks were 0.03–0.04 above the truth
// (TestPosteriorCoverage, docs/benchmarks.md). The same holds below for
// slow pages never seen changed, which plain EM piles at the grid's
// floor. The fit no longer maximises the objective exactly: it
// extrapolates nothing where the data are silent. The plan keeps the
// plain fit, whose shape in the silent regions its give-up decisions
// were tuned under.
func FitSilentGridPrior(parent, start GridPrior, states []State, kappa float64, iters int) (GridPrior, int, error) {
	return fitGridPrior("estimate.FitSilentGridPrior", parent, start, states, kappa, iters, true)
}

// fitGridPrior is FitGridPrior, or FitSilentGridPrior when silent is set.
func fitGridPrior(name string, parent, start GridPrior, states []State, kappa float64, iters int, silent bool) (GridPrior, int, error) {
	if !parent.Valid() {
		return GridPrior{}, 0, fmt.Errorf("%s: %w: parent prior not built by a constructor", name, ErrInvalid)
	}
	if !(kappa >= 0) || math.IsInf(kappa, 1) {
		return GridPrior{}, 0, fmt.Errorf("%s: %w: kappa = %v, want finite and >= 0", name, ErrInvalid, kappa)
	}
	g := parent.grid
	n := g.N
	lik, flatAbove, flatBelow, used := likelihoodRows(g, states, silent)
	pi := parent.Weights()
	w := append([]float64(nil), pi...) // EM updates w in place; pi stays the Dirichlet centre
	if start.Valid() && start.grid == g {
		w = start.Weights()
	}
	if used == 0 {
		p, err := NewGridPrior(g, w)
		return p, 0, err
	}
	num := make([]float64, n)
	e := eStep{lik: lik, n: n, rows: used, w: w, pi: pi, num: num, d: make([]float64, used)}
	e.workers = 1
	if used*n >= parallelLikelihoods {
		// Each worker gets at least half the threshold's likelihoods and
		// eight nodes: the step waits for all of them twice an iteration.
		e.workers = max(1, min(runtime.GOMAXPROCS(0), used*n/(parallelLikelihoods/2), n/8))
	}
	if silent {
		// piAbove[k] is parent's mass at nodes k and above, piBelow[k+1]
		// at k and below; wAbove and wBelow the current fit's.
		e.flatAbove, e.flatBelow = flatAbove, flatBelow
		e.piAbove, e.piBelow = make([]float64, n+1), make([]float64, n+1)
		e.wAbove, e.wBelow = make([]float64, n+1), make([]float64, n+1)
		e.at = make([][]float64, e.workers)
		for k := range e.at {
			e.at[k] = make([]float64, n)
		}
		cumulate(e.piAbove, e.piBelow, pi)
	}
	for range iters {
		for k := range num {
			num[k] = kappa * pi[k]
		}
		if silent {
			cumulate(e.wAbove, e.wBelow, w)
		}
		e.run()
		total := 0.0
		for _, v := range num {
			total += v
		}
		for k := range w {
			w[k] = num[k] / total
		}
	}
	sm := smooth(w)
	p, err := NewGridPrior(g, sm)
	return p, used, err
}

// likelihoodRows is the likelihoods on g's nodes of every informative
// state, one row of g.N a state, each scaled to a maximum of 1, and how
// many rows there are. When silent, it also gives each row's flat regions:
// the first node of the one at the top (g.N: none) and the last of the one
// at the bottom (-1: none).
func likelihoodRows(g LogGrid, states []State, silent bool) (lik []float64, flatAbove, flatBelow []int, used int) {
	n := g.N
	// A row of n likelihoods per informative state, in one array sized
	// once: a refit of tens of thousands of states would otherwise copy
	// it at every doubling.
	rows := 0
	for i := range states {
		if states[i].n > 0 {
			rows++
		}
	}
	lik = make([]float64, 0, rows*n)
	if silent {
		flatAbove, flatBelow = make([]int, 0, rows), make([]int, 0, rows)
	}
	for i := range states {
		s := &states[i]
		if s.n <= 0 {
			continue
		}
		l := s.likelihood()
		at := len(lik)
		lik = lik[:at+n]
		row := lik[at:]
		top := math.Inf(-1)
		for k := range row {
			row[k] = l.at(g.U(k))
			top = math.Max(top, row[k])
		}
		if math.IsInf(top, -1) || math.IsNaN(top) {
			lik = lik[:at]
			continue
		}
		if silent {
			fa, fb := n, -1
			for k := n - 1; k >= 0 && row[k] >= top-flatNats; k-- {
				fa = k
			}
			for k := 0; k < n && row[k] >= top-flatNats; k++ {
				fb = k
			}
			flatAbove, flatBelow = append(flatAbove, fa), append(flatBelow, fb)
		}
		for k := range row {
			row[k] = math.Exp(row[k] - top)
		}
		used++
	}
	return lik, flatAbove, flatBelow, used
}

// smooth spreads each node's mass of w a quarter to each neighbour, the
// ends keeping theirs.
func smooth(w []float64) []float64 {
	n := len(w)
	sm := make([]float64, n)
	for k := range w {
		sm[k] = 0.5 * w[k]
		if k > 0 {
			sm[k] += 0.25 * w[k-1]
		} else {
			sm[k] += 0.25 * w[k]
		}
		if k < n-1 {
			sm[k] += 0.25 * w[k+1]
		} else {
			sm[k] += 0.25 * w[k]
		}
	}
	return sm
}

// parallelLikelihoods is the size of a fit (rows × nodes) from which its
// E-step runs on every core: a population refit of 20 000 states on 72
// nodes is about 1.4 million, a host's of a few dozen states is not worth
// a goroutine.
const parallelLikelihoods = 1 << 16

// eStep is the E-step of fitGridPrior's EM: it adds to num[k] every
// row's posterior mass at node k, pr_i[k]·L_i[k] / d_i with
// d_i = Σ_k pr_i[k]·L_i[k], where pr_i is the fit's prior w (or, for a
// silent fit, w with the row's flat regions spread as parent's).
//
// It runs on up to workers goroutines in two phases: the rows' d_i, the
// rows split between the workers; then the sums num[k], the nodes split
// between the workers, each node summing its rows in row order. Every
// number is computed by the same operations in the same order as a
// single pass row by row, so the fit is the same bit for bit on any
// number of cores.
type eStep struct {
	lik     []float64 // rows × n likelihoods, row by row
	n, rows int
	w, pi   []float64 // the fit's masses and parent's
	num     []float64 // the sums the step adds to
	d       []float64 // per row: d_i, its prior's mass under its likelihood
	workers int
	// Silent fits only: the rows' flat regions (fitGridPrior), the
	// masses above and below each node, and a scratch prior per worker.
	flatAbove, flatBelow             []int
	piAbove, piBelow, wAbove, wBelow []float64
	at                               [][]float64
}

// prior returns row i's prior, valid at the nodes [lo, hi): w, or for a
// row with a flat region of a silent fit, w there spread in parent's
// shape, written into at.
func (e *eStep) prior(i, lo, hi int, at []float64) []float64 {
	if e.flatAbove == nil {
		return e.w
	}
	n, fa, fb := e.n, e.flatAbove[i], e.flatBelow[i]
	if fa >= n && fb < 0 {
		return e.w
	}
	if fa <= fb {
		copy(at[lo:hi], e.pi[lo:hi]) // flat everywhere: the data say nothing
		return at
	}
	copy(at[lo:hi], e.w[lo:hi])
	if fa < n && e.piAbove[fa] > 0 {
		f := e.wAbove[fa] / e.piAbove[fa]
		for k := max(fa, lo); k < hi; k++ {
			at[k] = f * e.pi[k]
		}
	}
	if fb >= 0 && e.piBelow[fb+1] > 0 {
		f := e.wBelow[fb+1] / e.piBelow[fb+1]
		for k := lo; k <= min(fb, hi-1); k++ {
			at[k] = f * e.pi[k]
		}
	}
	return at
}

// run adds one E-step to e.num.
func (e *eStep) run() {
	n := e.n
	e.parallel(func(wk int) {
		var at []float64
		if e.at != nil {
			at = e.at[wk]
		}
		for i := wk * e.rows / e.workers; i < (wk+1)*e.rows/e.workers; i++ {
			row := e.lik[i*n : (i+1)*n]
			pr := e.prior(i, 0, n, at)
			d := 0.0
			for k, v := range row {
				d += pr[k] * v
			}
			e.d[i] = d
		}
	})
	e.parallel(func(wk int) {
		var at []float64
		if e.at != nil {
			at = e.at[wk]
		}
		lo, hi := wk*n/e.workers, (wk+1)*n/e.workers
		num := e.num[lo:hi]
		for i, d := range e.d {
			if !(d > 0) {
				continue
			}
			row := e.lik[i*n+lo : i*n+hi]
			pr := e.prior(i, lo, hi, at)[lo:hi]
			for k, v := range row {
				num[k] += pr[k] * v / d
			}
		}
	})
}

// parallel runs body(0) … body(workers−1), each on its own goroutine but
// the first, and returns when all have.
func (e *eStep) parallel(body func(wk int)) {
	var wg sync.WaitGroup
	for wk := 1; wk < e.workers; wk++ {
		wg.Go(func() { body(wk) })
	}
	body(0)
	wg.Wait()
}

// cumulate sets above[k] to the mass of w at nodes k and above and
// below[k] to that at nodes below k (above[n] = below[0] = 0).
func cumulate(above, below, w []float64) {
	n := len(w)
	above[n], below[0] = 0, 0
	for k := n - 1; k >= 0; k-- {
		above[k] = above[k+1] + w[k]
	}
	for k := range n {
		below[k+1] = below[k] + w[k]
	}
}
