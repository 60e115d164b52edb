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
	// Held is the posterior probability of a change with at least two
	// observations after it, and HeldNewest the number of those under
	// the most probable such change point (both 0 with fewer than three
	// recent observations). A change with one observation after it is
	// as often one surprising fetch of a steady page; the scheduler
	// restarts on Held (docs/design.md §3.3).
	Held       float64
	HeldNewest int
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
	ev.none = p.noChangeEvidence(s, before)
	return ev
}

// noChangeEvidence is the log evidence of s's observations under one rate:
// before (the older observations' sums) with every recent one added.
func (p GridPrior) noChangeEvidence(s *State, before sums) float64 {
	all := before
	var bufA [numBuckets + recentSize]term
	all.changed = append(bufA[:0], before.changed...)
	for k := range int(s.nRecent) {
		s.recentObs(k).addTo(&all)
	}
	return p.logEvidence(&all)
}

// ChangeEvidenceBound is ChangeEvidence with every change evidence
// replaced by an upper bound, at the cost of one posterior integration
// (the evidence of no change, kept exact) instead of 2m+1 and of the
// likelihoods at the prior's bin edges: so Test on it gives, at any
// hazard, a probability of change at least that of Test on the exact
// evidence (the probability grows with every change evidence). A caller
// that only acts on a probability above a threshold can skip the exact
// evidence whenever the bound is below it, without changing a decision; a
// steady page, the common case, is mostly settled so.
//
// The bound: the log-likelihood ℓ(u) is concave in u = ln λ (each term
// a·u, −r·e^u and ln(1 − e^{−e^u·t}) is), so on each prior bin it is at
// most its larger value at the bin's edges, or its maximum (maxLogLik)
// on the bin that holds the maximum likelihood rate. The marginal
// likelihood Z = ∫ p(u)·e^{ℓ(u)} du, and the midpoint sum integrate
// computes for it, are then at most Σ_k w_k·e^{max of ℓ on bin k}. The
// likelihoods of the older and newest observations at the edges are
// prefix and suffix sums of each observation's, so all 2m bounds cost
// about as much as three integrations. A margin (boundSlack) covers the
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
	ev.none = p.noChangeEvidence(s, before)
	if math.IsNaN(ev.none) || math.IsInf(ev.none, 0) {
		return ev, false
	}
	// The log-likelihoods at the N+1 bin edges: of before (into old, which
	// then grows by one observation per split point) and of each recent
	// observation (summed from the newest down into nw).
	g := p.grid
	edges := g.N + 1
	var old, nw [MaxGridNodes + 1]float64
	var rec [recentSize][MaxGridNodes + 1]float64
	lb := likelihoodOf(&before)
	for e := range edges {
		u := g.Lo - g.Step/2 + float64(e)*g.Step
		lam := math.Exp(u)
		old[e] = lb.at(u)
		for k := range m {
			o := s.recentObs(k)
			t := float64(o.t)
			switch o.kind {
			case obsChanged:
				rec[k][e] = log1mexp(lam * t)
			case obsLMChange:
				rec[k][e] = u - lam*t
			default:
				rec[k][e] = -lam * t
			}
		}
	}
	var nwAt [recentSize][MaxGridNodes + 1]float64 // likelihood of the newest from i
	for i := m - 1; i >= 0; i-- {
		for e := range edges {
			nw[e] += rec[i][e]
		}
		nwAt[i] = nw
	}
	for e := range edges {
		if math.IsNaN(old[e]) || math.IsNaN(nwAt[0][e]) {
			return ev, false // a NaN in any term reaches both sums at e
		}
	}
	oldS := before
	var bufO [numBuckets + recentSize]term
	oldS.changed = append(bufO[:0], before.changed...)
	for i := range m {
		var nwS sums
		var bufN [recentSize]term
		nwS.changed = bufN[:0]
		for k := i; k < m; k++ {
			s.recentObs(k).addTo(&nwS)
		}
		zo, ok1 := p.binBound(&oldS, old[:edges])
		zn, ok2 := p.binBound(&nwS, nwAt[i][:edges])
		if !ok1 || !ok2 {
			return ev, false
		}
		ev.t[i] = float64(s.recentT[i])
		ev.change[i] = zo + zn + boundSlack*(1+math.Abs(zo)+math.Abs(zn))
		if math.IsNaN(ev.change[i]) || math.IsInf(ev.change[i], 0) {
			return ev, false
		}
		s.recentObs(i).addTo(&oldS)
		for e := range edges {
			old[e] += rec[i][e]
		}
	}
	return ev, true
}

// binBound is the upper bound of ChangeEvidenceBound on ln Z for the
// statistics x, whose log-likelihood at the bin edges is at; ok is false
// when it is not finite.
func (p GridPrior) binBound(x *sums, at []float64) (float64, bool) {
	sup, uHat := supLogLik(x)
	if math.IsNaN(sup) || math.IsInf(sup, 1) {
		return 0, false
	}
	g := p.grid
	var v [MaxGridNodes]float64
	top := math.Inf(-1)
	for k := range g.N {
		// Not math.Max: its NaN handling showed in the profile, and
		// ChangeEvidenceBound rejects NaN before.
		b := at[k]
		if at[k+1] > b {
			b = at[k+1]
		}
		// The maximum is inside the bin (with a margin for the root's
		// precision): ℓ reaches sup there.
		lo := g.Lo - g.Step/2 + float64(k)*g.Step
		if uHat >= lo-1e-6 && uHat <= lo+g.Step+1e-6 {
			b = sup
		}
		v[k] = p.logW[k] + b
		if v[k] > top {
			top = v[k]
		}
	}
	if math.IsInf(top, -1) {
		return 0, false // cannot happen with finite intervals; no bound then
	}
	// Bins more than boundSpan below the top are counted at e^{−boundSpan}
	// each, an upper bound that spares their exponentials.
	sum, far := 0.0, 0
	for k := range g.N {
		if d := v[k] - top; d > -boundSpan {
			sum += math.Exp(d)
		} else {
			far++
		}
	}
	sum += float64(far) * math.Exp(-boundSpan)
	z := top + math.Log(sum)
	if math.IsNaN(z) || math.IsInf(z, 0) {
		return 0, false
	}
	return z, true
}

// supLogLik is maxLogLik of x and ln of the rate that reaches it (±Inf
// when it is reached only in a limit).
func supLogLik(x *sums) (sup, uHat float64) {
	sumC := 0.0
	for _, k := range x.changed {
		sumC += k.c
	}
	switch {
	case x.lm+sumC <= 0:
		return 0, math.Inf(-1)
	case x.exposure <= 0 && x.lm > 0:
		return math.Inf(1), math.Inf(1)
	case x.exposure <= 0:
		return 0, math.Inf(1)
	}
	lam := solveRate(x.lm, x.exposure, x.changed)
	v := x.lm*math.Log(lam) - x.exposure*lam
	for _, k := range x.changed {
		v += k.c * log1mexp(lam*k.t)
	}
	return v, math.Log(lam)
}

// boundSpan is how far below its largest term binBound sums the terms
// exactly.
const boundSpan = 40

// boundSlack is the relative margin ChangeEvidenceBound adds to its
// bounds: the maximum likelihood is evaluated at a root found to a
// relative 1e-9 (an error of order 1e-18 in ℓ) and the likelihoods and
// evidences are sums rounded at about 1e-16 of their terms.
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
	ct := ChangeTest{Prob: num / den, Newest: m - best}
	if m >= 3 {
		held, hb := 0.0, 0
		for i := range m - 1 {
			held += math.Exp(lp[i] - top)
			if lp[i] > lp[hb] {
				hb = i
			}
		}
		ct.Held, ct.HeldNewest = held/den, m-hb
	}
	return ct
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
// goes up. The older statistics are kept at weight keep (0: dropped, the
// hard restart; the caller passes the posterior probability of no change,
// so that what is kept is the posterior's mixture of "changed" and "not
// changed" in sufficient statistics): a restart decided by the data
// selects the URLs whose newest observations are extreme, and dropping
// all the rest would bias the statistics the collection's prior is fitted
// from (docs/design.md §3.3).
func (s *State) Restart(newest int, keep float64, cfg Config) {
	m := int(s.nRecent)
	newest = min(max(newest, 0), m)
	var buf [recentSize]recentObs
	kept := buf[:0]
	for i := m - newest; i < m; i++ {
		kept = append(kept, s.recentObs(i))
	}
	// keep·(older) + newest = keep·(all) + (1 − keep)·newest: the
	// statistics hold the newest observations already.
	w := 1.0
	old := State{last: s.last, cps: s.cps + 1}
	if keep > 0 && keep < 1 && !math.IsNaN(keep) {
		s.scale(keep)
		w = 1 - keep
		old.exposure, old.count, old.sumT, old.lmChanges, old.n = s.exposure, s.count, s.sumT, s.lmChanges, s.n
	}
	*s = old
	for _, o := range kept {
		s.n += float32(w)
		switch o.kind {
		case obsChanged:
			s.addChanged(float64(o.t), w, cfg.MergeRatio)
		case obsLMChange:
			s.lmChanges += float32(w)
			s.exposure += w * float64(o.t)
		default:
			s.exposure += w * float64(o.t)
		}
		s.remember(o)
	}
}
