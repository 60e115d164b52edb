package schedule

import (
	"math"
	"testing"
	"time"
)

// The zero SchedulerOptions mean the defaults; the default policy is the
// one the CLI defaults to.
func TestZeroOptionsAreTheDefaults(t *testing.T) {
	s := NewScheduler(SchedulerOptions{})
	o := s.o
	if o.Budget != DefaultBudget || o.HostRate != DefaultHostRate || o.ExploreShare != DefaultExploreShare || o.Replan != DefaultReplan || o.DisallowRetry != DefaultDisallowRetry {
		t.Errorf("zero options became %+v", o)
	}
	if got := s.Policy().Name(); got != DefaultPolicy {
		t.Errorf("default policy %q, want %q", got, DefaultPolicy)
	}
}

func TestChecks(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		ok   bool
	}{
		{"rate 1", CheckRate(1), true},
		{"rate 0", CheckRate(0), false},
		{"rate NaN", CheckRate(math.NaN()), false},
		{"rate +Inf", CheckRate(math.Inf(1)), false},
		{"policy optimal", CheckPolicy("optimal"), true},
		{"policy nutch", CheckPolicy("nutch"), false},
		{"objective age", CheckObjective("age"), true},
		{"objective speed", CheckObjective("speed"), false},
		{"explore 0", CheckExploreShare(0), false},
		{"explore 1", CheckExploreShare(1), true},
		{"explore 1.5", CheckExploreShare(1.5), false},
		{"explore NaN", CheckExploreShare(math.NaN()), false},
		{"replan 0", CheckPositive(0), false},
		{"lm-skew 500ms", CheckLMSkew(500 * time.Millisecond), false},
		{"lm-skew 1s", CheckLMSkew(time.Second), true},
	} {
		if (c.err == nil) != c.ok {
			t.Errorf("%s: %v", c.name, c.err)
		}
	}
	for _, name := range []string{DefaultPolicy} {
		if err := CheckPolicy(name); err != nil {
			t.Errorf("the default policy fails its own check: %v", err)
		}
	}
	if err := CheckObjective(DefaultObjective); err != nil {
		t.Errorf("the default objective fails its own check: %v", err)
	}
	if err := CheckProbePolicy(DefaultProbePolicy); err != nil {
		t.Errorf("the default probe policy fails its own check: %v", err)
	}
}
