package estimate

import "math"

// ChangeTest is the outcome of GridPrior.TestChange.
type ChangeTest struct {
	// Prob is the posterior probability that the rate changed during one
	// of the recent observations.
	Prob float64
	// Newest is the number of newest observations made at the new rate
	// under the most probable change point (0 when there are none).
	Newest int
}

// TestChange is the Bayesian test of docs/design.md §3.3 for a change of
// rate among the State's recent observations (at most eight, kept
// exactly): the run-length posterior of Adams & MacKay ("Bayesian online
// changepoint detection", 2007), restricted to at most one change since
// the last one detected. Rates change at hazard (per unit time; the
// change during an observation covering time t has prior probability
// 1 − e^{−hazard·t}) to a new rate drawn from p, independent of the old
// one. The hypothesis "the newest j observations are at a new rate" has
// the evidence Z(older)·Z(newest j), against Z(all) for "no change", each
// Z the marginal likelihood ∫ p(λ)·L(λ | data) dλ under the prior p. So a
// page that a posterior of a yearly rate expected to find unchanged and
// that showed a run of changes is judged by how improbable that run is
// under its own posterior predictive against the collection's prior, not
// by a likelihood ratio whose both sides adapt: a monthly page turned
// daily is caught in two or three monthly fetches. The tests check it
// against brute-force enumeration, its false-alarm rate on steady pages
// and its detection delay after a switch.
func (p GridPrior) TestChange(s *State, hazard float64) ChangeTest {
	ev := p.ChangeEvidence(s)
	return ev.Test(hazard)
}

// ChangeEvidence is what the data say about a change of rate among a
// State's recent observations, independent of the hazard: for each
// position, the log evidence of a change there, and of no change.
type ChangeEvidence struct {
	m      int
	t      [recentSize]float64 // time each recent observation covered
	change [recentSize]float64 // ln Z(older)·Z(newest from i)
	none   float64             // ln Z(all)
}

// ChangeEvidence computes the evidences of TestChange once, so that the
// test can be run at several hazards.
func (p GridPrior) ChangeEvidence(s *State) ChangeEvidence {
	var ev ChangeEvidence
	m := int(s.nRecent)
	if !p.Valid() || m == 0 {
		return ev
	}
	ev.m = m
	var bufB [numBuckets + recentSize]term
	before := s.before(bufB[:0])
	// The hypothesis "the newest m−i observations are at a new rate":
	// before and the recent observations older than i, against i … m−1.
	for i := range m {
		old := before
		var bufO [numBuckets + recentSize]term
		old.changed = append(bufO[:0], before.changed...)
		for k := range i {
			s.recentObs(k).addTo(&old)
		}
		var nw sums
		var bufN [recentSize]term
		nw.changed = bufN[:0]
		for k := i; k < m; k++ {
			s.recentObs(k).addTo(&nw)
		}
		ev.t[i] = float64(s.recentT[i])
		ev.change[i] = p.logEvidence(&old) + p.logEvidence(&nw)
	}
	all := before
	var bufA [numBuckets + recentSize]term
	all.changed = append(bufA[:0], before.changed...)
	for k := range m {
		s.recentObs(k).addTo(&all)
	}
	ev.none = p.logEvidence(&all)
	return ev
}

// ChangeEvidenceBound is ChangeEvidence with every change evidence
// replaced by an upper bound, at the cost of one posterior integration
// (the evidence of no change, kept exact) instead of 2m+1: so Test on it
// gives, at any hazard, a probability of change at least that of Test on
// the exact evidence (the probability grows with every change evidence).
// A caller that only acts on a probability above a threshold can skip
// the exact evidence whenever the bound is below it, without changing a
// decision; a steady page, the common case, is settled so.
//
// The bound: the marginal likelihood Z = ∫ p(u)·e^{ℓ(u)} du is at most
// sup ℓ, since the prior integrates to one, and so is the midpoint sum
// integrate computes (its cell weights sum to the prior's mass). So
// ln Z(older)·Z(newest from i) ≤ sup ℓ_older + sup ℓ_newest, each sup the
// maximum likelihood (maxLogLik), plus a margin (boundSlack) for the
// rounding of both sides. ok is false when no finite bound exists (a
// Last-Modified change seen with no exposure, a zero or non-finite
// interval, or an evidence of no change that is not finite): the caller
// must then use ChangeEvidence.
func (p GridPrior) ChangeEvidenceBound(s *State) (ev ChangeEvidence, ok bool) {
	m := int(s.nRecent)
	if !p.Valid() || m == 0 {
		return ev, true
	}
	for i := range m {
		if t := float64(s.recentT[i]); !(t > 0) || math.IsInf(t, 1) {
			return ev, false
		}
	}
	ev.m = m
	var bufB [numBuckets + recentSize]term
	before := s.before(bufB[:0])
	for _, k := range before.changed {
		if !(k.t > 0) || math.IsInf(k.t, 1) {
			return ev, false
		}
	}
	all := before
	var bufA [numBuckets + recentSize]term
	all.changed = append(bufA[:0], before.changed...)
	for k := range m {
		s.recentObs(k).addTo(&all)
	}
	ev.none = p.logEvidence(&all)
	if math.IsNaN(ev.none) || math.IsInf(ev.none, 0) {
		return ev, false
	}
	// old grows from before by one observation per split point.
	old := before
	var bufO [numBuckets + recentSize]term
	old.changed = append(bufO[:0], before.changed...)
	for i := range m {
		var nw sums
		var bufN [recentSize]term
		nw.changed = bufN[:0]
		for k := i; k < m; k++ {
			s.recentObs(k).addTo(&nw)
		}
		so := maxLogLik(old.lm, old.exposure, old.changed)
		sn := maxLogLik(nw.lm, nw.exposure, nw.changed)
		b := so + sn
		if math.IsNaN(b) || math.IsInf(b, 0) {
			return ev, false
		}
		ev.t[i] = float64(s.recentT[i])
		ev.change[i] = b + boundSlack*(1+math.Abs(so)+math.Abs(sn))
		s.recentObs(i).addTo(&old)
	}
	return ev, true
}

// boundSlack is the relative margin ChangeEvidenceBound adds to its
// bounds: the maximum likelihood is evaluated at a root found to a
// relative 1e-9 (an error of order 1e-18 in ℓ) and both it and the
// integrated evidence are sums rounded at about 1e-16 of their terms.
const boundSlack = 1e-9

// Test is the posterior probability of a change at hazard (per unit
// time) and the most probable change position.
func (ev *ChangeEvidence) Test(hazard float64) ChangeTest {
	m := ev.m
	if m == 0 || !(hazard > 0) || math.IsInf(hazard, 1) {
		return ChangeTest{}
	}
	var lp [recentSize]float64
	after := 0.0 // time covered by the observations after i
	for i := m - 1; i >= 0; i-- {
		lp[i] = log1mexp(hazard*ev.t[i]) - hazard*after + ev.change[i]
		after += ev.t[i]
	}
	lpNone := -hazard*after + ev.none
	// best is the most probable change position, even when "no change"
	// is more probable still.
	best := 0
	for i := 1; i < m; i++ {
		if lp[i] > lp[best] {
			best = i
		}
	}
	top := math.Max(lpNone, lp[best])
	num, den := 0.0, math.Exp(lpNone-top)
	for i := range m {
		e := math.Exp(lp[i] - top)
		num += e
		den += e
	}
	if !(den > 0) || math.IsNaN(num) {
		return ChangeTest{}
	}
	return ChangeTest{Prob: num / den, Newest: m - best}
}

// logEvidence is ln Z, the marginal likelihood of the statistics x under
// the prior.
func (p GridPrior) logEvidence(x *sums) float64 {
	l := likelihoodOf(x)
	_, z := p.integrate(&l)
	return z
}

// Restart ends the State's history at a change point: the statistics start
// afresh from its newest observations (newest of them, at most the recent
// window), which were made at the new rate, and the count of change points
// goes up.
func (s *State) Restart(newest int, cfg Config) {
	m := int(s.nRecent)
	newest = min(max(newest, 0), m)
	var buf [recentSize]recentObs
	keep := buf[:0]
	for i := m - newest; i < m; i++ {
		keep = append(keep, s.recentObs(i))
	}
	*s = State{last: s.last, cps: s.cps + 1}
	for _, o := range keep {
		s.n++
		switch o.kind {
		case obsChanged:
			s.addChanged(float64(o.t), 1, cfg.MergeRatio)
		case obsLMChange:
			s.lmChanges++
			s.exposure += float64(o.t)
		default:
			s.exposure += float64(o.t)
		}
		s.remember(o)
	}
}
