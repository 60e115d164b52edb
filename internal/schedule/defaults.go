package schedule

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/freshcrawl/freshcrawl/internal/optcheck"
)

// Defaults of the settings that are not fields of SchedulerOptions: the
// policy and the objective by name, which the configuration names them by
// (SchedulerOptions.Policy is the policy they make), and the coordinator's
// Last-Modified skew and probe policy.
const (
	// DefaultPolicy and DefaultObjective: the optimal allocation for
	// freshness (Cho & Garcia-Molina), which is what freshcrawl is for.
	DefaultPolicy    = "optimal"
	DefaultObjective = "freshness"
	// DefaultLMSkew is the clock skew tolerated when checking whether a
	// server's Last-Modified can be trusted, as in
	// estimate.DefaultTrustConfig.
	DefaultLMSkew = time.Minute
	// DefaultProbePolicy refreshes tracked items with keyword probes.
	DefaultProbePolicy = ProbeGreedy
)

// DefaultSchedulerOptions hold the default of every field but Priors and
// URLs, which have none, and CaptureUniform, which is off. NewScheduler
// takes its options as they are, so a caller starts from these and
// changes what it sets; the coordinator's options (hence the config, the
// CLI, the README and the compose file) take their defaults from here.
func DefaultSchedulerOptions() SchedulerOptions {
	return SchedulerOptions{
		Budget:   10, // fetches per second
		HostRate: 1,  // fetches per second of one host
		Policy:   defaultPolicy(),
		// Exploration takes at most a tenth of the budget, and policies
		// with no multiplier keep URLs they give up on at a tenth of the
		// uniform share.
		ExploreShare: 0.1,
		// A quarter of a change a day, the mean of the page population
		// Cho & Garcia-Molina measured, as in estimate.DefaultPrior.
		PriorRate:     0.25 / 86400,
		HalfLife:      90 * 24 * time.Hour,
		Replan:        30 * time.Second,
		DisallowRetry: time.Hour,
		CoChange:      true,
	}
}

// Validate reports every field out of range, each by its name. It takes
// the fields as they are: a zero field is refused, not defaulted.
func (o SchedulerOptions) Validate() error {
	var errs optcheck.Errors
	errs.Check("Budget", checkRate(o.Budget))
	errs.Check("HostRate", checkRate(o.HostRate))
	errs.Check("PriorRate", checkRate(o.PriorRate))
	if o.Policy == nil {
		errs.Check("Policy", errors.New("no policy"))
	}
	// Zero is not a share: without exploration a URL given up would never
	// be re-estimated, so a wrong estimate could not recover.
	if !(o.ExploreShare > 0 && o.ExploreShare <= 1) {
		errs.Check("ExploreShare", fmt.Errorf("must be in (0,1], got %v", o.ExploreShare))
	}
	errs.Check("HalfLife", checkPositive(o.HalfLife))
	errs.Check("Replan", checkPositive(o.Replan))
	errs.Check("DisallowRetry", checkPositive(o.DisallowRetry))
	return errs.Err()
}

// OperatorPolicy is the policy an operator may choose by name: optimal,
// uniform or proportional, for an objective of freshness or age. The
// peers PolicyByName also knows (nutch, stormcrawler, lambdacrawl) are
// for benchmarks. Its error names the field at fault, Policy or
// Objective.
func OperatorPolicy(name, objective string) (Policy, error) {
	var errs optcheck.Errors
	switch name {
	case "optimal", "uniform", "proportional":
	default:
		errs.Check("Policy", fmt.Errorf("%q: want optimal, uniform or proportional", name))
	}
	switch objective {
	case "freshness", "age":
	default:
		errs.Check("Objective", fmt.Errorf("%q: want freshness or age", objective))
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return PolicyByName(name, objective)
}

// checkRate reports whether r, a budget, host rate or prior change rate in
// events per second, is a finite number > 0.
func checkRate(r float64) error {
	if !(r > 0) || math.IsInf(r, 0) {
		return fmt.Errorf("must be a finite rate > 0, got %v", r)
	}
	return nil
}

// checkPositive reports whether d, a period or a half-life, is > 0.
func checkPositive(d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("must be > 0, got %s", d)
	}
	return nil
}

// defaultPolicy is DefaultPolicy for DefaultObjective.
func defaultPolicy() Policy {
	p, err := PolicyByName(DefaultPolicy, DefaultObjective)
	if err != nil {
		panic("schedule: the default policy is unknown: " + err.Error()) // a constant above is wrong
	}
	return p
}
