package schedule

import (
	"testing"
	"time"
)

// drainWith is drain with each fetch's feedback from fb (the URL and the
// time it went out).
func drainWith(s *Scheduler, from, to time.Time, fb func(url string, now time.Time) Feedback) map[string][]time.Time {
	got := map[string][]time.Time{}
	for now := from; now.Before(to); now = now.Add(10 * time.Millisecond) {
		for {
			d, ok, _ := s.Next(now)
			if !ok {
				break
			}
			got[d.URL] = append(got[d.URL], now)
			s.Done(d.URL, fb(d.URL, now))
		}
	}
	return got
}

// A URL whose fetch failed is not handed out before its RetryAt, however
// free or saturated its host, and a plan does not bring it back; while it
// backs off it takes no share of the plan, which its host's other URLs
// get. A success puts it back on its plan.
func TestBackoffHoldsURLUntilRetryAt(t *testing.T) {
	s := newLifeSched(t, 4)
	const bad = "http://h0/0"
	backoff := 2 * time.Second
	failing := true
	got := drainWith(s, t0, t0.Add(10*time.Second), func(url string, now time.Time) Feedback {
		if url == bad && failing {
			return Feedback{Start: now, End: now, RetryAt: now.Add(backoff)}
		}
		return Feedback{Start: now, End: now, OK: true}
	})
	times := got[bad]
	for i := 1; i < len(times); i++ {
		if gap := times[i].Sub(times[i-1]); gap < backoff {
			t.Fatalf("fetched %s after %s, before its backoff of %s ended (fetches %v)", bad, gap, backoff, times)
		}
	}
	if len(times) > 6 {
		t.Errorf("%d fetches of the failing URL in 10 s with a 2 s backoff", len(times))
	}
	if v, _ := s.View(bad, t0.Add(10*time.Second)); !v.Backoff || v.State == StateGivenUp {
		t.Errorf("view of the URL backing off: %+v", v)
	}
	// A plan neither brings it back nor gives it a share.
	now := t0.Add(10 * time.Second)
	before, _ := s.View(bad, now)
	if _, err := s.Replan(now); err != nil {
		t.Fatal(err)
	}
	after, _ := s.View(bad, now)
	if !after.NextDue.Equal(before.NextDue) {
		t.Errorf("a plan moved the backoff's end from %v to %v", before.NextDue, after.NextDue)
	}
	if len(got["http://h0/2"]) < 10 {
		t.Errorf("the healthy URL of the same host was fetched %d times in 10 s", len(got["http://h0/2"]))
	}
	// Healthy again: back on the plan's interval.
	failing = false
	later := drainWith(s, now, now.Add(20*time.Second), func(url string, now time.Time) Feedback {
		return Feedback{Start: now, End: now, OK: true}
	})
	if v, _ := s.View(bad, now.Add(20*time.Second)); v.Backoff {
		t.Error("still backing off after a success")
	}
	if n, m := len(later[bad]), len(later["http://h0/2"]); n < m/2 {
		t.Errorf("recovered URL fetched %d times in 20 s, its healthy neighbour %d", n, m)
	}
}

// A URL found gone is held like a paused one: not queued, out of the plan,
// counted; seeding it again (Add with Gone false) or resuming it brings it
// back at once.
func TestGoneHeldUntilSeededOrResumed(t *testing.T) {
	s := newLifeSched(t, 4)
	gone := []string{"http://h0/0", "http://h1/1"}
	got := drainWith(s, t0, t0.Add(5*time.Second), func(url string, now time.Time) Feedback {
		for _, g := range gone {
			if url == g {
				return Feedback{Start: now, End: now, Gone: true}
			}
		}
		return Feedback{Start: now, End: now, OK: true}
	})
	for _, u := range gone {
		if n := len(got[u]); n != 1 {
			t.Errorf("%s fetched %d times: once, then gone", u, n)
		}
		if v, _ := s.View(u, t0.Add(5*time.Second)); !v.Gone || v.Due {
			t.Errorf("view of gone %s: %+v", u, v)
		}
	}
	if s.Gone() != 2 {
		t.Fatalf("Gone() = %d, want 2", s.Gone())
	}
	if in := s.URLsIn(StateScheduled, t0); len(in) != 2 {
		t.Errorf("scheduled: %v, want the 2 URLs not gone", in)
	}
	now := t0.Add(5 * time.Second)
	s.Add(URLInfo{URL: gone[0], Host: "h0", Weight: 1}, now)
	if n := s.Resume(gone[1:], now); n != 1 {
		t.Fatalf("resumed %d", n)
	}
	if s.Gone() != 0 {
		t.Fatalf("Gone() = %d after seeding and resuming", s.Gone())
	}
	back := drainWith(s, now, now.Add(time.Second), func(url string, now time.Time) Feedback {
		return Feedback{Start: now, End: now, OK: true}
	})
	for _, u := range gone {
		if len(back[u]) == 0 {
			t.Errorf("%s not fetched after it came back", u)
		}
	}
}

// Each halving of a host's rate doubles its gap, up to the cap.
func TestHostSlowdownDoublesGap(t *testing.T) {
	s := newLifeSched(t, 2)
	base := s.baseGap()
	for _, c := range []struct {
		slowdown int
		want     time.Duration
	}{{0, base}, {1, 2 * base}, {3, 8 * base}, {MaxHostSlowdown + 5, base << MaxHostSlowdown}} {
		var d Dispatch
		now := t0
		for ok := false; !ok; now = now.Add(10 * time.Millisecond) {
			if d, ok, _ = s.Next(now); now.After(t0.Add(time.Hour)) {
				t.Fatal("nothing due within an hour")
			}
		}
		s.Done(d.URL, Feedback{Start: now, End: now, OK: true, HostSlowdown: c.slowdown})
		for _, h := range s.HostViews(nil) {
			if h.Host == d.Host && h.Gap != c.want {
				t.Errorf("slowdown %d: gap %s, want %s", c.slowdown, h.Gap, c.want)
			}
		}
	}
}

// A task adopted as delivered keeps its URL in flight but leaves its
// host's slot free: the host's other URLs go out one gap later, and the
// adopted task's result, when it comes, frees nothing it did not take.
func TestAdoptDeliveredFreesHostSlot(t *testing.T) {
	s := newLifeSched(t, 4)
	if !s.AdoptDelivered("http://h0/0", t0) || s.AdoptDelivered("http://nosuch/", t0) {
		t.Fatal("AdoptDelivered: want true for a known URL only")
	}
	gap := s.baseGap()
	var h0 []string
	for now := t0; now.Before(t0.Add(gap + 20*time.Millisecond)); now = now.Add(time.Millisecond) {
		if d, ok, _ := s.Next(now); ok {
			if d.URL == "http://h0/0" {
				t.Fatal("the adopted URL was dispatched again")
			}
			if d.Host == "h0" {
				h0 = append(h0, d.URL)
				if now.Before(t0.Add(gap)) {
					t.Errorf("%s went out %s after the restart, within the host's gap %s", d.URL, now.Sub(t0), gap)
				}
			}
			s.Done(d.URL, Feedback{Start: now, End: now, OK: true})
		}
	}
	if len(h0) == 0 {
		t.Fatal("the host of the adopted task got no request within one gap of the restart")
	}
	s.Done("http://h0/0", Feedback{Start: t0.Add(time.Second), End: t0.Add(time.Second), OK: true})
	for _, h := range s.HostViews(nil) {
		if h.InFlight != 0 {
			t.Errorf("host %s: %d in flight after every result came back", h.Host, h.InFlight)
		}
	}
	if v, _ := s.View("http://h0/0", t0.Add(time.Second)); v.InFlight {
		t.Error("the adopted URL is still in flight after its result")
	}
}

// A restart restores a host's stored politeness: its gap with the
// slowdown, and a Retry-After that has not ended.
func TestRestoreHost(t *testing.T) {
	s := newLifeSched(t, 2)
	till := t0.Add(30 * time.Second)
	if !s.RestoreHost("h0", 0, 2, till) || s.RestoreHost("nosuch", 0, 1, till) {
		t.Fatal("RestoreHost: want true for a known host only")
	}
	for now := t0; now.Before(till); now = now.Add(100 * time.Millisecond) {
		if d, ok, _ := s.Next(now); ok {
			if d.Host == "h0" {
				t.Fatalf("h0 dispatched at %s, inside its Retry-After", now.Sub(t0))
			}
			s.Done(d.URL, Feedback{Start: now, End: now, OK: true})
		}
	}
	for _, h := range s.HostViews(nil) {
		if h.Host == "h0" && h.Gap != 4*s.baseGap() {
			t.Errorf("h0 gap %s, want 4 × %s", h.Gap, s.baseGap())
		}
	}
}
