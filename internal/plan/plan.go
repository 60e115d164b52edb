// Package plan answers an operator's questions about a crawl without
// crawling: what freshness and age a budget buys (and how much better the
// optimal allocation does than the uniform and proportional ones), the
// least budget that reaches a target freshness, and, when the budget is
// bought rather than given, the long-term optimal refresh intervals and the
// number of workers to run (docs/design.md §3.1–3.4).
//
// The maths lives in packages alloc and longterm; this package gathers the
// elements (ReadCSV, FromStore), runs the models (Run, which does no I/O)
// and presents the answer (Result.WriteText, Result.WriteJSON).
package plan

import (
	"errors"
	"fmt"
	"math"

	"github.com/freshcrawl/freshcrawl/alloc"
	"github.com/freshcrawl/freshcrawl/longterm"
)

// The allocation policies Run compares (paper §5.1 and §5.3).
const (
	policyOptimal      = "optimal"
	policyUniform      = "uniform"
	policyProportional = "proportional"
	// policyLongTerm is Result.Policy in long-term mode, where the budget is an
	// output rather than an input (Razniewski & Nutt).
	policyLongTerm = "long-term"
)

// Mode is the question Run answers.
type Mode int

const (
	// ModeBudget allocates a given budget (Input.Budget).
	ModeBudget Mode = iota
	// ModeTarget finds the least budget whose optimal allocation reaches
	// Input.TargetFreshness, then allocates it.
	ModeTarget
	// ModeLongTerm finds each element's long-term optimal interval from a
	// benefit and a cost (Input.LongTerm); the budget is their sum.
	ModeLongTerm
)

// LongTermInput holds the economics of long-term mode (Razniewski & Nutt §5,
// docs/design.md §3.4), in the unit of the rates.
type LongTermInput struct {
	// Benefit is B, earned per unit time while a copy is correct, for an
	// element of weight 1. An element of weight w earns w·B: the weight is
	// its importance, and under exponential decay this makes the long-term
	// optimum coincide with the budgeted optimum at the same total budget
	// (both solve (w/λ)·g(λ/f) = C/B).
	Benefit float64
	// Cost is C, the cost of one fetch.
	Cost  float64
	Decay longterm.Decay
}

// Input is everything Run needs. All rates share one time unit.
type Input struct {
	Elements []Element
	Mode     Mode
	// Budget is the total number of fetches per unit time (ModeBudget).
	Budget float64
	// HostRate caps the fetches per unit time of each host (politeness);
	// ≤ 0 or +Inf means no cap. Elements with no host are never capped.
	HostRate float64
	// HostCaps lowers the cap of the hosts it names (a host's Crawl-delay,
	// HostCaps from the store), in the same unit.
	HostCaps map[string]float64
	// Policy picks the allocation whose per-element detail is reported:
	// Optimal (default when empty), Uniform or Proportional. The three are
	// always compared. Ignored in ModeLongTerm.
	Policy string
	// Objective is what Optimal optimises.
	Objective alloc.Objective
	// TargetFreshness is the collection freshness to reach (ModeTarget),
	// in (0, 1). Run's error wraps alloc.ErrUnreachable when no budget
	// reaches it (host caps, or freshness 1).
	TargetFreshness float64
	// LongTerm is required in ModeLongTerm.
	LongTerm *LongTermInput
	// WorkerRate, when > 0, is what one worker sustains, in fetches per
	// unit time; Result.Workers is then the number of workers needed for
	// the budget actually used.
	WorkerRate float64
	// Unit and Top only shape WriteText: the time unit of every rate
	// (Plain prints bare numbers) and how many elements to list (≤ 0: all).
	Unit Unit
	Top  int
}

// Metrics is what an allocation achieves for the whole collection.
type Metrics struct {
	// Freshness is the weighted mean freshness Σ w F / Σ w.
	Freshness float64
	// Age is the weighted mean age, in the time unit; +Inf when an element
	// that changes is never fetched, NaN when not defined (linear decay).
	Age float64
}

// ElementResult is one element's share of the chosen allocation.
type ElementResult struct {
	Element
	// Frequency f is the fetches per unit time; Interval is 1/f (+Inf
	// when f = 0).
	Frequency, Interval float64
	Freshness, Age      float64
	// Futile reports (long-term mode) that no interval earns more than
	// it costs.
	Futile bool
}

// Result is Run's answer.
type Result struct {
	Mode      Mode
	Policy    string
	Objective alloc.Objective
	// Budget is the budget allocated: given (ModeBudget), found
	// (ModeTarget) or summed from the long-term intervals (ModeLongTerm).
	Budget float64
	// Metrics of the chosen policy.
	Metrics
	// Compare holds the metrics of the three budgeted policies at Budget.
	Compare map[string]Metrics
	// Elements, in input order.
	Elements []ElementResult
	// GivenUp counts elements that change and matter (rate and weight
	// > 0) but get f = 0: given up by the optimum, or futile.
	GivenUp int
	// HostsAtCap counts the hosts whose politeness cap binds. In
	// long-term mode, which knows nothing of caps, it counts the hosts
	// whose planned rate exceeds their cap: that plan cannot be run as
	// is.
	HostsAtCap int
	// Unabsorbed is the budget no element can take because of host caps
	// (or because nothing changes).
	Unabsorbed float64
	// TargetFreshness is the target of ModeTarget.
	TargetFreshness float64
	// LongTerm and NetIncome (ModeLongTerm): the economics planned for
	// and the plan's income per unit time.
	LongTerm  *LongTermInput
	NetIncome float64
	// ModelFreshness is the model's expected freshness of the stored
	// copies now (elements from the store: Σ w·CopyFresh / Σ w), and
	// HasModel says whether there is one.
	ModelFreshness float64
	HasModel       bool
	// WorkerRate and Workers: see Input.WorkerRate. Workers is −1 when
	// not asked for.
	WorkerRate float64
	Workers    int
	Unit       Unit
	Top        int
}

// Run computes the plan. It does no I/O.
func Run(in Input) (Result, error) {
	res := Result{Mode: in.Mode, Policy: in.Policy, Objective: in.Objective, Workers: -1,
		WorkerRate: in.WorkerRate, Unit: in.Unit, Top: in.Top, TargetFreshness: in.TargetFreshness}
	if res.Policy == "" {
		res.Policy = policyOptimal
	}
	switch res.Policy {
	case policyOptimal, policyUniform, policyProportional:
	default:
		return Result{}, fmt.Errorf("policy %q: want optimal, uniform or proportional", in.Policy)
	}
	if in.Objective != alloc.Freshness && in.Objective != alloc.Age {
		return Result{}, fmt.Errorf("objective %d: want freshness or age", in.Objective)
	}
	if len(in.Elements) == 0 {
		return Result{}, errors.New("nothing to plan: no elements")
	}
	if math.IsNaN(in.HostRate) || in.HostRate < 0 {
		return Result{}, fmt.Errorf("host rate %v: want ≥ 0", in.HostRate)
	}
	if math.IsNaN(in.WorkerRate) || math.IsInf(in.WorkerRate, 0) || in.WorkerRate < 0 {
		return Result{}, fmt.Errorf("worker rate %v: want a finite number ≥ 0", in.WorkerRate)
	}
	prob, err := problem(in)
	if err != nil {
		return Result{}, err
	}

	switch in.Mode {
	case ModeBudget:
		if math.IsNaN(in.Budget) || math.IsInf(in.Budget, 0) || in.Budget < 0 {
			return Result{}, fmt.Errorf("budget %v: want a finite number ≥ 0", in.Budget)
		}
		prob.Budget = in.Budget
	case ModeTarget:
		if !(in.TargetFreshness > 0 && in.TargetFreshness < 1) {
			return Result{}, fmt.Errorf("target freshness %v: want a number in (0, 1)", in.TargetFreshness)
		}
		b, err := minBudget(prob, in.TargetFreshness)
		if err != nil {
			return Result{}, err
		}
		prob.Budget = b
	case ModeLongTerm:
		return runLongTerm(in, prob, res)
	default:
		return Result{}, fmt.Errorf("unknown mode %d", in.Mode)
	}
	res.Budget = prob.Budget

	sols, err := compare(prob)
	if err != nil {
		return Result{}, err
	}
	res.Compare = make(map[string]Metrics, len(sols))
	for name, s := range sols {
		m := Metrics{Freshness: s.Freshness, Age: s.Age}
		if in.Mode == ModeBudget {
			// A target is met at the elements' rates (that is what the
			// least budget is solved for); a budget's outcome is the
			// expectation over the posteriors where there are any.
			m.Freshness = expectedFreshness(in.Elements, s.Freq, s.Freshness)
		}
		res.Compare[name] = m
	}
	sol := sols[res.Policy]
	res.Metrics = res.Compare[res.Policy]
	res.ModelFreshness, res.HasModel = modelFreshness(in.Elements)
	res.GivenUp, res.HostsAtCap, res.Unabsorbed = sol.GivenUp, sol.CappedHosts, sol.Unabsorbed
	if res.Policy != policyOptimal {
		// Uniform and Proportional leave GivenUp to the optimiser; count
		// it here so the report means the same for every policy.
		res.GivenUp = givenUp(prob.Elements, sol.Freq)
	}
	res.Elements = elementResults(in.Elements, sol.Freq, nil)
	if err := res.workers(prob.Budget - sol.Unabsorbed); err != nil {
		return Result{}, err
	}
	return res, nil
}

// problem translates the elements into alloc's terms, one capped host
// index per distinct non-empty host.
func problem(in Input) (alloc.Problem, error) {
	p := alloc.Problem{Elements: make([]alloc.Element, len(in.Elements)), Objective: in.Objective}
	capRate := in.HostRate
	if capRate <= 0 {
		capRate = math.Inf(1) // alloc's "no cap"
	}
	for h, c := range in.HostCaps {
		if math.IsNaN(c) || c <= 0 {
			return alloc.Problem{}, fmt.Errorf("host %q: cap %v: want a number > 0", h, c)
		}
	}
	hosts := map[string]int32{}
	for i, e := range in.Elements {
		if math.IsNaN(e.Rate) || math.IsInf(e.Rate, 0) || e.Rate < 0 {
			return alloc.Problem{}, fmt.Errorf("element %q: rate %v: want a finite number ≥ 0", e.ID, e.Rate)
		}
		if math.IsNaN(e.Weight) || math.IsInf(e.Weight, 0) || e.Weight < 0 {
			return alloc.Problem{}, fmt.Errorf("element %q: weight %v: want a finite number ≥ 0", e.ID, e.Weight)
		}
		h := int32(-1)
		if e.Host != "" {
			var ok bool
			if h, ok = hosts[e.Host]; !ok {
				h = int32(len(p.HostCaps))
				hosts[e.Host] = h
				c := capRate
				if hc, ok := in.HostCaps[e.Host]; ok {
					c = math.Min(c, hc)
				}
				p.HostCaps = append(p.HostCaps, c)
			}
		}
		p.Elements[i] = alloc.Element{Rate: e.Rate, Weight: e.Weight, Host: h}
	}
	return p, nil
}

// compare solves the three budgeted policies at p.Budget.
func compare(p alloc.Problem) (map[string]alloc.Solution, error) {
	out := make(map[string]alloc.Solution, 3)
	for _, c := range []struct {
		name  string
		solve func(alloc.Problem) (alloc.Solution, error)
	}{{policyOptimal, alloc.Solve}, {policyUniform, alloc.Uniform}, {policyProportional, alloc.Proportional}} {
		s, err := c.solve(p)
		if err != nil {
			return nil, fmt.Errorf("%s allocation of budget %g: %w", c.name, p.Budget, err)
		}
		out[c.name] = s
	}
	return out, nil
}

// minBudget wraps alloc.MinBudgetFor with the context an operator needs.
func minBudget(p alloc.Problem, target float64) (float64, error) {
	if p.Objective != alloc.Freshness {
		return 0, errors.New("a target freshness needs the freshness objective: the least budget is defined for the freshness-optimal allocation")
	}
	b, err := alloc.MinBudgetFor(p, target)
	if err == nil {
		// MinBudgetFor is exact to rounding, and Solve at b may then land
		// an ulp below the target. The operator is promised that this
		// budget reaches it, so nudge b up until Solve agrees.
		p.Budget = b
		for step := 1e-12; step < 1e-6; step *= 4 {
			s, err := alloc.Solve(p)
			if err != nil {
				return 0, fmt.Errorf("least budget for freshness %g: check budget %g: %w", target, p.Budget, err)
			}
			if s.Freshness >= target {
				return p.Budget, nil
			}
			p.Budget = b * (1 + step)
		}
		return b, nil
	}
	if errors.Is(err, alloc.ErrUnreachable) && anyCapped(p) {
		// alloc's message names the best freshness any budget buys; say
		// what else could be changed.
		return 0, fmt.Errorf("least budget for freshness %g: %w; host caps bound it: a higher host rate may", target, err)
	}
	return 0, fmt.Errorf("least budget for freshness %g: %w", target, err)
}

// anyCapped reports whether some element that changes and matters is
// behind a host cap, which then bounds its freshness whatever the budget.
func anyCapped(p alloc.Problem) bool {
	for _, e := range p.Elements {
		if e.Rate > 0 && e.Weight > 0 && e.Host >= 0 && !math.IsInf(p.HostCaps[e.Host], 1) {
			return true
		}
	}
	return false
}

// runLongTerm plans every element independently by its net income, then
// compares the budgeted policies at the budget the plan adds up to.
func runLongTerm(in Input, prob alloc.Problem, res Result) (Result, error) {
	lt := in.LongTerm
	if lt == nil {
		return Result{}, errors.New("long-term mode needs a benefit and a cost")
	}
	if math.IsNaN(lt.Benefit) || math.IsInf(lt.Benefit, 0) || lt.Benefit < 0 {
		return Result{}, fmt.Errorf("benefit %v: want a finite number ≥ 0", lt.Benefit)
	}
	if math.IsNaN(lt.Cost) || math.IsInf(lt.Cost, 0) || lt.Cost <= 0 {
		return Result{}, fmt.Errorf("cost %v: want a finite number > 0", lt.Cost)
	}
	els := make([]longterm.Element, len(in.Elements))
	for i, e := range in.Elements {
		els[i] = longterm.Element{Rate: e.Rate, Benefit: lt.Benefit * e.Weight, Cost: lt.Cost}
	}
	sum, err := longterm.Plan(els, lt.Decay)
	if err != nil {
		return Result{}, fmt.Errorf("long-term plan: %w", err)
	}
	freq := make([]float64, len(els))
	for i, r := range sum.Results {
		freq[i] = r.Rate()
	}
	res.Policy = policyLongTerm
	res.LongTerm = lt
	res.Budget = sum.TotalBudget
	res.NetIncome = sum.NetIncome
	res.Elements = elementResults(in.Elements, freq, sum.Results)
	if lt.Decay != longterm.Exponential {
		// Age is a Poisson-model quantity (§3.1); under linear decay it
		// would describe a model the plan was not made for.
		for i := range res.Elements {
			res.Elements[i].Age = math.NaN()
		}
	}
	var wf, w, wa float64
	for _, e := range res.Elements {
		w += e.Weight
		wf += e.Weight * e.Freshness
		if e.Weight > 0 {
			wa += e.Weight * e.Age
		}
	}
	res.Metrics = Metrics{Freshness: 1, Age: 0}
	if w > 0 {
		res.Metrics = Metrics{Freshness: wf / w, Age: wa / w}
	}
	res.GivenUp = givenUp(prob.Elements, freq)
	// Politeness: the long-term optimum is unconstrained, so report the
	// hosts it would overrun.
	hostSum := make([]float64, len(prob.HostCaps))
	for i, e := range prob.Elements {
		if e.Host >= 0 {
			hostSum[e.Host] += freq[i]
		}
	}
	for h, s := range hostSum {
		if s > prob.HostCaps[h]*(1+1e-9) {
			res.HostsAtCap++
		}
	}
	prob.Budget = res.Budget
	sols, err := compare(prob)
	if err != nil {
		return Result{}, err
	}
	res.Compare = make(map[string]Metrics, len(sols))
	for name, s := range sols {
		res.Compare[name] = Metrics{Freshness: s.Freshness, Age: s.Age}
	}
	if err := res.workers(res.Budget); err != nil {
		return Result{}, err
	}
	return res, nil
}

// expectedFreshness is the weighted freshness of freq over the elements,
// each element with a posterior counted by its expectation over it
// (docs/design.md §3.3); plain is the figure at the elements' rates,
// returned when no element has a posterior.
func expectedFreshness(els []Element, freq []float64, plain float64) float64 {
	var num, den float64
	model := false
	for i, e := range els {
		if !(e.Weight > 0) {
			continue
		}
		f := alloc.FixedOrder.Freshness(e.Rate, freq[i])
		if e.Model && e.Posterior.Valid() {
			model = true
			f = e.Posterior.Expect(func(l float64) float64 { return alloc.FixedOrder.Freshness(l, freq[i]) })
		}
		num += e.Weight * f
		den += e.Weight
	}
	if !model || !(den > 0) {
		return plain
	}
	return num / den
}

// modelFreshness is Σ w·CopyFresh / Σ w over the elements from the store.
func modelFreshness(els []Element) (float64, bool) {
	var num, den float64
	model := false
	for _, e := range els {
		if !e.Model || !(e.Weight > 0) {
			continue
		}
		model = true
		num += e.Weight * e.CopyFresh
		den += e.Weight
	}
	if !(den > 0) {
		return 0, model
	}
	return num / den, model
}

// workers fills Workers for the budget in use, if a worker rate was given.
func (r *Result) workers(budget float64) error {
	if r.WorkerRate <= 0 {
		return nil
	}
	n, err := longterm.Workers(budget, r.WorkerRate)
	if err != nil {
		return fmt.Errorf("workers for budget %g at %g per worker: %w", budget, r.WorkerRate, err)
	}
	r.Workers = n
	return nil
}

// elementResults pairs each element with its frequency and what that
// frequency achieves. lt, when not nil, holds the long-term results, whose
// freshness follows the decay model.
func elementResults(els []Element, freq []float64, lt []longterm.Result) []ElementResult {
	out := make([]ElementResult, len(els))
	for i, e := range els {
		f := freq[i]
		r := ElementResult{Element: e, Frequency: f, Interval: math.Inf(1),
			Freshness: alloc.FixedOrder.Freshness(e.Rate, f), Age: alloc.FixedOrder.Age(e.Rate, f)}
		if e.Model && e.Posterior.Valid() {
			r.Freshness = e.Posterior.Expect(func(l float64) float64 { return alloc.FixedOrder.Freshness(l, f) })
		}
		if f > 0 {
			r.Interval = 1 / f
		}
		if lt != nil {
			r.Interval, r.Freshness, r.Futile = lt[i].Interval, lt[i].Freshness, lt[i].Futile
		}
		out[i] = r
	}
	return out
}

// givenUp counts the elements that change and matter but get f = 0.
func givenUp(els []alloc.Element, freq []float64) int {
	n := 0
	for i, e := range els {
		if e.Rate > 0 && e.Weight > 0 && !(freq[i] > 0) {
			n++
		}
	}
	return n
}
