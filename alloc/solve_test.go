package alloc

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// objective is Σ w_i F_i (freshness) or −Σ w_i A_i (age): larger is better.
func objective(p Problem, f []float64) float64 {
	v := 0.0
	for i, e := range p.Elements {
		if p.Objective == Freshness {
			v += e.Weight * FixedOrder.Freshness(e.Rate, f[i])
		} else if e.Weight > 0 {
			v -= e.Weight * FixedOrder.Age(e.Rate, f[i])
		}
	}
	return v
}

func feasible(p Problem, f []float64) bool {
	hs := make([]float64, len(p.HostCaps))
	for i, e := range p.Elements {
		if f[i] < 0 {
			return false
		}
		if e.Host >= 0 {
			hs[e.Host] += f[i]
		}
	}
	for h, c := range p.HostCaps {
		if c > 0 && hs[h] > c*(1+1e-12) {
			return false
		}
	}
	return true
}

// bruteForce maximises the objective over the grid Σ f = total (step
// total/grid) and then polishes the best point by pairwise transfers with
// shrinking steps, which for a separable concave objective under these
// constraints ends at the optimum.
func bruteForce(p Problem, total float64, grid int) []float64 {
	n := len(p.Elements)
	best, bestV := make([]float64, n), math.Inf(-1)
	// A feasible start with every f_i > 0 (age is infinite at f = 0), in
	// case no grid point does better: the uniform water-filling allocation.
	q := p
	q.Budget = total
	if u, err := Uniform(q); err == nil && feasible(p, u.Freq) {
		copy(best, u.Freq)
		bestV = objective(p, best)
	}
	f := make([]float64, n)
	var rec func(i int, left float64)
	rec = func(i int, left float64) {
		if i == n-1 {
			f[i] = left
			if feasible(p, f) {
				if v := objective(p, f); v > bestV {
					bestV = v
					copy(best, f)
				}
			}
			return
		}
		for g := 0; g <= grid; g++ {
			x := total * float64(g) / float64(grid)
			if x > left+1e-12 {
				break
			}
			f[i] = x
			rec(i+1, max(left-x, 0))
		}
	}
	rec(0, total)
	for step := total / float64(grid); step > total*1e-10; step /= 2 {
		for improved := true; improved; {
			improved = false
			for i := range n {
				for j := range n {
					if i == j || best[j] < step {
						continue
					}
					best[i] += step
					best[j] -= step
					if v := objective(p, best); feasible(p, best) && v > bestV {
						bestV, improved = v, true
					} else {
						best[i] -= step
						best[j] += step
					}
				}
			}
		}
	}
	return best
}

func TestMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for trial := range 120 {
		n := 2 + rng.IntN(3)
		p := Problem{Budget: 0.5 + 4*rng.Float64(), Objective: Objective(trial % 2)}
		withCaps := trial%4 >= 2
		if withCaps {
			p.HostCaps = []float64{0.2 + 2*rng.Float64(), 0.2 + 2*rng.Float64()}
		}
		for range n {
			h := int32(-1)
			if withCaps {
				h = int32(rng.IntN(3)) - 1
			}
			p.Elements = append(p.Elements, Element{Rate: math.Exp(2 * rng.NormFloat64()), Weight: 0.2 + rng.Float64(), Host: h})
		}
		sol, err := Solve(p)
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		checkKKT(t, p, sol)
		total := p.Budget - sol.Unabsorbed
		want := bruteForce(p, total, 24)
		got, best := objective(p, sol.Freq), objective(p, want)
		scale := 0.0
		for _, e := range p.Elements {
			scale += e.Weight
		}
		if got < best-1e-9*scale {
			t.Errorf("trial %d (%v, caps %v): solver %v < brute force %v\nsolver %v\nbrute  %v",
				trial, p.Objective, p.HostCaps, got, best, sol.Freq, want)
		}
		for i := range want {
			if math.Abs(sol.Freq[i]-want[i]) > 1e-3*p.Budget {
				t.Errorf("trial %d (%v): f[%d] = %v, brute force %v (objective %v vs %v)",
					trial, p.Objective, i, sol.Freq[i], want[i], got, best)
			}
		}
	}
}

func TestHostCapRedistributesByKKT(t *testing.T) {
	// Host 0 holds the slowly changing elements, which the optimum would
	// fetch a lot; its cap forces the rest of the budget elsewhere.
	var p Problem
	p.Budget = 10
	p.HostCaps = []float64{1, 0} // host 1: no cap
	rates := []float64{0.1, 0.2, 0.3, 1, 2, 3, 0.5, 0.05}
	for i, r := range rates {
		p.Elements = append(p.Elements, Element{Rate: r, Weight: 1 + float64(i%3), Host: int32(i % 2)})
	}
	for _, obj := range []Objective{Freshness, Age} {
		p.Objective = obj
		sol, err := Solve(p)
		if err != nil {
			t.Fatal(err)
		}
		if sol.CappedHosts != 1 || !(sol.HostNu[0] > 0) || sol.HostNu[1] != 0 {
			t.Fatalf("%v: CappedHosts %d HostNu %v", obj, sol.CappedHosts, sol.HostNu)
		}
		checkKKT(t, p, sol)
		// The uncapped elements must be exactly the optimum of their own
		// problem with budget B − cap: the surplus follows the KKT
		// condition, not a pro-rata rule.
		var rest Problem
		rest.Budget, rest.Objective = p.Budget-p.HostCaps[0], obj
		var idx []int
		for i, e := range p.Elements {
			if e.Host != 0 {
				rest.Elements = append(rest.Elements, Element{Rate: e.Rate, Weight: e.Weight, Host: -1})
				idx = append(idx, i)
			}
		}
		rs, err := Solve(rest)
		if err != nil {
			t.Fatal(err)
		}
		for j, i := range idx {
			if math.Abs(rs.Freq[j]-sol.Freq[i]) > 1e-9*p.Budget {
				t.Errorf("%v: element %d: %v with cap, %v solving the rest alone", obj, i, sol.Freq[i], rs.Freq[j])
			}
		}
		if math.Abs(rs.Mu-sol.Mu) > 1e-9*sol.Mu {
			t.Errorf("%v: μ %v vs %v", obj, sol.Mu, rs.Mu)
		}
	}
}

func TestUnabsorbedBudget(t *testing.T) {
	p := Problem{
		Elements: []Element{{1, 1, 0}, {0.1, 1, 0}, {2, 1, 1}, {0, 1, -1}},
		HostCaps: []float64{0.5, 0.25},
		Budget:   2,
	}
	for _, obj := range []Objective{Freshness, Age} {
		p.Objective = obj
		sol, err := Solve(p)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(sol.Unabsorbed-1.25) > 1e-12 || sol.Mu != 0 || sol.CappedHosts != 2 {
			t.Errorf("%v: Unabsorbed %v Mu %v CappedHosts %d", obj, sol.Unabsorbed, sol.Mu, sol.CappedHosts)
		}
		if sol.Freq[3] != 0 {
			t.Errorf("%v: λ = 0 element got f = %v", obj, sol.Freq[3])
		}
		checkKKT(t, p, sol)
	}
}

func TestSolverWarmStart(t *testing.T) {
	p := benchProblem(200_000, 5)
	for _, obj := range []Objective{Freshness, Age} {
		p.Objective = obj
		s := NewSolver(p)
		cold, err := s.Solve()
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(8, 9))
		q := p
		q.Elements = append([]Element(nil), p.Elements...)
		for range len(p.Elements) / 100 {
			i := rng.IntN(len(p.Elements))
			q.Elements[i].Rate *= 0.8 + 0.4*rng.Float64()
			s.SetRate(i, q.Elements[i].Rate)
		}
		q.Elements[7].Weight = 3
		s.SetWeight(7, 3)
		warm, err := s.Solve()
		if err != nil {
			t.Fatal(err)
		}
		fresh, err := Solve(q)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%v: passes cold %d, warm re-solve %d, fresh solve %d", obj, cold.Iterations, warm.Iterations, fresh.Iterations)
		if warm.Iterations >= fresh.Iterations {
			t.Errorf("%v: warm re-solve took %d passes, a fresh solve %d", obj, warm.Iterations, fresh.Iterations)
		}
		if math.Abs(warm.Mu/fresh.Mu-1) > 1e-9 {
			t.Errorf("%v: μ warm %v fresh %v", obj, warm.Mu, fresh.Mu)
		}
		maxDiff := 0.0
		for i := range warm.Freq {
			maxDiff = max(maxDiff, math.Abs(warm.Freq[i]-fresh.Freq[i])/(fresh.Freq[i]+1e-12))
		}
		// Elements within 1e−9 of their give-up threshold may differ more.
		if maxDiff > 1e-6 {
			t.Errorf("%v: warm and fresh frequencies differ by %v (relative)", obj, maxDiff)
		}
		if math.Abs(warm.Freshness-fresh.Freshness) > 1e-9 {
			t.Errorf("%v: freshness warm %v fresh %v", obj, warm.Freshness, fresh.Freshness)
		}
		// The caller's problem is untouched.
		if p.Elements[7].Weight == 3 {
			t.Error("SetWeight modified the caller's slice")
		}
	}
}

func TestEdgeCases(t *testing.T) {
	check := func(name string, p Problem) Solution {
		t.Helper()
		sol, err := Solve(p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for i, f := range sol.Freq {
			if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
				t.Fatalf("%s: f[%d] = %v", name, i, f)
			}
		}
		if math.IsNaN(sol.Freshness) || math.IsNaN(sol.Age) || math.IsNaN(sol.Mu) {
			t.Fatalf("%s: NaN in %+v", name, sol)
		}
		return sol
	}
	for _, obj := range []Objective{Freshness, Age} {
		if sol := check("empty", Problem{Budget: 3, Objective: obj}); sol.Unabsorbed != 3 || sol.Freshness != 1 || sol.Age != 0 {
			t.Errorf("%v empty: %+v", obj, sol)
		}
		p := Problem{Elements: []Element{{1, 1, -1}, {2, 1, -1}}, Objective: obj}
		if sol := check("budget 0", p); sol.Freq[0] != 0 || sol.GivenUp != 2 || sol.Freshness != 0 || !math.IsInf(sol.Age, 1) {
			t.Errorf("%v budget 0: %+v", obj, sol)
		}
		p = Problem{Elements: []Element{{0, 1, -1}, {0, 2, -1}}, Budget: 1, Objective: obj}
		if sol := check("all λ = 0", p); sol.Unabsorbed != 1 || sol.Freshness != 1 || sol.Age != 0 {
			t.Errorf("%v all λ=0: %+v", obj, sol)
		}
		p = Problem{Elements: []Element{{1, 0, -1}, {1, 1, -1}}, Budget: 1, Objective: obj}
		if sol := check("weight 0", p); sol.Freq[0] != 0 || math.Abs(sol.Freq[1]-1) > 1e-12 {
			t.Errorf("%v weight 0: %v", obj, sol.Freq)
		}
		p = Problem{Elements: []Element{{1e300, 1, -1}, {1e-300, 1, -1}, {1, 1, -1}}, Budget: 1, Objective: obj}
		sol := check("huge and tiny λ", p)
		checkKKT(t, p, sol)
		if obj == Freshness && sol.Freq[0] != 0 {
			t.Errorf("freshness: λ = 1e300 should be given up, f = %v", sol.Freq[0])
		}
		p = Problem{Elements: []Element{{1e-12, 1, -1}, {2e-12, 1, -1}}, Budget: 1e6, Objective: obj}
		checkKKT(t, p, check("tiny λ, huge budget", p))
		p = Problem{Elements: []Element{{1e6, 1, -1}, {3e6, 1, -1}}, Budget: 1e-6, Objective: obj}
		checkKKT(t, p, check("huge λ, tiny budget", p))
	}
	for _, tc := range []struct {
		p    Problem
		want string
	}{
		{Problem{Elements: []Element{{1, 1, -1}, {math.NaN(), 1, -1}}, Budget: 1}, "element 1: rate NaN"},
		{Problem{Elements: []Element{{-1, 1, -1}}, Budget: 1}, "element 0: rate -1"},
		{Problem{Elements: []Element{{1, math.Inf(1), -1}}, Budget: 1}, "element 0: weight +Inf"},
		{Problem{Elements: []Element{{1, 1, 2}}, HostCaps: []float64{1}, Budget: 1}, "element 0: host 2 out of range"},
		{Problem{Elements: []Element{{1, 1, 0}}, HostCaps: []float64{math.NaN()}, Budget: 1}, "host 0: cap is NaN"},
		{Problem{Budget: math.NaN()}, "budget NaN"},
		{Problem{Budget: -1}, "budget -1"},
		{Problem{Objective: 7}, "unknown objective"},
	} {
		_, err := Solve(tc.p)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Solve(%+v) error %v, want %q", tc.p, err, tc.want)
		}
	}
}

func TestBaselinesWithCaps(t *testing.T) {
	p := Problem{
		Elements: []Element{{1, 1, 0}, {1, 1, 0}, {2, 1, -1}, {4, 1, 1}},
		HostCaps: []float64{0.5, 0},
		Budget:   4,
	}
	u, err := Uniform(p)
	if err != nil {
		t.Fatal(err)
	}
	// Host 0 would get 2 but takes 0.5; the other two share 3.5.
	want := []float64{0.25, 0.25, 1.75, 1.75}
	for i := range want {
		if math.Abs(u.Freq[i]-want[i]) > 1e-12 {
			t.Errorf("uniform f = %v, want %v", u.Freq, want)
			break
		}
	}
	pr, err := Proportional(p)
	if err != nil {
		t.Fatal(err)
	}
	// λ-shares: host 0 would get 2·(4/8) = 1 > 0.5; the rest 3.5 split 2:4.
	want = []float64{0.25, 0.25, 3.5 / 3, 7.0 / 3}
	for i := range want {
		if math.Abs(pr.Freq[i]-want[i]) > 1e-12 {
			t.Errorf("proportional f = %v, want %v", pr.Freq, want)
			break
		}
	}
	if u.CappedHosts != 1 || pr.CappedHosts != 1 {
		t.Errorf("CappedHosts %d %d", u.CappedHosts, pr.CappedHosts)
	}
	p.Elements = p.Elements[:2] // only the capped host left
	u, _ = Uniform(p)
	if math.Abs(u.Unabsorbed-3.5) > 1e-12 {
		t.Errorf("uniform Unabsorbed %v, want 3.5", u.Unabsorbed)
	}
}

func TestMinBudgetFor(t *testing.T) {
	p := table6()
	opt, err := Solve(p)
	if err != nil {
		t.Fatal(err)
	}
	b, err := MinBudgetFor(p, opt.Freshness)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(b/p.Budget-1) > 1e-8 {
		t.Errorf("MinBudgetFor(%v) = %v, want %v", opt.Freshness, b, p.Budget)
	}
	for _, target := range []float64{0.1, 0.5, 0.9, 0.99} {
		b, err := MinBudgetFor(p, target)
		if err != nil {
			t.Fatal(err)
		}
		p.Budget = b
		sol, err := Solve(p)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(sol.Freshness-target) > 1e-9 {
			t.Errorf("target %v: budget %v gives freshness %v", target, b, sol.Freshness)
		}
	}
	if _, err := MinBudgetFor(p, 1); !errors.Is(err, ErrUnreachable) {
		t.Errorf("target 1: error %v, want ErrUnreachable", err)
	}
	// Capped: everything on one host with cap 1.
	q := Problem{Elements: []Element{{1, 1, 0}, {2, 1, 0}, {0, 2, -1}}, HostCaps: []float64{1}}
	q.Budget = 1
	atCap, _ := Solve(q)
	if b, err := MinBudgetFor(q, atCap.Freshness+1e-3); !errors.Is(err, ErrUnreachable) {
		t.Errorf("beyond the caps: budget %v, error %v", b, err)
	}
	if b, err := MinBudgetFor(q, 0.5); err != nil || b != 0 {
		t.Errorf("target below the λ = 0 share: %v, %v", b, err)
	}
	b, err = MinBudgetFor(q, (atCap.Freshness+0.5)/2)
	if err != nil || !(b > 0 && b < 1) {
		t.Errorf("inside: %v, %v", b, err)
	}
	if _, err := MinBudgetFor(q, math.NaN()); err == nil {
		t.Error("NaN target accepted")
	}
}

// TestSolverAlternatingBudgetsAndCaps re-solves one Solver as a plan
// does, alternately with the whole budget and caps and with 90 % of them
// (exploration's share taken out), while rates move: each warm solve,
// started from the multipliers of the earlier solve nearest in budget (and,
// above 2^18 elements, from a warm sample when the budget moved), must
// match a fresh solve of the same problem.
func TestSolverAlternatingBudgetsAndCaps(t *testing.T) {
	for _, n := range []int{20_000, 270_000} {
		p := benchProblem(n, 6)
		s := NewSolver(p)
		rng := rand.New(rand.NewPCG(3, 4))
		full := append([]float64(nil), p.HostCaps...)
		for k := range 4 {
			q := p
			q.Elements = append([]Element(nil), p.Elements...)
			for range n / 100 {
				i := rng.IntN(n)
				q.Elements[i].Rate *= 0.8 + 0.4*rng.Float64()
				s.SetRate(i, q.Elements[i].Rate)
			}
			p = q
			q.HostCaps = append([]float64(nil), full...)
			if k%2 == 1 {
				q.Budget *= 0.9
				for h := range q.HostCaps {
					q.HostCaps[h] *= 0.9
				}
			}
			s.SetBudget(q.Budget)
			s.SetHostCaps(q.HostCaps)
			warm, err := s.Solve()
			if err != nil {
				t.Fatalf("n %d solve %d: %v", n, k, err)
			}
			fresh, err := Solve(q)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(warm.Mu/fresh.Mu-1) > 1e-9 {
				t.Errorf("n %d solve %d: μ warm %v, fresh %v", n, k, warm.Mu, fresh.Mu)
			}
			checkKKT(t, q, warm)
			t.Logf("n %d solve %d: passes warm %d, fresh %d", n, k, warm.Iterations, fresh.Iterations)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("SetHostCaps with the wrong number of caps did not panic")
		}
	}()
	NewSolver(benchProblem(10, 1)).SetHostCaps([]float64{1})
}

// TestSolveColumns re-solves a problem held by the caller as arrays, as
// the scheduler does: the Solver reads them in place (a rate the caller
// changes is seen by the next solve), never writes them, warm-starts
// from its last answer, matches brute force on small problems and a
// fresh Solve on large ones, and solves a problem of another size cold.
func TestSolveColumns(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for trial := range 40 {
		p := Problem{Budget: 0.5 + 4*rng.Float64(), Objective: Objective(trial % 2), HostCaps: []float64{0.2 + 2*rng.Float64(), 0}}
		for range 2 + rng.IntN(3) {
			p.Elements = append(p.Elements, Element{Rate: math.Exp(2 * rng.NormFloat64()), Weight: 0.2 + rng.Float64(), Host: int32(rng.IntN(3)) - 1})
		}
		cols := columnsOf(p.Elements)
		sol, err := NewSolver(Problem{Objective: p.Objective}).SolveColumns(cols, p.Budget, p.HostCaps)
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		checkKKT(t, p, sol)
		want := bruteForce(p, p.Budget-sol.Unabsorbed, 24)
		if got, best := objective(p, sol.Freq), objective(p, want); got < best-1e-9*float64(len(p.Elements)) {
			t.Errorf("trial %d: SolveColumns %v < brute force %v", trial, got, best)
		}
	}

	for _, obj := range []Objective{Freshness, Age} {
		p := benchProblem(50_000, 9)
		p.Objective = obj
		cols := columnsOf(p.Elements)
		orig := columnsOf(p.Elements)
		caps := append([]float64(nil), p.HostCaps...)
		s := NewSolver(Problem{Objective: obj})
		cold, err := s.SolveColumns(cols, p.Budget, caps)
		if err != nil {
			t.Fatal(err)
		}
		fresh, err := Solve(p)
		if err != nil {
			t.Fatal(err)
		}
		for i := range cold.Freq {
			if cold.Freq[i] != fresh.Freq[i] {
				t.Fatalf("%v: cold SolveColumns f[%d] = %v, Solve %v", obj, i, cold.Freq[i], fresh.Freq[i])
			}
		}
		// What SolveColumns leaves out (the collection's freshness and
		// age) and what it still counts.
		if cold.Freshness != 0 || cold.Age != 0 || cold.GivenUp != fresh.GivenUp || cold.CappedHosts != fresh.CappedHosts || cold.Mu != fresh.Mu {
			t.Errorf("%v: SolveColumns freshness %v age %v given up %d capped %d μ %v; Solve given up %d capped %d μ %v", obj,
				cold.Freshness, cold.Age, cold.GivenUp, cold.CappedHosts, cold.Mu, fresh.GivenUp, fresh.CappedHosts, fresh.Mu)
		}
		first := append([]float64(nil), cold.Freq...)
		// The caller moves 1 % of its rates in its own arrays.
		for range len(cols.Rates) / 100 {
			i := rng.IntN(len(cols.Rates))
			cols.Rates[i] *= 0.8 + 0.4*rng.Float64()
			p.Elements[i].Rate = cols.Rates[i]
		}
		copy(orig.Rates, cols.Rates)
		warm, err := s.SolveColumns(cols, p.Budget, caps)
		if err != nil {
			t.Fatal(err)
		}
		fresh, err = Solve(p)
		if err != nil {
			t.Fatal(err)
		}
		if warm.Iterations >= fresh.Iterations {
			t.Errorf("%v: warm re-solve took %d passes, a fresh solve %d", obj, warm.Iterations, fresh.Iterations)
		}
		if math.Abs(warm.Mu/fresh.Mu-1) > 1e-9 {
			t.Errorf("%v: μ warm %v, fresh %v", obj, warm.Mu, fresh.Mu)
		}
		checkKKT(t, p, warm)
		for i := range cols.Rates {
			if cols.Rates[i] != orig.Rates[i] || cols.Weights[i] != orig.Weights[i] || cols.Hosts[i] != orig.Hosts[i] {
				t.Fatalf("%v: SolveColumns changed element %d of the caller's arrays", obj, i)
			}
			if cold.Freq[i] != first[i] {
				t.Fatalf("%v: the re-solve changed the frequencies the first solve returned (f[%d])", obj, i)
			}
		}
		// Another number of elements: solved cold, as a fresh Solve.
		q := p
		q.Elements = p.Elements[:len(p.Elements)/2]
		half, err := s.SolveColumns(columnsOf(q.Elements), q.Budget, caps)
		if err != nil {
			t.Fatal(err)
		}
		fresh, err = Solve(q)
		if err != nil {
			t.Fatal(err)
		}
		if half.Iterations != fresh.Iterations || half.Mu != fresh.Mu {
			t.Errorf("%v: a smaller problem took %d passes to μ %v, a fresh solve %d to %v", obj, half.Iterations, half.Mu, fresh.Iterations, fresh.Mu)
		}
	}

	bad := Columns{Rates: []float64{1, 2}, Weights: []float64{1}, Hosts: []int32{-1, -1}}
	if _, err := NewSolver(Problem{}).SolveColumns(bad, 1, nil); err == nil || !strings.Contains(err.Error(), "1 weights") {
		t.Errorf("columns of different lengths: error %v", err)
	}
	neg := Columns{Rates: []float64{1, -2}, Weights: []float64{1, 1}, Hosts: []int32{-1, -1}}
	if _, err := NewSolver(Problem{}).SolveColumns(neg, 1, nil); err == nil || !strings.Contains(err.Error(), "element 1: rate -2") {
		t.Errorf("a negative rate: error %v", err)
	}
}
