package schedule

import (
	"math"

	"github.com/freshcrawl/freshcrawl/estimate"
)

// exploreFloor is the exploration of a policy with no multiplier
// (uniform, proportional, the LambdaCrawl peers): every URL is fetched at
// least ExploreShare times its uniform share (or its host's, where that
// is smaller), out of the budget, and the plan is solved again with what
// the floor leaves. A URL the plan gives up on is rechecked at the floor,
// and so is one it keeps at less: a kept URL is never fetched more rarely
// than a given-up one. Proportional gives nothing up, and kept a page seen
// unchanged once or twice at its posterior's rate, years apart; its copy
// was then worth what the model prior's slow region said, a region no
// fetch of the collection had tested (docs/design.md §3.7, "An honest
// model").
func (j *PlanJob) exploreFloor(in PlanInput, out PlanOutput) ([]float64, PlanOutput) {
	uniform := in.Budget / math.Max(1, float64(len(in.Rates)))
	perHost := make([]int, len(in.HostCaps))
	for _, h := range in.Hosts {
		perHost[h]++
	}
	floor := func(i int) float64 {
		if !(in.Weights[i] > 0) || j.blocked.has(i) {
			return 0
		}
		h := in.Hosts[i]
		return j.explore * math.Min(uniform, in.HostCaps[h]/float64(perHost[h]))
	}
	spent := 0.0
	caps := append([]float64(nil), in.HostCaps...)
	for i, f := range out.Freq {
		if d := floor(i) - math.Max(f, 0); d > 0 {
			spent += d
			caps[in.Hosts[i]] -= d
		}
	}
	if spent > 0 {
		again := in
		again.Budget = math.Max(in.Budget-spent, in.Budget/2)
		again.HostCaps = caps
		if o2, err := j.policy.Plan(again); err == nil {
			out = o2
		}
	}
	freq := make([]float64, len(in.Rates))
	for i, f := range out.Freq {
		if j.blocked.has(i) {
			continue
		}
		freq[i] = math.Max(f, floor(i))
	}
	return freq, out
}

// exploreByValue adds to the optimal plan the exploration of
// docs/design.md §3.7, weighed against the plan's multipliers:
//
//   - a URL fetched before whose rate is not resolved for the plan's
//     decision (the posterior probability that it is worth fetching at
//     all, P(λ < w/μ), is neither below nor above the resolution
//     threshold) is probed at the interval ln2/λ* that makes its outcome a
//     fair coin at the give-up threshold λ* = w/μ, if the value of what
//     the probes teach (probeValue) exceeds their cost, μ a fetch;
//   - a URL given up (resolved) is rechecked every recheckInterval, the
//     interval that balances the cost of checks against the value lost
//     while a rate that fell below the threshold goes unnoticed, at the
//     rate-change hazard the collection shows;
//   - everything else gets the plan's frequency.
//
// Exploration takes at most ExploreShare of the budget and of each host's
// cap, the most valuable first; the plan is then solved again over the
// other URLs with what exploration leaves. Exploration raises the plan's
// multiplier (the plan has less budget), so a probe must be worth the
// multiplier of the plan it leaves: the multiplier is the fixed point of
// the two, found by bisection, started from the previous plan's (a
// re-plan then usually solves the allocation once or twice, not six times).
func (j *PlanJob) exploreByValue(in PlanInput, out PlanOutput) ([]float64, PlanOutput, error) {
	// The collection's prior, for the value of rechecks.
	pr := j.priors
	if j.newPrior != nil {
		pr = j.newPrior
	}
	popPost := pr.population().Posterior(estimate.State{})
	pop := popPost.Summary()
	// Exploration at a multiplier μ leaves the plan a budget whose own
	// multiplier is M(μ); exploration is consistent with the plan where
	// M(μ) = μ. At the full plan's μ₀, M(μ₀) ≥ μ₀ (exploration only takes
	// budget away); at μ₁ = M(μ₀), less is explored, so M(μ₁) ≤ μ₁. The
	// root is bracketed and found by bisection in ln μ; the upper end is
	// used, so that exploration errs on the side of the plan.
	type result struct {
		freq, tau []float64
		plan      PlanOutput
		probe     []bool
	}
	at := func(mu float64) (result, error) {
		mult := out
		mult.Mu = mu
		items := j.exploreItems(in, mult, &pop)
		freq, tau, plan, probe, err := j.planAround(in, items)
		return result{freq, tau, plan, probe}, err
	}
	valid := func(mu float64) bool { return mu > 0 && !math.IsInf(mu, 1) }
	// Warm start: the previous plan's lift of the multiplier, a little
	// above it, so that one evaluation usually brackets the root within
	// the tolerance. M is decreasing, so an evaluation at g gives both
	// ends: if M(g) ≤ g, the root lies in [M(g), g], else in [g, M(g)].
	lo, hi := out.Mu, 0.0
	var r, rHi result
	if g := out.Mu * j.liftGuess * 1.01; j.liftGuess > 1.02 {
		rg, err := at(g)
		if err != nil {
			return nil, out, err
		}
		switch m := rg.plan.Mu; {
		case !valid(m):
		case m <= g:
			lo, hi, rHi = max(lo, m), g, rg
		default:
			lo, hi = g, m
			if rHi, err = at(hi); err != nil {
				return nil, out, err
			}
		}
	}
	if hi == 0 {
		var err error
		if r, err = at(lo); err != nil {
			return nil, out, err
		}
		if r.plan.Mu > lo*1.02 && valid(r.plan.Mu) {
			hi = r.plan.Mu
			if rHi, err = at(hi); err != nil {
				return nil, out, err
			}
		}
	}
	if hi > 0 {
		for range 4 {
			if hi <= lo*1.03 {
				break
			}
			mid := math.Sqrt(lo * hi)
			rm, err := at(mid)
			if err != nil {
				return nil, out, err
			}
			if rm.plan.Mu > mid {
				lo = mid
			} else {
				hi, rHi = mid, rm
			}
		}
		r = rHi
		j.lift = math.Sqrt(lo*hi) / out.Mu
	}
	freq, plan, probe := r.freq, r.plan, r.probe
	j.probe, j.recheckTau = probe, r.tau
	return freq, plan, nil
}

// planAround gives the items their exploration within ExploreShare of the
// budget and of each host's cap, and solves the plan over the other URLs
// with what is left. It returns every URL's frequency, the probe interval
// of the rechecks, the plan, and which URLs are probed.
func (j *PlanJob) planAround(in PlanInput, items []exploreItem) (freq, tauOf []float64, plan PlanOutput, probe []bool, err error) {
	n := len(in.Rates)
	// Scratch arrays, reused by the plan's next evaluation (each
	// evaluation returns only freq, tauOf and probe): at scale
	// they are megabytes each, fresh memory to fault in and collect.
	sc := &j.around
	p := placement{
		freq:    make([]float64, n),
		tau:     make([]float64, n),
		probe:   make([]bool, n),
		weights: append(reuse(&sc.weights, n)[:0], in.Weights...),
	}
	again := j.place(in, items, &p)
	plan, err = j.policy.Plan(again)
	if err != nil {
		return nil, nil, PlanOutput{}, nil, err
	}
	j.fillPlanned(plan, &p)
	plan.GivenUp = givenUp(p.freq, in.Weights)
	return p.freq, p.tau, plan, p.probe, nil
}

// placement is what planAround's placement of the items sets, per
// element.
type placement struct {
	freq  []float64 // the exploration's frequency (0: none)
	tau   []float64 // a recheck's probe interval, seconds (0: none)
	probe []bool    // probed for what it teaches
	// weights is the plan's input weights, 0 for a URL explored: it is
	// out of the plan.
	weights []float64
}

// place gives the items their exploration, in their order, within
// ExploreShare of the budget and of each host's cap, into p; it returns
// the plan's input over what is left.
func (j *PlanJob) place(in PlanInput, items []exploreItem, p *placement) PlanInput {
	capAll := j.explore * in.Budget
	hostLeft := make([]float64, len(in.HostCaps))
	for h, c := range in.HostCaps {
		hostLeft[h] = j.explore * c
	}
	spent := 0.0
	caps := append([]float64(nil), in.HostCaps...)
	stretch := newRecheckStretch(in, items, capAll, hostLeft)
	// reserved is what the fallback rechecks still to be placed hold back.
	reserved := 0.0
	reservedHost := make([]float64, len(in.HostCaps))
	for _, it := range items {
		if !it.isRecheck() && it.fallback.f > 0 {
			f := stretch.of(it.fallback.f, in.Hosts[it.i])
			reserved += f
			reservedHost[in.Hosts[it.i]] += f
		}
	}
	for _, it := range items {
		h := in.Hosts[it.i]
		f, tau := it.f, it.tau
		isProbe := !it.isRecheck()
		if !isProbe {
			f = stretch.of(f, h)
		}
		var fb float64
		if isProbe && it.fallback.f > 0 {
			fb = stretch.of(it.fallback.f, h)
			reserved -= fb
			reservedHost[h] -= fb
		}
		if isProbe && (f > capAll-spent-reserved || f > hostLeft[h]-reservedHost[h]) {
			// A probe at a longer interval than its own would not test
			// the threshold; it waits for room in a later plan. Its URL,
			// if the plan gives it up, is rechecked meanwhile; if the
			// plan keeps it, it is fetched at the plan's frequency.
			if fb <= 0 || fb > capAll-spent || fb > hostLeft[h] {
				continue
			}
			f, tau, isProbe = fb, it.fallback.tau, false
		} else if !isProbe && (f > capAll-spent || f > hostLeft[h]) {
			continue
		}
		p.freq[it.i], p.probe[it.i] = f, isProbe
		p.tau[it.i] = tau
		spent += f
		hostLeft[h] -= f
		caps[h] -= f
		p.weights[it.i] = 0 // out of the plan
	}
	again := in
	again.Budget = in.Budget - spent
	again.HostCaps = caps
	again.Weights = p.weights
	return again
}

// recheckStretch stretches rechecks that do not all fit by one factor
// (overall, and per host), to longer intervals, rather than dropping
// some: a URL given up and never rechecked would not see its rate fall
// (the drift workload), while a later recheck still does. The fallback
// rechecks of probes are counted in, so that a probe that finds no room
// still has its recheck.
type recheckStretch struct {
	factor   float64
	perHost  []float64 // each host's rechecks, unstretched
	hostLeft []float64 // each host's room for exploration, shrinking as items are placed
}

func newRecheckStretch(in PlanInput, items []exploreItem, capAll float64, hostLeft []float64) recheckStretch {
	var sum float64
	perHost := make([]float64, len(in.HostCaps))
	for _, it := range items {
		f := it.fallback.f
		if it.isRecheck() {
			f = it.f
		}
		sum += f
		perHost[in.Hosts[it.i]] += f
	}
	factor := 1.0
	if sum > capAll {
		factor = capAll / sum
	}
	return recheckStretch{factor: factor, perHost: perHost, hostLeft: hostLeft}
}

// of is the frequency of a recheck at f of host h, stretched.
func (r recheckStretch) of(f float64, h int32) float64 {
	f *= r.factor
	if r.perHost[h]*r.factor > r.hostLeft[h] && r.perHost[h] > 0 {
		f *= r.hostLeft[h] / (r.perHost[h] * r.factor)
	}
	return f * (1 - 1e-9) // rounding: the stretched rechecks fill the cap exactly
}

// fillPlanned gives every URL exploration did not take the plan's
// frequency (none if blocked).
func (j *PlanJob) fillPlanned(plan PlanOutput, p *placement) {
	for i := range p.freq {
		switch {
		case j.blocked.has(i):
			p.freq[i] = 0
		case p.freq[i] == 0:
			p.freq[i] = plan.Freq[i]
		}
	}
}
