package schedule

import (
	"testing"
	"time"
)

// A saturated host serves its freshness URLs as soon as it is free, but a
// capture poll only at its due time: handed out early it would be due
// again at the same phase when it came back, under the same task id,
// which JetStream drops as a duplicate (the stall of capture URLs mixed
// with freshness URLs on one host). Every poll of a capture URL is due
// strictly after the one before.
func TestSaturatedHostKeepsCapturePhases(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	// Uniform: every URL gets a share whatever its rate, so the three
	// freshness URLs fill the host.
	s := newTestScheduler(t, func(o *SchedulerOptions) { o.Budget, o.HostRate, o.Policy = 4, 4, uniformPolicy{} })
	for _, u := range []string{"http://h/1", "http://h/2", "http://h/3"} {
		s.Add(URLInfo{URL: u, Host: "h", Weight: 1}, now)
	}
	s.Add(URLInfo{URL: "http://h/cap", Host: "h", Weight: 1, Capture: true, Period: time.Hour, Polls: 4}, now)
	if _, err := s.Replan(now); err != nil {
		t.Fatal(err)
	}
	if !s.front.hosts["h"].saturated {
		t.Fatal("the plan does not saturate the host; the test needs it")
	}
	_, _, inUse := s.Plan()
	// Three freshness URLs share what the capture polls (4 an hour) leave.
	if want := 4.0; inUse > want+1e-9 || inUse < want-4.0/3600-1e-9 {
		t.Errorf("plan uses %.4f/s, want the budget %.0f/s with the capture URL at 4/h", inUse, want)
	}
	lastDue := map[string]time.Time{}
	capPolls := 0
	for step := 0; step < 4000; step++ {
		d, ok, next := s.Next(now)
		if !ok {
			if next.IsZero() {
				t.Fatal("nothing queued")
			}
			now = next
			continue
		}
		if d.Capture {
			capPolls++
			if now.Before(d.Due) {
				t.Fatalf("capture poll due %v handed out early at %v", d.Due, now)
			}
		}
		if prev, ok := lastDue[d.URL]; ok && !d.Due.After(prev) {
			t.Fatalf("%s due at %v again after a fetch due at %v: same task id", d.URL, d.Due, prev)
		}
		lastDue[d.URL] = d.Due
		end := now.Add(10 * time.Millisecond)
		s.Done(d.URL, Feedback{Start: now, End: end, OK: true})
		checkInvariants(t, s)
		now = end
	}
	// 4000 fetches at about 4/s span about 1000 s: a quarter of an hour,
	// one poll of the capture URL.
	if capPolls < 1 || capPolls > 3 {
		t.Errorf("%d capture polls in %d fetches; want about one (4 an hour)", capPolls, 4000)
	}
}
