package schedule

import (
	"fmt"
	"math"
	"time"
)

// PlanInput is what a policy sees: one element per URL.
type PlanInput struct {
	Rates    []float64 // estimated changes per second
	Weights  []float64
	Hosts    []int32   // index into HostCaps
	HostCaps []float64 // most fetches per second a host may take
	Budget   float64   // total fetches per second
}

// PlanOutput is a policy's answer: a fetch frequency per element and what
// the model predicts of it.
type PlanOutput struct {
	Freq        []float64 // fetches per second; 0 = not fetched
	Freshness   float64   // model's weighted freshness
	Age         float64   // model's weighted age, seconds
	GivenUp     int       // elements with f = 0 that change
	CappedHosts int       // hosts at their politeness cap
	Unabsorbed  float64   // budget no host could take
}

// Policy is the scheduling step: it turns estimates into frequencies. The
// coordinator dispatches each URL every 1/f (the fixed-order policy).
type Policy interface {
	Name() string
	Plan(in PlanInput) (PlanOutput, error)
}

// uniformPolicy gives every URL the same frequency, B/N, except where a
// host cap forces less; the excess goes evenly to the other hosts' URLs.
type uniformPolicy struct{}

func (uniformPolicy) Name() string { return "uniform" }

func (uniformPolicy) Plan(in PlanInput) (PlanOutput, error) {
	n := len(in.Rates)
	out := PlanOutput{Freq: make([]float64, n)}
	if n == 0 || in.Budget <= 0 {
		return out, nil
	}
	if in.Budget < 0 || math.IsNaN(in.Budget) {
		return out, fmt.Errorf("budget %v", in.Budget)
	}
	count := make([]int, len(in.HostCaps))
	for _, h := range in.Hosts {
		count[h]++
	}
	// Water-filling: raise a common level f until hosts saturate.
	capped := make([]bool, len(in.HostCaps))
	remaining, free := in.Budget, n
	for {
		level := remaining / float64(free)
		changed := false
		for h, c := range count {
			if capped[h] || c == 0 || in.HostCaps[h] <= 0 || math.IsInf(in.HostCaps[h], 1) {
				continue
			}
			if level*float64(c) > in.HostCaps[h] {
				capped[h] = true
				remaining -= in.HostCaps[h]
				free -= c
				changed = true
			}
		}
		if !changed || free == 0 {
			break
		}
	}
	level := 0.0
	if free > 0 {
		level = remaining / float64(free)
	} else {
		out.Unabsorbed = remaining
	}
	for i, h := range in.Hosts {
		if capped[h] {
			out.Freq[i] = in.HostCaps[h] / float64(count[h])
		} else {
			out.Freq[i] = level
		}
	}
	for _, c := range capped {
		if c {
			out.CappedHosts++
		}
	}
	out.Freshness, out.Age = modelFreshness(in, out.Freq)
	return out, nil
}

// modelFreshness is the fixed-order freshness and age of the collection
// (Cho & Garcia-Molina Table 2), weighted.
func modelFreshness(in PlanInput, freq []float64) (fresh, age float64) {
	var wsum float64
	for i, lambda := range in.Rates {
		w := in.Weights[i]
		f := freq[i]
		var F, A float64
		switch {
		case lambda <= 0:
			F, A = 1, 0
		case f <= 0:
			F, A = 0, math.Inf(1)
		default:
			r := lambda / f
			F = -math.Expm1(-r) / r
			A = (1 / f) * (0.5 - 1/r + (-math.Expm1(-r))/(r*r))
		}
		fresh += w * F
		age += w * A
		wsum += w
	}
	if wsum > 0 {
		fresh /= wsum
		age /= wsum
	}
	return fresh, age
}

// PolicyByName returns the policy an operator names with --policy and
// --objective.
func PolicyByName(name, objective string) (Policy, error) {
	switch name {
	case "uniform":
		return uniformPolicy{}, nil
	case "optimal", "proportional":
		// Replaced by the optimal allocation (alloc package) below.
		return policyFromAlloc(name, objective)
	// Peers, for benchmarks and comparison (policy_nutch.go,
	// policy_stormcrawler.go, policy_lambda.go); on the real clock.
	case "nutch":
		return NewNutch(24 * time.Hour), nil
	case "stormcrawler":
		return NewStormCrawler(24 * time.Hour), nil
	case "binarylambdacrawl":
		return NewBinaryLambdaCrawl(DefaultLambdaEpsilon)
	case "lambdacrawl":
		return NewLambdaCrawl(), nil
	}
	return nil, fmt.Errorf("unknown policy %q: want optimal, uniform, proportional, nutch, stormcrawler, binarylambdacrawl or lambdacrawl", name)
}
