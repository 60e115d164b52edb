package schedule

import (
	"fmt"
	"math"
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
	est, s := exploreScheduler(t, share)
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
			addLearnt(t, s, url, host, &st, fb, now, now.Add(day))
			n++
		}
	}
	j := planTwice(t, s, now, n)
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

// learnEvery feeds st a page that changes every change, fetched every iv
// n times from t0, with its true Last-Modified when lm is set (none
// otherwise), and returns the last Feedback.
func learnEvery(est Estimator, url, host string, st *EstimateState, t0 time.Time, iv, change time.Duration, n int, lm bool) Feedback {
	var fb Feedback
	var prev time.Time
	for k := range n {
		// Fetched 17 minutes after the changes' phase, so that no fetch
		// falls on a change (a date equal to the response time is not
		// trusted).
		at := t0.Add(time.Duration(k)*iv + 17*time.Minute)
		last := t0.Add(at.Sub(t0) / change * change) // the page's last change
		o := Observation{URL: url, Host: host, Start: at, End: at.Add(time.Second), OK: true, First: k == 0, Prev: prev,
			Changed: k > 0 && last.After(prev)}
		if lm {
			o.LastModified = last
		}
		fb = est.Learn(st, 0, o)
		prev = at
	}
	return fb
}

// TestDatedRecheckIsOneFetch: a URL given up whose Last-Modified the
// estimator trusts is rechecked by one fetch (no probe interval after
// it), at √2 times the frequency of checks a pair would be due at but
// fewer fetches; a URL with only the changed bit is rechecked by a pair.
// The trust is read from the feedback (Done) and from the stored
// estimator state (Add).
func TestDatedRecheckIsOneFetch(t *testing.T) {
	day := 24 * time.Hour
	est, s := exploreScheduler(t, 0.1)
	now := time.Unix(1_700_000_000, 0).Add(200 * day)
	n := 0
	fast := map[string]bool{} // fast URLs: dated or not
	for h := range 4 {
		host := fmt.Sprintf("h%d", h)
		for i := range 30 {
			url := fmt.Sprintf("http://%s/p%d", host, i)
			var st EstimateState
			var fb Feedback
			switch i % 3 {
			case 0, 1:
				// Weekly, fetched every ten days, its date trusted or not:
				// kept by the plan.
				fb = learnEvery(est, url, host, &st, now.Add(-150*day), 10*day, 7*day, 15, i%3 == 0)
			default:
				// Changes every three hours, fetched hourly: fast, given up.
				lm := i%2 == 0
				fb = learnEvery(est, url, host, &st, now.Add(-2*day), time.Hour, 3*time.Hour, 40, lm)
				if fb.Dated != lm {
					t.Fatalf("%s: Dated %v after a history with Last-Modified %v", url, fb.Dated, lm)
				}
				fast[url] = lm
			}
			addLearnt(t, s, url, host, &st, fb, now, now.Add(day))
			n++
		}
	}
	j := planTwice(t, s, now, n)
	var single, pair float64
	var nSingle, nPair int
	for i, id := range j.list {
		url := s.front.url(s.front.entry(id))
		lm, ok := fast[url]
		if !ok {
			continue
		}
		if j.dated.has(i) != lm {
			t.Errorf("%s: dated %v in the plan, want %v (from the stored state)", url, j.dated.has(i), lm)
		}
		f, tau := j.freq[i], j.recheckTau[i]
		switch {
		case j.probe[i] || f <= 0:
			t.Errorf("%s: frequency %g, probed %v: want it given up and rechecked", url, f, j.probe[i])
		case lm && tau != 0:
			t.Errorf("%s (dated): a recheck with a probe %v after it, want one fetch", url, tau)
		case !lm && tau <= 0:
			t.Errorf("%s (changed bit only): a recheck with no probe after it, want a pair", url)
		case lm:
			single += f
			nSingle++
		default:
			pair += f
			nPair++
		}
	}
	if nSingle == 0 || nPair == 0 {
		t.Fatalf("%d dated and %d bit-only URLs rechecked, want some of each", nSingle, nPair)
	}
	// One fetch per check at √2 times the checks' frequency: between half
	// and all of a pair's fetches (half when both are at the longest
	// recheck).
	ratio := (single / float64(nSingle)) / (pair / float64(nPair))
	if ratio < 0.5*(1-1e-9) || ratio > 1/math.Sqrt2*(1+1e-9) {
		t.Errorf("a dated recheck takes %.3f of a pair's fetches, want between 0.5 and 0.707", ratio)
	}
	// The trust follows the feedback: a fetch the estimator did not date
	// clears it, one it dated sets it again.
	url := "http://h0/p2"
	e, ok := s.front.urls.get(url)
	if !ok {
		t.Fatal("no entry for " + url)
	}
	for _, dated := range []bool{false, true} {
		var st EstimateState
		fb := learnEvery(est, url, "h0", &st, now, time.Hour, 3*time.Hour, 40, dated)
		s.Done(url, fb)
		if s.dated.has(int(e.pos)) != dated {
			t.Errorf("after a fetch with Dated %v: dated %v", dated, s.dated.has(int(e.pos)))
		}
	}
}

// addLearnt adds url with the estimator state st left by fb, as a restart
// loads it from the store, due at due.
func addLearnt(t *testing.T, s *Scheduler, url, host string, st *EstimateState, fb Feedback, now, due time.Time) {
	t.Helper()
	b, err := st.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	s.Add(URLInfo{URL: url, Host: host, Weight: 1, Rate: fb.Rate, LastOK: fb.Start, Estimate: b, NextDue: due}, now)
}

// planTwice makes and applies two plans at now over n URLs (the first
// refits the priors, the second plans under them) and returns the second.
func planTwice(t *testing.T, s *Scheduler, now time.Time, n int) *PlanJob {
	t.Helper()
	var j *PlanJob
	for range 2 {
		j = s.Snapshot(now)
		if err := j.Solve(); err != nil {
			t.Fatal(err)
		}
		for !s.Apply(j, now, n) {
		}
	}
	return j
}

// exploreScheduler is the estimator and scheduler the exploration tests
// plan 120 URLs on 4 hosts with: 40 fetches a day, 15 a day per host, a
// 90-day half-life and the given exploration share, under the optimal
// policy, or pol when one is given.
func exploreScheduler(t *testing.T, share float64, pol ...Policy) (Estimator, *Scheduler) {
	t.Helper()
	day := 24 * time.Hour
	est := NewEstimator(90*day, 0.25/86400)
	s := newTestScheduler(t, func(o *SchedulerOptions) {
		o.Budget, o.HostRate, o.ExploreShare = 40.0/86400, 15.0/86400, share
		o.Priors, o.HalfLife = est.Priors, 90*day
		if len(pol) > 0 {
			o.Policy = pol[0]
		}
	})
	return est, s
}
