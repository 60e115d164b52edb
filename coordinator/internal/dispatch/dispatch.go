// Package dispatch turns the scheduler's due URLs into fetch tasks on the
// JetStream task stream, under the global budget and a bound on the tasks
// in flight, and keeps the table of tasks in flight until their results
// are folded, fail or are lost.
//
// A Dispatcher owns the live schedule.Scheduler: the scheduler and the
// in-flight table share one lock, and everything else that reads or moves
// the schedule (the fold, re-plans, seeding, probes, status) goes through
// the Dispatcher's methods. No method holds the lock across I/O or across
// the policy's solve (Replan).
package dispatch

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/time/rate"

	"github.com/freshcrawl/freshcrawl/internal/logx"
	"github.com/freshcrawl/freshcrawl/internal/optcheck"
	"github.com/freshcrawl/freshcrawl/internal/schedule"
	"github.com/freshcrawl/freshcrawl/proto"
)

// Options configure a Dispatcher. Start from DefaultOptions: every field
// is taken as it is, and New refuses what Validate refuses.
type Options struct {
	// Budget is the total tasks per second (the global limiter, burst 1:
	// never two tasks back to back above the budget).
	Budget float64
	// MaxInFlight bounds tasks dispatched and not yet finished. It also
	// sizes the task consumer's MaxAckPending.
	MaxInFlight int
	// Prepare completes a task before it is published (the previous
	// version's validators, a probe's spec). It runs without the lock;
	// an error counts as a failed publish. Nil: the task goes as it is.
	Prepare func(ctx context.Context, t *proto.Task) error
	// RetryAfter is how long a failed publish waits before the URL is
	// tried again.
	RetryAfter time.Duration
	// Log receives structured logs (nil: slog.Default()).
	Log *slog.Logger
}

// DefaultOptions are the defaults of a dispatcher; the coordinator's
// options take their max-in-flight default from here.
func DefaultOptions() Options {
	return Options{Budget: schedule.DefaultSchedulerOptions().Budget, MaxInFlight: 256, RetryAfter: time.Second}
}

// Validate reports every field New would refuse, each by its name.
func (o Options) Validate() error {
	var errs optcheck.Errors
	if !(o.Budget > 0) || math.IsInf(o.Budget, 0) {
		errs.Check("Budget", fmt.Errorf("must be a finite rate > 0, got %v", o.Budget))
	}
	if o.MaxInFlight <= 0 {
		errs.Check("MaxInFlight", fmt.Errorf("must be > 0, got %d", o.MaxInFlight))
	}
	if o.RetryAfter <= 0 {
		errs.Check("RetryAfter", fmt.Errorf("must be > 0, got %s", o.RetryAfter))
	}
	return errs.Err()
}

// errDuplicate is a publish JetStream acknowledged as a duplicate of a
// message with the same id in its de-duplication window: the task is not
// queued, so no result will come for it.
var errDuplicate = errors.New("JetStream dropped the task as a duplicate of one published before")

// errNoAck is a publish JetStream did not acknowledge within
// publishTimeout, or before the dispatcher stopped.
var errNoAck = fmt.Errorf("no acknowledgement within %s", publishTimeout)

// flight is a task dispatched and not yet finished.
type flight struct {
	url string
	at  time.Time
}

// Dispatcher is the dispatch loop with the live schedule it draws from.
type Dispatcher struct {
	js        jetstream.JetStream
	o         Options
	limiter   *rate.Limiter
	wake      chan struct{} // something became due or a slot freed
	published atomic.Uint64
	// publishing is failing to publish tasks, which lasts while the
	// stream is full or NATS unreachable: every task would log the same
	// line. Materially: another error, the task's id left out.
	publishing logx.Condition[string]

	mu       sync.Mutex
	sched    *schedule.Scheduler
	inflight map[string]flight // task id → task
	perURL   map[string]int    // tasks in flight per URL
}

// New returns a dispatcher of the tasks of sched onto js, or Validate's
// error.
func New(js jetstream.JetStream, sched *schedule.Scheduler, o Options) (*Dispatcher, error) {
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("dispatch options: %w", err)
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Prepare == nil {
		o.Prepare = func(context.Context, *proto.Task) error { return nil }
	}
	return &Dispatcher{
		js: js, o: o, sched: sched,
		limiter:  rate.NewLimiter(rate.Limit(o.Budget), 1),
		wake:     make(chan struct{}, 1),
		inflight: map[string]flight{}, perURL: map[string]int{},
	}, nil
}

// publishTimeout bounds one task publish.
const publishTimeout = 3 * time.Second

// Poke wakes the dispatch loop: a URL may have become due or a slot free.
func (d *Dispatcher) Poke() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Do runs fn on the scheduler under the lock. fn must be quick: no I/O,
// no re-plan (use Replan), nothing that scales with the number of URLs.
func (d *Dispatcher) Do(fn func(s *schedule.Scheduler)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	fn(d.sched)
}

// InFlight is the number of tasks in flight.
func (d *Dispatcher) InFlight() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.inflight)
}

// InFlightOf is the number of tasks in flight for the URLs of urls.
func (d *Dispatcher) InFlightOf(urls []string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, u := range urls {
		n += d.perURL[u]
	}
	return n
}

// Published is the number of tasks published so far.
func (d *Dispatcher) Published() uint64 { return d.published.Load() }

// publishWindow is the most tasks published before waiting for their
// acknowledgements: they go out back to back (PublishAsync) and cost one
// round trip to the server together instead of one each.
const publishWindow = 256

// Run dispatches due URLs until ctx is done: it takes the next due URL
// from the scheduler (host spacing, one task in flight per host and the
// saturated-host rule live in the scheduler's frontier) while fewer than
// MaxInFlight tasks are in flight, waits for the global limiter, then
// prepares and publishes the task. Tasks the limiter lets go at once
// (while it still has a token) join the same window of up to
// publishWindow publishes, whose acknowledgements are awaited together. A
// task that cannot be published is released and its URL tried again
// RetryAfter later.
func (d *Dispatcher) Run(ctx context.Context) error {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	batch := make([]proto.Task, 0, publishWindow)
	for ctx.Err() == nil {
		now := time.Now()
		task, ok, next := d.take(now)
		if !ok {
			wait := time.Second
			if !next.IsZero() {
				wait = min(wait, max(next.Sub(now), time.Millisecond))
			}
			timer.Reset(wait)
			select {
			case <-ctx.Done():
				return nil
			case <-d.wake:
			case <-timer.C:
			}
			continue
		}
		// The global budget: never more than Budget tasks a second.
		if err := d.limiter.Wait(ctx); err != nil {
			d.Release(task.ID, now, now)
			return nil
		}
		batch = append(batch[:0], task)
		// More tasks join the window only while the limiter has a token
		// now: the budget (burst 1) holds for each task, and a window
		// never waits for the limiter.
		for len(batch) < publishWindow && d.limiter.Tokens() >= 1 {
			t, ok, _ := d.take(now)
			if !ok {
				break
			}
			if !d.limiter.Allow() {
				// Only this loop spends tokens, so this does not
				// happen; waiting keeps the budget if it ever does.
				if err := d.limiter.Wait(ctx); err != nil {
					d.Release(t.ID, now, now)
					break
				}
			}
			batch = append(batch, t)
		}
		if failed := d.publishAll(ctx, batch, now); failed {
			t := time.NewTimer(d.o.RetryAfter)
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
		}
	}
	return nil
}

// publishAll prepares and publishes a window of tasks and waits for their
// acknowledgements. A task JetStream drops as a duplicate is released
// with a new due time (so a new id); one that could not be prepared or
// published is released RetryAfter later. It reports whether any publish
// failed (not counting duplicates), for the caller to back off.
func (d *Dispatcher) publishAll(ctx context.Context, tasks []proto.Task, now time.Time) (failed bool) {
	futures := make([]jetstream.PubAckFuture, len(tasks))
	errs := make([]error, len(tasks))
	for i := range tasks {
		futures[i], errs[i] = d.publishAsync(ctx, &tasks[i])
	}
	// A publish takes milliseconds; one sent to a stream leader that died
	// gets no answer at all, and the window waits on it alone.
	wait := time.NewTimer(publishTimeout)
	defer wait.Stop()
	late := false // past the deadline: take only the answers already in
	for i, f := range futures {
		if f == nil {
			continue
		}
		var ack *jetstream.PubAck
		var err error
		if !late {
			select {
			case ack = <-f.Ok():
			case err = <-f.Err():
			case <-wait.C:
				late = true
			case <-ctx.Done():
				late = true
			}
		}
		if late && ack == nil && err == nil {
			select {
			case ack = <-f.Ok():
			case err = <-f.Err():
			default:
			}
		}
		switch {
		case ack != nil && ack.Duplicate:
			errs[i] = fmt.Errorf("publish task %s: %w", tasks[i].ID, errDuplicate)
		case ack != nil:
		case err != nil:
			errs[i] = fmt.Errorf("publish task %s: %w", tasks[i].ID, err)
		default:
			errs[i] = fmt.Errorf("publish task %s: %w", tasks[i].ID, errNoAck)
		}
	}
	for i, err := range errs {
		t := &tasks[i]
		switch {
		case err == nil:
			d.published.Add(1)
			d.publishing.End(ctx, d.o.Log, "publishing tasks again")
		case errors.Is(err, errDuplicate):
			// Nothing will come back for it: free the host at once and
			// give the URL a new due time, so a new task id.
			d.o.Log.Warn("task dropped as a duplicate; will retry", "url", t.URL, "err", err)
			d.Release(t.ID, now, now.Add(d.o.RetryAfter))
		default:
			// Each task at debug, for whoever must account for every
			// task (the fault suite); the condition once at warn.
			d.o.Log.Debug("publish task failed", "url", t.URL, "err", err)
			d.publishing.Hold(ctx, d.o.Log, slog.LevelWarn, errors.Unwrap(err).Error(), "publishing tasks fails; they will be retried", "url", t.URL, "err", err)
			d.Release(t.ID, now, now.Add(d.o.RetryAfter))
			failed = true
		}
	}
	return failed
}

// take hands out the next due URL as a task and records it in flight.
func (d *Dispatcher) take(now time.Time) (proto.Task, bool, time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.inflight) >= d.o.MaxInFlight {
		return proto.Task{}, false, time.Time{}
	}
	next, ok, at := d.sched.Next(now)
	if !ok {
		return proto.Task{}, false, at
	}
	task := newTask(next, now)
	d.inflight[task.ID] = flight{url: next.URL, at: now}
	d.perURL[next.URL]++
	return task, true, time.Time{}
}

// newTask builds the task of a dispatch. Its id is the due time and the
// URL's hash (taskID), so a republish of the same fetch is dropped by
// JetStream.
func newTask(d schedule.Dispatch, now time.Time) proto.Task {
	id := taskID(d.URL, d.Due)
	kind := proto.KindFetch
	if d.Capture {
		kind = proto.KindCapture
	}
	return proto.Task{V: proto.Version, ID: id, Kind: kind, URL: d.URL, Host: d.Host, IssuedAt: now, NotBefore: now, MinGap: d.Gap}
}

// taskID is the id of the fetch of url due at due: the due time in
// nanoseconds, 16 hexadecimal digits, a dash and the first 8 bytes of the
// URL's SHA-256 in hexadecimal. The time comes first so that ids sort
// about in the order tasks are dispatched: the fold marks (the store's
// folded bucket, keyed by task id) of a batch of results then land on
// the last few pages of the bucket, where ids led by the hash would
// touch, read and rewrite a page of it for nearly every result.
func taskID(url string, due time.Time) string {
	h := sha256.Sum256([]byte(url))
	var b [16 + 1 + 16]byte
	var t [8]byte
	binary.BigEndian.PutUint64(t[:], uint64(due.UnixNano()))
	hex.Encode(b[:16], t[:])
	b[16] = '-'
	hex.Encode(b[17:], h[:8])
	return string(b[:])
}

// publishAsync prepares a task and starts its publish; the future
// answers with JetStream's acknowledgement.
func (d *Dispatcher) publishAsync(ctx context.Context, t *proto.Task) (jetstream.PubAckFuture, error) {
	if err := d.o.Prepare(ctx, t); err != nil {
		return nil, fmt.Errorf("prepare task %s: %w", t.ID, err)
	}
	b, err := proto.Encode(*t)
	if err != nil {
		return nil, err
	}
	f, err := d.js.PublishAsync(proto.TaskSubject(t.Kind), b, jetstream.WithMsgID(t.ID))
	if err != nil {
		return nil, fmt.Errorf("publish task %s: %w", t.ID, err)
	}
	return f, nil
}

// end removes a task from the in-flight table; the caller holds the lock.
func (d *Dispatcher) end(taskID string) (flight, bool) {
	f, ok := d.inflight[taskID]
	if !ok {
		return f, false
	}
	delete(d.inflight, taskID)
	if d.perURL[f.url]--; d.perURL[f.url] <= 0 {
		delete(d.perURL, f.url)
	}
	return f, true
}

// Release ends a task without a result (publish failed, lost, failed):
// its host is spaced from fetchedAt and its URL is due again at due. It
// reports whether the task was in flight.
func (d *Dispatcher) Release(taskID string, fetchedAt, due time.Time) bool {
	d.mu.Lock()
	f, ok := d.end(taskID)
	if ok {
		d.sched.Abort(f.url, fetchedAt, due)
	}
	d.mu.Unlock()
	if ok {
		d.Poke()
	}
	return ok
}

// Adopt takes tasks found in the task stream at start-up (left by a
// previous coordinator, or by this one's predecessor before a takeover)
// into the in-flight table, as if this dispatcher had published them at
// now: their URLs are not dispatched again until they come back, and they
// are released as lost if they never do. A task delivered[i] was out with
// a worker, unacknowledged: it leaves its host's slot free
// (schedule.Scheduler.AdoptDelivered). It returns the tasks whose URL the
// schedule does not know (removed since, or a one-off request of the
// previous run), which the caller may delete.
func (d *Dispatcher) Adopt(tasks []proto.Task, delivered []bool, now time.Time) (unknown []proto.Task) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, t := range tasks {
		if _, dup := d.inflight[t.ID]; dup {
			continue
		}
		known := false
		if i < len(delivered) && delivered[i] {
			known = d.sched.AdoptDelivered(t.URL, now)
		} else {
			known = d.sched.Adopt(t.URL)
		}
		if !known {
			unknown = append(unknown, t)
			continue
		}
		d.inflight[t.ID] = flight{url: t.URL, at: now}
		d.perURL[t.URL]++
	}
	return unknown
}

// Lost lists the tasks in flight for longer than after at now.
func (d *Dispatcher) Lost(now time.Time, after time.Duration) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var lost []string
	for id, f := range d.inflight {
		if now.Sub(f.at) > after {
			lost = append(lost, id)
		}
	}
	return lost
}

// Intervals returns the scheduler's interval of each URL (0: unknown), for
// a fold to persist: read before the fold's transaction so that the
// transaction never waits for the lock.
func (d *Dispatcher) Intervals(urls []string) []time.Duration {
	out := make([]time.Duration, len(urls))
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, u := range urls {
		if u != "" {
			out[i] = d.sched.Interval(u)
		}
	}
	return out
}

// Hinted reports, for each URL, whether its fetch was made for a
// co-change hint (schedule.Scheduler.Hinted), for the fold to learn no
// rate from it.
func (d *Dispatcher) Hinted(urls []string) []bool {
	out := make([]bool, len(urls))
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, u := range urls {
		if u != "" {
			out[i] = d.sched.Hinted(u)
		}
	}
	return out
}

// Version is a capture version a fold stored: it appeared in (After,
// Before], or exactly at Before when Exact.
type Version struct {
	After, Before time.Time
	Exact         bool
	// Times are the exact update times the poll's feed dated in the
	// interval, newest first (none for a page that is not a feed).
	Times []time.Time
}

// Finished is a folded result as the in-flight table and the scheduler
// see it.
type Finished struct {
	TaskID, URL string
	// At is when the fetch started.
	At time.Time
	// Applied is false for a result that was folded before (a
	// redelivery): it teaches the schedule nothing new.
	Applied bool
	// Feedback is what the fetch taught the schedule (schedule.Learn).
	Feedback schedule.Feedback
	// Version is the capture version the fold stored, if any.
	Version *Version
}

// Finish ends the tasks of folded results and applies what they taught
// the schedule, after the fold has committed. A result updates the
// schedule if its task was in flight here, or, for a result this run did
// not dispatch (redelivered from before a restart), if no task for its
// URL is in flight now: the current task decides otherwise. A result that
// was folded before only ends its task, whose URL is then due at once,
// like a lost task's. Finish reports, per result, whether the scheduler
// no longer knows the URL (a one-off request it has forgotten).
func (d *Dispatcher) Finish(done []Finished) []bool {
	gone := make([]bool, len(done))
	d.mu.Lock()
	for i, f := range done {
		_, found := d.end(f.TaskID)
		switch {
		case found && !f.Applied:
			d.sched.Abort(f.URL, f.At, f.At)
		case f.Applied && (found || d.perURL[f.URL] == 0):
			d.sched.Done(f.URL, f.Feedback)
		}
		if v := f.Version; v != nil && f.Applied {
			// A feed's dates are the exact times; the version's Before is
			// then only the newest of them.
			d.sched.ObserveVersion(f.URL, v.After, v.Before, v.Exact && len(v.Times) == 0, f.At)
			d.sched.ObserveExact(f.URL, v.Times)
		}
		gone[i] = !d.sched.Has(f.URL)
	}
	d.mu.Unlock()
	d.Poke()
	return gone
}

// applyChunk is how many URLs one Apply step re-plans under the lock.
// Each costs a heap fix in its host's queue and of the host in the ready
// heap, about half a microsecond, so a step holds the lock for about 2 ms.
const applyChunk = 4096

// Replan re-solves the plan over every URL without holding the lock
// across the slow part:
//
//   - the snapshot (locked) copies the plan input, three arrays of n
//     numbers: about 2 ms at a million URLs;
//   - the policy (the alloc solver, about a second at a million URLs)
//     runs unlocked;
//   - the new intervals are applied under the lock applyChunk URLs at a
//     time, releasing it and yielding between chunks (about 250 chunks
//     of 2 ms at a million URLs).
//
// So the most a fold (Intervals before its transaction, Finish after it),
// a dispatch or a status read waits for the lock is one snapshot copy or
// one chunk, a few milliseconds, never the solve or the whole apply.
// BenchmarkFoldDuringReplan in internal/coordinator measures it. now
// tells the time of each step. On error the previous plan stays. Only one
// Replan may run at a time.
func (d *Dispatcher) Replan(now func() time.Time) (schedule.PlanOutput, error) {
	d.mu.Lock()
	job := d.sched.Snapshot(now())
	d.mu.Unlock()
	if err := job.Solve(); err != nil {
		return schedule.PlanOutput{}, err
	}
	for {
		d.mu.Lock()
		done := d.sched.Apply(job, now(), applyChunk)
		d.mu.Unlock()
		if done {
			break
		}
		// Let the goroutines the chunk kept waiting run before the next:
		// on a machine with few cores a fold would otherwise queue
		// behind the whole apply for CPU, if no longer for the lock.
		runtime.Gosched()
	}
	d.Poke()
	return job.Output(), nil
}

// Plan is the scheduler's last plan, when it was made and the budget it
// uses.
func (d *Dispatcher) Plan() (schedule.PlanOutput, time.Time, float64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.sched.Plan()
}
