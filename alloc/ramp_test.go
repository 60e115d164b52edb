package alloc

import (
	"math"
	"math/rand/v2"
	"testing"
)

// priorRate is the configured prior of the scheduler, a change every four
// days in changes per second: every URL not fetched yet has it, so at
// scale hundreds of thousands of identical elements share one give-up
// threshold, w/λ = 345 600.
const priorRate = 1.0 / 345600

// budgetAt is Σ f_i at multiplier mu: a budget whose solution has that μ.
func budgetAt(p Problem, mu float64) float64 {
	b := 0.0
	for _, e := range p.Elements {
		b += FreshnessFrequency(e.Rate, e.Weight, mu)
	}
	return b
}

// onRamp is a multiplier a share u ∈ [0, 1) of the way into the give-up
// ramp of threshold key = w/λ.
func onRamp(key, u float64) float64 { return key * (1 - u*rampWidth) }

// TestRampRootAtLargeMultiplier is the smallest input found to fail with
// "multiplier search did not converge" (bench scale at 300 000 and 1 M
// URLs failed the same way): one element, at the rate of a URL never
// fetched, with a budget whose μ lies on its give-up ramp. There S(μ) is
// so steep that one ulp of ln μ ≈ 12.75 moves it by about 1e−7 of the
// budget, and a Newton step from one side that rounded to no step at all
// was repeated until the round limit.
func TestRampRootAtLargeMultiplier(t *testing.T) {
	p := Problem{Elements: []Element{{Rate: priorRate, Weight: 1, Host: -1}}}
	rng := rand.New(rand.NewPCG(1, 1))
	for trial := range 200 {
		p.Budget = budgetAt(p, onRamp(1/priorRate, rng.Float64()))
		s := NewSolver(p)
		sol, err := s.Solve()
		if err != nil {
			t.Fatalf("trial %d: cold: %v", trial, err)
		}
		checkKKT(t, p, sol)
		q := p
		q.Budget = budgetAt(p, onRamp(1/priorRate, rng.Float64()))
		s.SetBudget(q.Budget)
		sol, err = s.Solve()
		if err != nil {
			t.Fatalf("trial %d: warm re-solve from budget %v to %v: %v", trial, p.Budget, q.Budget, err)
		}
		checkKKT(t, q, sol)
	}
}

// identicalProblem is a small random problem whose elements come in
// groups of identical ones (up to 300 each, as URLs that share a history
// or the prior share an estimate), each group on one host, and a few
// single elements. Half the trials put the budget on a group's give-up
// ramp, where the solution is a mix: the group's elements share out what
// the others leave, below the ramp's top.
type identicalProblem struct {
	p      Problem
	groups [][]int // element indices of each group, singles included
}

func newIdenticalProblem(rng *rand.Rand, trial int) identicalProblem {
	var ip identicalProblem
	scale := math.Exp(4 * rng.NormFloat64()) // the unit of time
	withCaps := trial%3 == 2
	if withCaps {
		ip.p.HostCaps = []float64{0, 0}
	}
	nGroups := 1 + rng.IntN(3)
	nSingle := rng.IntN(3)
	for g := range nGroups + nSingle {
		size := 1
		if g < nGroups {
			size = 1 + rng.IntN(300)
		}
		lam := scale * math.Exp(1.5*rng.NormFloat64())
		w := []float64{1, 1, 0.5 + rng.Float64()}[rng.IntN(3)]
		h := int32(-1)
		if withCaps {
			h = int32(rng.IntN(3)) - 1
		}
		var idx []int
		for range size {
			idx = append(idx, len(ip.p.Elements))
			ip.p.Elements = append(ip.p.Elements, Element{Rate: lam, Weight: w, Host: h})
		}
		ip.groups = append(ip.groups, idx)
	}
	g := ip.groups[rng.IntN(len(ip.groups))]
	e := ip.p.Elements[g[0]]
	if trial%2 == 0 {
		ip.p.Budget = budgetAt(ip.p, onRamp(e.Weight/e.Rate, rng.Float64()))
	} else {
		ip.p.Budget = budgetAt(ip.p, e.Weight/e.Rate*math.Exp(rng.NormFloat64()))
	}
	if withCaps {
		for h := range ip.p.HostCaps {
			// Caps from loose to binding (and some hosts with nothing).
			ip.p.HostCaps[h] = ip.p.Budget * (0.1 + rng.Float64())
		}
	}
	return ip
}

// reduced is the problem with each group merged into one element: c
// identical elements (λ, w) that share a total frequency x are worth
// c·w·F(λ, x/c) at best (F is concave in f, so an equal split is best),
// and c·w·F(λ, x/c) = c·w·F(cλ, x), so the group is one element of rate
// cλ and weight cw on the same host. Its optimum is the original's.
func (ip identicalProblem) reduced() Problem {
	q := Problem{Budget: ip.p.Budget, HostCaps: ip.p.HostCaps, Objective: ip.p.Objective}
	for _, g := range ip.groups {
		e := ip.p.Elements[g[0]]
		c := float64(len(g))
		q.Elements = append(q.Elements, Element{Rate: c * e.Rate, Weight: c * e.Weight, Host: e.Host})
	}
	return q
}

// TestIdenticalElementsMatchBruteForce checks the solver, cold and warm,
// on problems with many identical elements against brute force over the
// reduced problem (one element per group), and the KKT conditions of every
// element.
func TestIdenticalElementsMatchBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for trial := range 150 {
		ip := newIdenticalProblem(rng, trial)
		p := ip.p
		s := NewSolver(p)
		sol, err := s.Solve()
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		checkKKT(t, p, sol)
		q := ip.reduced()
		total := p.Budget - sol.Unabsorbed
		want := objective(q, bruteForce(q, total, 24))
		got := objective(p, sol.Freq)
		wsum := 0.0
		for _, e := range p.Elements {
			wsum += e.Weight
		}
		if got < want-1e-9*wsum {
			t.Errorf("trial %d (caps %v, budget %v): solver %v < brute force %v", trial, p.HostCaps, p.Budget, got, want)
		}
		// Re-solved warm after the budget moved within a factor of 1.1
		// (onto another point of a ramp, or off it).
		p.Budget *= math.Exp(0.1 * (2*rng.Float64() - 1))
		s.SetBudget(p.Budget)
		sol, err = s.Solve()
		if err != nil {
			t.Fatalf("trial %d: warm: %v", trial, err)
		}
		checkKKT(t, p, sol)
		if t.Failed() {
			t.Fatalf("trial %d: %d elements in %d groups, caps %v", trial, len(p.Elements), len(ip.groups), p.HostCaps)
		}
	}
}

// TestIdenticalElementsWarmOnRamp moves the budget between points of the
// same group's ramp, re-solving warm each time: the case of a re-plan of a
// collection whose unfetched URLs all sit at the threshold.
func TestIdenticalElementsWarmOnRamp(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	for trial := range 100 {
		ip := newIdenticalProblem(rng, trial)
		p := ip.p
		g := ip.groups[0]
		e := p.Elements[g[0]]
		key := e.Weight / e.Rate
		s := NewSolver(p)
		for step := range 4 {
			p.Budget = budgetAt(p, onRamp(key, rng.Float64()))
			if p.Budget == 0 {
				continue
			}
			s.SetBudget(p.Budget)
			sol, err := s.Solve()
			if err != nil {
				t.Fatalf("trial %d step %d (%d elements, key %v, caps %v): %v", trial, step, len(p.Elements), key, p.HostCaps, err)
			}
			checkKKT(t, p, sol)
		}
	}
}
