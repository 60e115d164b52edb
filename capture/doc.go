// Package capture plans poll times for URLs in capture mode, where the goal
// is change recall: versions captured / versions published (Ashish,
// Kulkarni & Wang, "Source update capture in information agents", §2.1;
// docs/design.md §3.5).
//
// The model. Updates recur with a period T. A poll at phase p captures the
// version present at p (including one published at exactly p); a version is
// lost when the next update overwrites it before any poll, i.e. "if two
// updates happen between consecutive polls, the first is lost". Polls are
// given as phases in [0, T) and repeat every period: the polling strategy
// ⟨T, S⟩ of the paper's §2.2.
//
// Between two consecutive polls a < b exactly the last update in (a, b] is
// captured, so the expected number of misses in the window is
// E[max(0, N−1)] = E[N] − P(N ≥ 1), with N the number of updates in (a, b].
// By linearity of expectation the expected misses of a whole strategy is the
// sum over its windows — the decomposition the paper's exhaustive dynamic
// programme relies on (NumMisses, §3.1.1). A Pattern describes each recurring
// update as an independent event (the paper's tagged messages A, B, C of
// §3.1.2), which makes E[N] and P(N ≥ 1) exact (Poisson-binomial).
//
// Strategies:
//   - Exhaustive: the §3.1.1 dynamic programme over s candidate poll times,
//     O(s³N), exact over its candidate set (and globally exact for patterns
//     without jitter, where update phases are the only useful poll times).
//   - Theoretical: the §3.1.2 algorithm (poll at the end of every
//     single-update interval, split the rest across multiple-update intervals
//     by condition I, K_i ∝ √C_i).
//   - Plan / PlanPattern pick between them by s (ExhaustiveLimit).
//
// Learning (what the planners need):
//   - LearnPattern clusters exact update times (Last-Modified, feed dates).
//   - EstimatePhases / LearnPolls learn a phase histogram by EM from a poll
//     History, where a poll that saw a change without an exact time says
//     only "an update in (previous poll, this poll]" (censored) and one
//     that saw none rules its interval out.
//   - DetectPeriodRange finds the period, 20 s to 8 days, from exact or
//     censored changes with no candidate list; RefinePeriod sharpens it
//     on the EM likelihood; PeriodStrength scores a configured one.
//   - CheckDrift (exact times) and CheckDriftPolls (polls) tell when a
//     learnt pattern no longer holds.
//
// Time is measured in float64 seconds (or any unit, used consistently);
// Phase converts a time.Time. The package is pure: no I/O, no package-level
// mutable state; invalid input yields an error wrapping ErrInvalidArgument.
package capture
