package schedule

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// newLifeSched has n URLs on two hosts, all due at t0, under the optimal plan.
func newLifeSched(t *testing.T, n int) *Scheduler {
	t.Helper()
	pol, err := PolicyByName("optimal", "freshness")
	if err != nil {
		t.Fatal(err)
	}
	s := newTestScheduler(t, func(o *SchedulerOptions) { o.Budget, o.HostRate, o.Policy = 10, 100, pol })
	for i := range n {
		s.Add(URLInfo{URL: fmt.Sprintf("http://h%d/%d", i%2, i), Host: fmt.Sprintf("h%d", i%2), Weight: 1, Rate: 0.1, NextDue: t0}, t0)
	}
	if _, err := s.Replan(t0); err != nil {
		t.Fatal(err)
	}
	return s
}

// drain dispatches and completes everything due over [from, to) on a
// virtual clock with 10 ms steps and returns how often each URL went out.
func drain(s *Scheduler, from, to time.Time) map[string]int {
	got := map[string]int{}
	for now := from; now.Before(to); now = now.Add(10 * time.Millisecond) {
		for {
			d, ok, _ := s.Next(now)
			if !ok {
				break
			}
			got[d.URL]++
			s.Done(d.URL, Feedback{Start: now, End: now, OK: true})
		}
	}
	return got
}

func TestPauseStopsAndResumeRestarts(t *testing.T) {
	s := newLifeSched(t, 6)
	paused := []string{"http://h0/0", "http://h1/1"}
	if n := s.Pause(append(paused, "http://nosuch/")); n != 2 {
		t.Fatalf("paused %d, want 2", n)
	}
	if n := s.Pause(paused); n != 0 {
		t.Errorf("pausing again paused %d", n)
	}
	if _, err := s.Replan(t0); err != nil {
		t.Fatal(err)
	}
	_, _, inUse := s.Plan()
	if math.Abs(inUse-10) > 1e-9 {
		t.Errorf("budget in use %v: the 4 active URLs should share all 10/s", inUse)
	}
	got := drain(s, t0, t0.Add(5*time.Second))
	for _, u := range paused {
		if got[u] != 0 {
			t.Errorf("paused %s fetched %d times", u, got[u])
		}
		if v, _ := s.View(u, t0); !v.Paused || v.Due || v.State == StateGivenUp {
			t.Errorf("view of paused %s: %+v", u, v)
		}
	}
	if got["http://h0/2"] < 5 {
		t.Errorf("an active URL was fetched only %d times in 5 s", got["http://h0/2"])
	}
	now := t0.Add(5 * time.Second)
	if n := s.Resume(paused, now); n != 2 {
		t.Fatalf("resumed %d", n)
	}
	if _, err := s.Replan(now); err != nil {
		t.Fatal(err)
	}
	got = drain(s, now, now.Add(5*time.Second))
	for _, u := range paused {
		if got[u] < 5 {
			t.Errorf("resumed %s fetched %d times in 5 s", u, got[u])
		}
	}
}

func TestPauseWhileInFlight(t *testing.T) {
	s := newLifeSched(t, 2)
	d, ok, _ := s.Next(t0)
	if !ok {
		t.Fatal("nothing due")
	}
	s.Pause([]string{d.URL})
	s.Done(d.URL, Feedback{Start: t0, End: t0, OK: true})
	if got := drain(s, t0, t0.Add(3*time.Second)); got[d.URL] != 0 {
		t.Errorf("a URL paused in flight was requeued: %d fetches", got[d.URL])
	}
}

func TestRemoveQueuedAndInFlight(t *testing.T) {
	s := newTestScheduler(t, func(o *SchedulerOptions) { o.Budget, o.HostRate = 10, 1 })
	for i := range 3 {
		s.Add(URLInfo{URL: fmt.Sprintf("http://h/%d", i), Host: "h", Weight: 1, Rate: 0.1, NextDue: t0}, t0)
	}
	if _, err := s.Replan(t0); err != nil {
		t.Fatal(err)
	}
	d, ok, _ := s.Next(t0)
	if !ok {
		t.Fatal("nothing due")
	}
	other := "http://h/1"
	if d.URL == other {
		other = "http://h/2"
	}
	if n := s.Remove([]string{d.URL, other}); n != 2 {
		t.Fatalf("removed %d", n)
	}
	if s.Len() != 1 || s.Has(d.URL) || s.Has(other) {
		t.Fatalf("after remove: len %d", s.Len())
	}
	// The host stays busy while the removed URL's fetch is out.
	if _, ok, _ := s.Next(t0.Add(time.Hour)); ok {
		t.Fatal("host dispatched while a removed URL's fetch was in flight")
	}
	// Re-adding the URL meanwhile gives a fresh entry that the old
	// fetch's result must not touch.
	s.Add(URLInfo{URL: d.URL, Host: "h", Weight: 1, Rate: 0.1, NextDue: t0}, t0)
	s.Done(d.URL, Feedback{Start: t0, End: t0.Add(time.Second), OK: true})
	if _, ok, _ := s.Next(t0.Add(1500 * time.Millisecond)); ok {
		t.Error("host not spaced from the removed URL's fetch")
	}
	if _, err := s.Replan(t0.Add(2 * time.Second)); err != nil {
		t.Fatal(err)
	}
	got := drain(s, t0.Add(2*time.Second), t0.Add(10*time.Second))
	if got[d.URL] == 0 || got[other] != 0 {
		t.Errorf("after release: %v", got)
	}
	// Abort also releases an orphan.
	d2, ok, _ := s.Next(t0.Add(time.Hour))
	if !ok {
		t.Fatal("nothing due")
	}
	s.Remove([]string{d2.URL})
	s.Abort(d2.URL, t0.Add(time.Hour), t0.Add(time.Hour))
	s.Add(URLInfo{URL: "http://h/9", Host: "h", Weight: 1, Rate: 0.1, NextDue: t0}, t0)
	if _, ok, _ := s.Next(t0.Add(2 * time.Hour)); !ok {
		t.Error("host stuck after an aborted orphan")
	}
}

func TestRemoveKeepsPlanAligned(t *testing.T) {
	pol, err := PolicyByName("optimal", "freshness")
	if err != nil {
		t.Fatal(err)
	}
	s := newTestScheduler(t, func(o *SchedulerOptions) { o.Budget, o.HostRate, o.Policy = 1, 100, pol })
	// Fast-changing URLs are given up on under a small budget; the slow
	// ones are not.
	for i := range 10 {
		rate := 0.01
		if i%2 == 1 {
			rate = 50
		}
		s.Add(URLInfo{URL: fmt.Sprintf("http://h/%02d", i), Host: "h", Weight: 1, Rate: rate, NextDue: t0}, t0)
	}
	if _, err := s.Replan(t0); err != nil {
		t.Fatal(err)
	}
	givenUp := s.URLsIn(StateGivenUp, t0)
	slices.Sort(givenUp)
	if !slices.Equal(givenUp, []string{"http://h/01", "http://h/03", "http://h/05", "http://h/07", "http://h/09"}) {
		t.Fatalf("given up %v", givenUp)
	}
	s.Remove([]string{"http://h/00", "http://h/03"})
	if got := s.URLsIn(StateGivenUp, t0); !slices.Equal(slices.Sorted(slices.Values(got)), []string{"http://h/01", "http://h/05", "http://h/07", "http://h/09"}) {
		t.Errorf("given up after remove %v", got)
	}
	if v, _ := s.View("http://h/02", t0); v.GivenUp {
		t.Error("a slow URL shifted into a given-up slot")
	}
	if p, err := s.Replan(t0); err != nil {
		t.Fatal(err)
	} else if len(p.Freq) != 8 {
		t.Errorf("plan over %d elements, want 8", len(p.Freq))
	}
	due := s.URLsIn(StateDue, t0.Add(time.Hour))
	if len(due) != 4 {
		t.Errorf("due %v", due)
	}
}

func TestHostViews(t *testing.T) {
	s := newLifeSched(t, 6)
	s.Pause([]string{"http://h0/0"})
	hv := s.HostViews(nil)
	if len(hv) != 2 || hv[0].Host != "h0" || hv[0].URLs != 3 || hv[0].Paused != 1 || hv[1].URLs != 3 {
		t.Fatalf("%+v", hv)
	}
	if math.Abs(hv[0].Cap-100) > 1e-9 {
		t.Errorf("cap %v, want the host rate 100", hv[0].Cap)
	}
	if hv[0].Planned <= 0 || hv[0].Queued != 2 {
		t.Errorf("planned %v queued %d", hv[0].Planned, hv[0].Queued)
	}
}

// TestHostTallyInChunks walks the schedule a chunk at a time, as the
// console does, with a URL of a new host added between two chunks: the
// counts equal a whole walk's, and the new host's URL, added behind the
// walk's position, is counted.
func TestHostTallyInChunks(t *testing.T) {
	s := newLifeSched(t, 9)
	s.Pause([]string{"http://h1/3"})
	var tally HostTally
	if s.TallyHosts(&tally, 4) {
		t.Fatal("a walk of 9 URLs done after 4")
	}
	s.Add(URLInfo{URL: "http://h2/9", Host: "h2", Weight: 1, Rate: 0.1, NextDue: t0}, t0)
	for chunks := 1; !s.TallyHosts(&tally, 4); chunks++ {
		if chunks > 3 {
			t.Fatal("walk never ends")
		}
	}
	got, want := s.HostViews(&tally), s.HostViews(nil)
	if len(got) != 3 || !slices.Equal(got, want) {
		t.Fatalf("chunked %+v\nwhole %+v", got, want)
	}
	if got[1].Paused != 1 || got[2].URLs != 1 || got[0].URLs+got[1].URLs != 9 {
		t.Errorf("counts %+v", got)
	}
	// A walk that has not counted a host yet leaves its counts at zero.
	if hv := s.HostViews(&HostTally{}); hv[0].URLs != 0 || hv[0].Cap != want[0].Cap {
		t.Errorf("empty tally %+v", hv[0])
	}
}

func TestFreshnessBand(t *testing.T) {
	s := newLifeSched(t, 4)
	mid, lo, hi := s.FreshnessBand()
	if lo != mid || hi != mid {
		t.Errorf("no standard errors: band [%v, %v] around %v", lo, hi, mid)
	}
	// The plan's freshness is averaged over each URL's posterior summary,
	// whose quantiles are stored as float32: equal to within rounding.
	if p, _, _ := s.Plan(); math.Abs(p.Freshness-mid) > 1e-6 {
		t.Errorf("band centre %v, plan's freshness %v", mid, p.Freshness)
	}
	for i := range s.rateSEs {
		s.rateSEs[i] = 0.05
	}
	s.moved = 100
	p, err := s.Replan(t0.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	mid2, lo2, hi2 := s.FreshnessBand()
	if !(lo2 < mid2 && mid2 < hi2) {
		t.Errorf("band [%v, %v] around %v", lo2, hi2, mid2)
	}
	// The band is the freshness at the ends of each rate's interval.
	f := p.Freq[0] // every URL has the same rate, weight and frequency
	r := 0.1
	want := -math.Expm1(-r*math.Exp(bandZ*0.05/r)/f) / (r * math.Exp(bandZ*0.05/r) / f)
	if math.Abs(lo2-want) > 1e-9 {
		t.Errorf("lower end %v, want %v", lo2, want)
	}
}

// A capture URL served before its due time (a saturated host is served as
// soon as it is free) must get a next due time after the one served: the
// same due time again would give the same task id, which JetStream drops
// as a duplicate, and the URL would stay in flight.
func TestCaptureEarlyFetchMovesOn(t *testing.T) {
	s := newTestScheduler(t, func(o *SchedulerOptions) { o.Budget, o.HostRate = 10, 100 })
	u := "http://h/cap"
	s.Add(URLInfo{URL: u, Host: "h", Weight: 1, Rate: 0.1, Capture: true, Period: 10 * time.Second, Polls: 2, NextDue: t0}, t0)
	if _, err := s.Replan(t0); err != nil {
		t.Fatal(err)
	}
	now := t0
	var served []time.Time
	for range 6 {
		d, ok, next := s.Next(now)
		if !ok {
			now = next
			d, ok, _ = s.Next(now)
			if !ok {
				t.Fatal("nothing due")
			}
		}
		served = append(served, d.Due)
		// The fetch starts 100 ms before the due time it serves.
		start := d.Due.Add(-100 * time.Millisecond)
		s.Done(u, Feedback{Start: start, End: start, OK: true})
		v, _ := s.View(u, now)
		if !v.NextDue.After(d.Due) {
			t.Fatalf("served due %v, next due %v: not later", d.Due, v.NextDue)
		}
		now = v.NextDue
	}
	t.Logf("served %v", served)
}

// A URL loaded paused (a restart) is known but never dispatched until
// resumed.
func TestAddPaused(t *testing.T) {
	s := newTestScheduler(t, func(o *SchedulerOptions) { o.Budget, o.HostRate = 10, 100 })
	s.Add(URLInfo{URL: "http://h/p", Host: "h", Weight: 1, Rate: 0.1, NextDue: t0, Paused: true}, t0)
	s.Add(URLInfo{URL: "http://h/a", Host: "h", Weight: 1, Rate: 0.1, NextDue: t0}, t0)
	if _, err := s.Replan(t0); err != nil {
		t.Fatal(err)
	}
	got := drain(s, t0, t0.Add(2*time.Second))
	if got["http://h/p"] != 0 || got["http://h/a"] == 0 {
		t.Errorf("fetches %v", got)
	}
	if v, ok := s.View("http://h/p", t0); !ok || !v.Paused {
		t.Errorf("view %+v %v", v, ok)
	}
	s.Resume([]string{"http://h/p"}, t0.Add(2*time.Second))
	if got := drain(s, t0.Add(2*time.Second), t0.Add(4*time.Second)); got["http://h/p"] == 0 {
		t.Errorf("resumed URL not fetched: %v", got)
	}
}
