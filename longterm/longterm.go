// Package longterm computes the long-term optimal refresh interval of
// Razniewski & Nutt, "Long-term optimization of update frequencies for
// decaying information" (§5; docs/design.md §3.4): when the fetch budget is
// not fixed but bought, each element should be refreshed at the interval U
// that maximises its net income
//
//	NI(U) = B·F(λ,U) − C/U,   F(λ,U) = (1/U)·∫₀ᵁ z(t) dt,
//
// where B is the benefit per unit time while the stored copy is correct, C
// the cost of one fetch and z(t) the probability that a copy fetched t ago is
// still correct. The sum of 1/U over all elements is then the fetch rate to
// provision.
//
// Units are free but must be consistent: λ per time unit, B per time unit,
// C per fetch, U in time units. The package is pure: no I/O, no state.
package longterm

import (
	"errors"
	"fmt"
	"math"
)

// Decay selects the freshness model z(t) (Razniewski & Nutt §4).
type Decay int

const (
	// Exponential is z(t) = e^{−λt}: the copy is correct until the first
	// Poisson change, the model the rest of freshcrawl assumes.
	Exponential Decay = iota
	// Linear is z(t) = max(1 − λt, 0): correctness is lost at a constant
	// rate and is gone entirely after 1/λ.
	Linear
)

// String implements fmt.Stringer.
func (d Decay) String() string {
	switch d {
	case Exponential:
		return "exponential"
	case Linear:
		return "linear"
	default:
		return fmt.Sprintf("Decay(%d)", int(d))
	}
}

// ErrInvalid is wrapped by every argument error, so callers can test with
// errors.Is while the message names the offending argument.
var ErrInvalid = errors.New("longterm: invalid argument")

// Result is the optimum for one element.
type Result struct {
	// Interval is the optimal refresh interval U. It is +Inf when the
	// element should never be refetched: either it is Futile, or λ = 0 (the
	// copy never decays, so one fetch is enough forever).
	Interval float64
	// NetIncome is NI(U) at the optimum, per unit time. For a futile
	// element it is 0 (never fetching costs and earns nothing); for λ = 0 it
	// is B.
	NetIncome float64
	// Freshness is the average correctness F(λ,U) at the optimum (0 if
	// futile, 1 if λ = 0).
	Freshness float64
	// Futile reports that no refresh interval earns more than it costs
	// (Razniewski & Nutt §5, "Futile Entities"): B/λ ≤ C for exponential decay,
	// B ≤ 2λC for linear decay.
	Futile bool
}

// Rate returns the fetch rate 1/U the result asks for (0 when U = +Inf).
func (r Result) Rate() float64 {
	if math.IsInf(r.Interval, 1) {
		return 0
	}
	return 1 / r.Interval
}

func checkArgs(lambda, benefit, cost float64, d Decay) error {
	switch {
	case math.IsNaN(lambda) || math.IsInf(lambda, 0) || lambda < 0:
		return fmt.Errorf("%w: lambda = %v, want finite and >= 0", ErrInvalid, lambda)
	case math.IsNaN(benefit) || math.IsInf(benefit, 0) || benefit < 0:
		return fmt.Errorf("%w: benefit = %v, want finite and >= 0", ErrInvalid, benefit)
	case math.IsNaN(cost) || math.IsInf(cost, 0) || cost <= 0:
		// A free fetch would make the optimum "fetch continuously"
		// (U → 0), which no budget can provision.
		return fmt.Errorf("%w: cost = %v, want finite and > 0", ErrInvalid, cost)
	case d != Exponential && d != Linear:
		return fmt.Errorf("%w: decay = %v", ErrInvalid, d)
	}
	return nil
}

// Freshness returns F(λ,U) = (1/U)·∫₀ᵁ z(t) dt, the time-averaged
// probability that the stored copy is correct when it is refreshed every U
// (Razniewski & Nutt §4, Eq. 1 and 2). Eq. 1 covers linear decay only for U ≤ 1/λ;
// beyond it the copy is worthless after 1/λ, so F = 1/(2λU). F(λ,0) = 1 and
// F(λ,+Inf) = 0 for λ > 0.
func Freshness(lambda, interval float64, d Decay) float64 {
	if interval == 0 || lambda == 0 {
		return 1
	}
	if math.IsInf(interval, 1) {
		return 0
	}
	x := lambda * interval
	switch d {
	case Linear:
		if x <= 1 {
			return 1 - x/2
		}
		return 1 / (2 * x)
	default:
		// (1 − e^{−x})/x, with expm1 so small x keeps full precision.
		return -math.Expm1(-x) / x
	}
}

// NetIncome returns NI(U) = B·F(λ,U) − C/U (Razniewski & Nutt Eq. 3), the income per
// unit time of refreshing every U. It is useful on its own to price an
// interval other than the optimum, e.g. one imposed by a capped budget.
// NetIncome at U = +Inf is 0 for λ > 0 (never refreshing).
func NetIncome(lambda, benefit, cost, interval float64, d Decay) float64 {
	if math.IsInf(interval, 1) {
		if lambda == 0 {
			return benefit
		}
		return 0
	}
	return benefit*Freshness(lambda, interval, d) - cost/interval
}

// Optimal returns the refresh interval maximising NI(U) for one element with
// change (decay) rate lambda, benefit per unit time and cost per fetch.
//
// Exponential decay (Razniewski & Nutt Eq. 6): with r = B/C,
// U = (−W₋₁((λ − r)/(r·e)) − 1)/λ. The argument is −e^{−1−s} with
// s = −ln(1 − λC/B), so U = y/λ where y − ln(1+y) = s (see LambertWm1);
// computing y from s directly keeps full precision for slowly changing
// elements, where the argument approaches −1/e. At the optimum the first-order
// condition simplifies to NI = B·e^{−λU}.
//
// Linear decay (Razniewski & Nutt Eq. 4): U = √(2C/(Bλ)), NI = B − √(2BλC).
//
// λ = 0 is accepted and means the copy never decays: the result is
// Interval = +Inf, NetIncome = B, not futile (one fetch serves forever, its
// cost amortised to nothing). λ < 0, a negative or non-finite benefit and a
// non-positive or non-finite cost are errors wrapping ErrInvalid.
func Optimal(lambda, benefit, cost float64, d Decay) (Result, error) {
	if err := checkArgs(lambda, benefit, cost, d); err != nil {
		return Result{}, fmt.Errorf("longterm.Optimal: %w", err)
	}
	if lambda == 0 {
		return Result{Interval: math.Inf(1), NetIncome: benefit, Freshness: 1}, nil
	}
	futile := Result{Interval: math.Inf(1), Futile: true}
	switch d {
	case Linear:
		// Futile when the whole area under z, 1/(2λ), earns no more
		// than one fetch costs: B/(2λ) ≤ C.
		if benefit <= 2*lambda*cost {
			return futile, nil
		}
		u := math.Sqrt(2 * cost / (benefit * lambda))
		return Result{
			Interval:  u,
			NetIncome: benefit - math.Sqrt(2*benefit*lambda*cost),
			Freshness: 1 - lambda*u/2,
		}, nil
	default:
		// Futile when the whole area under z, 1/λ, earns no more than
		// one fetch costs: B/λ ≤ C.
		delta := lambda * cost / benefit // λ/r; NaN-free since B > 0 here
		if benefit == 0 || delta >= 1 {
			return futile, nil
		}
		y := shiftedWm1(-math.Log1p(-delta))
		u := y / lambda
		return Result{
			Interval:  u,
			NetIncome: benefit * math.Exp(-y),
			Freshness: -math.Expm1(-y) / y,
		}, nil
	}
}

// Element is one item to plan for.
type Element struct {
	Rate    float64 // change/decay rate λ per time unit
	Benefit float64 // B, benefit per time unit while the copy is correct
	Cost    float64 // C, cost per fetch
}

// Summary aggregates the per-element optima of a plan.
type Summary struct {
	// Results holds the optimum for each element, in input order.
	Results []Result
	// TotalBudget is Σ 1/U_i over elements with a finite interval: the fetch
	// rate to provision (docs/design.md §3.4).
	TotalBudget float64
	// NetIncome is Σ NI_i, the income per unit time of the whole plan.
	NetIncome float64
	// Futile counts the elements that should never be refreshed.
	Futile int
}

// Plan solves Optimal independently for every element — under long-term
// optimisation the budget is an output, so elements do not compete for it as
// they do in short-term optimisation (Razniewski & Nutt §1) — and totals the budget
// to provision. An invalid element fails the
// whole plan with an error naming its index.
func Plan(elements []Element, d Decay) (Summary, error) {
	s := Summary{Results: make([]Result, len(elements))}
	for i, e := range elements {
		r, err := Optimal(e.Rate, e.Benefit, e.Cost, d)
		if err != nil {
			return Summary{}, fmt.Errorf("longterm.Plan: element %d: %w", i, err)
		}
		s.Results[i] = r
		s.TotalBudget += r.Rate()
		s.NetIncome += r.NetIncome
		if r.Futile {
			s.Futile++
		}
	}
	return s, nil
}

// Workers returns how many workers sustain totalBudget fetches per time unit
// when one worker sustains perWorkerRate: ⌈totalBudget/perWorkerRate⌉. A
// relative slack of 1e-9 keeps floating-point noise (3.0000000000004) from
// adding a worker. A zero budget needs zero workers.
func Workers(totalBudget, perWorkerRate float64) (int, error) {
	switch {
	case math.IsNaN(totalBudget) || math.IsInf(totalBudget, 0) || totalBudget < 0:
		return 0, fmt.Errorf("longterm.Workers: %w: totalBudget = %v, want finite and >= 0", ErrInvalid, totalBudget)
	case math.IsNaN(perWorkerRate) || math.IsInf(perWorkerRate, 0) || perWorkerRate <= 0:
		return 0, fmt.Errorf("longterm.Workers: %w: perWorkerRate = %v, want finite and > 0", ErrInvalid, perWorkerRate)
	}
	q := totalBudget / perWorkerRate
	n := math.Ceil(q * (1 - 1e-9))
	if n > math.MaxInt32 {
		return 0, fmt.Errorf("longterm.Workers: %w: %v workers overflow", ErrInvalid, n)
	}
	return int(n), nil
}
