// Package bench measures freshcrawl's revisit policy against its peers from
// the truth of a simulated web (docs/design.md §4), never from freshcrawl's
// own model: `freshcrawl bench policies`, and the throughput, schedule,
// capture and probes runs.
//
// Two modes share workloads, policies and reporting. The virtual mode
// (virtual.go) drives internal/schedule's Scheduler, estimator, policies
// and result-to-update function on a virtual clock against the sim's
// change processes, so thousands of simulated days take seconds; the live
// mode (live.go) runs the whole system (embedded NATS, coordinator,
// workers, HTTP) against an in-process sim. Every figure is compared with
// the oracle: the optimum of docs/design.md §3.2 computed with the true
// rates at the same number of fetches.
package bench

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/freshcrawl/freshcrawl/internal/schedule"
)

// defaultPolicies lists the policies benchmarked by default: freshcrawl's own
// (optimal) first, then the baselines and the peers.
func defaultPolicies() []string {
	return []string{"optimal", "uniform", "proportional", "nutch", "stormcrawler", "binarylambdacrawl", "lambdacrawl"}
}

// newPolicy returns a fresh instance of the named policy (policies keep
// warm solver state, so runs must not share one). day is the real duration
// of a simulated day, which the adaptive peers scale their constants by.
func newPolicy(name string, day time.Duration) (schedule.Policy, error) {
	switch name {
	case "nutch":
		return schedule.NewNutch(day), nil
	case "stormcrawler":
		return schedule.NewStormCrawler(day), nil
	case "binarylambdacrawl":
		return schedule.NewBinaryLambdaCrawl(schedule.DefaultLambdaEpsilon)
	}
	p, err := schedule.PolicyByName(name, "freshness")
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	return p, nil
}

// ParsePolicies splits a comma-separated list ("" or "all": every one).
func ParsePolicies(s string) ([]string, error) {
	if s == "" || s == "all" {
		return defaultPolicies(), nil
	}
	var out []string
	for name := range strings.SplitSeq(s, ",") {
		name = strings.TrimSpace(name)
		if !slices.Contains(defaultPolicies(), name) {
			return nil, fmt.Errorf("unknown policy %q: want one of %s", name, strings.Join(defaultPolicies(), ", "))
		}
		out = append(out, name)
	}
	return out, nil
}

// Result is one policy's run on one workload.
type Result struct {
	Mode, Workload, Policy string
	// Pages and Hosts are the size the run had: the workload's own where
	// it fixes one (coldstart's --coldstart-pages), else the options'.
	Pages, Hosts int
	// Freshness and AgeDays are the truth, time-averaged over the window
	// after warm-up (weighted by importance where the workload has
	// weights).
	Freshness, AgeDays float64
	// Fetches, NotModified and Bytes are counted in the window. In live
	// mode Bytes are every body the sim sent (robots.txt included); in
	// virtual mode they are the bodies of the pages' 200s, as the sim
	// renders them (sim.Sim.BodySize).
	Fetches, NotModified int
	Bytes                int64
	// FetchesPerDay is the achieved fetch rate in the window.
	FetchesPerDay float64
	// Oracle and OracleAgeDays are the oracle's freshness and age in days
	// (SolveOracle: the optimum with the true rates at FetchesPerDay);
	// Ratio = Freshness / Oracle.
	Oracle, OracleAgeDays, Ratio float64
	// FullOracle is the oracle at the configured budget rather than at
	// the fetches achieved, and FullRatio = Freshness / FullOracle: a
	// policy that spends less than its budget loses by it here.
	FullOracle, FullRatio float64
	// Budget is the configured budget in fetches a simulated day, and
	// EveryDays the same as the days in which it fetches every page once
	// on average (Pages / Budget).
	Budget, EveryDays float64
	// Signal is the signal oracle at the configured budget and host caps
	// (signal.go): the freshness of a crawler told of every change as it
	// happens; SignalRatio = Freshness / Signal.Freshness.
	Signal      SignalOracle
	SignalRatio float64
	// UniformRatio is Freshness over the freshness of the uniform policy
	// on the same workload at the same budget, in the same mode (0: the
	// uniform policy was not run; AddUniformRatios fills it in).
	UniformRatio float64
	// ModelFreshness is the crawler's own model of its freshness
	// (schedule.Scheduler.ModelFreshness), time-averaged over the same
	// window as Freshness; it should match the truth.
	ModelFreshness float64
	// FirstPassDays is when every page had been fetched once, in
	// simulated days from the start (−1: some never was), and
	// FreshAfterFirstPass the truth from then to the end, and
	// ModelAfterFirstPass the model over the same days (−1: no first pass
	// after the warm-up, or no sample after it; virtual mode only).
	FirstPassDays, FreshAfterFirstPass, ModelAfterFirstPass float64
	// Series is the freshness over the whole run (warm-up included), one
	// point per step, for the plot.
	Series []Point
	// PlanErrors counts plans the policy failed to make (the previous plan
	// was kept, as the coordinator does); LastPlanError is the last one.
	PlanErrors    int
	LastPlanError error
	// Wall is how long the run took.
	Wall time.Duration
	// Hints are the fetches the scheduler made because a page tied to
	// the fetched one changed (schedule.Scheduler.CoChange), and
	// HintsConfirmed those that found a change (virtual mode).
	Hints, HintsConfirmed int
	// SitemapFetches are the fetches of the hosts' sitemaps in the window
	// (Options.Sitemap), on top of Fetches, which counts pages only.
	SitemapFetches int
	// Deciles are the run against the full-budget oracle by decile of the
	// true rate (Options.Deciles; virtual mode).
	Deciles []Decile
}

// notModifiedShare is the share of fetches answered 304.
func (r Result) notModifiedShare() float64 {
	if r.Fetches == 0 {
		return 0
	}
	return float64(r.NotModified) / float64(r.Fetches)
}

// Point is one step of a freshness series.
type Point struct {
	Day       float64 // simulated days since the start
	Freshness float64
}
