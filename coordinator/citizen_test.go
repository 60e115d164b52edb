package coordinator

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/freshcrawl/freshcrawl/internal/api"
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
	// Started: its first plan follows the restart's reconciliation.
	testutil.WaitFor(t, 10*time.Second, "the restarted coordinator's first plan", func() bool { return !c2.Status().PlannedAt.IsZero() })
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
	// The hosts view of the API says so.
	srv := httptest.NewServer(c2.Handler())
	defer srv.Close()
	var hosts []struct {
		Host        string        `json:"host"`
		Gap         time.Duration `json:"gap"`
		Slowdown    int           `json:"slowdown"`
		BackoffTill time.Time     `json:"backoff_till"`
	}
	getJSON(t, srv.URL+"/api/hosts", &hosts)
	if len(hosts) != 1 || hosts[0].Slowdown != 1 || !hosts[0].BackoffTill.Equal(until) || hosts[0].Gap != view.Gap {
		t.Errorf("/api/hosts: %+v, want the host's rate halved once and held until %v", hosts, until)
	}
}

// A gone URL is not fetched again until it is resumed, or seeded again:
// either brings it back at once.
func TestGoneURLComesBackWhenResumedOrSeeded(t *testing.T) {
	e := newEnv(t, testSettings())
	c := e.coordinator(t, func(o *Options) { o.Budget, o.HostRate = 50, 20 })
	addSeeds(t, c, testURL)
	run(t, c)
	srv := httptest.NewServer(c.Handler())
	defer srv.Close()
	retire := func(why string) {
		t.Helper()
		task, m := e.takeTask(t, 10*time.Second)
		_ = m.Ack()
		r := ok(task, "")
		r.Status, r.ErrKind, r.Err, r.Changed, r.Diff, r.Text = 410, proto.ErrNotFound, "http status 410", false, nil, ""
		before := c.fetches()
		e.sendResult(t, r)
		testutil.WaitFor(t, 10*time.Second, "the 410 folded", func() bool { return c.fetches() > before })
		var gone api.ListPage
		getJSON(t, srv.URL+"/api/urls?state=gone", &gone)
		if len(gone.URLs) != 1 || c.Status().Gone != 1 {
			t.Fatalf("%s: gone listing %+v, status counts %d; want the URL", why, gone.URLs, c.Status().Gone)
		}
		var inFlight int
		c.disp.Do(func(s *schedule.Scheduler) {
			if v, _ := s.View(testURL, time.Now()); !v.Gone || v.Due {
				t.Errorf("%s: the schedule's view %+v, want it gone and not due", why, v)
			}
			inFlight = len(s.URLsIn(schedule.StateDue, time.Now()))
		})
		if inFlight != 0 {
			t.Errorf("%s: %d URLs due while the only one is gone", why, inFlight)
		}
	}
	retire("first 410")
	resp, err := http.Post(srv.URL+"/api/url/resume", "application/json", strings.NewReader(`{"urls":["`+testURL+`"]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("resume: %s", resp.Status)
	}
	retire("410 after the resume") // it was dispatched again, and is gone again
	addSeeds(t, c, testURL)
	task, m := e.takeTask(t, 10*time.Second)
	_ = m.Ack()
	if task.URL != testURL {
		t.Fatalf("after seeding it again: task for %s", task.URL)
	}
	if u, err := e.db.Get(testURL); err != nil || u.Gone || u.ErrStreak != 0 {
		t.Errorf("record after seeding it again: gone %v streak %d (%v)", u.Gone, u.ErrStreak, err)
	}
}
