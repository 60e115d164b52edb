package schedule

import (
	"fmt"
	"math"
	"time"

	"github.com/freshcrawl/freshcrawl/alloc"
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
	Freq []float64 // fetches per second; 0 = not fetched
	// Freshness is the plan's weighted steady-state freshness: what the
	// model expects of these frequencies, averaged over the posteriors
	// once the Scheduler has them.
	Freshness float64
	Age       float64 // model's weighted age, seconds
	// ModelFreshness is the model's expected freshness of the copies at
	// the time of the plan (docs/design.md §3.3): a URL never fetched
	// counts as stale.
	ModelFreshness float64
	GivenUp        int     // elements with f = 0 that change
	CappedHosts    int     // hosts at their politeness cap
	Unabsorbed     float64 // budget no host could take
	// Mu and HostNu are the plan's multipliers (alloc.Solution): what a
	// fetch per unit time is worth at the margin, overall and extra on a
	// capped host. Zero for policies that have none.
	Mu     float64
	HostNu []float64
}

// Policy is the scheduling step: it turns estimates into frequencies. The
// coordinator dispatches each URL every 1/f (the fixed-order policy).
type Policy interface {
	Name() string
	Plan(in PlanInput) (PlanOutput, error)
}

// uniformPolicy gives every URL the same frequency, B/N, except where a
// host cap forces less; the excess goes evenly to the other hosts' URLs:
// alloc.Uniform.
type uniformPolicy struct{}

func (uniformPolicy) Name() string { return "uniform" }

func (uniformPolicy) Plan(in PlanInput) (PlanOutput, error) {
	sol, err := alloc.Uniform(allocProblem(in, alloc.Freshness))
	if err != nil {
		return PlanOutput{}, fmt.Errorf("uniform allocation: %w", err)
	}
	return planOutput(in, sol), nil
}

// allocProblem is in as an alloc problem.
func allocProblem(in PlanInput, objective alloc.Objective) alloc.Problem {
	el := make([]alloc.Element, len(in.Rates))
	for i := range el {
		el[i] = alloc.Element{Rate: in.Rates[i], Weight: in.Weights[i], Host: in.Hosts[i]}
	}
	return alloc.Problem{Elements: el, Budget: in.Budget, HostCaps: in.HostCaps, Objective: objective}
}

// planOutput is a PlanOutput of sol, with the model's freshness and age.
func planOutput(in PlanInput, sol alloc.Solution) PlanOutput {
	out := PlanOutput{Freq: sol.Freq, GivenUp: sol.GivenUp, CappedHosts: sol.CappedHosts, Unabsorbed: sol.Unabsorbed, Mu: sol.Mu, HostNu: sol.HostNu}
	out.Freshness, out.Age = modelFreshness(in, sol.Freq)
	return out
}

// modelFreshness is what the model predicts of a plan: the weighted
// fixed-order freshness and age of the collection (Cho & Garcia-Molina
// Table 2), Σ w_i F(λ_i, f_i) / Σ w_i and likewise for age, with
// alloc.FixedOrder's per-element formulas. It is alloc.CollectionFreshness
// and alloc.CollectionAge, summed here without building an alloc.Element
// per URL (a plan of millions of URLs makes two of these), and made finite
// so that status and metrics can always carry it:
//
//   - an element counts only with a finite weight > 0 (a URL robots.txt
//     disallows has weight 0) and a rate and frequency that are numbers
//     ≥ 0 (a rate of +Inf is a page that is never fresh);
//   - the age leaves out the elements the plan never fetches though they
//     change (f = 0 < λ, PlanOutput.GivenUp): their age grows without
//     bound, so it is the age of the elements the plan keeps;
//   - with nothing that counts, freshness is 1 and age 0, as alloc reports
//     a collection of total weight 0 (nothing can be stale).
func modelFreshness(in PlanInput, freq []float64) (fresh, age float64) {
	var fNum, fDen, aNum, aDen float64
	for i, rate := range in.Rates {
		w, f := in.Weights[i], freq[i]
		if !(w > 0) || math.IsInf(w, 1) || !(rate >= 0) || !(f >= 0) {
			continue
		}
		fNum += w * alloc.FixedOrder.Freshness(rate, f)
		fDen += w
		if f == 0 && rate > 0 {
			continue // given up: unbounded age
		}
		aNum += w * alloc.FixedOrder.Age(rate, f)
		aDen += w
	}
	fresh, age = 1, 0
	if fDen > 0 {
		fresh = fNum / fDen
	}
	if aDen > 0 {
		age = aNum / aDen
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
		// The optimal allocation and the proportional baseline of the
		// alloc package (optimal.go).
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
		return newLambdaCrawl(), nil
	}
	return nil, fmt.Errorf("unknown policy %q: want optimal, uniform, proportional, nutch, stormcrawler, binarylambdacrawl or lambdacrawl", name)
}
