package schedule

import (
	"fmt"
	"sync"

	"github.com/freshcrawl/freshcrawl/alloc"
)

// allocPolicy plans with the alloc package: the optimal allocation of
// Cho & Garcia-Molina §5.3 under per-host caps, or the proportional
// baseline. It keeps an alloc.Solver so that a re-plan after a few
// estimates moved is warm-started instead of solved from scratch.
type allocPolicy struct {
	name      string
	objective alloc.Objective

	mu     sync.Mutex
	solver *alloc.Solver
	n      int
	hosts  uint64 // hostsHash of the elements' hosts
	nCaps  int
}

func policyFromAlloc(name, objective string) (Policy, error) {
	p := &allocPolicy{name: name}
	switch objective {
	case "", "freshness":
		p.objective = alloc.Freshness
	case "age":
		p.objective = alloc.Age
	default:
		return nil, fmt.Errorf("unknown objective %q: want freshness or age", objective)
	}
	return p, nil
}

func (p *allocPolicy) Name() string {
	if p.name == "optimal" && p.objective == alloc.Age {
		return "optimal-age"
	}
	return p.name
}

func (p *allocPolicy) problem(in PlanInput) alloc.Problem { return allocProblem(in, p.objective) }

func (p *allocPolicy) Plan(in PlanInput) (PlanOutput, error) {
	var sol alloc.Solution
	var err error
	switch p.name {
	case "proportional":
		sol, err = alloc.Proportional(p.problem(in))
	default:
		sol, err = p.solve(in)
	}
	if err != nil {
		return PlanOutput{}, fmt.Errorf("%s allocation: %w", p.Name(), err)
	}
	return planOutput(in, sol), nil
}

// solve reuses the warm solver when the element set and hosts are the same
// as last time, which is the common case: estimates move, URLs stay. The
// caps may differ: exploration takes part of each host's capacity, and a
// plan solves the allocation with and without it. The solver reads the
// plan's arrays in place and keeps only the multipliers of its last
// solves: a copy of the elements would be 20 bytes a URL, and the
// frequencies it returned 8, for as long as the Scheduler lives.
func (p *allocPolicy) solve(in PlanInput) (alloc.Solution, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	hosts := hostsHash(in.Hosts)
	if p.solver == nil || p.n != len(in.Rates) || p.nCaps != len(in.HostCaps) || p.hosts != hosts {
		p.solver = alloc.NewSolver(alloc.Problem{Objective: p.objective})
		p.n, p.hosts, p.nCaps = len(in.Rates), hosts, len(in.HostCaps)
	}
	sol, err := p.solver.SolveColumns(alloc.Columns{Rates: in.Rates, Weights: in.Weights, Hosts: in.Hosts}, in.Budget, in.HostCaps)
	if err != nil {
		// A warm start can fail to bracket the multiplier where many
		// elements sit exactly at the give-up threshold; a cold solve of
		// the same problem does not depend on the previous answer.
		p.solver = nil
		return alloc.Solve(p.problem(in))
	}
	return sol, nil
}

// hostsHash is a 64-bit hash of hosts (FNV-1a over the values), by which
// the policy tells whether a plan's URLs sit on the same hosts as the
// last plan's without keeping a copy of them. Two lists that differ and
// hash alike would only warm-start a solve from the other list's
// multipliers, which costs passes, not correctness.
func hostsHash(hosts []int32) uint64 {
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	for _, v := range hosts {
		h = (h ^ uint64(uint32(v))) * prime
	}
	return h
}
