package schedule

import (
	"fmt"
	"testing"
	"time"
)

// TestLearnRestartsAtChange: a page that stayed unchanged over two years
// of monthly fetches and then changes at every fetch is found to have
// changed its rate within three fetches (the Bayesian change-point test
// under the population prior), its statistics restart, and its rate
// follows the new one; while it was steady no change point was found.
func TestLearnRestartsAtChange(t *testing.T) {
	day := 24 * time.Hour
	est := NewEstimator(90*day, 0.25/86400)
	const url, host = "http://h/p/1", "h"
	var st EstimateState
	t0 := time.Unix(1_700_000_000, 0)
	prev := time.Time{}
	var fb Feedback
	at := t0
	for k := range 24 {
		fb = est.Learn(&st, 0, Observation{URL: url, Host: host, Start: at, End: at.Add(time.Second), OK: true, First: k == 0, Prev: prev})
		if fb.ChangePoint {
			t.Fatalf("steady page: change point at fetch %d", k)
		}
		prev, at = at, at.Add(30*day)
	}
	slow := fb.Rate
	found := 0
	for k := 1; k <= 6; k++ {
		fb = est.Learn(&st, 0, Observation{URL: url, Host: host, Start: at, End: at.Add(time.Second), OK: true, Prev: prev, Changed: true})
		if fb.ChangePoint && found == 0 {
			found = k
		}
		prev, at = at, at.Add(30*day)
	}
	if found == 0 || found > 3 {
		t.Fatalf("change found at fetch %d after the switch, want within 3", found)
	}
	if st.State.ChangePoints() == 0 {
		t.Error("the state did not restart")
	}
	if fb.Rate < 10*slow {
		t.Errorf("rate after six changed monthly fetches %.3g/day, before %.3g/day: want at least ten times faster", fb.Rate*86400, slow*86400)
	}
}

// TestRestartAtCollectionHazard: when the collection shows more rate
// changes than the prior hazard (the scheduler's estimate, shared through
// the PriorSet), a URL restarts on weaker evidence, but the change point
// it reports for the hazard estimate is still the one found at the prior
// hazard (or not at all), so that a wave does not feed on its own
// restarts.
func TestRestartAtCollectionHazard(t *testing.T) {
	day := 24 * time.Hour
	run := func(hazard float64) (restartAt, foundAt int) {
		est := NewEstimator(90*day, 0.25/86400)
		est.Priors.setHazard(hazard)
		var st EstimateState
		t0 := time.Unix(1_700_000_000, 0)
		prev, at := time.Time{}, t0
		for k := range 12 {
			est.Learn(&st, 0, Observation{URL: "http://h/p", Host: "h", Start: at, End: at, OK: true, First: k == 0, Prev: prev})
			prev, at = at, at.Add(30*day)
		}
		cps := st.State.ChangePoints()
		for k := 1; k <= 8; k++ {
			fb := est.Learn(&st, 0, Observation{URL: "http://h/p", Host: "h", Start: at, End: at, OK: true, Prev: prev, Changed: true})
			if st.State.ChangePoints() > cps && restartAt == 0 {
				restartAt = k
			}
			if fb.ChangePoint && foundAt == 0 {
				foundAt = k
			}
			prev, at = at, at.Add(30*day)
		}
		return restartAt, foundAt
	}
	r0, f0 := run(0)
	r1, f1 := run(100 / (hazardPriorTime * (90 * day).Seconds())) // 100× the prior's
	if r0 == 0 || f0 != r0 {
		t.Fatalf("prior hazard: restart at %d, change point at %d; want both, together", r0, f0)
	}
	if r1 == 0 || r1 >= r0 {
		t.Errorf("a hundred times the hazard: restart at fetch %d, at the prior hazard %d; want earlier", r1, r0)
	}
	// A restart made at the collection's hazard before the prior's test
	// fires ends the window that test would have fired on: the change is
	// then not counted (the hazard estimate undercounts a wave rather than
	// feeding on it), and it is never counted earlier.
	if f1 != 0 && f1 < f0 {
		t.Errorf("change point counted at fetch %d with the collection's hazard, before the prior's test found it (%d)", f1, f0)
	}
}

// TestGivenUpAlwaysRechecked: with an exploration share too small for
// the probes of every unresolved URL, every URL the plan gives up on is
// still explored (probed, or rechecked when its probe finds no room), so
// none waits the longest recheck while there is room to recheck it.
func TestGivenUpAlwaysRechecked(t *testing.T) {
	const share = 0.03
	day := 24 * time.Hour
	est := NewEstimator(90*day, 0.25/86400)
	s := NewScheduler(SchedulerOptions{Budget: 40.0 / 86400, HostRate: 15.0 / 86400, ExploreShare: share, Priors: est.Priors, HalfLife: 90 * day})
	now := time.Unix(1_700_000_000, 0).Add(200 * day)
	n := 0
	for h := range 4 {
		host := fmt.Sprintf("h%d", h)
		for i := range 30 {
			url := fmt.Sprintf("http://%s/p%d", host, i)
			var st EstimateState
			fb := learnAllChanged(est, url, host, &st, now.Add(-150*day), 30*day, 6)
			if i%3 == 0 {
				// A third changed at every daily fetch too: fast, given up.
				fb = learnAllChanged(est, url, host, &st, now.Add(-10*day), day, 8)
			}
			b, err := st.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			s.Add(URLInfo{URL: url, Host: host, Weight: 1, Rate: fb.Rate, LastOK: fb.Start, Estimate: b, NextDue: now.Add(day)}, now)
			n++
		}
	}
	var j *PlanJob
	for range 2 {
		j = s.Snapshot(now)
		if err := j.Solve(); err != nil {
			t.Fatal(err)
		}
		for !s.Apply(j, now, n) {
		}
	}
	zero, rechecks, probes := 0, 0, 0
	for i, f := range j.freq {
		switch {
		case f <= 0:
			zero++
		case j.recheckTau[i] > 0:
			rechecks++
		case j.probe[i]:
			probes++
		}
	}
	t.Logf("%d URLs: %d probed, %d rechecked, %d with no frequency", n, probes, rechecks, zero)
	if zero > 0 {
		t.Errorf("%d URLs given up with no recheck although the share has room for all rechecks", zero)
	}
	if rechecks == 0 {
		t.Error("no URL rechecked")
	}
}
