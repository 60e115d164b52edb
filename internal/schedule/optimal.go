package schedule

import (
	"fmt"
	"slices"
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
	hosts  []int32
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
// plan solves the allocation with and without it.
func (p *allocPolicy) solve(in PlanInput) (alloc.Solution, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	same := p.solver != nil && p.n == len(in.Rates) && p.nCaps == len(in.HostCaps) && slices.Equal(p.hosts, in.Hosts)
	if !same {
		p.solver = alloc.NewSolver(p.problem(in))
		p.n = len(in.Rates)
		p.hosts = append(p.hosts[:0], in.Hosts...)
		p.nCaps = len(in.HostCaps)
	} else {
		for i := range in.Rates {
			p.solver.SetRate(i, in.Rates[i])
			p.solver.SetWeight(i, in.Weights[i])
		}
		p.solver.SetBudget(in.Budget)
		p.solver.SetHostCaps(in.HostCaps)
	}
	sol, err := p.solver.Solve()
	if err != nil {
		// A warm start can fail to bracket the multiplier where many
		// elements sit exactly at the give-up threshold; a cold solve of
		// the same problem does not depend on the previous answer.
		p.solver = nil
		return alloc.Solve(p.problem(in))
	}
	return sol, nil
}
