package schedule

import (
	"fmt"
	"math"
)

// LambdaPolicy is one of the crawl-rate allocations of the
// "LambdaCrawl" family, peers freshcrawl is benchmarked against
// (docs/design.md §4). Both set every URL's crawl rate ρ_i from its importance
// μ_i (PlanInput.Weights) and change rate Δ_i (PlanInput.Rates, the same
// learned estimates freshcrawl's own policy receives), with one Lagrange
// multiplier λ found by bisection so that Σ ρ_i = R (the budget):
//
//   - BinaryLambdaCrawl, the optimal policy of Azar et al., "Tractable
//     near-optimal policies for crawling", PNAS 115(32), 2018, for binary
//     freshness with complete change observations, with the ε floor that
//     Kolobov et al. (NeurIPS 2019, §5) add so that no URL is starved:
//     ρ_i = max(ε·R/n, √(μ_iΔ_i/λ) − Δ_i);
//   - LambdaCrawl, Kolobov, Peres, Lu & Horvitz, "Staying up to date with
//     online content changes using reinforcement learning for scheduling",
//     NeurIPS 2019, Algorithm 1, for the harmonic staleness penalty with
//     incomplete observations: ρ_i = (−Δ_i + √(Δ_i² + 4μ_iΔ_i/λ))/2.
//
// Host caps (docs/design.md §3.2, politeness) are not part of either paper. They
// are honoured the way the KKT conditions with a per-host multiplier ν_h
// would: water-filling. Solve over the URLs of uncapped hosts with the
// budget they have left; every host whose URLs then ask for more than its
// cap c_h is capped, and its own URLs share c_h by the same rule with their
// own multiplier (λ + ν_h), found by the same bisection; repeat until no
// new host binds. Budget no uncapped host can take is reported as
// Unabsorbed. A URL with weight 0 (disallowed) gets no rate.
type LambdaPolicy struct {
	name string
	// Epsilon is the floor share of BinaryLambdaCrawl: every URL gets at
	// least Epsilon·R/n. Zero for LambdaCrawl.
	Epsilon float64
	binary  bool
}

// DefaultLambdaEpsilon is the ε of BinaryLambdaCrawl when none is given:
// Kolobov et al. treat ε as a tuning knob; 0.1 is our choice, a floor of a
// tenth of the uniform share.
const DefaultLambdaEpsilon = 0.1

// NewBinaryLambdaCrawl returns BinaryLambdaCrawl(ε). ε must be in [0, 1).
func NewBinaryLambdaCrawl(eps float64) (*LambdaPolicy, error) {
	if !(eps >= 0 && eps < 1) {
		return nil, fmt.Errorf("binarylambdacrawl: epsilon %v, want in [0, 1)", eps)
	}
	return &LambdaPolicy{name: "binarylambdacrawl", Epsilon: eps, binary: true}, nil
}

// newLambdaCrawl returns LambdaCrawl (incomplete observations).
func newLambdaCrawl() *LambdaPolicy { return &LambdaPolicy{name: "lambdacrawl"} }

// Name implements Policy.
func (p *LambdaPolicy) Name() string { return p.name }

// rho is the policy's crawl rate of one URL for multiplier lam.
func (p *LambdaPolicy) rho(mu, delta, lam, floor float64) float64 {
	if mu <= 0 {
		return 0
	}
	if p.binary {
		return max(floor, math.Sqrt(mu*delta/lam)-delta)
	}
	if delta <= 0 {
		return 0
	}
	return (-delta + math.Sqrt(delta*delta+4*mu*delta/lam)) / 2
}

// Plan implements Policy.
func (p *LambdaPolicy) Plan(in PlanInput) (PlanOutput, error) {
	n := len(in.Rates)
	out := PlanOutput{Freq: make([]float64, n)}
	if n == 0 || in.Budget <= 0 {
		return out, nil
	}
	if math.IsNaN(in.Budget) || math.IsInf(in.Budget, 0) {
		return out, fmt.Errorf("%s: budget %v", p.name, in.Budget)
	}
	live := 0
	for i := range n {
		if in.Weights[i] > 0 {
			live++
		}
	}
	if live == 0 {
		out.Unabsorbed = in.Budget
		return out, nil
	}
	floor := p.Epsilon * in.Budget / float64(live)

	byHost := make([][]int, len(in.HostCaps))
	var free []int // URLs of hosts with no cap (Host < 0 or cap ≤ 0 / +Inf)
	for i, h := range in.Hosts {
		if h < 0 || int(h) >= len(in.HostCaps) {
			free = append(free, i)
			continue
		}
		byHost[h] = append(byHost[h], i)
	}
	capped := make([]bool, len(in.HostCaps))
	hasCap := func(h int) bool {
		c := in.HostCaps[h]
		return c > 0 && !math.IsInf(c, 1)
	}
	for {
		idx := append([]int(nil), free...)
		remaining := in.Budget
		for h, urls := range byHost {
			if capped[h] {
				remaining -= in.HostCaps[h]
			} else {
				idx = append(idx, urls...)
			}
		}
		if remaining <= 0 || len(idx) == 0 {
			out.Unabsorbed = max(remaining, 0)
			for _, i := range idx {
				out.Freq[i] = 0
			}
			break
		}
		p.fill(in, idx, remaining, floor, out.Freq)
		grew := false
		for h, urls := range byHost {
			if capped[h] || !hasCap(h) {
				continue
			}
			s := 0.0
			for _, i := range urls {
				s += out.Freq[i]
			}
			if s > in.HostCaps[h]*(1+1e-12) {
				capped[h], grew = true, true
			}
		}
		if !grew {
			break
		}
	}
	for h, urls := range byHost {
		if capped[h] {
			out.CappedHosts++
			p.fill(in, urls, in.HostCaps[h], min(floor, in.HostCaps[h]/float64(max(len(urls), 1))), out.Freq)
		}
	}
	out.Freshness, out.Age = modelFreshness(in, out.Freq)
	return out, nil
}

// fill sets freq[i] for i in idx so that they sum to budget, by bisection
// on log λ (Σρ is decreasing in λ). If the floor alone exhausts the budget
// the budget is split evenly among the URLs that count.
func (p *LambdaPolicy) fill(in PlanInput, idx []int, budget, floor float64, freq []float64) {
	sum := func(lam float64) float64 {
		s := 0.0
		for _, i := range idx {
			s += p.rho(in.Weights[i], in.Rates[i], lam, floor)
		}
		return s
	}
	live := 0
	for _, i := range idx {
		if in.Weights[i] > 0 {
			live++
		}
	}
	if live == 0 {
		return
	}
	if p.binary && floor*float64(live) >= budget {
		for _, i := range idx {
			if in.Weights[i] > 0 {
				freq[i] = budget / float64(live)
			}
		}
		return
	}
	lo, hi := 1.0, 1.0
	for k := 0; sum(lo) < budget && k < 2000; k++ {
		lo /= 4
	}
	for k := 0; sum(hi) > budget && k < 2000; k++ {
		hi *= 4
	}
	for range 200 {
		mid := math.Sqrt(lo * hi)
		if sum(mid) > budget {
			lo = mid
		} else {
			hi = mid
		}
		if hi/lo < 1+1e-13 {
			break
		}
	}
	lam := math.Sqrt(lo * hi)
	s := sum(lam)
	for _, i := range idx {
		freq[i] = p.rho(in.Weights[i], in.Rates[i], lam, floor)
	}
	// Remove the bisection's last relative error so Σρ = budget exactly.
	if s > 0 {
		for _, i := range idx {
			freq[i] *= budget / s
		}
	}
}
