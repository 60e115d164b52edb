package coordinator

import (
	"testing"
	"time"

	"github.com/freshcrawl/freshcrawl/internal/broker"
	"github.com/freshcrawl/freshcrawl/internal/schedule"
	"github.com/freshcrawl/freshcrawl/internal/testutil"
	"github.com/freshcrawl/freshcrawl/proto"
)

// A crash that loses a fetch in progress (its worker took the task and
// died with the coordinator) does not stall the task's host past the
// restart: the restarted coordinator frees the host's slot at once, so
// the host's other URL goes out within a gap, not after the task's
// AckWait (a minute here, as by default); the lost task's URL is not
// dispatched a second time while its task may still come back.
func TestCrashedFetchDoesNotStallItsHost(t *testing.T) {
	s := broker.DefaultSettings()
	s.AckWait = time.Minute
	e := newEnv(t, s)
	const a, b = "http://127.0.0.1:9/a", "http://127.0.0.1:9/b"
	opts := func(o *Options) { o.Budget, o.HostRate = 50, 20 }
	c1 := e.coordinator(t, opts)
	addSeeds(t, c1, a, b)
	stop1 := run(t, c1)
	// The dying worker: it takes the host's one task and never answers.
	lost, _ := e.takeTask(t, 10*time.Second)
	stop1()
	other := a
	if lost.URL == a {
		other = b
	}

	c2 := e.coordinator(t, opts)
	restarted := time.Now()
	run(t, c2)
	next, m := e.takeTask(t, 10*time.Second)
	waited := time.Since(restarted)
	_ = m.Ack()
	if next.URL != other {
		t.Fatalf("after the restart the first task is for %s, want the host's other URL %s", next.URL, other)
	}
	if waited > 5*time.Second {
		t.Errorf("the host's other URL went out %s after the restart, want within a few host gaps (AckWait %s)", waited, s.AckWait)
	}
	t.Logf("host's next request %s after the restart (AckWait %s)", waited.Round(time.Millisecond), s.AckWait)
	for _, task := range e.streamTasks(t) {
		if task.URL == lost.URL && task.ID != lost.ID {
			t.Errorf("the lost task's URL was dispatched again (%s) while its task %s may come back", task.ID, lost.ID)
		}
	}
	// The lost task, redelivered and answered, folds as any result does.
	e.sendResult(t, ok(lost, "h-lost"))
	testutil.WaitFor(t, 10*time.Second, "the lost task's result folded", func() bool { return c2.fetches() >= 1 })
	var inFlight int
	c2.disp.Do(func(s *schedule.Scheduler) {
		for _, h := range s.HostViews(nil) {
			inFlight += h.InFlight
		}
	})
	if inFlight < 0 || inFlight > 1 {
		t.Errorf("%d tasks in flight on the host after the lost one came back", inFlight)
	}
}

// A host's Retry-After and the halvings of its rate outlast a restart:
// the restarted coordinator's schedule holds the host until the
// Retry-After ends, with its gap doubled per halving.
func TestHostPolitenessSurvivesRestart(t *testing.T) {
	e := newEnv(t, testSettings())
	// The 503 backs the URL off by twice its (short) interval.
	opts := func(o *Options) { o.Budget, o.HostRate, o.MinBackoff = 50, 20, time.Millisecond }
	c1 := e.coordinator(t, opts)
	addSeeds(t, c1, testURL)
	stop1 := run(t, c1)
	slowed, m := e.takeTask(t, 10*time.Second)
	_ = m.Ack()
	r := ok(slowed, "")
	r.Status, r.ErrKind, r.Err, r.Changed, r.Diff, r.Text = 503, proto.ErrServerError, "503", false, nil, ""
	e.sendResult(t, r)
	testutil.WaitFor(t, 10*time.Second, "the 503 folded", func() bool { return c1.fetches() == 1 })
	held, m := e.takeTask(t, 20*time.Second)
	_ = m.Ack()
	r = ok(held, "")
	r.Status, r.ErrKind, r.Err, r.Changed, r.Diff, r.Text, r.RetryAfter = 429, proto.ErrRateLimited, "429", false, nil, "", 30*time.Second
	e.sendResult(t, r)
	testutil.WaitFor(t, 10*time.Second, "the 429 folded", func() bool { return c1.fetches() == 2 })
	stop1()

	c2 := e.coordinator(t, opts)
	run(t, c2)
	var view schedule.HostView
	testutil.WaitFor(t, 10*time.Second, "the host in the restarted schedule", func() bool {
		c2.disp.Do(func(s *schedule.Scheduler) {
			for _, h := range s.HostViews(nil) {
				if h.Host == held.Host {
					view = h
				}
			}
		})
		return view.Host != ""
	})
	until := r.FinishedAt.Add(30 * time.Second)
	if view.NextFree.Before(until) {
		t.Errorf("host free at %v after the restart, before its Retry-After ends at %v", view.NextFree, until)
	}
	if want := 2 * time.Second / 20; view.Gap != want {
		t.Errorf("host gap %s after the restart, want %s (its rate halved once by the 503)", view.Gap, want)
	}
}
