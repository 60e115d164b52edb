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
