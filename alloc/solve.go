package alloc

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// Objective selects what the optimal allocation optimises.
type Objective int

const (
	// Freshness maximises the weighted fixed-order freshness Σ w_i F_i.
	Freshness Objective = iota
	// Age minimises the weighted fixed-order age Σ w_i A_i.
	Age
)

func (o Objective) String() string {
	switch o {
	case Freshness:
		return "freshness"
	case Age:
		return "age"
	}
	return fmt.Sprintf("Objective(%d)", int(o))
}

// Element is one page (the paper's database element e_i).
type Element struct {
	// Rate is the Poisson change rate λ_i (changes per unit time), finite
	// and ≥ 0. An element with Rate 0 never goes stale and gets f = 0.
	Rate float64
	// Weight is the importance w_i (paper §8), finite and ≥ 0. An element
	// with Weight 0 does not count and gets f = 0.
	Weight float64
	// Host indexes Problem.HostCaps, or is −1 when the element is subject
	// to no politeness cap.
	Host int32
}

// Columns holds elements as parallel arrays, element i being
// (Rates[i], Weights[i], Hosts[i]) with Element's meanings: the form of a
// caller that keeps its per-element data in arrays already, which
// Solver.SolveColumns reads in place instead of a copy. The three must
// have the same length.
type Columns struct {
	Rates, Weights []float64
	Hosts          []int32
}

// columnsOf returns els as Columns.
func columnsOf(els []Element) Columns {
	c := Columns{Rates: make([]float64, len(els)), Weights: make([]float64, len(els)), Hosts: make([]int32, len(els))}
	for i, e := range els {
		c.Rates[i], c.Weights[i], c.Hosts[i] = e.Rate, e.Weight, e.Host
	}
	return c
}

// Problem is a budgeted allocation problem: choose f_i ≥ 0 with Σ f_i =
// Budget (and Σ_{i∈h} f_i ≤ HostCaps[h] for every capped host h) that
// optimises Objective.
type Problem struct {
	Elements []Element
	// Budget B is the total number of fetches per unit time, finite, ≥ 0.
	Budget float64
	// HostCaps[h] is the politeness cap c_h of host h in fetches per unit
	// time (docs/design.md §3.2). A value ≤ 0 or +Inf means "no cap"; NaN is an
	// error.
	HostCaps  []float64
	Objective Objective
}

// Solution is an allocation and what it achieves.
type Solution struct {
	// Freq[i] is the synchronisation frequency f_i of Elements[i].
	Freq []float64
	// Mu is the multiplier μ of the budget constraint: the marginal gain
	// (of weighted freshness, or of weighted age reduction) of one more
	// fetch per unit time. It is 0 when the budget could not be absorbed
	// (Unabsorbed > 0) and +Inf when Budget is 0. Uniform and Proportional
	// leave it 0.
	Mu float64
	// HostNu[h] is the multiplier ν_h ≥ 0 of host h's cap, so that the
	// elements of a capped host see μ+ν_h instead of μ. It is 0 for hosts
	// whose cap does not bind. nil for Uniform and Proportional.
	HostNu []float64
	// GivenUp counts the elements with positive rate and weight that get
	// f = 0: under the freshness objective those that change too fast to
	// be worth fetching at all, μλ_i/w_i ≥ 1 (paper §5.3, Table 5's e_5).
	GivenUp int
	// CappedHosts counts the hosts whose cap binds.
	CappedHosts int
	// Unabsorbed is the part of the budget no element can take because
	// every element that would benefit sits on a capped host (Σ caps <
	// Budget), or because no element has positive rate and weight. Then
	// Σ f_i = Budget − Unabsorbed.
	Unabsorbed float64
	// Freshness and Age are the collection's weighted fixed-order
	// freshness and age (CollectionFreshness, CollectionAge). Age is +Inf
	// when any element that changes is never fetched.
	Freshness, Age float64
	// Iterations counts the passes over all elements that the solve made:
	// evaluations of the budget multiplier μ, plus one for gathering the
	// binding hosts (whose own rounds touch only their elements). The
	// final pass computing Freshness and Age is not counted, nor are the
	// passes over the 2^16-element sample that seeds a cold Solve of more
	// than 2^18 elements.
	Iterations int
}

// Solve returns the allocation of p.Budget that maximises the weighted
// freshness (or minimises the weighted age) under the fixed-order policy,
// subject to the host caps. See the package documentation for the
// optimality conditions.
//
// Method. For a multiplier m every element's frequency is an independent
// scalar root (g(r) = mλ/w or a(r) = mλ²/w), and the total S(m) = Σ f_i(m) is
// decreasing, so Solve finds μ with S(μ) = B by a safeguarded Newton
// iteration on ln S against ln μ. That pair is nearly linear (S ∝ μ^{−1/2}
// for slowly changing elements, μ^{−1/3} under age) and the derivative is
// analytic: d ln f_i/d ln m = −y/(r g'(r)) (resp. a'), so a pass costs one
// inner solve per element; see rootFinder for why the freshness slope also
// needs a secant. Each inner solve is warm-started from the element's
// frequency in the previous pass and asked only for the accuracy the outer
// iteration can use, so most passes take one Halley step (one exp) per
// element. A cold start on large inputs, or a warm one whose budget
// moved, first solves a strided sample to get μ within ~1%. Passes are spread over GOMAXPROCS goroutines in fixed
// interleaved chunks (deterministic sums; all goroutines are joined before
// a pass returns). Memory: the 8-byte Freq per element plus 28 bytes per
// element of a binding host (solveHosts) and O(hosts); Solve itself also
// holds the elements as Columns (20 bytes each) while it runs, which
// Solver.SolveColumns reads from the caller's arrays instead.
//
// Accuracy: Σ f_i = B − Unabsorbed and each binding host's Σ f_i = c_h to
// 1e−11 relative; every element satisfies its KKT condition to ~1e−12,
// except those within 1e−9 (relative, in μ) of their give-up threshold,
// whose condition holds to 1e−9 (the give-up ramp, see rampWidth).
// Elements with λ_i = 0 or w_i = 0 get f_i = 0: the former never go
// stale, the latter do not count.
//
// Caps. A host's total S_h(m) is decreasing too, so host h binds exactly
// when S_h(μ) > c_h, i.e. when μ < μ_h* where S_h(μ_h*) = c_h; its elements
// then use μ_h* = μ + ν_h. The outer iteration therefore uses
// Σ_h min(S_h(μ), c_h): a capped host contributes exactly c_h and the
// budget it cannot take is spread over the others by the same KKT
// condition (not pro rata). μ_h* is solved only for the hosts that bind,
// each on a gathered copy of its own elements. If even μ → 0
// cannot place the budget (every benefiting element is on a capped host
// and Σ c_h < B), every such host is filled to its cap, μ = 0 and the rest
// is reported in Solution.Unabsorbed.
//
// Solve returns an error naming the offending element or host for
// negative, NaN or infinite rates and weights, a bad host index, a NaN
// cap, or a negative, NaN or infinite budget.
func Solve(p Problem) (Solution, error) {
	freq := make([]float64, len(p.Elements))
	c, err := newCore(columnsOf(p.Elements), p.HostCaps, p.Budget, p.Objective, freq)
	if err != nil {
		return Solution{}, err
	}
	return c.solve(p.Budget, nil)
}

// Solver keeps the state of a solved problem so that it can be re-solved
// cheaply after the change-rate or weight estimates (or the budget and
// caps) move: the next solve starts from the multipliers μ and μ_h* of the
// one of the last two solves nearest in budget, so a small change costs a
// few passes instead of a cold solve (BenchmarkResolve1M: 4 to 5 passes
// against 7, after changing 1% of the rates). A Solver is not safe for
// concurrent use.
//
// It solves either its own copy of a Problem (NewSolver, the Set methods,
// Solve) or elements the caller holds as arrays (SolveColumns), which it
// reads in place: between solves it keeps no per-element data, only the
// multipliers (O(hosts)). Each element's inner solve starts cold in the
// first pass, asked for full accuracy; from the series start at the warm
// μ that costs no more than a start from the element's last frequency did
// (BenchmarkResolve1M: 4 passes and 240-246 CPU-ms, against 4 and 268 when
// they were kept), and those frequencies were 8 bytes an element for as
// long as the Solver lived.
type Solver struct {
	obj    Objective
	own    Columns // NewSolver's copy of the elements, for Solve
	budget float64
	caps   []float64
	// plainSearch solves without the crowd model (core.plainSearch).
	plainSearch bool
	n           int // elements of the last solve
	nCaps       int // hosts of the last solve
	// The multipliers of the last two solves, each with its budget: a
	// caller that alternates between two budgets (a plan with and
	// without the share exploration takes) starts each solve from the
	// multipliers of the one nearest in budget. Near a give-up
	// threshold that many elements share, S(μ) is so steep that the
	// other budget's μ would cost several extra passes.
	last [2]warmRecord
}

// warmRecord is one successful solve's multipliers.
type warmRecord struct {
	budget float64
	mu     float64
	hostMu []float64 // μ + ν_h per host (0: the cap did not bind)
	ok     bool
}

// nearest returns the index of the record whose budget is nearest to b
// (relatively), or −1 if there is none.
func (s *Solver) nearest(b float64) int {
	best, dist := -1, math.Inf(1)
	for k, r := range s.last {
		if !r.ok {
			continue
		}
		if d := math.Abs(math.Log(b / r.budget)); d < dist || best < 0 {
			best, dist = k, d
		}
	}
	return best
}

// NewSolver returns a Solver for p. It copies p.Elements and p.HostCaps,
// so the caller may reuse them; nothing is validated until Solve. A Solver
// used only through SolveColumns needs nothing of p but its Objective.
func NewSolver(p Problem) *Solver {
	return &Solver{obj: p.Objective, own: columnsOf(p.Elements), budget: p.Budget, caps: slices.Clone(p.HostCaps), nCaps: len(p.HostCaps)}
}

// SetRate sets the change rate of element i. It panics if i is out of
// range; an invalid rate is reported by the next Solve.
func (s *Solver) SetRate(i int, rate float64) { s.own.Rates[i] = rate }

// SetWeight sets the weight of element i. It panics if i is out of range.
func (s *Solver) SetWeight(i int, w float64) { s.own.Weights[i] = w }

// SetBudget sets the budget for the next Solve.
func (s *Solver) SetBudget(b float64) { s.budget = b }

// SetHostCaps sets every host's cap for the next Solve (the number of
// hosts is fixed; it panics if caps has another length). A caller that
// takes part of the budget and of each host's capacity for other fetches
// re-solves warm: the previous μ and μ_h* stay good starting points.
func (s *Solver) SetHostCaps(caps []float64) {
	if len(caps) != len(s.caps) {
		panic(fmt.Sprintf("alloc: SetHostCaps: %d caps for %d hosts", len(caps), len(s.caps)))
	}
	copy(s.caps, caps)
}

// Solve solves the current problem, warm-started from the previous
// successful solve's multipliers if there was one. The returned Freq is
// a fresh slice, the caller's: the Solver keeps no reference to it.
func (s *Solver) Solve() (Solution, error) { return s.solve(s.own, s.budget, s.caps, false) }

// SolveColumns solves the problem of the elements cols, the budget and the
// host caps under the Solver's objective, warm-started as Solve is. It
// reads cols and caps in place and keeps neither: a caller that holds its
// rates, weights and hosts as arrays re-solves without a copy of them,
// and between solves the Solver holds nothing per element. A problem
// with another number of elements or hosts than the last solve's is
// solved cold. Errors are Solve's.
//
// The Solution's Freshness and Age are left 0: they cost two
// exponentials per element, more than a pass of the solve, and a caller
// that holds its elements as arrays computes the figures it needs.
func (s *Solver) SolveColumns(cols Columns, budget float64, caps []float64) (Solution, error) {
	return s.solve(cols, budget, caps, true)
}

// solve is Solve and SolveColumns: countOnly leaves out Freshness and Age.
func (s *Solver) solve(cols Columns, budget float64, caps []float64, countOnly bool) (Solution, error) {
	n := len(cols.Rates)
	if s.n != n || s.nCaps != len(caps) {
		s.last, s.n, s.nCaps = [2]warmRecord{}, n, len(caps)
	}
	// Each element's first inner solve starts cold, at the warm μ: a
	// pass from the series start costs about what one from the last
	// frequency does, and keeping those would be 8 bytes an element.
	c, err := newCore(cols, caps, budget, s.obj, make([]float64, n))
	if err != nil {
		return Solution{}, err
	}
	c.countOnly, c.plainSearch = countOnly, s.plainSearch
	var w *warmStart
	if k := s.nearest(budget); k >= 0 {
		r := s.last[k]
		w = &warmStart{mu: r.mu, hostMu: r.hostMu, budgetMoved: math.Abs(budget/r.budget-1) > 1e-3}
	}
	sol, err := c.solve(budget, w)
	if err != nil {
		s.last = [2]warmRecord{}
		return Solution{}, err
	}
	if sol.Mu > 0 && !math.IsInf(sol.Mu, 1) {
		// Replace the record nearest in budget (the same caller's last
		// solve), or the empty one.
		k := s.nearest(budget)
		if k < 0 || !s.last[1-k].ok {
			k = min(k+1, 1)
			if !s.last[0].ok {
				k = 0
			}
		}
		r := &s.last[k]
		r.budget, r.mu, r.ok = budget, sol.Mu, true
		r.hostMu = slices.Grow(r.hostMu[:0], len(sol.HostNu))[:len(sol.HostNu)]
		for h, nu := range sol.HostNu {
			r.hostMu[h] = 0
			if nu > 0 {
				r.hostMu[h] = sol.Mu + nu
			}
		}
	}
	return sol, nil
}

type warmStart struct {
	mu     float64
	hostMu []float64 // by host index; 0 = unknown
	// budgetMoved: the budget differs from the one mu was solved for by
	// more than 0.1%, so mu may be several passes away (initialGuess).
	budgetMoved bool
}

// validate checks p and returns an error naming the first offending value.
func validate(p Problem) error {
	if err := validateScalars(p.Objective, p.Budget, p.HostCaps); err != nil {
		return err
	}
	nh := int32(len(p.HostCaps))
	for i, e := range p.Elements {
		if err := validateElement(i, e.Rate, e.Weight, e.Host, nh); err != nil {
			return err
		}
	}
	return nil
}

// validateColumns is validate for a problem given as Columns.
func validateColumns(cols Columns, hostCaps []float64, budget float64, obj Objective) error {
	if err := validateScalars(obj, budget, hostCaps); err != nil {
		return err
	}
	n := len(cols.Rates)
	if len(cols.Weights) != n || len(cols.Hosts) != n {
		return fmt.Errorf("alloc: %d rates, %d weights and %d hosts: want one of each per element", n, len(cols.Weights), len(cols.Hosts))
	}
	nh := int32(len(hostCaps))
	for i, rate := range cols.Rates {
		if err := validateElement(i, rate, cols.Weights[i], cols.Hosts[i], nh); err != nil {
			return err
		}
	}
	return nil
}

// validateScalars checks what a problem holds besides its elements.
func validateScalars(obj Objective, budget float64, hostCaps []float64) error {
	if obj != Freshness && obj != Age {
		return fmt.Errorf("alloc: unknown objective %v", obj)
	}
	if !(budget >= 0) || math.IsInf(budget, 1) {
		return fmt.Errorf("alloc: budget %v: must be finite and non-negative", budget)
	}
	for h, c := range hostCaps {
		if math.IsNaN(c) {
			return fmt.Errorf("alloc: host %d: cap is NaN", h)
		}
	}
	return nil
}

// validateElement checks element i of a problem with nh hosts.
func validateElement(i int, rate, weight float64, host, nh int32) error {
	if !(rate >= 0) || math.IsInf(rate, 1) {
		return fmt.Errorf("alloc: element %d: rate %v: must be finite and non-negative", i, rate)
	}
	if !(weight >= 0) || math.IsInf(weight, 1) {
		return fmt.Errorf("alloc: element %d: weight %v: must be finite and non-negative", i, weight)
	}
	if host < -1 || host >= nh {
		return fmt.Errorf("alloc: element %d: host %d out of range [-1, %d)", i, host, nh)
	}
	return nil
}

// errNoConvergence is wrapped when a root search runs out of iterations,
// which indicates inputs at the edge of float64 range.
var errNoConvergence = errors.New("alloc: multiplier search did not converge")

// maxRounds bounds every root search; with Newton steps and bisection
// fallback a search needs ~5 rounds, ~60 in the worst (pure bisection) case.
const maxRounds = 200

// solve runs the full algorithm described on Solve. c.freq is used as the
// warm start and receives the result.
func (c *core) solve(budget float64, warm *warmStart) (Solution, error) {
	sol := Solution{Freq: c.freq, HostNu: make([]float64, len(c.capOf))}
	nCap := len(c.caps)
	capTot := 0.0
	for k := range nCap {
		if c.hostActive[k] > 0 {
			capTot += c.caps[k]
		}
	}
	active := c.nUncapped
	for _, n := range c.hostActive {
		active += n
	}

	switch {
	case budget == 0 || active == 0:
		clear(c.freq)
		sol.Mu = math.Inf(1)
		if active == 0 {
			sol.Unabsorbed = budget
		}
		c.metrics(&sol)
		return sol, nil
	case c.nUncapped == 0 && capTot <= budget:
		// Every benefiting element is on a capped host and the caps cannot
		// take the budget: μ = 0, every such host at its cap.
		return c.solveAtCaps(sol, budget, capTot, warm)
	}

	rf, err := c.searchMu(budget, warm)
	if err != nil {
		return Solution{}, err
	}
	sol.Mu = math.Exp(rf.t)
	rfs := c.bindingHosts(rf.t, warm)
	if err := c.solveHosts(rfs); err != nil {
		return Solution{}, err
	}
	c.finishHosts(&sol, rfs)
	c.metrics(&sol)
	return sol, nil
}

// solveAtCaps solves a problem whose benefiting elements are all on capped
// hosts whose caps, capTot in all, cannot take the budget: μ = 0, every
// such host at its cap.
func (c *core) solveAtCaps(sol Solution, budget, capTot float64, warm *warmStart) (Solution, error) {
	sol.Mu = 0
	sol.Unabsorbed = budget - capTot
	rfs := make([]rootFinder, len(c.caps))
	t0 := c.heuristic(capTot)
	for k := range rfs {
		rfs[k] = newRootFinder(c.caps[k], t0)
		if warm != nil && warm.hostMu[c.hosts[k]] > 0 {
			rfs[k].t = math.Log(warm.hostMu[c.hosts[k]])
		}
		c.boundAbove(&rfs[k], k)
		rfs[k].done = c.hostActive[k] == 0
	}
	if err := c.solveHosts(rfs); err != nil {
		return Solution{}, err
	}
	c.finishHosts(&sol, rfs)
	c.metrics(&sol)
	return sol, nil
}

// searchMu is the outer search for μ on S̃(μ) = U(μ) + Σ_h min(S_h(μ), c_h)
// = budget. It returns the finished search, its answer at t = ln μ, with
// c.freq filled in and c.tot holding the last pass at μ.
func (c *core) searchMu(budget float64, warm *warmStart) (rootFinder, error) {
	t0 := c.initialGuess(budget, warm)
	rf := newRootFinder(budget, t0)
	if warm != nil && !warm.budgetMoved {
		// The warm μ is likely within a few 1e−6 of the root: a first
		// pass as loose as a far guess's would cost a pass just to
		// learn that.
		rf.acc = warmAcc
	}
	if c.obj == Freshness {
		// Above the largest w/λ every element is given up: S̃ = 0.
		rf.hi, rf.phihi = math.Log(c.keyMax), math.Inf(-1)
	}
	hostMul := make([]float64, len(c.caps))
	// The last pass's point and accuracy: a fill whose low end it is
	// starts from it (fillCrowd).
	var lastT, lastAcc float64
	for !rf.done {
		if rf.n >= maxRounds {
			return rootFinder{}, fmt.Errorf("%w (budget %v, μ ≈ %v)", errNoConvergence, budget, math.Exp(rf.t))
		}
		mu := math.Exp(rf.t)
		for k := range hostMul {
			hostMul[k] = mu
		}
		c.pass(mu, hostMul, true, false, rf.acc)
		lastT, lastAcc = rf.t, rf.acc
		S, D, up, down := c.cappedTotals()
		if c.obj == Freshness && !c.plainSearch {
			rf.crowd = c.crowdAt(up, down)
		}
		rf.observe(S, D, math.Log(up), math.Log(down))
	}
	mu := math.Exp(rf.t)
	if rf.fill {
		c.fillBetween(mu, math.Exp(rf.hi), hostMul, budget, lastT == rf.lo && lastAcc <= fullAcc)
	}
	return rf, nil
}

// cappedTotals is S̃ and its derivative from the last pass, each host's
// share capped, and the thresholds nearest μ above and below among the
// uncapped elements and those on hosts whose cap does not bind.
func (c *core) cappedTotals() (S, D, up, down float64) {
	S, D = c.tot.s, c.tot.d
	up, down = c.tot.up, c.tot.down
	for k := range len(c.caps) {
		if hs := c.tot.hs[k]; hs > c.caps[k] {
			S += c.caps[k]
		} else {
			S += hs
			D += c.tot.hd[k]
			up, down = min(up, c.tot.hup[k]), max(down, c.tot.hdown[k])
		}
	}
	return S, D, up, down
}

// bindingHosts sets up the searches for the hosts that bind at μ = e^t,
// to solve S_h(μ_h*) = c_h for all of them at once; the others are done.
func (c *core) bindingHosts(t float64, warm *warmStart) []rootFinder {
	rfs := make([]rootFinder, len(c.caps))
	for k := range rfs {
		rfs[k].done = true
		hs := c.tot.hs[k]
		if !(hs > c.caps[k]*(1+rootTol)) {
			continue
		}
		rfs[k] = newRootFinder(c.caps[k], t)
		rfs[k].lo, rfs[k].philo = t, math.Log(hs/c.caps[k])
		c.boundAbove(&rfs[k], k)
		// A Newton step from the outer pass's own evaluation at μ costs
		// nothing; a warm μ_h* from the previous solve is usually closer.
		rfs[k].observe(hs, c.tot.hd[k], math.Log(c.tot.hup[k]), math.Log(c.tot.hdown[k]))
		if warm != nil {
			if wm := math.Log(warm.hostMu[c.hosts[k]]); wm > rfs[k].lo && wm < rfs[k].hi {
				rfs[k].t = wm
			}
		}
	}
	return rfs
}

// crowdAt gathers from the last pass the crowds at the thresholds up and
// down of the outer search: Σλ of the uncapped elements and of those on
// hosts whose cap does not bind whose w/λ is exactly up (fetched) or down
// (given up).
func (c *core) crowdAt(up, down float64) crowd {
	cr := crowd{upKey: up, downKey: down}
	if math.IsInf(up, 1) {
		cr.upKey = 0
	}
	add := func(u, uLam, d, dLam float64) {
		if u == up && cr.upKey > 0 {
			cr.upLam += uLam
		}
		if d == down && down > 0 {
			cr.downLam += dLam
		}
	}
	add(c.tot.up, c.tot.upLam, c.tot.down, c.tot.downLam)
	for k := range c.caps {
		if c.tot.hs[k] <= c.caps[k] {
			add(c.tot.hup[k], c.tot.hupLam[k], c.tot.hdown[k], c.tot.hdownLam[k])
		}
	}
	return cr
}

// boundAbove sets the upper bracket of host k's search under the freshness
// objective: above the host's largest w/λ all its elements are given up.
func (c *core) boundAbove(rf *rootFinder, k int) {
	if c.obj == Freshness && c.hostKeyMax[k] > 0 {
		rf.hi, rf.phihi = math.Log(c.hostKeyMax[k]), math.Inf(-1)
	}
}

// finishHosts records ν_h for the hosts whose search ran.
func (c *core) finishHosts(sol *Solution, rfs []rootFinder) {
	for k := range rfs {
		if rfs[k].n == 0 {
			continue // not capped
		}
		sol.CappedHosts++
		sol.HostNu[c.hosts[k]] = max(math.Exp(rfs[k].t)-sol.Mu, 0)
	}
}

// initialGuess returns a starting ln μ. For large inputs it solves a
// strided sample of 2^16 elements with the budget and caps scaled down;
// its μ is within about 1/√(2^16) of the full one, which leaves two or
// three full Newton passes. It does so on a warm solve too when the
// budget moved, started from the warm multipliers: the
// previous μ can then be several Newton passes away where many elements
// share a give-up threshold, and the sample costs under half a pass.
// Otherwise a warm solve starts from the warm μ, and a small cold one
// from heuristic.
func (c *core) initialGuess(budget float64, warm *warmStart) float64 {
	const sample = 1 << 16
	n := c.size()
	if warm != nil && (n <= 4*sample || !warm.budgetMoved) {
		return math.Log(warm.mu)
	}
	if n <= 4*sample {
		return c.heuristic(budget)
	}
	stride := n / sample
	m := n / stride
	scale := float64(m) / float64(n)
	sub := Columns{Rates: make([]float64, m), Weights: make([]float64, m), Hosts: make([]int32, m)}
	subCaps := make([]float64, len(c.capOf))
	subFreq := make([]float64, m)
	for j := range m {
		i := j*stride + stride/2
		sub.Rates[j], sub.Weights[j], sub.Hosts[j] = c.cols.Rates[i], c.cols.Weights[i], c.cols.Hosts[i]
		subFreq[j] = c.freq[i]
	}
	for h, k := range c.capOf {
		if k >= 0 {
			subCaps[h] = c.caps[k] * scale
		}
	}
	sc, err := newCore(sub, subCaps, budget*scale, c.obj, subFreq)
	if err == nil {
		sc.workers, sc.countOnly, sc.plainSearch = c.workers, true, c.plainSearch
		if sol, err := sc.solve(budget*scale, warm); err == nil && sol.Mu > 0 && !math.IsInf(sol.Mu, 1) {
			return math.Log(sol.Mu)
		}
	}
	if warm != nil {
		return math.Log(warm.mu)
	}
	return c.heuristic(budget)
}

// heuristic guesses ln μ as the mean, over up to 4096 evenly spaced active
// elements, of the log-multiplier at which each would be given the uniform
// share budget/active of the budget.
func (c *core) heuristic(budget float64) float64 {
	active := c.nUncapped
	for _, n := range c.hostActive {
		active += n
	}
	fbar := budget / float64(max(active, 1))
	n := c.size()
	step := max(n/4096, 1)
	var sum float64
	var cnt int
	for i := 0; i < n; i += step {
		rate, weight := c.cols.Rates[i], c.cols.Weights[i]
		if rate == 0 || weight == 0 {
			continue
		}
		r := rate / fbar
		ex := math.Exp(-r)
		var m float64
		if c.obj == Freshness {
			m = weight / rate * gFunc(r, ex)
		} else {
			m = weight / rate / rate * aFunc(r, ex)
		}
		if lm := math.Log(m); !math.IsInf(lm, 0) && !math.IsNaN(lm) {
			sum += lm
			cnt++
		}
	}
	if cnt == 0 {
		return 0
	}
	return sum / float64(cnt)
}

// warmAcc is the inner-solve accuracy of a warm solve's first pass.
const warmAcc = 1e-12

// rootTol is the relative accuracy of every sum the searches match:
// Σ f_i = B and Σ_{i∈h} f_i = c_h hold to 1e−11 relative, well inside the
// 1e−9 the design asks for and above float64 summation noise.
const rootTol = 1e-11

// tMin and tMax bound ln μ so that e^t stays a normal float64.
const (
	tMin = -700.0
	tMax = 700.0
)

// rootFinder solves S(e^t) = target for t = ln μ, where S is positive,
// continuous and decreasing, from evaluations of S and D = −dS/d ln μ.
//
// It takes Newton steps on φ(t) = ln S − ln target, which is close to
// linear in t, inside a bracket that every evaluation narrows. The slope
// used is the larger of the tangent D/S and the secant through the
// previous evaluation. The secant matters under the freshness objective:
// an element's f falls to 0 at its give-up threshold only like 1/ln, so
// the tangent sum sees only the elements already near their threshold and
// misses the flux of elements that cross it within a step (about 1/ln N of
// the slope, 7% at N = 10⁶), which would make plain Newton converge only
// linearly.
//
// The same effect makes S steep but continuous at each threshold (the
// give-up ramp, a relative width of 1e−9 in μ). Newton cannot see a ramp
// from outside it, so when the root lies on one it would bisect some 30
// times. Each evaluation therefore also reports the nearest thresholds on
// either side (up, down); once the bracket holds a single threshold, the
// search evaluates the ends of its ramp and then interpolates on it, which
// is exact because S is linear there.
//
// Many elements at one threshold (a crowd) make S curve hard well before
// their ramp: the outer search reports them (crowd) and its steps then
// solve a model that holds them exactly (crowdStep).
//
// Otherwise it bisects when Newton leaves the bracket or stops converging
// fast, and expands geometrically while no bracket is known.
type rootFinder struct {
	target float64
	t      float64 // the point to evaluate next (the answer once done)
	acc    float64 // inner-solve accuracy to use at t
	lo, hi float64 // φ(lo) > 0 > φ(hi)
	philo  float64
	phihi  float64
	loUp   float64 // ln of the first threshold above lo
	hiDown float64 // ln of the last threshold at or below hi
	tPrev  float64 // previous evaluation, for the secant
	phPrev float64
	newton bool // the step to t was a Newton step
	// crowd, when set before observe, models the elements at the two
	// nearest thresholds exactly in the next step (crowdStep); lnRest
	// is ln of the rest of S at tPrev, for the rest's secant.
	crowd  crowd
	lnRest float64
	creep  int // steps below the resolution of t so far (observe)
	n      int // evaluations so far
	done   bool
	fill   bool // done, but S(t) > target: blend with S(hi) (see observe)
}

func newRootFinder(target, t0 float64) rootFinder {
	return rootFinder{
		target: target,
		t:      min(max(t0, tMin), tMax),
		acc:    1e-6,
		lo:     math.Inf(-1), hi: math.Inf(1),
		philo: math.Inf(1), phihi: math.Inf(-1),
		loUp: math.Inf(1), hiDown: math.Inf(-1),
		phPrev: math.NaN(), lnRest: math.NaN(),
	}
}

// rampStart is ln(1 − rampWidth): the give-up ramp of an element with
// threshold τ = ln(w/λ) spans t ∈ [τ + rampStart, τ].
const rampStart = -rampWidth - rampWidth*rampWidth/2 - rampWidth*rampWidth*rampWidth/3

// observe records the evaluation at rf.t — S, D and the ln-thresholds up
// (nearest above, +Inf if none) and down (nearest at or below, −Inf if
// none) — and moves rf.t to the next point, or sets done when S matches
// the target or the bracket can shrink no further.
func (rf *rootFinder) observe(S, D, up, down float64) {
	rf.n++
	if math.Abs(S-rf.target) <= rootTol*rf.target {
		rf.done = true
		return
	}
	t := rf.t
	phi := math.Log(S / rf.target) // −Inf when S = 0
	if phi > 0 {
		rf.lo, rf.philo, rf.loUp = t, phi, up
	} else {
		rf.hi, rf.phihi, rf.hiDown = t, phi, down
	}
	width := rf.hi - rf.lo
	if width <= 1e-15*max(1, math.Abs(t)) {
		// S jumps across a few ulps of μ: many elements close to their
		// give-up threshold, where f falls to 0 within a relative 1e−9 of
		// μ, so that no representable μ matches the target to rootTol.
		// Every μ in the bracket is the multiplier to float64 precision:
		// the caller blends the allocations at its ends (fillBetween).
		rf.done, rf.fill, rf.t = true, true, rf.lo
		return
	}
	slope := D / S // −dφ/dt from the tangent
	if sec := (rf.phPrev - phi) / (t - rf.tPrev); sec > slope || !(slope > 0) {
		slope = sec // NaN on the first evaluation or when φ is infinite
	}
	// A Newton step that did not cut |φ| by 4 signals a misleading slope.
	slow := rf.newton && math.Abs(phi) > 0.25*math.Abs(rf.phPrev)
	next := t + phi/slope // NaN or ±Inf when the slope is unusable
	if x, lnRest, ok := rf.crowdStep(S, D); ok {
		next = x
		rf.lnRest = lnRest
	} else {
		rf.lnRest = math.NaN()
	}
	rf.tPrev, rf.phPrev = t, phi
	rf.newton = true
	if d := 4 * ulp(t) * math.Ldexp(1, min(rf.creep, 60)); math.Abs(next-t) < d {
		// The step is below what float64 resolves of ln μ: S is steeper
		// here than a few ulps of μ can follow (many elements near one
		// give-up threshold, where S falls by their whole share of the
		// budget within a relative 1e−9 of μ), so no representable μ
		// matches the target to rootTol, and Newton would crawl or
		// stall. Step past the root by a few ulps (doubling while that
		// does not bracket it): the bracket is then narrow enough to
		// settle by blending (fill).
		rf.creep++
		next = t + math.Copysign(d, phi)
		if !math.IsInf(width, 1) && !(next > rf.lo && next < rf.hi) {
			next = rf.lo + 0.5*width
			rf.newton = false
		}
	} else if !math.IsInf(width, 1) {
		if slow || !(next > rf.lo && next < rf.hi) {
			next = rf.fallback(slow)
			rf.newton = false
		}
	} else {
		step := next - t
		if math.IsNaN(step) || math.IsInf(step, 0) {
			step = math.Copysign(1, phi)
		}
		if slow {
			step *= 4
		}
		next = t + min(max(step, -16), 16)
	}
	if next <= tMin || next >= tMax {
		next = min(max(next, tMin), tMax)
		if next == t {
			rf.n = maxRounds // cannot move: let the caller report it
		}
	}
	rf.t = next
	// Newton's next residual is about φ²; solve the elements 100× better
	// than that, and fully once close.
	rf.acc = min(max(1e-2*phi*phi, fullAcc), 1e-6)
}

// crowd is the elements at the two thresholds nearest the multiplier μ
// of an evaluation: upLam = Σλ of those fetched whose w/λ is exactly
// upKey (the smallest w/λ among elements fetched, > μ), downLam = Σλ of
// those given up whose w/λ is exactly downKey (the largest, ≤ μ).
// Elements with one threshold share one y = μλ/w and so f = λ/r(y): the
// crowd's part of S at any μ is Σλ times the frequency of an element of
// rate 1 and weight key.
type crowd struct {
	upKey, upLam, downKey, downLam float64
}

// crowdMin is the share of S that the crowds must be able to take for
// crowdStep to model them: below it they move S too little to matter.
const crowdMin = 1e-3

// at returns the crowds' part of S at multiplier mu and its −d/d ln μ.
func (cr *crowd) at(mu float64) (s, d float64) {
	tol := tolFor(fullAcc)
	if cr.upLam > 0 {
		f, el := freshFreq(1, cr.upKey, mu, 0, tol)
		s, d = cr.upLam*f, cr.upLam*f*el
	}
	if cr.downLam > 0 {
		f, el := freshFreq(1, cr.downKey, mu, 0, tol)
		s, d = s+cr.downLam*f, d+cr.downLam*f*el
	}
	return s, d
}

// crowdStep is the next t under a model of S that splits off the
// crowds at the nearest thresholds (crowd): many elements at one
// threshold, such as the URLs not fetched yet at the prior's rate, make
// S fall steeply and curve hard as μ nears it (f of each falls to 0 like
// 1/ln of the distance), which a Newton step in ln μ over- or
// undershoots pass after pass. The crowds are modelled exactly, the rest
// R of S as ln R linear in t (its tangent, or its secant through the
// previous evaluation when steeper, as for S), and the model's root in
// the bracket is found by bisection, which costs a few hundred scalar
// solves, not a pass. ok is false when the crowds are too small to
// matter or the model has no root in reach: the plain step then stands.
// Only the path of the search changes: its stopping rule and bracket do
// not, so the root is the same to rootTol.
func (rf *rootFinder) crowdStep(S, D float64) (next, lnRest float64, ok bool) {
	cr := &rf.crowd
	if !(cr.upLam > 0 || cr.downLam > 0) || !(S > 0) {
		return 0, 0, false
	}
	if (cr.upLam+cr.downLam)/rampR < crowdMin*S {
		return 0, 0, false
	}
	t := rf.t
	cs, cd := cr.at(math.Exp(t))
	rest, restD := S-cs, D-cd
	if !(rest > 0) || !(restD >= 0) {
		return 0, 0, false
	}
	lnRest = math.Log(rest)
	slope := restD / rest
	if sec := (rf.lnRest - lnRest) / (t - rf.tPrev); sec > slope {
		slope = sec // NaN (no previous rest) compares false
	}
	model := func(x float64) float64 {
		s, _ := cr.at(math.Exp(x))
		return rest*math.Exp(-slope*(x-t)) + s
	}
	lo, hi := max(rf.lo, t-16), min(rf.hi, t+16)
	if !(model(lo) > rf.target) || !(model(hi) < rf.target) {
		return 0, 0, false
	}
	for range 200 {
		mid := lo + 0.5*(hi-lo)
		if !(mid > lo && mid < hi) {
			break
		}
		if model(mid) > rf.target {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo + 0.5*(hi-lo), lnRest, true
}

// ulp is the spacing of float64 values at t.
func ulp(t float64) float64 {
	return math.Nextafter(math.Abs(t), math.Inf(1)) - math.Abs(t)
}

// fallback picks the next point inside a finite bracket when Newton is
// unusable: the ends of a lone threshold's ramp, regula falsi, or the
// midpoint.
func (rf *rootFinder) fallback(slow bool) float64 {
	lo, hi, width := rf.lo, rf.hi, rf.hi-rf.lo
	if tau := rf.loUp; tau < hi && tau == rf.hiDown {
		// Exactly one threshold τ in (lo, hi]; S is smooth elsewhere.
		ts := tau + rampStart
		switch {
		case lo < ts-1e-15*max(1, math.Abs(ts)) && ts < hi:
			return ts
		case tau < hi && tau > lo:
			return tau
		}
		// The bracket lies on the ramp, where S is linear: interpolate.
		slow = false
	}
	mid := lo + 0.5*width
	if slow || math.IsInf(rf.philo, 0) || math.IsInf(rf.phihi, 0) {
		return mid
	}
	// Regula falsi on φ usually beats the midpoint; keep it only well
	// inside the bracket unless the bracket is a ramp.
	x := lo + width*rf.philo/(rf.philo-rf.phihi)
	if x > lo+0.1*width && x < hi-0.1*width || rf.loUp < hi && rf.loUp == rf.hiDown && x > lo && x < hi {
		return x
	}
	return mid
}
