package schedule

import (
	"math"
	"strings"
	"testing"
	"time"
)

// newTestScheduler is NewScheduler on DefaultSchedulerOptions as set
// changes them; options NewScheduler refuses fail tb.
func newTestScheduler(tb testing.TB, set func(*SchedulerOptions)) *Scheduler {
	tb.Helper()
	o := DefaultSchedulerOptions()
	set(&o)
	s, err := NewScheduler(o)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// DefaultSchedulerOptions pass Validate, NewScheduler keeps them as they
// are, and their policy is the one the CLI defaults to.
func TestDefaultSchedulerOptions(t *testing.T) {
	d := DefaultSchedulerOptions()
	if err := d.Validate(); err != nil {
		t.Fatalf("the defaults refused: %v", err)
	}
	s, err := NewScheduler(d)
	if err != nil {
		t.Fatal(err)
	}
	o := s.o
	if d.Budget != o.Budget || d.HostRate != o.HostRate || d.ExploreShare != o.ExploreShare || d.Replan != o.Replan || d.DisallowRetry != o.DisallowRetry || d.HalfLife != o.HalfLife || d.PriorRate != o.PriorRate || d.Policy.Name() != o.Policy.Name() {
		t.Errorf("DefaultSchedulerOptions %+v, the scheduler's %+v", d, o)
	}
	if got := s.Policy().Name(); got != DefaultPolicy {
		t.Errorf("default policy %q, want %q", got, DefaultPolicy)
	}
}

// NewScheduler refuses what Validate refuses, the zero options first: a
// zero field is not a default.
func TestNewSchedulerRefusesInvalidOptions(t *testing.T) {
	if _, err := NewScheduler(SchedulerOptions{}); err == nil || !strings.Contains(err.Error(), "Budget:") {
		t.Errorf("zero options: %v, want an error naming Budget", err)
	}
	o := DefaultSchedulerOptions()
	o.ExploreShare = 0
	if s, err := NewScheduler(o); err == nil || s != nil || !strings.Contains(err.Error(), "ExploreShare:") {
		t.Errorf("a zero ExploreShare: %v, %v, want no scheduler and an error naming the field", s, err)
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
