package schedule

import (
	"math"
	"strings"
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

// DefaultSchedulerOptions are what NewScheduler makes of zero fields, and
// they pass Validate.
func TestDefaultSchedulerOptions(t *testing.T) {
	d := DefaultSchedulerOptions()
	if err := d.Validate(); err != nil {
		t.Fatalf("the defaults refused: %v", err)
	}
	z := NewScheduler(SchedulerOptions{}).o
	if d.Budget != z.Budget || d.HostRate != z.HostRate || d.ExploreShare != z.ExploreShare || d.Replan != z.Replan || d.DisallowRetry != z.DisallowRetry || d.HalfLife != z.HalfLife || d.Policy.Name() != z.Policy.Name() {
		t.Errorf("DefaultSchedulerOptions %+v, NewScheduler's defaults %+v", d, z)
	}
}

// Validate names each field out of range and takes none as its default.
func TestSchedulerOptionsValidate(t *testing.T) {
	for _, c := range []struct {
		field string
		set   func(*SchedulerOptions)
	}{
		{"Budget", func(o *SchedulerOptions) { o.Budget = 0 }},
		{"Budget", func(o *SchedulerOptions) { o.Budget = math.Inf(1) }},
		{"HostRate", func(o *SchedulerOptions) { o.HostRate = math.NaN() }},
		{"PriorRate", func(o *SchedulerOptions) { o.PriorRate = -1 }},
		{"Policy", func(o *SchedulerOptions) { o.Policy = nil }},
		{"ExploreShare", func(o *SchedulerOptions) { o.ExploreShare = 0 }},
		{"ExploreShare", func(o *SchedulerOptions) { o.ExploreShare = 1.5 }},
		{"ExploreShare", func(o *SchedulerOptions) { o.ExploreShare = math.NaN() }},
		{"HalfLife", func(o *SchedulerOptions) { o.HalfLife = -time.Hour }},
		{"Replan", func(o *SchedulerOptions) { o.Replan = 0 }},
		{"DisallowRetry", func(o *SchedulerOptions) { o.DisallowRetry = 0 }},
	} {
		o := DefaultSchedulerOptions()
		c.set(&o)
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), c.field+":") {
			t.Errorf("%s: Validate = %v, want an error naming the field", c.field, err)
		}
	}
}

// OperatorPolicy knows the operator's policies and objectives, and names
// the one at fault.
func TestOperatorPolicy(t *testing.T) {
	p, err := OperatorPolicy(DefaultPolicy, DefaultObjective)
	if err != nil || p.Name() != DefaultPolicy {
		t.Fatalf("the default policy: %v, %v", p, err)
	}
	if _, err := OperatorPolicy("uniform", "age"); err != nil {
		t.Errorf("uniform for age: %v", err)
	}
	_, err = OperatorPolicy("nutch", "speed")
	if err == nil || !strings.Contains(err.Error(), "Policy:") || !strings.Contains(err.Error(), "Objective:") {
		t.Errorf("nutch for speed: %v, want both fields named", err)
	}
	if err := CheckProbePolicy(DefaultProbePolicy); err != nil {
		t.Errorf("the default probe policy fails its own check: %v", err)
	}
}
