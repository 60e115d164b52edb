package coordinator

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/freshcrawl/freshcrawl/internal/broker"
	"github.com/freshcrawl/freshcrawl/internal/schedule"
	"github.com/freshcrawl/freshcrawl/internal/testutil"
	"github.com/freshcrawl/freshcrawl/proto"
	"github.com/freshcrawl/freshcrawl/store"
)

const testURL, testHost = "http://127.0.0.1:9/page", "127.0.0.1:9"

func testSettings() broker.Settings {
	s := broker.DefaultSettings()
	s.AckWait, s.MaxDeliver = time.Second, 3
	return s
}

func addSeeds(t *testing.T, c *Coordinator, lines ...string) {
	t.Helper()
	if _, err := c.AddSeeds(strings.NewReader(strings.Join(lines, "\n")), "test"); err != nil {
		t.Fatal(err)
	}
}

// ok is a successful result of task.
func ok(task proto.Task, hash string) proto.Result {
	now := time.Now()
	return proto.Result{TaskID: task.ID, Kind: task.Kind, URL: task.URL, Host: task.Host, StartedAt: now.Add(-10 * time.Millisecond), FinishedAt: now,
		Status: 200, Hash: hash, Changed: true, Text: "text " + hash, LastModified: now.Add(-time.Hour).UTC().Format("Mon, 02 Jan 2006 15:04:05 GMT"),
		Diff: &proto.DiffSummary{LinesAdded: 1}}
}

func (c *Coordinator) fetches() int64 {
	return c.Status().Fetches
}

func (e *env) resultsPending(t *testing.T) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	q, err := broker.Queue(ctx, e.js)
	if err != nil {
		t.Fatal(err)
	}
	return q.Results
}

// The same result delivered twice is applied once: the duplicate changes
// neither the counters, nor the change log, nor the estimate, nor the
// schedule.
func TestDuplicateResultAppliedOnce(t *testing.T) {
	e := newEnv(t, testSettings())
	c := e.coordinator(t, func(o *Options) { o.Budget, o.HostRate = 2, 20 })
	addSeeds(t, c, testURL)
	run(t, c)

	task, m := e.takeTask(t, 10*time.Second)
	_ = m.Ack()
	e.sendResult(t, ok(task, "h1"))
	testutil.WaitFor(t, 10*time.Second, "the first result folded", func() bool { return c.fetches() == 1 })
	task2, m := e.takeTask(t, 10*time.Second)
	_ = m.Ack()
	second := ok(task2, "h2")
	e.sendResult(t, second)
	testutil.WaitFor(t, 10*time.Second, "the second result folded", func() bool { return c.fetches() == 2 })

	before, err := e.db.Get(testURL)
	if err != nil {
		t.Fatal(err)
	}
	// The schedule learns of a fold just after its commit (Finish).
	var rateBefore float64
	testutil.WaitFor(t, 10*time.Second, "the schedule to learn the second result", func() bool {
		c.disp.Do(func(s *schedule.Scheduler) { rateBefore = s.Rate(testURL) })
		return rateBefore == before.Rate
	})
	if before.Fetches != 2 || before.Changes != 1 || len(before.Estimate) == 0 || before.Hash != "h2" {
		t.Fatalf("after two results: %+v", before)
	}

	e.sendResult(t, second) // redelivered
	testutil.WaitFor(t, 10*time.Second, "the duplicate consumed", func() bool { return e.resultsPending(t) == 0 })
	after, err := e.db.Get(testURL)
	if err != nil {
		t.Fatal(err)
	}
	if after.Fetches != 2 || after.Changes != 1 || after.Rate != before.Rate || !bytes.Equal(after.Estimate, before.Estimate) || !after.LastFetch.Equal(before.LastFetch) {
		t.Errorf("the duplicate changed the record:\nbefore %+v\nafter  %+v", before, after)
	}
	changes, err := e.db.Changes(0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 1 || changes[0].TaskID != task2.ID {
		t.Errorf("change log %+v, want one change from %s", changes, task2.ID)
	}
	var rateAfter float64
	c.disp.Do(func(s *schedule.Scheduler) { rateAfter = s.Rate(testURL) })
	if rateAfter != rateBefore || c.fetches() != 2 {
		t.Errorf("the duplicate moved the schedule's rate %v → %v or the count to %d", rateBefore, rateAfter, c.fetches())
	}
}

// A worker whose heartbeat the coordinator missed (sent while it loaded
// its store) is listed from its first result.
func TestWorkerListedFromItsResults(t *testing.T) {
	e := newEnv(t, testSettings())
	c := e.coordinator(t, func(o *Options) { o.Budget, o.HostRate = 2, 20 })
	addSeeds(t, c, testURL)
	run(t, c)

	task, m := e.takeTask(t, 10*time.Second)
	_ = m.Ack()
	if got := c.Status().Workers; len(got) != 0 {
		t.Fatalf("workers %q before any heartbeat or result", got)
	}
	r := ok(task, "h1")
	r.WorkerID = "w-silent"
	e.sendResult(t, r)
	testutil.WaitFor(t, 10*time.Second, "the result folded", func() bool { return c.fetches() == 1 })
	// The worker is noted just after the fold commits (afterFold).
	var got []string
	testutil.WaitFor(t, 10*time.Second, "the worker listed", func() bool { got = c.Status().Workers; return len(got) > 0 })
	if len(got) != 1 || got[0] != "w-silent" {
		t.Errorf("workers %q, want [w-silent]", got)
	}
}

// A task that runs out of deliveries is recorded as failed, deleted from
// the work queue, and its URL dispatched again.
func TestMaxDeliveriesRecordedFailed(t *testing.T) {
	s := testSettings()
	s.MaxDeliver = 2 // at the shortest AckWait the settings allow
	e := newEnv(t, s)
	c := e.coordinator(t, func(o *Options) { o.Budget, o.HostRate = 2, 20 })
	addSeeds(t, c, testURL)
	run(t, c)

	// A worker that takes the task and dies before answering, every time.
	var failed proto.Task
	var seq uint64
	deliveries := 0
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cons, err := e.js.Consumer(ctx, proto.TaskStream, proto.TaskConsumer)
	if err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 30*time.Second, "the task recorded as failed", func() bool {
		if b, err := cons.Fetch(1, jetstream.FetchMaxWait(100*time.Millisecond)); err == nil {
			for m := range b.Messages() {
				task, err := proto.DecodeTask(m.Data())
				if err != nil {
					t.Fatal(err)
				}
				if failed.ID == "" || failed.ID == task.ID {
					failed = task
					deliveries++
					md, err := m.Metadata()
					if err != nil {
						t.Fatal(err)
					}
					seq = md.Sequence.Stream
				}
			}
		}
		u, err := e.db.Get(testURL)
		return err == nil && u.Failed >= 1
	})
	u, err := e.db.Get(testURL)
	if err != nil {
		t.Fatal(err)
	}
	if u.Failed != 1 || u.LastErrKind != string(proto.ErrFailed) || u.ErrorKinds[string(proto.ErrFailed)] != 1 || !strings.Contains(u.LastErr, "2 deliveries") {
		t.Errorf("record %+v: want one failure of kind %q after 2 deliveries", u, proto.ErrFailed)
	}
	if deliveries != 2 {
		t.Errorf("the task was delivered %d times, want MaxDeliver 2", deliveries)
	}
	// The failure is counted just after it is stored: wait for the count.
	testutil.WaitFor(t, 10*time.Second, "status to count the failure", func() bool { return c.Status().Failed >= 1 })
	if st := c.Status(); st.Failed != 1 || st.Errors[string(proto.ErrFailed)] != 1 {
		t.Errorf("status: failed %d, errors %v; want the failure counted once", st.Failed, st.Errors)
	}
	st, err := e.js.Stream(ctx, proto.TaskStream)
	if err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, "the failed task deleted from the work queue", func() bool {
		_, err := st.GetMsg(ctx, seq)
		return errors.Is(err, jetstream.ErrMsgNotFound)
	})
	next, m := e.takeTask(t, 10*time.Second)
	_ = m.Ack()
	if next.URL != testURL || next.ID == failed.ID {
		t.Errorf("after the failure: task %+v, want a new task for %s", next, testURL)
	}
}

// A coordinator stopped and started again on the same store keeps its
// URLs, their history and their schedule (interval, next due time), and
// resumes dispatching them.
func TestRestartKeepsScheduleAndHistory(t *testing.T) {
	e := newEnv(t, testSettings())
	opts := func(o *Options) { o.Budget, o.HostRate = 1, 20 }
	c := e.coordinator(t, opts)
	addSeeds(t, c, testURL)
	stop := run(t, c)
	for i, hash := range []string{"h1", "h2"} {
		task, m := e.takeTask(t, 10*time.Second)
		_ = m.Ack()
		e.sendResult(t, ok(task, hash))
		testutil.WaitFor(t, 10*time.Second, "a result folded", func() bool { return c.fetches() == int64(i+1) })
	}
	stop()
	rec, err := e.db.Get(testURL)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Fetches != 2 || rec.Changes != 1 || rec.Interval <= 0 || rec.NextDue.IsZero() || len(rec.Estimate) == 0 {
		t.Fatalf("stored before the restart: %+v", rec)
	}
	if err := e.db.Close(); err != nil {
		t.Fatal(err)
	}
	e.openStore(t)

	c2 := e.coordinator(t, opts)
	if err := c2.load(); err != nil {
		t.Fatal(err)
	}
	var iv time.Duration
	var next time.Time
	var due bool
	c2.disp.Do(func(s *schedule.Scheduler) {
		iv = s.Interval(testURL)
		_, due, next = s.Next(rec.NextDue.Add(-time.Millisecond))
	})
	if iv != rec.Interval || due || !next.Equal(rec.NextDue) {
		t.Errorf("restored schedule: interval %v, next due %v (dispatched early: %v); stored %v, %v", iv, next, due, rec.Interval, rec.NextDue)
	}

	run(t, c2)
	task, m := e.takeTask(t, 10*time.Second)
	_ = m.Ack()
	if task.URL != testURL || task.PrevHash != "h2" || task.IssuedAt.Before(rec.NextDue) {
		t.Errorf("first task after the restart %+v: want %s with the stored hash h2, issued no earlier than its next due time %v", task, testURL, rec.NextDue)
	}
	r := ok(task, "h2")
	r.Changed, r.NotModified = false, true
	e.sendResult(t, r)
	testutil.WaitFor(t, 10*time.Second, "the result folded after the restart", func() bool { return c2.fetches() == 3 })
	after, err := e.db.Get(testURL)
	if err != nil {
		t.Fatal(err)
	}
	changes, err := e.db.Changes(0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if after.Fetches != 3 || after.Changes != 1 || after.NotModified != 1 || len(changes) != 1 {
		t.Errorf("after the restart: %+v and %d changes, want the history continued (3 fetches, 1 change)", after, len(changes))
	}
}

// gatePolicy plans like Policy, except that its call number block waits
// until release is closed.
type gatePolicy struct {
	schedule.Policy
	block   int32
	calls   atomic.Int32
	entered chan struct{}
	release chan struct{}
}

func (p *gatePolicy) Plan(in schedule.PlanInput) (schedule.PlanOutput, error) {
	if p.calls.Add(1) == p.block {
		close(p.entered)
		<-p.release
	}
	return p.Policy.Plan(in)
}

// Results are folded, and the schedule updated, while a re-plan of many
// URLs is under way: the solve holds no lock the fold needs.
func TestFoldsCompleteDuringReplan(t *testing.T) {
	e := newEnv(t, testSettings())
	uniform, err := schedule.PolicyByName("uniform", "")
	if err != nil {
		t.Fatal(err)
	}
	gate := &gatePolicy{Policy: uniform, block: 2, entered: make(chan struct{}), release: make(chan struct{})}
	released := false
	defer func() {
		if !released {
			close(gate.release)
		}
	}()
	// Replan 1ms: the maintenance loop re-plans at its first tick; the
	// first plan (in Run) passes the gate, the second blocks in it.
	c := e.coordinator(t, func(o *Options) { o.Budget, o.HostRate, o.Policy, o.Replan = 20, 20, gate, time.Millisecond })
	now := time.Now()
	if _, err := e.db.Upsert([]store.URL{{URL: testURL, Host: testHost, Weight: 1, Mode: "freshness"}}); err != nil {
		t.Fatal(err)
	}
	// Due now, and still due once the first plan shortens its interval.
	urls := []schedule.URLInfo{{URL: testURL, Host: testHost, Weight: 1, Interval: 24 * time.Hour, NextDue: now}}
	for i := range 20000 {
		// Not due for an hour: they take no task slots.
		urls = append(urls, schedule.URLInfo{URL: fmt.Sprintf("http://h%d.example/%d", i%100, i), Host: fmt.Sprintf("h%d.example", i%100), Weight: 1, Interval: time.Hour, NextDue: now.Add(time.Hour)})
	}
	c.disp.Do(func(s *schedule.Scheduler) {
		for _, u := range urls {
			s.Add(u, now)
		}
	})
	run(t, c)

	task, m := e.takeTask(t, 10*time.Second)
	_ = m.Ack()
	select {
	case <-gate.entered:
	case <-time.After(30 * time.Second):
		t.Fatal("no re-plan started")
	}
	// The re-plan is now inside the policy. Fold the task's result and
	// results from before a restart.
	e.sendResult(t, ok(task, "h1"))
	for i := range 4 {
		r := ok(task, fmt.Sprintf("h%d", i+2))
		r.TaskID = fmt.Sprintf("earlier-%d", i)
		e.sendResult(t, r)
	}
	testutil.WaitFor(t, 20*time.Second, "five results folded during the re-plan", func() bool { return c.fetches() == 5 })
	rec, err := e.db.Get(testURL)
	if err != nil {
		t.Fatal(err)
	}
	// The totals commit with the fold; the schedule learns of it just
	// after (Finish): wait for that too.
	var rate float64
	testutil.WaitFor(t, 20*time.Second, "the schedule to learn the folds", func() bool {
		c.disp.Do(func(s *schedule.Scheduler) { rate = s.Rate(testURL) })
		return rate == rec.Rate && c.disp.InFlight() == 0
	})
	if rec.Fetches != 5 || rate != rec.Rate {
		t.Errorf("record has %d fetches and rate %v, schedule rate %v: want 5 and the schedule updated", rec.Fetches, rec.Rate, rate)
	}
	if calls := gate.calls.Load(); calls != 2 {
		t.Fatalf("the policy was called %d times; the re-plan should still be in it", calls)
	}
	_, firstPlan, _ := c.disp.Plan()
	released = true
	close(gate.release)
	testutil.WaitFor(t, 20*time.Second, "the re-plan to finish", func() bool {
		_, at, _ := c.disp.Plan()
		return at.After(firstPlan)
	})
}

// TestMaintainPeriod: the maintenance loop checks for a due plan at least
// twice per re-plan period, and never more often than it must.
func TestMaintainPeriod(t *testing.T) {
	for _, tc := range []struct{ replan, want time.Duration }{
		{30 * time.Second, MaintainEvery},
		{0, MaintainEvery},
		{time.Second, 500 * time.Millisecond},
		{4 * time.Second, MaintainEvery},
		{time.Microsecond, time.Millisecond},
	} {
		if got := maintainPeriod(tc.replan); got != tc.want {
			t.Errorf("maintainPeriod(%s) = %s, want %s", tc.replan, got, tc.want)
		}
	}
}

// A re-plan for moved estimates waits until twenty times the last plan's
// duration after its start: re-planning then holds at most a twentieth of
// the maintenance loop's time.
func TestReplanNotBeforeBoundsItsShare(t *testing.T) {
	start := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	for _, took := range []time.Duration{time.Millisecond, 250 * time.Millisecond, 10 * time.Second} {
		next := replanNotBefore(start, start.Add(took))
		if got, want := next.Sub(start), time.Duration(replanCostFactor+1)*took; got != want {
			t.Errorf("plan of %s: next not before %s after its start, want %s", took, got, want)
		}
		if share := took.Seconds() / next.Sub(start).Seconds(); share > 0.05+1e-12 {
			t.Errorf("plan of %s: share %.3f of the time, want at most 0.05", took, share)
		}
	}
}
