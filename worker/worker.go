// Package worker runs the stateless fetch loop: take a task from the shared
// JetStream consumer, check robots.txt, fetch politely, extract the content
// of interest and, when its hash differs from the previous version's (the
// task carries only the hash), ask the coordinator for that version and
// diff against it; then publish the result and only then acknowledge the
// task. Probe tasks instead read the items off a keyword-search page, and
// sitemap and feed tasks the entries a site publishes (signal.go).
// Everything a worker knows comes with the task, from the shared robots
// bucket or from the coordinator's content service, so a worker can be
// killed at any moment and another takes over (docs/design.md §2.3).
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/freshcrawl/freshcrawl/internal/broker"
	"github.com/freshcrawl/freshcrawl/internal/logx"
	"github.com/freshcrawl/freshcrawl/internal/optcheck"
	"github.com/freshcrawl/freshcrawl/proto"
	"github.com/freshcrawl/freshcrawl/worker/extract"
	"github.com/freshcrawl/freshcrawl/worker/fetch"
	"github.com/freshcrawl/freshcrawl/worker/probeparse"
	"github.com/freshcrawl/freshcrawl/worker/robots"
	"github.com/freshcrawl/freshcrawl/worker/signal"
)

// Options configure a worker. Start from DefaultOptions: every field is
// taken as it is, and New refuses what Validate refuses.
type Options struct {
	// ID names the worker in results and heartbeats; it is the one
	// setting with an "unset", "" (host-pid), because no constant can
	// name a process.
	ID string
	// Concurrency is how many tasks this worker handles at once.
	// Throughput is set by the coordinator's budget; concurrency only has
	// to cover fetch latency (about budget × fetch time / workers).
	Concurrency int
	// Fetch configures the HTTP fetcher (user agent, timeouts, caps).
	Fetch fetch.Options
	// Heartbeat is how often the worker announces itself.
	Heartbeat time.Duration
	// Robots configures the robots.txt cache.
	Robots robots.Options
	// Signal bounds the sitemaps and feeds read (the protocol's limits).
	Signal signal.Options
	// IgnoreRobots skips robots.txt (only for benchmarks against own pages).
	IgnoreRobots bool
	// Grace is how long a stopping worker lets the tasks it holds finish
	// before it hands them back (0: it hands them back at once).
	Grace time.Duration
	// MaxRaw caps the raw body sent with a result for URLs that keep it,
	// so a result stays well under NATS's message size.
	MaxRaw int
	// Metrics receive the worker's series (nil: none).
	Metrics *Metrics
	// Log receives structured logs (nil: slog.Default()).
	Log *slog.Logger
}

// DefaultOptions are the defaults of a worker; the config takes its
// concurrency and stop-grace defaults from here.
func DefaultOptions() Options {
	return Options{
		Concurrency: 8,
		Fetch:       fetch.DefaultOptions(),
		Robots:      robots.DefaultOptions(),
		Signal:      signal.DefaultOptions(),
		Heartbeat:   5 * time.Second,
		Grace:       10 * time.Second,
		MaxRaw:      256 << 10,
	}
}

// Validate reports every field New would refuse, each by its name.
func (o Options) Validate() error {
	var errs optcheck.Errors
	if o.Concurrency <= 0 {
		errs.Check("Concurrency", fmt.Errorf("must be > 0, got %d", o.Concurrency))
	}
	errs.Check("Fetch", o.Fetch.Validate())
	errs.Check("Robots", o.Robots.Validate())
	errs.Check("Signal", o.Signal.Validate())
	if o.Heartbeat <= 0 {
		errs.Check("Heartbeat", fmt.Errorf("must be > 0, got %s", o.Heartbeat))
	}
	if o.Grace < 0 {
		errs.Check("Grace", fmt.Errorf("must be ≥ 0, got %s", o.Grace))
	}
	if o.MaxRaw <= 0 {
		errs.Check("MaxRaw", fmt.Errorf("must be > 0, got %d", o.MaxRaw))
	}
	return errs.Err()
}

// Worker is one worker process's fetch loop.
type Worker struct {
	opts    Options
	nc      *nats.Conn
	js      jetstream.JetStream
	fetcher *fetch.Fetcher
	// extractor recycles the extraction buffers across tasks.
	extractor *extract.Extractor
	robots    *robots.Checker
	signals   *signal.Parser
	log       *slog.Logger
	active    atomic.Int64
	done      atomic.Int64
	back      atomic.Int64 // tasks handed back
	// abandoned counts hand-backs of tasks whose page was requested: the
	// request was made, its result is not reported.
	abandoned atomic.Int64
	// pulls counts the pull requests open on the server: a stopping worker
	// hands a task back only once none is, or the task would come straight
	// back to one of its own pulls.
	pulls struct {
		sync.Mutex
		cond *sync.Cond
		n    int
	}
	// ackWait is the task consumer's AckWait, read when Run starts: a task
	// is touched (InProgress) every third of it while it is worked on.
	ackWait time.Duration
	// held are the tasks being worked on, for touch.
	held heldTasks

	mu       sync.Mutex
	lastHost map[string]time.Time          // local safety net for host spacing
	parsers  map[string]*probeparse.Parser // compiled probe sources by definition
}

// New builds a worker, or returns Validate's error. robotsStore is shared
// by all workers (a JetStream KV bucket in production).
func New(nc *nats.Conn, js jetstream.JetStream, robotsStore robots.Store, opts Options) (*Worker, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("worker options: %w", err)
	}
	if opts.ID == "" {
		h, _ := os.Hostname()
		opts.ID = fmt.Sprintf("%s-%d", h, os.Getpid())
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	f, err := fetch.New(opts.Fetch)
	if err != nil {
		return nil, err
	}
	w := &Worker{opts: opts, nc: nc, js: js, fetcher: f, extractor: extract.NewExtractor(), log: opts.Log.With("worker", opts.ID), lastHost: map[string]time.Time{}, parsers: map[string]*probeparse.Parser{}}
	if w.signals, err = signal.NewParser(opts.Signal); err != nil {
		return nil, err
	}
	w.pulls.cond = sync.NewCond(&w.pulls.Mutex)
	w.robots, err = robots.NewChecker(robotsStore, func(ctx context.Context, robotsURL string) (int, []byte, error) {
		r := f.Get(ctx, robotsURL)
		opts.Metrics.fetched(r.Elapsed, r.Bytes)
		switch {
		case r.ErrKind == proto.ErrNone, r.ErrKind.HTTP():
			// A response, whatever its status; a body cut at
			// max-body is a prefix of the rules, which RFC 9309
			// §2.5 lets a crawler parse when at least 500 KiB.
		case r.ErrKind == proto.ErrBlocked:
			// The host name resolves to an address we refuse: the
			// page's fetch would be refused too, so say that.
			return 0, nil, &refusedHost{msg: r.Err.Error()}
		default:
			// No response, or a body that broke off (a timeout, a
			// reset, bad compression): the rules after the break are
			// unknown, so the origin counts as unreachable rather than
			// as having only the rules that arrived.
			return 0, nil, r.Err
		}
		return r.Status, r.Body, nil
	}, opts.Fetch.UserAgent, opts.Robots)
	if err != nil {
		return nil, err
	}
	return w, nil
}

// refusedHost is the robots.txt fetch's error when the fetcher refused
// the host's address.
type refusedHost struct{ msg string }

func (e *refusedHost) Error() string { return e.msg }
func (e *refusedHost) Unwrap() error { return robots.ErrRefused }

// Processed returns how many tasks this worker finished.
func (w *Worker) Processed() int64 { return w.done.Load() }

// HandedBack returns how many tasks this worker handed back on stopping.
func (w *Worker) HandedBack() int64 { return w.back.Load() }

// Abandoned returns how many of the tasks handed back had their page
// requested already (out of grace mid-fetch): requests made whose result
// was not reported.
func (w *Worker) Abandoned() int64 { return w.abandoned.Load() }

// Active returns how many tasks this worker holds now.
func (w *Worker) Active() int64 { return w.active.Load() }

// ID is the worker's name.
func (w *Worker) ID() string { return w.opts.ID }

// Run works until ctx is done, then stops cleanly: it stops pulling, lets
// the tasks it holds finish for up to Grace, and hands back the rest (a
// task waiting for its host's turn is handed back at once). A handed-back
// task is published again as a fresh message before the one held is
// acknowledged, so it never counts against the consumer's MaxDeliver and
// never ends as a failure. Run returns nil once everything is finished or
// handed back.
func (w *Worker) Run(ctx context.Context) error {
	var cons jetstream.Consumer
	err := broker.Retry(ctx, w.log, "worker "+w.opts.ID+": task consumer", func(actx context.Context) error {
		var err error
		cons, err = w.js.Consumer(actx, proto.TaskStream, proto.TaskConsumer)
		return err
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("worker %s: task consumer: %w", w.opts.ID, err)
	}
	// The consumer's own AckWait, not a setting of this process: the
	// coordinator may have created the consumer with another one.
	if info := cons.CachedInfo(); info != nil {
		w.ackWait = info.Config.AckWait
	}
	w.log.Info("worker started", "concurrency", w.opts.Concurrency)
	// Work goes on after ctx ends, for the grace period.
	work, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	finished := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-finished:
			return
		case <-ctx.Done():
		}
		w.log.Info("worker stopping: no new tasks; finishing those held", "held", w.active.Load(), "grace", w.opts.Grace)
		t := time.NewTimer(w.opts.Grace)
		defer t.Stop()
		select {
		case <-finished:
		case <-t.C:
			cancelWork()
		}
	}()
	// The toucher outlives the loops: it stops once they have all
	// returned, the tasks they held finished or handed back.
	touchCtx, stopTouch := context.WithCancel(context.Background())
	touched := make(chan struct{})
	go func() {
		defer close(touched)
		w.touch(touchCtx)
	}()
	defer func() {
		stopTouch()
		<-touched
	}()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		w.heartbeat(ctx)
	}()
	for i := 0; i < w.opts.Concurrency; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.loop(ctx, work, cons)
		}()
	}
	wg.Wait()
	close(finished)
	<-watched
	w.fetcher.CloseIdleConnections()
	w.log.Info("worker stopped", "processed", w.done.Load(), "handed_back", w.back.Load())
	return nil
}

// pullWait is how long a pull request waits for a task. A stopping worker
// lets its open pulls end rather than cancel them (a task the server sent
// just then would be lost until AckWait): it stops within pullWait.
const pullWait = time.Second

// loop pulls one task at a time: a pull buffer would start AckWait for
// tasks nobody is working on yet (docs/design.md §5). It stops pulling
// when stop ends; the pull in flight then is allowed to finish (at most
// its FetchMaxWait) and what it brings is handled.
func (w *Worker) loop(stop, work context.Context, cons jetstream.Consumer) {
	// Pulling fails every second while NATS is away: logged when it
	// starts, when the error changes and when it ends.
	var pulling logx.Condition[string]
	for stop.Err() == nil {
		w.pullBegin()
		batch, err := cons.Fetch(1, jetstream.FetchMaxWait(pullWait))
		if err != nil {
			w.pullEnd()
			if stop.Err() != nil {
				return
			}
			pulling.Hold(stop, w.log, slog.LevelWarn, err.Error(), "fetch from task queue", "err", err)
			select {
			case <-stop.Done():
				return
			case <-time.After(time.Second):
			}
			continue
		}
		pulling.End(stop, w.log, "fetching from the task queue again")
		var msgs []jetstream.Msg
		for msg := range batch.Messages() {
			msgs = append(msgs, msg)
		}
		w.pullEnd()
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) && stop.Err() == nil {
			w.log.Debug("task batch", "err", err)
		}
		for _, msg := range msgs {
			w.handle(stop, work, msg)
		}
	}
}

func (w *Worker) pullBegin() {
	w.pulls.Lock()
	w.pulls.n++
	w.pulls.Unlock()
}

func (w *Worker) pullEnd() {
	w.pulls.Lock()
	w.pulls.n--
	if w.pulls.n == 0 {
		w.pulls.cond.Broadcast()
	}
	w.pulls.Unlock()
}

// waitNoPulls blocks until no pull request of this worker is open. Pulls
// end by themselves within their FetchMaxWait.
func (w *Worker) waitNoPulls() {
	w.pulls.Lock()
	for w.pulls.n > 0 {
		w.pulls.cond.Wait()
	}
	w.pulls.Unlock()
}

func (w *Worker) heartbeat(ctx context.Context) {
	t := time.NewTicker(w.opts.Heartbeat)
	defer t.Stop()
	for {
		hb := proto.Heartbeat{V: proto.Version, WorkerID: w.opts.ID, At: time.Now(), Active: int(w.active.Load())}
		if b, err := proto.Encode(hb); err == nil {
			_ = w.nc.Publish(proto.HeartbeatSubject, b)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// handle works on one task: stop says the worker is stopping (a task not
// started yet is then handed back), work is cancelled when the grace
// period is over (a fetch still running is then abandoned and handed
// back).
func (w *Worker) handle(stop, work context.Context, msg jetstream.Msg) {
	w.active.Add(1)
	defer w.active.Add(-1)
	w.opts.Metrics.working(1)
	defer w.opts.Metrics.working(-1)
	task, err := proto.DecodeTask(msg.Data())
	if err != nil {
		// A malformed task will never succeed: terminate it rather than
		// let it bounce MaxDeliver times.
		w.log.Error("bad task, terminating", "err", err)
		_ = msg.Term()
		return
	}
	attempt := 1
	if md, err := msg.Metadata(); err == nil {
		attempt = int(md.NumDelivered)
	}
	// Keep the task ours while we work on it.
	w.held.add(msg)
	defer w.held.remove(msg)

	res, out := w.work(work, stop.Done(), task)
	if out != finished {
		if out == abandoned {
			w.abandoned.Add(1)
		}
		w.handBack(msg, task)
		return
	}
	w.opts.Metrics.result(&res)
	res.Attempt = attempt
	msgs, err := w.resultMessages(task, res)
	if err != nil {
		w.log.Error("encode result", "task", task.ID, "err", err)
		_ = msg.Term()
		return
	}
	// The result is stored in JetStream before the task is acknowledged;
	// the result's id de-duplicates a republish after a redelivery.
	if err := w.publishAll(work, task, msgs); err != nil {
		if work.Err() != nil {
			// Stopping, and out of grace: the fetch was made, its result
			// is dropped.
			w.abandoned.Add(1)
			w.handBack(msg, task)
			return
		}
		w.log.Warn("publish result failed; task will be redelivered", "task", task.ID, "err", err)
		_ = msg.NakWithDelay(2 * time.Second)
		return
	}
	if err := msg.Ack(); err != nil {
		w.log.Warn("ack task", "task", task.ID, "err", err)
	}
	w.done.Add(1)
}

// publishResult publishes a result, retrying while NATS is unreachable or
// a stream leader is being elected, for up to half the AckWait (the task
// is touched meanwhile): the result carries the work done, and its id
// makes a repeat harmless.
func (w *Worker) publishResult(ctx context.Context, task proto.Task, b []byte, id string) error {
	limit := max(w.ackWait/2, 5*time.Second)
	deadline := time.Now().Add(limit)
	for attempt := 0; ; attempt++ {
		// One attempt sent to a stream leader that died gets no answer:
		// give up on it soon and send it again.
		pctx, cancel := context.WithTimeout(ctx, min(3*time.Second, limit))
		_, err := w.js.Publish(pctx, proto.ResultSubject(task.Kind), b, jetstream.WithMsgID(id))
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return err
		}
		w.log.Debug("publish result: retrying", "task", task.ID, "err", err)
		t := time.NewTimer(min(backoffStep<<min(attempt, 5), time.Second))
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

const backoffStep = 50 * time.Millisecond

// handBack returns a task the worker will not finish: the same task is
// published again as a new message, then the one held is acknowledged.
// A negative acknowledgement would count as a delivery, and enough of them
// (rolling restarts) would exhaust MaxDeliver and record a failure that
// never happened. Handing back waits for this worker's open pulls to end,
// so that the task goes to another worker. The new message's id is the
// task's and the held message's sequence, so a hand-back repeated after a
// crash is de-duplicated, and the fold keys on the task id.
func (w *Worker) handBack(msg jetstream.Msg, task proto.Task) {
	w.waitNoPulls()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	id := task.ID + "/h"
	if md, err := msg.Metadata(); err == nil {
		id += strconv.FormatUint(md.Sequence.Stream, 10)
	}
	if _, err := w.js.Publish(ctx, msg.Subject(), msg.Data(), jetstream.WithMsgID(id)); err != nil {
		w.log.Warn("hand back task: republish failed; negatively acknowledging", "task", task.ID, "err", err)
		_ = msg.Nak()
		return
	}
	if err := msg.Ack(); err != nil {
		w.log.Warn("hand back task: ack", "task", task.ID, "err", err)
	}
	w.back.Add(1)
	w.log.Info("task handed back", "task", task.ID, "url", task.URL)
}

// heldTasks are the tasks a worker is working on, which one goroutine
// touches (InProgress) so that a slow fetch is not redelivered to a second
// worker: no goroutine or ticker per task.
type heldTasks struct {
	mu   sync.Mutex
	msgs map[jetstream.Msg]struct{}
}

func (h *heldTasks) add(m jetstream.Msg) {
	h.mu.Lock()
	if h.msgs == nil {
		h.msgs = map[jetstream.Msg]struct{}{}
	}
	h.msgs[m] = struct{}{}
	h.mu.Unlock()
}

func (h *heldTasks) remove(m jetstream.Msg) {
	h.mu.Lock()
	delete(h.msgs, m)
	h.mu.Unlock()
}

// touch tells JetStream, every third of the AckWait, that each task held
// is still being worked on, until ctx ends. A task taken just after a
// tick is touched at the next: never later than a third of the AckWait.
func (w *Worker) touch(ctx context.Context) {
	every := w.ackWait / 3
	if every <= 0 {
		every = time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	var msgs []jetstream.Msg
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		w.held.mu.Lock()
		msgs = msgs[:0]
		for m := range w.held.msgs {
			msgs = append(msgs, m)
		}
		w.held.mu.Unlock()
		for _, m := range msgs {
			_ = m.InProgress()
		}
		clear(msgs)
	}
}

// wait blocks until at, or returns false if ctx ends or the worker is
// told to stop first: a task that has not started is handed back rather
// than held through the wait.
func wait(ctx context.Context, stop <-chan struct{}, at time.Time) bool {
	d := time.Until(at)
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-stop:
		return false
	case <-t.C:
		return true
	}
}

// reserve returns when this worker may next request host, given the gap the
// coordinator says is in force, and books it. It is a safety net: the
// coordinator already spaces a host's tasks across all workers.
func (w *Worker) reserve(host string, gap time.Duration, notBefore time.Time) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	at := time.Now()
	if notBefore.After(at) {
		at = notBefore
	}
	if last, ok := w.lastHost[host]; ok && last.Add(gap).After(at) {
		at = last.Add(gap)
	}
	w.lastHost[host] = at
	if len(w.lastHost) > 100000 { // bound memory on very wide crawls
		cutoff := time.Now().Add(-time.Hour)
		for h, t := range w.lastHost {
			if t.Before(cutoff) {
				delete(w.lastHost, h)
			}
		}
	}
	return at
}

// process runs one task to its result, with no stop signal.
func (w *Worker) process(ctx context.Context, task proto.Task) proto.Result {
	res, _ := w.work(ctx, nil, task)
	return res
}

// outcome is how work ended.
type outcome int

const (
	finished   outcome = iota // a result to publish
	notStarted                // stopped before the page was requested
	abandoned                 // out of grace while the page was requested
)

// work runs one task and returns its result; every failure of the fetch
// is a result with an error kind. Unless the outcome is finished, the
// worker is stopping and the task is to be handed back, not reported.
func (w *Worker) work(ctx context.Context, stop <-chan struct{}, task proto.Task) (res proto.Result, out outcome) {
	res = proto.Result{V: proto.Version, TaskID: task.ID, Kind: task.Kind, URL: task.URL, Host: task.Host, WorkerID: w.opts.ID}
	out = notStarted
	defer func() {
		if ctx.Err() != nil && out == finished {
			// Out of grace: whatever the fetch returned was cut short.
			out = abandoned
		}
		if p := recover(); p != nil {
			// A worker never dies of one page.
			res.ErrKind, res.Err = proto.ErrOther, fmt.Sprintf("internal error: %v", p)
			w.log.Error("panic processing task", "task", task.ID, "url", task.URL, "panic", p)
		}
		res.FinishedAt = time.Now()
		res.Duration = res.FinishedAt.Sub(res.StartedAt)
	}()
	if !wait(ctx, stop, w.reserve(task.Host, task.MinGap, task.NotBefore)) {
		return res, notStarted
	}
	res.StartedAt = time.Now()
	if w.fetcher.RefusesHost(task.Host) {
		// Say so plainly rather than as an unreachable robots.txt.
		res.ErrKind, res.Err = proto.ErrBlocked, fmt.Sprintf("host %s is a private, loopback or link-local address (use --allow-private for intranet crawls)", task.Host)
		return res, finished
	}
	if !w.opts.IgnoreRobots {
		dec, err := w.robots.Check(ctx, task.URL)
		var refused *refusedHost
		switch {
		case errors.As(err, &refused):
			res.ErrKind, res.Err = proto.ErrBlocked, fmt.Sprintf("host %s resolves to an address the crawler must not connect to: %s", task.Host, refused.msg)
			return res, finished
		case err != nil:
			res.ErrKind, res.Err = proto.ErrRobots, err.Error()
			return res, finished
		}
		w.opts.Metrics.robots(dec.Fetched)
		noteRobots(task, &res, dec)
		res.CrawlDelay = dec.CrawlDelay
		switch {
		case !dec.Allowed && dec.Unreachable:
			// As disallowed as a rule would have it (RFC 9309), but
			// named for the outage it is.
			res.ErrKind, res.Err, res.Disallowed = proto.ErrRobotsUnreachable, "robots.txt unreachable: "+dec.Reason, true
			return res, finished
		case !dec.Allowed:
			res.ErrKind, res.Err, res.Disallowed = proto.ErrRobots, "disallowed by robots.txt: "+dec.Reason, true
			return res, finished
		}
		if dec.Fetched {
			// The robots.txt request counts against the host's rate: the
			// page waits a full gap after it completed.
			gap := max(task.MinGap, dec.CrawlDelay)
			if !wait(ctx, stop, w.reserve(task.Host, gap, time.Now().Add(gap))) {
				return res, notStarted
			}
			res.StartedAt = time.Now()
		}
	}
	out = finished
	switch task.Kind {
	case proto.KindFetch, proto.KindCapture:
		w.fetchPage(ctx, task, &res)
	case proto.KindProbe:
		w.probePage(ctx, task, &res)
	case proto.KindSitemap, proto.KindFeed:
		w.fetchSignal(ctx, task, &res)
	default:
		res.ErrKind, res.Err = proto.ErrOther, fmt.Sprintf("task kind %q not supported by this worker", task.Kind)
	}
	return res, finished
}

func (w *Worker) fetchPage(ctx context.Context, task proto.Task, res *proto.Result) {
	resp := w.fetcher.Fetch(ctx, fetch.Request{URL: task.URL, ETag: task.ETag, LastModified: task.LastModified})
	defer func() {
		// The body's buffer goes back for the next fetch unless the
		// result carries the body (res.Raw) to be encoded later; text,
		// hash and diff are copies.
		if res.Raw == nil {
			w.fetcher.Recycle(&resp)
		}
	}()
	w.opts.Metrics.fetched(resp.Elapsed, resp.Bytes)
	res.StartedAt = resp.Started
	res.Status, res.FinalURL, res.Bytes, res.Truncated = resp.Status, resp.FinalURL, resp.Bytes, resp.Truncated
	res.ETag, res.LastModified, res.ContentType, res.RetryAfter = resp.ETag, resp.LastModified, resp.ContentType, resp.RetryAfter
	if resp.ErrKind != proto.ErrNone {
		res.ErrKind = resp.ErrKind
		if resp.Err != nil {
			res.Err = resp.Err.Error()
		}
		return
	}
	if resp.NotModified {
		res.NotModified, res.Hash = true, task.PrevHash
		if res.ETag == "" {
			res.ETag = task.ETag
		}
		if res.LastModified == "" {
			res.LastModified = task.LastModified
		}
		return
	}
	rules, err := extract.Compile(task.Selector, task.Ignore)
	if err != nil {
		res.ErrKind, res.Err = proto.ErrContent, "extraction rules: "+err.Error()
		return
	}
	// Most fetches find the page unchanged: its text is hashed in the
	// extractor's buffers and never copied out.
	page, err := w.extractor.Extract(rules, resp.Body, resp.Class)
	if err != nil {
		res.ErrKind, res.Err = proto.ErrContent, err.Error()
		return
	}
	defer page.Release()
	hash := page.Hash
	res.Hash = hash
	if task.Kind == proto.KindCapture && resp.Class == fetch.Text {
		// A feed dates its items: exact update times for capture.
		res.FeedTimes, _ = extract.FeedTimes(resp.Body)
	}
	if archiveForbidden(resp.RobotsTags, resp.Body, resp.Class, w.robots.Token()) {
		// Only the hash leaves the worker: the coordinator tells a
		// change by it, and keeps no text, raw body or diff preview.
		res.NoArchive = true
		return
	}
	if hash == task.PrevHash {
		w.attachRaw(task, res, resp.Body, task.NeedRaw)
		return
	}
	if task.PrevHash == "" {
		// First version: stored, not a change.
		res.Text = page.Text()
		w.attachRaw(task, res, resp.Body, task.KeepRaw || task.NeedRaw)
		return
	}
	prev := task.PrevText
	if prev == "" {
		var err error
		if prev, err = w.previous(ctx, task); err != nil {
			// Without the previous version there is nothing to diff; the
			// URL is fetched again at its next due time and the change
			// seen then.
			res.Hash, res.ErrKind, res.Err = task.PrevHash, proto.ErrOther, "previous version unavailable: "+err.Error()
			return
		}
	}
	text := page.Text()
	d := extract.Diff(prev, text)
	if !extract.Significant(d, rules.MinChange()) {
		// Below the threshold: keep the old version as the baseline so
		// small changes that add up are still seen. Its validators stay
		// too: storing this response's ETag would make the next fetch a
		// 304 against a version nobody kept, and the drift would never
		// add up.
		res.Hash = task.PrevHash
		res.ETag, res.LastModified = task.ETag, task.LastModified
		w.attachRaw(task, res, resp.Body, task.NeedRaw)
		return
	}
	res.Changed, res.Text, res.Diff = true, text, &d
	w.attachRaw(task, res, resp.Body, task.KeepRaw || task.NeedRaw)
}

// attachRaw puts the response body on the result, capped at MaxRaw, when
// want says the task asked for it.
func (w *Worker) attachRaw(task proto.Task, res *proto.Result, body []byte, want bool) {
	if !want || len(body) == 0 || task.Kind == proto.KindProbe {
		return
	}
	if len(body) > w.opts.MaxRaw {
		body, res.RawTruncated = body[:w.opts.MaxRaw], true
	}
	res.Raw = body
}

// previous asks the coordinator for the stored version the task's PrevHash
// names.
func (w *Worker) previous(ctx context.Context, task proto.Task) (string, error) {
	if w.nc == nil {
		return "", errors.New("no NATS connection")
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	m, err := w.nc.RequestWithContext(rctx, proto.ContentSubject, []byte(task.URL))
	if err != nil {
		return "", fmt.Errorf("request previous version: %w", err)
	}
	if h := m.Header.Get(proto.ContentHashHeader); h != task.PrevHash {
		return "", fmt.Errorf("stored version %q is not the task's %q", h, task.PrevHash)
	}
	return string(m.Data), nil
}
