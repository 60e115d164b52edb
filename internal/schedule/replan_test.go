package schedule

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// randomScheduler adds n URLs on hosts hosts with random rates, weights,
// intervals and due times, as a coordinator loads them from its store.
func randomScheduler(t *testing.T, n, hosts int, seed uint64, policy Policy) (*Scheduler, time.Time) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	now := time.Unix(1_700_000_000, 0)
	s := newTestScheduler(t, func(o *SchedulerOptions) { o.Budget, o.HostRate, o.Policy = float64(n)/3600, 0.5, policy })
	for i := range n {
		h := rng.IntN(hosts)
		iv := time.Duration(1+rng.IntN(7200)) * time.Second
		s.Add(URLInfo{URL: fmt.Sprintf("http://h%d/p%d", h, i), Host: fmt.Sprintf("h%d", h), Weight: rng.Float64() * 2,
			Rate: rng.Float64() / 3600, Interval: iv, NextDue: now.Add(time.Duration(rng.Int64N(int64(iv)))), Disallowed: rng.IntN(50) == 0}, now)
	}
	return s, now
}

// checkInvariants verifies the frontier's heaps and index fields, and that
// the plan-input mirrors agree with the entries.
func checkInvariants(t *testing.T, s *Scheduler) {
	t.Helper()
	for _, h := range s.front.hosts {
		for k, q := range []entryHeap{h.urls, h.polls} {
			strict := k == 1
			for i, e := range entriesOf(s, q.ids) {
				if int(e.index) != i || s.front.hostOf(e) != h {
					t.Fatalf("host %s: entry %s at %d has index %d", h.name, s.front.url(e), i, e.index)
				}
				if e.is(flagStrict) != strict || strict != (s.capOf(e) != nil) {
					t.Fatalf("host %s: entry %s (capture %v) in the wrong heap", h.name, s.front.url(e), s.capOf(e) != nil)
				}
				if p := (i - 1) / 2; i > 0 && q.Less(i, p) {
					t.Fatalf("host %s: URL heap out of order at %d", h.name, i)
				}
			}
		}
		queued := h.queued() > 0 && h.inFlight == 0
		if queued != (h.index >= 0) {
			t.Fatalf("host %s: %d queued, %d in flight, ready index %d", h.name, h.queued(), h.inFlight, h.index)
		}
		if h.index >= 0 && h.in != h.class() {
			t.Fatalf("host %s: in ready heap %d, belongs in %d", h.name, h.in, h.class())
		}
	}
	for c, q := range s.front.ready {
		for i, h := range q {
			if h.index != i || h.in != readyClass(c) {
				t.Fatalf("ready heap %d: host %s at %d has index %d in heap %d", c, h.name, i, h.index, h.in)
			}
			if p := (i - 1) / 2; i > 0 && q.Less(i, p) {
				t.Fatalf("ready heap %d out of order at %d", c, i)
			}
		}
	}
	disallowed := 0
	for i, e := range entriesOf(s, s.list) {
		if e.is(flagDisallowed) {
			disallowed++
		}
		off := e.is(flagDisallowed) || e.is(flagPaused)
		if int(e.pos) != i || s.blocked.has(i) != off || s.planHosts[s.hosts[i]] != s.front.hostOf(e) {
			t.Fatalf("mirror of %s (pos %d) disagrees with the entry", s.front.url(e), i)
		}
		if s.adaptive && e.interval > 0 && !off && (s.fixed == nil || s.fixed[i] == 0) && s.freqs[i] != float64(time.Second)/float64(e.interval) {
			t.Fatalf("mirror of %s: frequency %v for interval %v", s.front.url(e), s.freqs[i], e.interval)
		}
	}
	if len(s.rates) != len(s.list) || len(s.rateSEs) != len(s.list) || len(s.weights) != len(s.list) || (s.adaptive && (len(s.freqs) != len(s.list) || len(s.adModified) != len(s.list))) || (s.fixed != nil && len(s.fixed) != len(s.list)) || len(s.hosts) != len(s.list) {
		t.Fatalf("mirrors of %d/%d/%d/%d/%d elements for %d URLs", len(s.rates), len(s.weights), len(s.blocked), len(s.freqs), len(s.hosts), len(s.list))
	}
	// The flag bits: a word for every 64 elements, none set past the
	// last element (an element added later starts false).
	for name, b := range map[string]bitset{"blocked": s.blocked, "probing": s.probing, "dated": s.dated} {
		if len(b) != bitWords(len(s.list)) {
			t.Fatalf("%s: %d words of bits for %d URLs", name, len(b), len(s.list))
		}
		if r := len(s.list) & 63; r != 0 && b[len(b)-1]>>r != 0 {
			t.Fatalf("%s: bits set past the last of %d URLs: %#x", name, len(s.list), b[len(b)-1])
		}
	}
	if disallowed != s.Disallowed() {
		t.Fatalf("%d disallowed URLs, Disallowed() says %d", disallowed, s.Disallowed())
	}
}

// Re-planning in steps of a few URLs ends in exactly the state of one
// Replan: same intervals, same due times, same plan.
func TestReplanInStepsEqualsReplan(t *testing.T) {
	for _, name := range []string{"uniform", "optimal", "nutch"} {
		t.Run(name, func(t *testing.T) {
			pol := func() Policy {
				p, err := PolicyByName(name, "")
				if err != nil {
					t.Fatal(err)
				}
				return p
			}
			a, now := randomScheduler(t, 3000, 30, 7, pol())
			b, _ := randomScheduler(t, 3000, 30, 7, pol())
			at := now.Add(time.Minute)
			outA, err := a.Replan(at)
			if err != nil {
				t.Fatal(err)
			}
			j := b.Snapshot(at)
			if err := j.Solve(); err != nil {
				t.Fatal(err)
			}
			steps := 1
			for !b.Apply(j, at, 97) {
				steps++
			}
			if name != "nutch" && steps != (3000+96)/97 {
				t.Errorf("%d Apply steps of 97 for 3000 URLs", steps)
			}
			for i, ea := range entriesOf(a, a.list) {
				eb := b.front.entry(b.list[i])
				if ea.interval != eb.interval || ea.nextDue != eb.nextDue {
					t.Fatalf("%s: interval %v due %v in one step, %v %v in steps", a.front.url(ea), ea.interval, ea.nextDue, eb.interval, eb.nextDue)
				}
			}
			planA, atA, useA := a.Plan()
			planB, atB, useB := b.Plan()
			if planA.Freshness != planB.Freshness || useA != useB || !atA.Equal(atB) || planA.Freshness != outA.Freshness || j.Output().Freshness != outA.Freshness {
				t.Errorf("plans differ: %+v %v vs %+v %v", planA.Freshness, useA, planB.Freshness, useB)
			}
			checkInvariants(t, a)
			checkInvariants(t, b)
		})
	}
}

// Between the steps of a re-plan the scheduler keeps working: URLs are
// dispatched and finished, estimates move, a URL becomes disallowed and a
// new one is added. Each keeps what happened to it, and the estimates that
// moved during the plan still count towards the next one.
func TestReplanStepsInterleavedWithFetches(t *testing.T) {
	pol, err := PolicyByName("optimal", "")
	if err != nil {
		t.Fatal(err)
	}
	s, now := randomScheduler(t, 2000, 20, 3, pol)
	if _, err := s.Replan(now); err != nil {
		t.Fatal(err)
	}
	if s.ReplanDue(now) {
		t.Fatal("a plan was just made")
	}
	at := now.Add(time.Hour)
	j := s.Snapshot(at)
	// While the policy solves: every URL moves its estimate; one becomes
	// disallowed; one is added.
	var blocked *entry
	for _, e := range entriesOf(s, s.list) {
		if !e.is(flagDisallowed) {
			blocked = e
			break
		}
	}
	clock := at
	moved := 0
	fetch := func() {
		clock = clock.Add(time.Second)
		d, ok, _ := s.Next(clock)
		if !ok {
			return
		}
		fb := Feedback{Start: clock, End: clock.Add(time.Second), OK: true, Rate: s.Rate(d.URL) * 1.5}
		if d.URL == s.front.url(blocked) {
			fb.Disallowed = true
		}
		s.Done(d.URL, fb)
		moved++
	}
	for range 300 {
		fetch()
	}
	s.Done(s.front.url(blocked), Feedback{Start: clock, End: clock, OK: false, Disallowed: true, Rate: s.rates[blocked.pos]})
	s.Add(URLInfo{URL: "http://late/x", Host: "late", Weight: 1, Rate: 1.0 / 3600, Interval: 42 * time.Second, NextDue: clock.Add(time.Minute)}, clock)
	if err := j.Solve(); err != nil {
		t.Fatal(err)
	}
	for !s.Apply(j, clock, 64) {
		for range 3 {
			fetch()
		}
		checkInvariants(t, s)
	}
	checkInvariants(t, s)
	if !blocked.is(flagDisallowed) || blocked.interval != s.o.DisallowRetry {
		t.Errorf("URL disallowed during the plan: disallowed %v, interval %v, want %v", blocked.is(flagDisallowed), blocked.interval, s.o.DisallowRetry)
	}
	if iv := s.Interval("http://late/x"); iv != 42*time.Second {
		t.Errorf("URL added during the plan has interval %v, want its own 42s until the next plan", iv)
	}
	if _, planAt, _ := s.Plan(); !planAt.Equal(at) {
		t.Errorf("plan made at %v, want the snapshot's %v", planAt, at)
	}
	if moved < 200 {
		t.Fatalf("only %d fetches during the plan", moved)
	}
	if !s.ReplanDue(at) {
		t.Errorf("%d estimates moved during the plan (of %d URLs), yet no re-plan is due", s.moved, s.Len())
	}
	for i, e := range entriesOf(s, s.list[:j.size()]) {
		if e.is(flagDisallowed) || j.freq[i] <= 0 {
			continue
		}
		want := max(time.Duration(float64(time.Second)/j.freq[i]), time.Millisecond)
		if e.interval != want && s.capOf(e) == nil {
			t.Fatalf("%s: interval %v, plan says %v", s.front.url(e), e.interval, want)
		}
	}
}

// Snapshot copies what the policy reads: changes after it do not reach
// the running solve.
func TestSnapshotIsACopy(t *testing.T) {
	s, now := randomScheduler(t, 100, 5, 1, DefaultSchedulerOptions().Policy)
	j := s.Snapshot(now)
	rate := j.in.Rates[0]
	s.Done(s.front.url(s.front.entry(s.list[0])), Feedback{Start: now, End: now, OK: true, Rate: rate * 10})
	if j.in.Rates[0] != rate || s.rates[0] != rate*10 {
		t.Errorf("snapshot rate %v (want %v unchanged), live %v (want %v)", j.in.Rates[0], rate, s.rates[0], rate*10)
	}
}

// Disallowed and CaptureStatus are kept as URLs change, not recounted.
func TestCountsFollowChanges(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	s := newTestScheduler(t, func(o *SchedulerOptions) { o.Budget, o.HostRate = 1, 1 })
	s.Add(URLInfo{URL: "http://a/1", Host: "a", Weight: 1, Disallowed: true}, now)
	s.Add(URLInfo{URL: "http://a/2", Host: "a", Weight: 1, Capture: true, Period: time.Hour}, now)
	s.Add(URLInfo{URL: "http://b/1", Host: "b", Weight: 1, Capture: true}, now)
	if s.Disallowed() != 1 || len(s.CaptureStatus(10)) != 2 {
		t.Fatalf("disallowed %d, capture URLs %d; want 1 and 2", s.Disallowed(), len(s.CaptureStatus(10)))
	}
	s.Done("http://a/1", Feedback{Start: now, End: now, OK: true})
	s.Add(URLInfo{URL: "http://b/1", Host: "b", Weight: 1}, now) // no longer capture
	if s.Disallowed() != 0 {
		t.Errorf("disallowed %d after the URL was allowed again", s.Disallowed())
	}
	if cs := s.CaptureStatus(10); len(cs) != 1 || cs[0].URL != "http://a/2" {
		t.Errorf("capture status %+v, want only http://a/2", cs)
	}
	checkInvariants(t, s)
}

// Paused URLs take no budget and no exploration in the split re-plan as in
// one Replan, and keep the interval they had for when they are resumed.
func TestReplanInStepsWithPausedURLs(t *testing.T) {
	for _, name := range []string{"uniform", "optimal", "nutch"} {
		t.Run(name, func(t *testing.T) {
			pol := func() Policy {
				p, err := PolicyByName(name, "")
				if err != nil {
					t.Fatal(err)
				}
				return p
			}
			a, now := randomScheduler(t, 2000, 20, 11, pol())
			b, _ := randomScheduler(t, 2000, 20, 11, pol())
			var paused []string
			before := map[string]time.Duration{}
			for i, e := range entriesOf(a, a.list) {
				if i%37 == 0 {
					paused = append(paused, a.front.url(e))
					before[a.front.url(e)] = e.interval
				}
			}
			if a.Pause(paused) != len(paused) || b.Pause(paused) != len(paused) {
				t.Fatal("not every URL paused")
			}
			at := now.Add(time.Minute)
			if _, err := a.Replan(at); err != nil {
				t.Fatal(err)
			}
			j := b.Snapshot(at)
			if err := j.Solve(); err != nil {
				t.Fatal(err)
			}
			for !b.Apply(j, at, 101) {
			}
			for i, ea := range entriesOf(a, a.list) {
				eb := b.front.entry(b.list[i])
				if ea.interval != eb.interval || ea.nextDue != eb.nextDue {
					t.Fatalf("%s: interval %v due %v in one step, %v %v in steps", a.front.url(ea), ea.interval, ea.nextDue, eb.interval, eb.nextDue)
				}
				if ea.is(flagPaused) {
					if j.freq[i] != 0 || j.in.Weights[i] != 0 {
						t.Fatalf("paused %s: plan frequency %v, weight %v; want 0 and 0", a.front.url(ea), j.freq[i], j.in.Weights[i])
					}
					if ea.interval != before[a.front.url(ea)] || ea.index >= 0 {
						t.Fatalf("paused %s: interval %v (was %v), queued at %d", a.front.url(ea), ea.interval, before[a.front.url(ea)], ea.index)
					}
				}
			}
			_, _, useA := a.Plan()
			_, _, useB := b.Plan()
			if useA != useB {
				t.Errorf("budget in use %v in one step, %v in steps", useA, useB)
			}
			checkInvariants(t, a)
			checkInvariants(t, b)
		})
	}
}

// The console's lifecycle operations run between the steps of a re-plan:
// URLs removed (queued and in flight), paused and added while the policy
// solves and while the plan is applied leave the scheduler consistent, and
// the plan lands on the URLs it was made for.
func TestLifecycleBetweenReplanSteps(t *testing.T) {
	pol, err := PolicyByName("optimal", "")
	if err != nil {
		t.Fatal(err)
	}
	s, now := randomScheduler(t, 2000, 20, 5, pol)
	if _, err := s.Replan(now); err != nil {
		t.Fatal(err)
	}
	at := now.Add(time.Hour)
	// Two fetches out when the URLs are removed.
	var inFlight []string
	for len(inFlight) < 2 {
		d, ok, _ := s.Next(at)
		if !ok {
			t.Fatal("nothing due")
		}
		inFlight = append(inFlight, d.URL)
	}
	j := s.Snapshot(at)
	removed := append([]string(nil), inFlight...)
	for i := 0; i < len(s.list); i += 41 {
		removed = append(removed, s.front.url(s.front.entry(s.list[i])))
	}
	if got := s.Remove(removed); got != len(removed) {
		t.Fatalf("removed %d of %d", got, len(removed))
	}
	checkInvariants(t, s)
	var paused []string
	before := map[string]time.Duration{}
	for i := 7; i < len(s.list); i += 53 {
		paused = append(paused, s.front.url(s.front.entry(s.list[i])))
		before[s.front.url(s.front.entry(s.list[i]))] = s.front.entry(s.list[i]).interval
	}
	s.Pause(paused)
	s.Add(URLInfo{URL: "http://late/x", Host: "late", Weight: 1, Rate: 1.0 / 3600, Interval: 42 * time.Second, NextDue: at}, at)
	if err := j.Solve(); err != nil {
		t.Fatal(err)
	}
	for i, url := range inFlight {
		s.Done(url, Feedback{Start: at, End: at.Add(time.Duration(i+1) * time.Second), OK: true})
	}
	steps := 0
	for !s.Apply(j, at, 64) {
		if steps++; steps == 5 {
			// Removing during the apply too.
			s.Remove([]string{s.front.url(s.front.entry(s.list[len(s.list)/2])), s.front.url(s.front.entry(s.list[3]))})
		}
		checkInvariants(t, s)
	}
	checkInvariants(t, s)
	for _, url := range removed {
		if s.Has(url) {
			t.Fatalf("%s removed, still known", url)
		}
	}
	if s.Len() != 2000-len(removed)-2+1 {
		t.Errorf("%d URLs, want %d", s.Len(), 2000-len(removed)-2+1)
	}
	if iv := s.Interval("http://late/x"); iv != 42*time.Second {
		t.Errorf("URL added during the plan has interval %v, want its own 42s", iv)
	}
	// Every URL of the snapshot still known got its own plan frequency,
	// and its given-up view is its own.
	for i, e := range entriesOf(s, j.list) {
		if e.pos < 0 {
			continue
		}
		v, ok := s.View(s.front.url(e), at)
		if !ok {
			t.Fatalf("%s: no view", s.front.url(e))
		}
		if e.is(flagPaused) {
			if e.interval != before[s.front.url(e)] {
				t.Fatalf("paused %s: interval %v, was %v", s.front.url(e), e.interval, before[s.front.url(e)])
			}
			continue
		}
		if wantGivenUp := !e.is(flagDisallowed) && j.out.Freq[i] <= 0 && s.weights[e.pos] > 0; v.GivenUp != wantGivenUp {
			t.Fatalf("%s: given up %v, plan frequency %v", s.front.url(e), v.GivenUp, j.out.Freq[i])
		}
		if e.is(flagDisallowed) || j.freq[i] <= 0 {
			continue
		}
		if want := max(time.Duration(float64(time.Second)/j.freq[i]), time.Millisecond); e.interval != want {
			t.Fatalf("%s: interval %v, plan says %v", s.front.url(e), e.interval, want)
		}
	}
	// The host of a fetch in flight when its URL was removed was released.
	for _, h := range s.front.hosts {
		if h.inFlight != 0 {
			t.Errorf("host %s: %d in flight, none dispatched", h.name, h.inFlight)
		}
	}
	if p, err := s.Replan(at); err != nil {
		t.Fatal(err)
	} else if len(p.Freq) != s.Len() {
		t.Errorf("plan over %d elements for %d URLs", len(p.Freq), s.Len())
	}
	checkInvariants(t, s)
}
