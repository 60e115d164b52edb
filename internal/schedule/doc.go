// Package schedule decides when each URL is fetched, with no I/O and no
// clock of its own: change-rate estimates from fetch outcomes (Estimator,
// Learn), a plan of fetch frequencies under the budget and per-host caps
// (Policy, Scheduler.Replan in three steps), the order due URLs are handed
// out under host politeness (the frontier behind Scheduler.Next), capture
// URLs' poll phases, and keyword-probe rounds (Prober).
//
// The coordinator drives it on the wall clock through coordinator/internal/dispatch;
// the virtual benchmark drives the same code on a simulated clock.
package schedule
