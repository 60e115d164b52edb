package alloc

import (
	"errors"
	"fmt"
	"math"
)

// ErrUnreachable is returned by MinBudgetFor when no budget reaches the
// target freshness.
var ErrUnreachable = errors.New("alloc: target freshness unreachable")

// MinBudgetFor returns the least budget B whose freshness-optimal
// allocation (Solve with Objective Freshness; p.Budget and p.Objective are
// ignored) reaches weighted freshness target ∈ [0, 1].
//
// It does not search over B. Along the optimal path every element follows
// its multiplier: uncapped ones μ, a capped host max(μ, μ_h*) where μ_h*
// (the multiplier that fills the host's cap) does not depend on B. Both
// the freshness Φ(μ) and the budget B(μ) = Σ f_i(μ) are monotone in μ, so
// MinBudgetFor solves each binding host's μ_h* once, then Φ(μ) = target
// by the same safeguarded Newton iteration as Solve
// (−dΦ/d ln μ = μ Σ f_i·el_i over the elements at μ, by the KKT condition
// w_i g(r_i)/λ_i = μ), and returns B(μ).
//
// The error wraps ErrUnreachable when target is at least the supremum:
// 1 if any element with positive rate and weight is uncapped (freshness 1
// needs an infinite budget), otherwise the freshness with every capped
// host at its cap (reached exactly, by B = Σ caps, if target equals it).
func MinBudgetFor(p Problem, target float64) (float64, error) {
	p.Objective, p.Budget = Freshness, 0
	if !(target >= 0 && target <= 1) {
		return 0, fmt.Errorf("alloc: target freshness %v: must be in [0, 1]", target)
	}
	freq := make([]float64, len(p.Elements))
	c, err := newCore(columnsOf(p.Elements), p.HostCaps, p.Budget, p.Objective, freq)
	if err != nil {
		return 0, err
	}
	var W, W0, Wunc float64 // total, λ = 0, active uncapped weight
	for _, e := range p.Elements {
		W += e.Weight
		switch {
		case e.Weight == 0:
		case e.Rate == 0:
			W0 += e.Weight
		case e.Host < 0 || c.capOf[e.Host] < 0:
			Wunc += e.Weight
		}
	}
	need := target*W - W0 // what the active elements must contribute
	if W == 0 || need <= 0 {
		return 0, nil
	}

	// μ_h* of every capped host that has active elements, and the
	// freshness those hosts contribute at their caps.
	nCap := len(c.caps)
	star := make([]float64, nCap)
	rfs := make([]rootFinder, nCap)
	capTot, sumRate := 0.0, 0.0
	for _, e := range p.Elements {
		if e.Weight > 0 {
			sumRate += e.Rate
		}
	}
	t0 := c.heuristic(sumRate) // every element fetched about as often as it changes
	for k := range rfs {
		rfs[k] = newRootFinder(c.caps[k], t0)
		c.boundAbove(&rfs[k], k)
		rfs[k].done = c.hostActive[k] == 0
		if !rfs[k].done {
			capTot += c.caps[k]
		}
	}
	if err := c.solveHosts(rfs); err != nil {
		return 0, err
	}
	hostMul := make([]float64, nCap)
	for k := range rfs {
		star[k] = -1
		if c.hostActive[k] > 0 {
			star[k] = math.Exp(rfs[k].t)
		}
	}
	c.pass(0, star, false, true, fullAcc)
	fCap := 0.0
	for k := range nCap {
		fCap += c.tot.hf[k]
	}
	sup := fCap + Wunc
	switch {
	case Wunc > 0 && need >= sup*(1-1e-15):
		return 0, fmt.Errorf("%w: %v needs an infinite budget (supremum %v)", ErrUnreachable, target, (sup+W0)/W)
	case Wunc == 0 && need > sup*(1+rootTol):
		return 0, fmt.Errorf("%w: %v exceeds %v, the freshness with every capped host at its cap",
			ErrUnreachable, target, (sup+W0)/W)
	case Wunc == 0 && need >= sup*(1-rootTol):
		return capTot, nil
	}

	rf := newRootFinder(need, t0)
	rf.hi, rf.phihi = math.Log(c.keyMax), math.Inf(-1) // Φ = 0 above
	for !rf.done {
		if rf.n >= maxRounds {
			return 0, fmt.Errorf("%w (target freshness %v)", errNoConvergence, target)
		}
		mu := math.Exp(rf.t)
		for k := range hostMul {
			hostMul[k] = max(mu, star[k])
		}
		c.pass(mu, hostMul, true, true, rf.acc)
		phi, d := c.tot.fw, c.tot.d
		up, down := c.tot.up, c.tot.down
		for k := range nCap {
			phi += c.tot.hf[k]
			if mu >= star[k] {
				d += c.tot.hd[k]
				up, down = min(up, c.tot.hup[k]), max(down, c.tot.hdown[k])
			}
		}
		rf.observe(phi, mu*d, math.Log(up), math.Log(down))
	}
	B := c.tot.s
	for k := range nCap {
		B += c.tot.hs[k]
	}
	return B, nil
}
