package dispatch

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/freshcrawl/freshcrawl/internal/broker"
	"github.com/freshcrawl/freshcrawl/internal/schedule"
	"github.com/freshcrawl/freshcrawl/internal/testutil"
	"github.com/freshcrawl/freshcrawl/proto"
)

var t0 = time.Unix(1_700_000_000, 0)

// newDispatcher is New with the defaults, a quiet log and set's changes;
// it fails the test if New refuses them.
func newDispatcher(t testing.TB, js jetstream.JetStream, s *schedule.Scheduler, set func(o *Options)) *Dispatcher {
	t.Helper()
	o := DefaultOptions()
	o.Log = testutil.QuietLogger(t)
	set(&o)
	d, err := New(js, s, o)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// emptySched returns a scheduler with no URLs on the default options but
// budget and hostRate.
func emptySched(t *testing.T, budget, hostRate float64) *schedule.Scheduler {
	t.Helper()
	o := schedule.DefaultSchedulerOptions()
	o.Budget, o.HostRate = budget, hostRate
	s, err := schedule.NewScheduler(o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// newSched returns a scheduler with the given URLs (host/path), each due
// at t0; one fetch a second per host.
func newSched(t *testing.T, urls ...string) *schedule.Scheduler {
	t.Helper()
	s := emptySched(t, 100, 1)
	for _, u := range urls {
		host := u[:len(u)-2]
		s.Add(schedule.URLInfo{URL: "http://" + u, Host: host, Weight: 1, Interval: time.Hour, NextDue: t0}, t0)
	}
	return s
}

// No more than MaxInFlight tasks are out at once; finishing one frees a
// slot.
func TestTakeBoundsInFlight(t *testing.T) {
	d := newDispatcher(t, nil, newSched(t, "a/1", "b/1", "c/1", "d/1", "e/1"), func(o *Options) { o.MaxInFlight = 3 })
	var ids []string
	for range 3 {
		task, ok, _ := d.take(t0)
		if !ok {
			t.Fatalf("only %d tasks handed out, want 3", len(ids))
		}
		ids = append(ids, task.ID)
	}
	if _, ok, _ := d.take(t0); ok || d.InFlight() != 3 {
		t.Fatalf("a 4th task went out with MaxInFlight 3 (in flight %d)", d.InFlight())
	}
	d.Finish([]Finished{{TaskID: ids[0], URL: "http://a/1", At: t0, Applied: true, Feedback: schedule.Feedback{Start: t0, End: t0, OK: true}}})
	if _, ok, _ := d.take(t0); !ok {
		t.Error("no task after one finished")
	}
}

// A host has one task in flight at a time, and its next comes no sooner
// than its gap after the previous request ended.
func TestTakeOneTaskPerHost(t *testing.T) {
	d := newDispatcher(t, nil, newSched(t, "a/1", "a/2", "a/3"), func(*Options) {})
	first, ok, _ := d.take(t0)
	if !ok {
		t.Fatal("nothing due")
	}
	if _, ok, _ := d.take(t0.Add(time.Minute)); ok {
		t.Fatal("a second task for a host with one in flight")
	}
	end := t0.Add(300 * time.Millisecond)
	d.Finish([]Finished{{TaskID: first.ID, URL: first.URL, At: t0, Applied: true, Feedback: schedule.Feedback{Start: t0, End: end, OK: true}}})
	if _, ok, next := d.take(end.Add(999 * time.Millisecond)); ok || !next.Equal(end.Add(time.Second)) {
		t.Fatalf("next task before the 1s gap after the request ended (next due %v, want %v)", next, end.Add(time.Second))
	}
	second, ok, _ := d.take(end.Add(time.Second))
	if !ok || second.URL == first.URL || second.MinGap != time.Second {
		t.Fatalf("after the gap: %+v, %v; want another URL of the host with MinGap 1s", second, ok)
	}
}

// Finish applies a result's feedback if its task was in flight, or, for a
// result this run did not dispatch, if no task of its URL is in flight; a
// result folded before only ends its task, whose URL is due again at once.
func TestFinish(t *testing.T) {
	d := newDispatcher(t, nil, newSched(t, "a/1", "b/1", "c/1"), func(*Options) {})
	var tasks []proto.Task
	for range 3 {
		task, ok, _ := d.take(t0)
		if !ok {
			t.Fatal("nothing due")
		}
		tasks = append(tasks, task)
	}
	byURL := map[string]proto.Task{}
	for _, task := range tasks {
		byURL[task.URL] = task
	}
	rate := func(url string) (r float64) {
		d.Do(func(s *schedule.Scheduler) { r = s.Rate(url) })
		return r
	}
	fb := schedule.Feedback{Start: t0, End: t0, OK: true, Rate: 0.5}
	d.Finish([]Finished{
		// In flight here: applied.
		{TaskID: byURL["http://a/1"].ID, URL: "http://a/1", At: t0, Applied: true, Feedback: fb},
		// From before a restart while its URL is in flight here: ignored.
		{TaskID: "old-b", URL: "http://b/1", At: t0, Applied: true, Feedback: fb},
		// Folded before, its task in flight here: the task ends.
		{TaskID: byURL["http://c/1"].ID, URL: "http://c/1", At: t0, Applied: false, Feedback: fb},
	})
	if rate("http://a/1") != 0.5 || rate("http://b/1") == 0.5 || rate("http://c/1") == 0.5 {
		t.Errorf("rates a %v b %v c %v; want only a's moved to 0.5", rate("http://a/1"), rate("http://b/1"), rate("http://c/1"))
	}
	if d.InFlight() != 1 {
		t.Fatalf("%d in flight, want b's task only", d.InFlight())
	}
	// c is due again at once (its host after the gap): a new task.
	if task, ok, _ := d.take(t0.Add(time.Second)); !ok || task.URL != "http://c/1" {
		t.Errorf("after a duplicate ended its task: %+v %v, want c again", task, ok)
	}
	// With b no longer in flight, a result from before a restart applies.
	d.Release(byURL["http://b/1"].ID, t0, t0.Add(time.Hour))
	d.Finish([]Finished{{TaskID: "old-b", URL: "http://b/1", At: t0, Applied: true, Feedback: fb}})
	if rate("http://b/1") != 0.5 {
		t.Errorf("result from before a restart not applied to an idle URL (rate %v)", rate("http://b/1"))
	}
	// A one-off request is forgotten once finished.
	d.Do(func(s *schedule.Scheduler) { s.Enqueue("http://p/q", "p", t0) })
	task, ok, _ := d.take(t0.Add(time.Hour))
	if !ok || task.URL != "http://p/q" {
		t.Fatalf("one-off request not dispatched: %+v", task)
	}
	if gone := d.Finish([]Finished{{TaskID: task.ID, URL: task.URL, At: t0, Applied: true, Feedback: fb}}); !gone[0] {
		t.Error("one-off request still known after its result")
	}
}

// A task in flight too long is lost; releasing it makes its URL due again.
func TestLostAndRelease(t *testing.T) {
	d := newDispatcher(t, nil, newSched(t, "a/1"), func(*Options) {})
	task, ok, _ := d.take(t0)
	if !ok {
		t.Fatal("nothing due")
	}
	if lost := d.Lost(t0.Add(time.Minute), time.Minute); len(lost) != 0 {
		t.Fatalf("lost %v at exactly the limit", lost)
	}
	lost := d.Lost(t0.Add(time.Minute+time.Nanosecond), time.Minute)
	if len(lost) != 1 || lost[0] != task.ID {
		t.Fatalf("lost %v, want %s", lost, task.ID)
	}
	if !d.Release(task.ID, t0, t0.Add(10*time.Second)) || d.Release(task.ID, t0, t0) {
		t.Fatal("Release should end the task once")
	}
	if _, ok, next := d.take(t0.Add(5 * time.Second)); ok || !next.Equal(t0.Add(10*time.Second)) {
		t.Errorf("released URL due at %v, want %v", next, t0.Add(10*time.Second))
	}
}

// newJS starts an embedded nats-server with the task stream.
func newJS(t *testing.T) jetstream.JetStream {
	t.Helper()
	srv := testutil.StartNATS(t)
	nc, js, err := broker.Connect(srv.ClientURL(), "test", testutil.QuietLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := broker.Ensure(ctx, js, broker.DefaultSettings()); err != nil {
		t.Fatal(err)
	}
	return js
}

// published reads the tasks on the task stream.
func published(t *testing.T, js jetstream.JetStream) []proto.Task {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, proto.TaskStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var tasks []proto.Task
	if info.State.Msgs == 0 {
		return nil
	}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		task, err := proto.DecodeTask(m.Data)
		if err != nil {
			t.Fatal(err)
		}
		tasks = append(tasks, task)
	}
	return tasks
}

func runDispatcher(t *testing.T, d *Dispatcher) {
	t.Helper()
	testutil.Run(t, "dispatcher", d.Run)
}

// Run publishes due URLs as tasks, prepared, never faster than the budget
// (burst 1), and keeps them in flight until they finish.
func TestRunPublishesUnderBudget(t *testing.T) {
	js := newJS(t)
	now := time.Now()
	s := emptySched(t, 5, 1)
	for i := range 4 {
		s.Add(schedule.URLInfo{URL: fmt.Sprintf("http://h%d/x", i), Host: fmt.Sprintf("h%d", i), Weight: 1, Interval: time.Hour, NextDue: now}, now)
	}
	// Prepare runs as soon as the limiter lets a task go: its times show
	// the budget without the publish's latency, which varies under load.
	var mu sync.Mutex
	var granted []time.Time
	d := newDispatcher(t, js, s, func(o *Options) {
		o.Budget = 5
		o.Prepare = func(_ context.Context, task *proto.Task) error {
			mu.Lock()
			granted = append(granted, time.Now())
			mu.Unlock()
			task.ETag = "etag-of-" + task.URL
			return nil
		}
	})
	runDispatcher(t, d)
	var tasks []proto.Task
	// The stream may hold a task a moment before its publish returns and
	// is counted: wait for both.
	testutil.WaitFor(t, 20*time.Second, "4 tasks on the stream and counted", func() bool {
		tasks = published(t, js)
		return len(tasks) == 4 && d.Published() == 4
	})
	seen := map[string]bool{}
	for _, task := range tasks {
		if task.ETag != "etag-of-"+task.URL || task.Kind != proto.KindFetch || seen[task.URL] {
			t.Errorf("task %+v: not prepared, wrong kind or a repeat", task)
		}
		seen[task.URL] = true
	}
	// 5 a second with burst 1: the i-th task goes no sooner than i×200 ms
	// after the first. A pair may come closer when the earlier one was let
	// go late (a busy machine), never the run as a whole; the slack is for
	// the first task's own delay between the limiter and Prepare.
	mu.Lock()
	defer mu.Unlock()
	if len(granted) != 4 {
		t.Fatalf("%d tasks prepared, want 4", len(granted))
	}
	for i := 1; i < len(granted); i++ {
		if span, least := granted[i].Sub(granted[0]), time.Duration(i)*200*time.Millisecond-50*time.Millisecond; span < least {
			t.Errorf("task %d let go %v after the first, want at least %v at 5/s", i, span, least)
		}
	}
	if d.InFlight() != 4 || d.Published() != 4 {
		t.Errorf("in flight %d, published %d; want 4 and 4", d.InFlight(), d.Published())
	}
	if n := d.InFlightOf([]string{"http://h0/x", "http://h3/x", "http://nosuch/"}); n != 2 {
		t.Errorf("%d tasks in flight for two dispatched URLs and an unknown one, want 2", n)
	}
}

// A task that cannot be prepared or published is released, and its URL is
// tried again RetryAfter later.
func TestRunRetriesFailedPublish(t *testing.T) {
	js := newJS(t)
	now := time.Now()
	s := emptySched(t, 10, 100)
	s.Add(schedule.URLInfo{URL: "http://h/x", Host: "h", Weight: 1, Interval: time.Hour, NextDue: now}, now)
	var mu sync.Mutex
	var attempts []time.Time
	d := newDispatcher(t, js, s, func(o *Options) {
		o.Budget, o.RetryAfter = 10, 300*time.Millisecond
		o.Prepare = func(context.Context, *proto.Task) error {
			mu.Lock()
			defer mu.Unlock()
			attempts = append(attempts, time.Now())
			if len(attempts) == 1 {
				return errors.New("store unavailable")
			}
			return nil
		}
	})
	runDispatcher(t, d)
	testutil.WaitFor(t, 20*time.Second, "the task on the stream", func() bool {
		tasks := published(t, js)
		return len(tasks) == 1
	})
	mu.Lock()
	defer mu.Unlock()
	if len(attempts) != 2 {
		t.Fatalf("%d attempts, want 2", len(attempts))
	}
	if gap := attempts[1].Sub(attempts[0]); gap < 300*time.Millisecond {
		t.Errorf("retried after %v, want at least RetryAfter 300ms", gap)
	}
	if d.InFlight() != 1 {
		t.Errorf("%d in flight after the retry, want 1", d.InFlight())
	}
}

// A task JetStream drops as a duplicate (its id was published within the
// de-duplication window) is never delivered, so it must not stay in
// flight, holding its host, until it is declared lost: it is released and
// its URL tried again with a new due time, hence a new id.
func TestRunReleasesDuplicateTask(t *testing.T) {
	js := newJS(t)
	now := time.Now()
	s := emptySched(t, 10, 100)
	s.Add(schedule.URLInfo{URL: "http://h/x", Host: "h", Weight: 1, Interval: time.Hour, NextDue: now}, now)
	// The same fetch published before, as a scheduler that handed the
	// same due time out twice would.
	first := newTask(schedule.Dispatch{URL: "http://h/x", Host: "h", Due: now}, now)
	b, err := proto.Encode(first)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.Publish(ctx, proto.TaskSubject(first.Kind), b, jetstream.WithMsgID(first.ID)); err != nil {
		t.Fatal(err)
	}
	d := newDispatcher(t, js, s, func(o *Options) { o.Budget, o.RetryAfter = 10, 200*time.Millisecond })
	runDispatcher(t, d)
	var tasks []proto.Task
	testutil.WaitFor(t, 20*time.Second, "a second task for the URL under a new id", func() bool {
		tasks = published(t, js)
		return len(tasks) == 2
	})
	if tasks[1].ID == first.ID || tasks[1].URL != first.URL {
		t.Errorf("second task %s for %s; want a new id for %s", tasks[1].ID, tasks[1].URL, first.URL)
	}
	if d.InFlight() != 1 {
		t.Errorf("%d tasks in flight, want only the one that was queued", d.InFlight())
	}
}

// With a budget that never binds, due tasks go out in windows of
// asynchronous publishes: every one is published once, counted and kept
// in flight, and a duplicate inside a window is released alone and tried
// again under a new id while the rest of its window stands.
func TestRunPublishesWindowsWithADuplicate(t *testing.T) {
	js := newJS(t)
	now := time.Now()
	const n = 2*publishWindow + 10
	s := emptySched(t, 1e6, 100)
	for i := range n {
		s.Add(schedule.URLInfo{URL: fmt.Sprintf("http://h%d/x", i), Host: fmt.Sprintf("h%d", i), Weight: 1, Interval: time.Hour, NextDue: now}, now)
	}
	// One of them published before, as in TestRunReleasesDuplicateTask.
	dup := newTask(schedule.Dispatch{URL: "http://h7/x", Host: "h7", Due: now}, now)
	b, err := proto.Encode(dup)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.Publish(ctx, proto.TaskSubject(dup.Kind), b, jetstream.WithMsgID(dup.ID)); err != nil {
		t.Fatal(err)
	}
	d := newDispatcher(t, js, s, func(o *Options) { o.Budget, o.MaxInFlight, o.RetryAfter = 1e6, 4*n, 200*time.Millisecond })
	runDispatcher(t, d)
	var tasks []proto.Task
	// n tasks from the dispatcher (h7's under a new id), plus the one
	// published before.
	testutil.WaitFor(t, 20*time.Second, "every URL's task on the stream and counted", func() bool {
		tasks = published(t, js)
		return len(tasks) == n+1 && d.Published() == n
	})
	perURL := map[string]int{}
	ids := map[string]bool{}
	for _, task := range tasks {
		perURL[task.URL]++
		if ids[task.ID] {
			t.Errorf("task id %s on the stream twice", task.ID)
		}
		ids[task.ID] = true
	}
	for i := range n {
		u := fmt.Sprintf("http://h%d/x", i)
		want := 1
		if u == dup.URL {
			want = 2
		}
		if perURL[u] != want {
			t.Errorf("%s: %d tasks on the stream, want %d", u, perURL[u], want)
		}
	}
	if d.InFlight() != n {
		t.Errorf("%d in flight, want %d (the duplicate released, its retry in flight)", d.InFlight(), n)
	}
}

// Task ids are deterministic (a republish of the same fetch is dropped as
// a duplicate), differ between URLs and due times, and sort as their due
// times do whatever the URLs, so that the fold marks of a batch, keyed by
// task id, are written near one another in the store.
func TestTaskIDs(t *testing.T) {
	base := time.Date(2026, 11, 23, 3, 0, 0, 0, time.UTC)
	if a, b := taskID("http://h/x", base), taskID("http://h/x", base); a != b {
		t.Errorf("the same fetch has ids %s and %s", a, b)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	seen := map[string]bool{}
	var prev string
	due := base
	for i := range 2000 {
		// Due times a nanosecond to a day apart, on URLs in random order.
		due = due.Add(time.Duration(1 + rng.Int64N(int64(24*time.Hour))))
		id := taskID(fmt.Sprintf("http://h%d.example/p%d", rng.IntN(50), rng.IntN(1000)), due)
		if seen[id] {
			t.Fatalf("id %s given twice", id)
		}
		seen[id] = true
		if len(id) != 33 {
			t.Errorf("id %q: %d characters, want 33", id, len(id))
		}
		if i > 0 && id <= prev {
			t.Errorf("id %s of a later due time sorts before %s", id, prev)
		}
		prev = id
	}
	if a, b := taskID("http://h/x", base), taskID("http://h/y", base); a == b {
		t.Errorf("two URLs due at once share the id %s", a)
	}
}

// New refuses what Validate refuses, naming the field.
func TestNewValidates(t *testing.T) {
	for _, c := range []struct {
		field string
		set   func(*Options)
	}{
		{"Budget", func(o *Options) { o.Budget = 0 }},
		{"MaxInFlight", func(o *Options) { o.MaxInFlight = 0 }},
		{"RetryAfter", func(o *Options) { o.RetryAfter = 0 }},
	} {
		o := DefaultOptions()
		c.set(&o)
		if _, err := New(nil, newSched(t, "a/1"), o); err == nil || !strings.Contains(err.Error(), c.field+":") {
			t.Errorf("%s: New = %v, want an error naming the field", c.field, err)
		}
	}
}
