package schedule

import (
	"fmt"
	"math"
	"time"
)

// Defaults of the scheduling settings. SchedulerOptions, the coordinator's
// Options and the config (hence the CLI, the README and the compose file)
// take them from here: a zero field means the default.
const (
	// DefaultBudget is the total fetches per second.
	DefaultBudget = 10.0
	// DefaultHostRate is the most fetches per second of one host.
	DefaultHostRate = 1.0
	// DefaultPolicy and DefaultObjective: the optimal allocation for
	// freshness (Cho & Garcia-Molina), which is what freshcrawl is for.
	DefaultPolicy    = "optimal"
	DefaultObjective = "freshness"
	// DefaultReplan is the longest time between two plans.
	DefaultReplan = 30 * time.Second
	// DefaultExploreShare is the largest share of the budget (and of each
	// host's cap) the optimal policy's exploration may take: probes of
	// URLs whose rate is not resolved and rechecks of URLs given up
	// (docs/design.md §3.7). Policies with no multiplier keep URLs they
	// give up on at this share of budget/URLs instead.
	DefaultExploreShare = 0.1
	// DefaultPriorRate is the change rate, per second, assumed for a URL
	// never observed: a quarter of a change a day, the mean of the page
	// population Cho & Garcia-Molina measured, as in estimate.DefaultPrior.
	DefaultPriorRate = 0.25 / 86400
	// DefaultHalfLife is the age at which an observation counts half in a
	// change-rate estimate.
	DefaultHalfLife = 90 * 24 * time.Hour
	// DefaultLMSkew is the clock skew tolerated when checking whether a
	// server's Last-Modified can be trusted, as in
	// estimate.DefaultTrustConfig.
	DefaultLMSkew = time.Minute
	// DefaultProbePolicy refreshes tracked items with keyword probes.
	DefaultProbePolicy = ProbeGreedy
	// DefaultDisallowRetry is how often a URL disallowed by robots.txt is
	// checked again.
	DefaultDisallowRetry = time.Hour
)

// The checks of the settings above. Each reports why a value is refused,
// without the setting's name: the caller (SchedulerOptions' users, the
// coordinator, the config) names it in its own terms.

// CheckRate reports whether r, a budget, host rate or prior change rate in
// events per second, is a finite number > 0.
func CheckRate(r float64) error {
	if !(r > 0) || math.IsInf(r, 0) {
		return fmt.Errorf("must be a finite rate > 0, got %v", r)
	}
	return nil
}

// CheckPolicy reports whether name is a policy an operator may choose:
// optimal, uniform or proportional. The peers PolicyByName also knows
// (nutch, stormcrawler, lambdacrawl) are for benchmarks.
func CheckPolicy(name string) error {
	switch name {
	case "optimal", "uniform", "proportional":
		return nil
	}
	return fmt.Errorf("%q: want optimal, uniform or proportional", name)
}

// CheckObjective reports whether name is what the optimal policy may
// maximise: freshness or age.
func CheckObjective(name string) error {
	switch name {
	case "freshness", "age":
		return nil
	}
	return fmt.Errorf("%q: want freshness or age", name)
}

// CheckExploreShare reports whether v is a share in (0,1]. Zero is not a
// share: without exploration a URL given up would never be re-estimated,
// so a wrong estimate could not recover.
func CheckExploreShare(v float64) error {
	if !(v > 0 && v <= 1) {
		return fmt.Errorf("must be in (0,1], got %v", v)
	}
	return nil
}

// CheckPositive reports whether d, a replan period or a half-life, is > 0.
func CheckPositive(d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("must be > 0, got %s", d)
	}
	return nil
}

// CheckLMSkew reports whether d is a usable Last-Modified clock skew: at
// least a second, because HTTP dates have whole seconds.
func CheckLMSkew(d time.Duration) error {
	if d < time.Second {
		return fmt.Errorf("must be ≥ 1s (HTTP dates have whole seconds), got %s", d)
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
