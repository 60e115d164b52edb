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
	if !parent.Valid() {
		return GridPrior{}, 0, fmt.Errorf("estimate.FitGridPrior: %w: parent prior not built by a constructor", ErrInvalid)
	}
	if !(kappa >= 0) || math.IsInf(kappa, 1) {
		return GridPrior{}, 0, fmt.Errorf("estimate.FitGridPrior: %w: kappa = %v, want finite and >= 0", ErrInvalid, kappa)
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
	for range iters {
		for k := range num {
			num[k] = kappa * pi[k]
		}
		for i := range used {
			row := lik[i*n : (i+1)*n]
			d := 0.0
			for k, v := range row {
				d += w[k] * v
			}
			if !(d > 0) {
				continue
			}
			for k, v := range row {
				num[k] += w[k] * v / d
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
