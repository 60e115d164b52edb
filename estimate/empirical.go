package estimate

import (
	"fmt"
	"math"
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
	// A row of n likelihoods per informative state, in one array sized
	// once: a refit of tens of thousands of states would otherwise copy
	// it at every doubling.
	rows := 0
	for i := range states {
		if states[i].n > 0 {
			rows++
		}
	}
	lik := make([]float64, 0, rows*n)
	// Per URL, when silent: the first node of its flat region at the top
	// (n: none) and the last of the one at the bottom (-1: none).
	var flatAbove, flatBelow []int
	if silent {
		flatAbove, flatBelow = make([]int, 0, rows), make([]int, 0, rows)
	}
	used := 0
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
	// piAbove[k] is parent's mass at nodes k and above, piBelow[k+1] at k
	// and below; wAbove and wBelow the current fit's.
	var piAbove, piBelow, wAbove, wBelow, at []float64
	if silent {
		piAbove, piBelow = make([]float64, n+1), make([]float64, n+1)
		wAbove, wBelow = make([]float64, n+1), make([]float64, n+1)
		at = make([]float64, n)
		cumulate(piAbove, piBelow, pi)
	}
	for range iters {
		for k := range num {
			num[k] = kappa * pi[k]
		}
		if silent {
			cumulate(wAbove, wBelow, w)
		}
		for i := range used {
			row := lik[i*n : (i+1)*n]
			// The URL's prior: the fit's, except that in its flat
			// regions the fit's mass there is spread as parent's.
			pr := w
			if silent && (flatAbove[i] < n || flatBelow[i] >= 0) {
				pr = at
				copy(at, w)
				if fa, fb := flatAbove[i], flatBelow[i]; fa <= fb {
					copy(at, pi) // flat everywhere: the data say nothing
				} else {
					if fa < n && piAbove[fa] > 0 {
						f := wAbove[fa] / piAbove[fa]
						for k := fa; k < n; k++ {
							at[k] = f * pi[k]
						}
					}
					if fb >= 0 && piBelow[fb+1] > 0 {
						f := wBelow[fb+1] / piBelow[fb+1]
						for k := 0; k <= fb; k++ {
							at[k] = f * pi[k]
						}
					}
				}
			}
			d := 0.0
			for k, v := range row {
				d += pr[k] * v
			}
			if !(d > 0) {
				continue
			}
			for k, v := range row {
				num[k] += pr[k] * v / d
			}
		}
		total := 0.0
		for _, v := range num {
			total += v
		}
		for k := range w {
			w[k] = num[k] / total
		}
	}
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
	p, err := NewGridPrior(g, sm)
	return p, used, err
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
