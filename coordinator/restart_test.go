package coordinator

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/freshcrawl/freshcrawl/internal/broker"
	"github.com/freshcrawl/freshcrawl/internal/schedule"
	"github.com/freshcrawl/freshcrawl/internal/testutil"
	"github.com/freshcrawl/freshcrawl/proto"
	"github.com/freshcrawl/freshcrawl/store"
)

func (e *env) streamTasks(t *testing.T) map[string]proto.Task {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := e.js.Stream(ctx, proto.TaskStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]proto.Task{}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if err != nil {
			continue // acknowledged
		}
		task, err := proto.DecodeTask(m.Data)
		if err != nil {
			t.Fatal(err)
		}
		out[task.ID] = task
	}
	return out
}

// A coordinator that starts on a stream holding tasks of a previous run
// keeps them: nothing is purged, their URLs are not dispatched a second
// time while they are in flight, and their results are folded as usual. A
// task for a URL no longer in the store is deleted.
func TestRestartReconcilesTasksInFlight(t *testing.T) {
	e := newEnv(t, testSettings())
	var urls []string
	for i := range 6 {
		urls = append(urls, fmt.Sprintf("http://127.0.0.%d:9/page", 10+i))
	}
	c1 := e.coordinator(t, func(o *Options) { o.Budget, o.HostRate = 50, 20 })
	addSeeds(t, c1, urls...)
	stop1 := run(t, c1)
	testutil.WaitFor(t, 20*time.Second, "every URL dispatched", func() bool { return len(e.streamTasks(t)) == len(urls) })
	stop1()
	before := e.streamTasks(t)

	// A task for a URL the store does not know, as left by a one-off
	// request of the previous run.
	orphan := proto.Task{V: proto.Version, ID: "orphan-1", Kind: proto.KindProbe, URL: "http://127.0.0.99:9/search?q=x", Host: "127.0.0.99:9"}
	b, _ := proto.Encode(orphan)
	if _, err := e.js.Publish(context.Background(), proto.TaskSubject(orphan.Kind), b); err != nil {
		t.Fatal(err)
	}

	c2 := e.coordinator(t, func(o *Options) { o.Budget, o.HostRate = 50, 20 })
	run(t, c2)
	testutil.WaitFor(t, 10*time.Second, "the previous run's tasks adopted", func() bool { return c2.disp.InFlight() == len(urls) })
	testutil.WaitFor(t, 10*time.Second, "the orphan task deleted", func() bool { _, ok := e.streamTasks(t)["orphan-1"]; return !ok })
	after := e.streamTasks(t)
	if len(after) != len(urls) {
		t.Fatalf("%d tasks in the stream after the restart, want the %d of the previous run", len(after), len(urls))
	}
	for id := range before {
		if _, ok := after[id]; !ok {
			t.Errorf("task %s of the previous run is gone", id)
		}
	}
	if n := c2.disp.Published(); n != 0 {
		t.Errorf("the restarted coordinator published %d tasks for URLs whose tasks are in flight", n)
	}
	// A worker answers the old tasks: each is folded and its URL
	// scheduled again.
	for range urls {
		task, m := e.takeTask(t, 10*time.Second)
		if _, ok := before[task.ID]; !ok {
			t.Fatalf("took %s, not a task of the previous run", task.ID)
		}
		e.sendResult(t, ok(task, "h-"+task.ID))
		_ = m.Ack()
	}
	testutil.WaitFor(t, 20*time.Second, "the old tasks folded", func() bool { return c2.fetches() == int64(len(urls)) })
	for _, u := range urls {
		rec, err := e.db.Get(u)
		if err != nil || rec.Fetches != 1 {
			t.Errorf("%s: %+v, %v; want one fetch folded", u, rec, err)
		}
	}
	testutil.WaitFor(t, 20*time.Second, "the URLs dispatched again", func() bool { return c2.disp.Published() >= uint64(len(urls)) })
}

// A store that refuses folds is reported in status and /healthz, and the
// results stay in the stream for later.
func TestFoldFailureShownInStatusAndHealth(t *testing.T) {
	e := newEnv(t, testSettings())
	c := e.coordinator(t, func(o *Options) { o.Budget, o.HostRate = 20, 20 })
	addSeeds(t, c, testURL)
	run(t, c)
	task, m := e.takeTask(t, 10*time.Second)
	rec := httptest.NewRecorder()
	c.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Body.String(), "ok") {
		t.Fatalf("/healthz %d %q before any failure", rec.Code, rec.Body.String())
	}
	// The store goes away under the coordinator.
	if err := e.db.Close(); err != nil {
		t.Fatal(err)
	}
	e.db = nil
	e.sendResult(t, ok(task, "h"))
	_ = m.Ack()
	testutil.WaitFor(t, 20*time.Second, "the fold failure in status", func() bool { return c.Status().Store.FoldError != nil })
	rec = httptest.NewRecorder()
	c.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "folds failing") {
		t.Errorf("/healthz %d %q, want 503 naming the failing folds", rec.Code, rec.Body.String())
	}
	if e.resultsPending(t) == 0 {
		t.Error("the result that could not be folded left the stream")
	}
}

// GET /api/backup streams a copy that checks, and GET /api/estimates lists
// every URL.
func TestBackupAndEstimatesAPI(t *testing.T) {
	e := newEnv(t, testSettings())
	c := e.coordinator(t, func(o *Options) { o.Budget, o.HostRate = 2, 20 })
	addSeeds(t, c, testURL, "http://127.0.0.2:9/other")
	srv := httptest.NewServer(c.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/api/backup")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "copy.db")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(f, resp.Body)
	resp.Body.Close()
	f.Close()
	if err != nil || resp.StatusCode != http.StatusOK || n == 0 || resp.ContentLength != n {
		t.Fatalf("backup: %d bytes of %d, status %d, %v", n, resp.ContentLength, resp.StatusCode, err)
	}
	r, err := store.Check(path)
	if err != nil || r.Records["urls"] != 2 {
		t.Fatalf("backup check %+v: %v", r, err)
	}
	resp, err = http.Get(srv.URL + "/api/estimates")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	seen := map[string]Estimate{}
	for dec.More() {
		var est Estimate
		if err := dec.Decode(&est); err != nil {
			t.Fatal(err)
		}
		seen[est.URL] = est
	}
	rec, err := e.db.Get(testURL)
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 || seen[testURL].Host != rec.Host || seen[testURL].Weight != 1 {
		t.Errorf("estimates %+v", seen)
	}
}

// Results a killed coordinator had pulled and not acknowledged are folded
// as soon as the next one starts, not after the consumer's AckWait.
func TestStartFoldsResultsLeftPending(t *testing.T) {
	e := newEnv(t, testSettings())
	c1 := e.coordinator(t, func(o *Options) { o.Budget, o.HostRate = 20, 20 })
	addSeeds(t, c1, testURL)
	stop1 := run(t, c1)
	task, m := e.takeTask(t, 10*time.Second)
	stop1()
	_ = m.Ack()
	e.sendResult(t, ok(task, "h1"))
	// A coordinator pulls the result and dies before acknowledging it.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cons, err := e.js.Consumer(ctx, proto.ResultStream, proto.ResultConsumer)
	if err != nil {
		t.Fatal(err)
	}
	b, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	pulled := 0
	for range b.Messages() {
		pulled++
	}
	if pulled != 1 {
		t.Fatalf("pulled %d results, want 1", pulled)
	}
	start := time.Now()
	c2 := e.coordinator(t, func(o *Options) { o.Budget, o.HostRate = 20, 20 })
	run(t, c2)
	testutil.WaitFor(t, 20*time.Second, "the pending result folded", func() bool { return c2.fetches() == 1 })
	t.Logf("folded %s after the start; the results AckWait is 10s", time.Since(start))
	if e.resultsPending(t) != 0 {
		// The fold deleted it from the stream.
		testutil.WaitFor(t, 10*time.Second, "the result gone from the stream", func() bool { return e.resultsPending(t) == 0 })
	}
	rec, err := e.db.Get(testURL)
	if err != nil || rec.Fetches != 1 || rec.Hash != "h1" {
		t.Errorf("record %+v, %v: want the result folded once", rec, err)
	}
}

// A coordinator that starts while the results consumer cannot be looked
// up (its replicas electing a leader after a NATS node restarted; here,
// deleted and created again) waits for it instead of dispatching without
// ever folding: once the consumer is back, the results are folded.
func TestResultsConsumerAwaited(t *testing.T) {
	e := newEnv(t, testSettings())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.js.DeleteConsumer(ctx, proto.ResultStream, proto.ResultConsumer); err != nil {
		t.Fatal(err)
	}
	c := e.coordinator(t, func(o *Options) { o.Budget, o.HostRate = 50, 20 })
	addSeeds(t, c, "http://127.0.0.20:9/page")
	stop := run(t, c)
	task, m := e.takeTask(t, 10*time.Second)
	e.sendResult(t, ok(task, "h1"))
	_ = m.Ack()
	if err := broker.Ensure(ctx, e.js, e.settings); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 20*time.Second, "the result folded", func() bool { return c.fetches() == 1 })
	stop()
}

// A coordinator stores the hazard counts of its schedule when it stops,
// and the next one starts from them rather than from the prior; so does
// the schedule LoadScheduler builds (the restart benchmark's). Each plan
// fades both counts by one factor, so their ratio is what must survive.
func TestRestartKeepsHazardCounts(t *testing.T) {
	e := newEnv(t, testSettings())
	c1 := e.coordinator(t, func(o *Options) { o.Budget, o.HostRate = 20, 20 })
	addSeeds(t, c1, testURL)
	stop1 := run(t, c1)
	e.takeTask(t, 10*time.Second) // the coordinator is past its start
	const cps0, obs0 = 7.5, 3.2e8
	at := time.Now().Add(-time.Minute)
	var err error
	c1.disp.Do(func(s *schedule.Scheduler) { err = s.RestoreHazardCounts(cps0, obs0, at) })
	if err != nil {
		t.Fatal(err)
	}
	stop1()
	check := func(who string, s *schedule.Scheduler) {
		t.Helper()
		cps, obs, got := s.HazardCounts()
		// A minute's fading is a small part of the default half-life.
		if !(cps > cps0/2 && cps <= cps0) || math.Abs(cps/obs-cps0/obs0) > 1e-12*cps0/obs0 || got.Before(at) {
			t.Errorf("%s: %v change points over %v s at %v; want %v over %v at %v, faded alike since", who, cps, obs, got, cps0, obs0, at)
		}
	}

	c2 := e.coordinator(t, func(o *Options) { o.Budget, o.HostRate = 20, 20 })
	run(t, c2)
	e.takeTask(t, 10*time.Second)
	c2.disp.Do(func(s *schedule.Scheduler) { check("after the restart", s) })

	sched, _, err := LoadScheduler(e.db, testOptions(t, func(o *Options) { o.Budget, o.HostRate = 20, 20 }))
	if err != nil {
		t.Fatal(err)
	}
	check("LoadScheduler", sched)
}

// The totals status shows are the store's: a coordinator started again on
// the same store shows what the previous one folded, and goes on from
// there.
func TestRestartKeepsStatusTotals(t *testing.T) {
	e := newEnv(t, testSettings())
	// The 503 backs the URL off by twice its interval (1 s): the test
	// waits for its next task.
	opts := func(o *Options) { o.Budget, o.HostRate, o.MinBackoff = 1, 20, time.Millisecond }
	c1 := e.coordinator(t, opts)
	addSeeds(t, c1, testURL)
	stop := run(t, c1)
	results := []func(proto.Task) proto.Result{
		func(task proto.Task) proto.Result { return ok(task, "h1") },
		func(task proto.Task) proto.Result { return ok(task, "h2") },
		func(task proto.Task) proto.Result {
			r := ok(task, "")
			r.Status, r.ErrKind, r.Err, r.Changed, r.Diff = 503, proto.ErrServerError, "503 Service Unavailable", false, nil
			return r
		},
	}
	for i, result := range results {
		task, m := e.takeTask(t, 10*time.Second)
		_ = m.Ack()
		e.sendResult(t, result(task))
		testutil.WaitFor(t, 10*time.Second, "a result folded", func() bool { return c1.fetches() == int64(i+1) })
	}
	before := c1.Status()
	stop()
	if before.Fetches != 3 || before.Changes != 1 || before.Errors[string(proto.ErrServerError)] != 1 {
		t.Fatalf("status before the restart: %d fetches, %d changes, errors %v; want 3, 1 and one server-error", before.Fetches, before.Changes, before.Errors)
	}
	if err := e.db.Close(); err != nil {
		t.Fatal(err)
	}
	e.openStore(t)

	c2 := e.coordinator(t, opts)
	after := c2.Status()
	if after.Fetches != before.Fetches || after.Changes != before.Changes || after.Failed != before.Failed || fmt.Sprint(after.Errors) != fmt.Sprint(before.Errors) {
		t.Errorf("status after the restart: %d fetches, %d changes, %d failed, errors %v; before it %d, %d, %d, %v",
			after.Fetches, after.Changes, after.Failed, after.Errors, before.Fetches, before.Changes, before.Failed, before.Errors)
	}
	run(t, c2)
	task, m := e.takeTask(t, 10*time.Second)
	_ = m.Ack()
	e.sendResult(t, ok(task, "h3"))
	testutil.WaitFor(t, 10*time.Second, "the result after the restart added to the totals", func() bool { return c2.fetches() == 4 })
}
