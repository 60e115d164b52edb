package schedule

import (
	"math"
	"testing"
	"time"
)

// TestHazardCountsRestore: a scheduler given the hazard counts of another
// plans with the same hazard of a rate change at the same time, where one
// that starts from nothing has the prior's; counts no scheduler makes are
// refused, as are counts over a scheduler's own.
func TestHazardCountsRestore(t *testing.T) {
	day := 24 * time.Hour
	est := NewEstimator(90*day, 0.25/86400)
	opts := func(o *SchedulerOptions) {
		o.Budget, o.HostRate, o.Priors, o.HalfLife = 10.0/86400, 1, est.Priors, 90*day
	}
	urls := []string{"http://a/steady", "http://a/turns"}
	t0 := time.Unix(1_700_000_000, 0)
	fresh := func() *Scheduler {
		s := newTestScheduler(t, opts)
		for _, u := range urls {
			s.Add(URLInfo{URL: u, Host: "a", Weight: 1, Rate: 0.25 / 86400}, t0)
		}
		return s
	}
	a := fresh()
	sts := make([]EstimateState, len(urls))
	var last time.Time
	for k := range 60 {
		at := t0.Add(time.Duration(k) * day)
		for i, u := range urls {
			// The second URL is steady for 40 days, then changes daily.
			changed := i == 1 && k >= 40
			fb := est.Learn(&sts[i], a.Rate(u), Observation{URL: u, Host: "a", Start: at, End: at.Add(time.Second), OK: true, First: k == 0, Prev: last, Changed: changed})
			a.Done(u, fb)
		}
		last = at
	}
	cps, observed, at := a.HazardCounts()
	if !(observed > 0) || at.IsZero() {
		t.Fatalf("after 60 days of fetches: counts %v change points over %v s at %v", cps, observed, at)
	}

	b := fresh()
	if err := b.RestoreHazardCounts(cps, observed, at); err != nil {
		t.Fatal(err)
	}
	now := last.Add(10 * day) // both fade the counts over the same 10 days
	ha, hb, h0 := a.Snapshot(now).hazard, b.Snapshot(now).hazard, fresh().Snapshot(now).hazard
	if ha != hb {
		t.Errorf("restored scheduler's hazard %g, the original's %g", hb, ha)
	}
	if ha == h0 {
		t.Errorf("the counts left the hazard at the prior's (%g): nothing to restore", h0)
	}

	for _, c := range []struct {
		cps, obs float64
		at       time.Time
	}{{-1, 1, at}, {math.NaN(), 1, at}, {1, math.Inf(1), at}, {1, 1, time.Time{}}} {
		if err := fresh().RestoreHazardCounts(c.cps, c.obs, c.at); err == nil {
			t.Errorf("RestoreHazardCounts(%v, %v, %v) accepted", c.cps, c.obs, c.at)
		}
	}
	if err := a.RestoreHazardCounts(cps, observed, at); err == nil {
		t.Error("counts restored over a scheduler's own")
	}
}
