package alloc

import (
	"math"
	"math/rand/v2"
	"testing"
)

// crowdProblem is newIdenticalProblem's groups of identical elements
// (one with the budget on its give-up ramp in half of the trials) among
// up to 400 elements of diverse rates and weights on the same hosts: a
// crowd at one threshold beside the rest of a collection.
func crowdProblem(rng *rand.Rand, trial int) identicalProblem {
	ip := newIdenticalProblem(rng, trial)
	e := ip.p.Elements[ip.groups[0][0]]
	key := e.Weight / e.Rate
	for range rng.IntN(400) {
		w := math.Exp(rng.NormFloat64())
		lam := w / key * math.Exp(2*rng.NormFloat64())
		h := int32(-1)
		if len(ip.p.HostCaps) > 0 {
			h = int32(rng.IntN(3)) - 1
		}
		ip.groups = append(ip.groups, []int{len(ip.p.Elements)})
		ip.p.Elements = append(ip.p.Elements, Element{Rate: lam, Weight: w, Host: h})
	}
	g := ip.groups[rng.IntN(len(ip.groups))]
	e = ip.p.Elements[g[0]]
	if trial%2 == 0 {
		ip.p.Budget = budgetAt(ip.p, onRamp(e.Weight/e.Rate, rng.Float64()))
	} else {
		ip.p.Budget = budgetAt(ip.p, e.Weight/e.Rate*math.Exp(0.3*rng.NormFloat64()))
	}
	for h := range ip.p.HostCaps {
		ip.p.HostCaps[h] = ip.p.Budget * (0.1 + rng.Float64())
	}
	return ip
}

// TestCrowdSearchMatchesPlainSearch solves random problems with crowds
// of identical elements cold and then warm after the budget moved, once
// with the multiplier search's crowd model (crowdStep) and once without
// it, and checks that the two allocations agree within the search's
// tolerance: the same Σf, the same objective, each group's total within
// 1e-9 of the budget, each element's frequency within 1e-9 relative
// (times its elasticity to μ, which is large near its threshold) unless
// its group is on a give-up ramp (where a μ an ulp apart moves
// single frequencies, not the group's total), and the KKT conditions of
// both. Over all trials the crowd model must take fewer passes.
func TestCrowdSearchMatchesPlainSearch(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	passes := [2]int{}
	for trial := range 120 {
		ip := crowdProblem(rng, trial)
		p := ip.p
		solvers := [2]*Solver{NewSolver(p), NewSolver(p)}
		solvers[1].plainSearch = true
		for step := range 3 {
			if step > 0 {
				p.Budget *= math.Exp(0.02 * rng.NormFloat64())
			}
			var sols [2]Solution
			for k, s := range solvers {
				s.SetBudget(p.Budget)
				sol, err := s.Solve()
				if err != nil {
					t.Fatalf("trial %d step %d (plain %v): %v", trial, step, k == 1, err)
				}
				checkKKT(t, p, sol)
				sols[k] = sol
				passes[k] += sol.Iterations
			}
			a, b := sols[0], sols[1]
			if d := math.Abs(a.Unabsorbed - b.Unabsorbed); d > 1e-9*p.Budget {
				t.Errorf("trial %d step %d: unabsorbed %v and %v", trial, step, a.Unabsorbed, b.Unabsorbed)
			}
			wsum := 0.0
			for _, e := range p.Elements {
				wsum += e.Weight
			}
			if oa, ob := objective(p, a.Freq), objective(p, b.Freq); math.Abs(oa-ob) > 1e-9*wsum {
				t.Errorf("trial %d step %d: objective %v with the crowd model, %v without", trial, step, oa, ob)
			}
			for _, g := range ip.groups {
				var sa, sb float64
				for _, i := range g {
					sa += a.Freq[i]
					sb += b.Freq[i]
				}
				if math.Abs(sa-sb) > 1e-9*p.Budget {
					t.Errorf("trial %d step %d: group of %d: Σf %v with the crowd model, %v without", trial, step, len(g), sa, sb)
				}
				e := p.Elements[g[0]]
				key := e.Weight / e.Rate
				if onRampAt := a.Mu*(1+2*rampWidth) >= key && a.Mu <= key*(1+2*rampWidth); onRampAt {
					continue
				}
				for _, i := range g {
					// An element near its threshold moves el times as
					// much as μ does: el = −d ln f/d ln μ.
					m := a.Mu
					if h := p.Elements[i].Host; h >= 0 {
						m += a.HostNu[h]
					}
					_, el := freshFreq(p.Elements[i].Rate, p.Elements[i].Weight, m, 0, tolFor(fullAcc))
					if fa, fb := a.Freq[i], b.Freq[i]; math.Abs(fa-fb) > 1e-9*max(fa, fb)*max(1, el) {
						t.Errorf("trial %d step %d: element %d: f %v with the crowd model, %v without", trial, step, i, fa, fb)
					}
				}
			}
			if t.Failed() {
				t.Fatalf("trial %d step %d: %d elements in %d groups, caps %v, budget %v", trial, step, len(p.Elements), len(ip.groups), p.HostCaps, p.Budget)
			}
		}
	}
	t.Logf("passes: %d with the crowd model, %d without", passes[0], passes[1])
	if passes[0] >= passes[1] {
		t.Errorf("the crowd model took %d passes, the plain search %d", passes[0], passes[1])
	}
}
