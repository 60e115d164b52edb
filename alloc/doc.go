// Package alloc decides how often each page should be re-fetched.
//
// It implements the analysis of Cho & Garcia-Molina, "Synchronizing a
// database to improve freshness" (SIGMOD 2000; docs/design.md §3.1–3.2):
//
//   - the freshness and age of one element that changes as a Poisson
//     process with rate λ and is synchronised at frequency f, for the three
//     synchronisation-order policies of the paper's Table 2 (Policy);
//   - the optimal allocation of a fixed fetch budget B = Σ f_i that maximises
//     the weighted freshness Σ w_i F(λ_i, f_i) or minimises the weighted age
//     Σ w_i A(λ_i, f_i) (paper §5.3, Problem 1), extended with per-host
//     politeness caps Σ_{i∈h} f_i ≤ c_h (docs/design.md §3.2 "Beyond the paper");
//   - the naive baselines of the paper's §5.1 (Uniform, Proportional) and
//     the inverse question "how much budget do I need" (MinBudgetFor).
//
// Everything is pure arithmetic: no I/O, no package-level mutable state.
// Rates and frequencies share one arbitrary time unit (the tests use days).
//
// # The optimality conditions
//
// With r = λ/f, the fixed-order freshness is F = (1−e^{−r})/r, so
//
//	∂F/∂f = g(r)/λ,          g(r) = 1 − (1+r)e^{−r}   ∈ [0, 1)
//	∂A/∂f = −a(r)/λ²,        a(r) = r²/2 − 1 + (1+r)e^{−r} ∈ [0, ∞)
//
// and the Karush–Kuhn–Tucker conditions of the budgeted problem with a
// multiplier μ for Σf = B and ν_h ≥ 0 for each host cap read
//
//	freshness:  (w_i/λ_i)  g(r_i) = μ + ν_h   if f_i > 0,
//	            f_i = 0 ("given up")          if (μ+ν_h) λ_i/w_i ≥ 1;
//	age:        (w_i/λ_i²) a(r_i) = μ + ν_h   (a is unbounded, so the age
//	            optimum never gives up an element with λ_i > 0).
//
// g and a are strictly increasing, so for a fixed multiplier every f_i is a
// one-dimensional root; Σ f_i is then decreasing in the multiplier and the
// whole problem reduces to a scalar root find. See Solve for how that is done
// fast enough for ten million elements.
package alloc
