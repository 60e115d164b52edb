// Package coordinator is freshcrawl's brain: it keeps every URL's change
// estimate, plans fetch frequencies under the budget and per-host
// politeness, dispatches due URLs as tasks, folds results back into the
// store and serves the HTTP API and metrics.
//
// Data flow: seed → store → schedule (Policy) → dispatch (frontier) → task
// stream → worker → result stream → fold → store.
package coordinator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/time/rate"

	"github.com/freshcrawl/freshcrawl/internal/api"
	"github.com/freshcrawl/freshcrawl/internal/broker"
	"github.com/freshcrawl/freshcrawl/internal/proto"
	"github.com/freshcrawl/freshcrawl/internal/schedule"
	"github.com/freshcrawl/freshcrawl/internal/source"
	"github.com/freshcrawl/freshcrawl/internal/store"
)

// Options configure a coordinator.
type Options struct {
	// Budget is the total fetches per second.
	Budget float64
	// HostRate is the most fetches per second any one host gets.
	HostRate float64
	// MaxInFlight bounds tasks dispatched and not yet folded.
	MaxInFlight int
	// Policy turns estimates into frequencies (default uniform).
	Policy schedule.Policy
	// Replan is how often the plan is re-solved (default 30s); it is also
	// re-solved when estimates moved enough.
	Replan time.Duration
	// PriorRate is the change rate assumed for a URL never observed,
	// changes per second (default one a day).
	PriorRate float64
	// HalfLife is the age at which an observation counts half in the
	// change-rate estimate (default 30 days): shorter follows drift faster,
	// longer is steadier. Default 90 days.
	HalfLife time.Duration
	// LMSkew is the clock skew tolerated when checking Last-Modified
	// (default 1 minute).
	LMSkew time.Duration
	// ExploreShare is the share of the plan's frequency floor given to URLs
	// the optimum gives up on, so a wrong estimate can recover: such a URL
	// is fetched at ExploreShare × (budget / URLs).
	ExploreShare float64
	// Sources are the keyword-search sources (the content-freshness paper) and ProbePolicy
	// how their tracked items are refreshed: greedy (keyword probes,
	// default), naive1 or naive2 (fetch by id; baselines).
	Sources     []source.Source
	ProbePolicy string
	// CaptureUniform keeps capture URLs on uniform polls (a baseline).
	CaptureUniform bool
	// DefaultIgnore are the noise rules every URL gets; a seed's own rules
	// add to them.
	DefaultIgnore proto.IgnoreRules
	// AckWait and MaxDeliver mirror the task consumer, to tell when a task
	// is lost for good.
	AckWait    time.Duration
	MaxDeliver int
	// Log receives structured logs.
	Log *slog.Logger
	// ConsoleEvery is the sampling period of the console's charts
	// (default 5s).
	ConsoleEvery time.Duration
}

func (o Options) withDefaults() Options {
	if o.Budget <= 0 {
		o.Budget = 10
	}
	if o.HostRate <= 0 {
		o.HostRate = 1
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = 256
	}
	if o.Policy == nil {
		o.Policy = nil
	}
	if o.Replan <= 0 {
		o.Replan = 30 * time.Second
	}
	if o.PriorRate <= 0 {
		// A quarter of a change a day: the mean of the page population Cho
		// & Garcia-Molina measured (Cho & Garcia-Molina Table 6), as in
		// estimate.DefaultPrior.
		o.PriorRate = 0.25 / 86400
	}
	if o.HalfLife <= 0 {
		o.HalfLife = 90 * 24 * time.Hour
	}
	if o.ExploreShare <= 0 {
		o.ExploreShare = 0.3
	}
	if o.AckWait <= 0 {
		o.AckWait = 60 * time.Second
	}
	if o.MaxDeliver <= 0 {
		o.MaxDeliver = 5
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.ProbePolicy == "" {
		o.ProbePolicy = schedule.ProbeGreedy
	}
	return o
}

// inflight is a dispatched task awaiting its result.
type inflight struct {
	url string
	at  time.Time
}

// Coordinator is one running coordinator.
type Coordinator struct {
	opts Options
	db   *store.DB
	nc   *nats.Conn
	js   jetstream.JetStream
	log  *slog.Logger
	m    *metrics

	mu       sync.Mutex
	sched    *schedule.Scheduler
	inflight map[string]inflight // task id → URL
	workers  map[string]time.Time
	sources  []*sourceState
	probes   map[string]schedule.ProbeRequest // one-off probe URL → its request
	queue    broker.QueueInfo

	est schedule.Estimator

	console *api.Server // the operator's console: dashboard and URL lifecycle

	wake     chan struct{} // something became due or a slot freed
	limiter  *rate.Limiter // the global budget
	seq      atomic.Uint64
	fetchWin window
	chgWin   window
	counts   struct {
		sync.Mutex
		fetches, changes, failed int64
		errors                   map[string]int64
	}
}

// New builds a coordinator on an open store and NATS connection. Streams
// must exist (broker.Ensure). It fails on a bad source definition.
func New(db *store.DB, nc *nats.Conn, js jetstream.JetStream, opts Options) (*Coordinator, error) {
	opts = opts.withDefaults()
	if err := schedule.CheckProbePolicy(opts.ProbePolicy); err != nil {
		return nil, err
	}
	c := &Coordinator{
		opts: opts, db: db, nc: nc, js: js, log: opts.Log.With("role", "coordinator"), m: newMetrics(),
		sched:    schedule.NewScheduler(schedule.SchedulerOptions{Budget: opts.Budget, HostRate: opts.HostRate, Policy: opts.Policy, ExploreShare: opts.ExploreShare, Replan: opts.Replan, CaptureUniform: opts.CaptureUniform}),
		inflight: map[string]inflight{}, workers: map[string]time.Time{}, probes: map[string]schedule.ProbeRequest{},
		wake:    make(chan struct{}, 1),
		limiter: rate.NewLimiter(rate.Limit(opts.Budget), 1),
	}
	c.counts.errors = map[string]int64{}
	c.console = api.New(console{c}, api.Options{Log: c.log, Every: opts.ConsoleEvery})
	c.est = schedule.NewEstimator(opts.HalfLife, opts.PriorRate)
	if opts.LMSkew > 0 {
		c.est.Trust.ClockSkew = opts.LMSkew.Seconds()
	}
	c.m.budget.Set(opts.Budget)
	for _, src := range opts.Sources {
		ss, err := newSourceState(src, opts.ProbePolicy, opts.PriorRate)
		if err != nil {
			return nil, err
		}
		c.sources = append(c.sources, ss)
	}
	return c, nil
}

func (c *Coordinator) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// load rebuilds the in-memory schedule from the store.
func (c *Coordinator) load() error {
	now := time.Now()
	n := 0
	err := c.db.ForEach(func(u store.URL) error {
		u = c.withPrior(u)
		var vs []store.Version
		if u.Mode == "capture" {
			// Capture URLs relearn their rhythm from the stored versions.
			var err error
			if vs, err = c.db.Versions(u.URL); err != nil {
				return err
			}
		}
		c.mu.Lock()
		c.sched.Add(info(u), now)
		for _, v := range vs {
			c.sched.ObserveVersion(u.URL, v.After, v.Before, v.Exact, v.CapturedAt)
		}
		c.mu.Unlock()
		n++
		return nil
	})
	if err != nil {
		return fmt.Errorf("load schedule from store: %w", err)
	}
	c.m.urls.Set(float64(n))
	c.log.Info("schedule loaded from store", "urls", n)
	return nil
}

// info is what the scheduler needs of a stored URL.
func info(u store.URL) schedule.URLInfo {
	period, _ := time.ParseDuration(u.Period) // validated when seeded
	return schedule.URLInfo{URL: u.URL, Host: u.Host, Weight: u.Weight, Capture: u.Mode == "capture", Rate: u.Rate, Interval: u.Interval, NextDue: u.NextDue, Disallowed: u.Disallowed,
		Period: period, Polls: u.Polls, Paused: u.Paused, RateSE: u.RateSE}
}

// Run serves until ctx is done.
func (c *Coordinator) Run(ctx context.Context) error {
	if err := c.load(); err != nil {
		return err
	}
	// Tasks left in the queue by a previous run are rebuilt from the store
	// (each URL keeps its next due time), so the queue starts empty rather
	// than holding tasks whose host spacing this run knows nothing about.
	if st, err := c.js.Stream(ctx, proto.TaskStream); err == nil {
		if err := st.Purge(ctx); err != nil {
			c.log.Warn("purge stale tasks", "err", err)
		}
	}
	c.replan(time.Now())

	hb, err := c.nc.Subscribe(proto.HeartbeatSubject, func(m *nats.Msg) {
		var h proto.Heartbeat
		if b, err := decodeHeartbeat(m.Data); err == nil {
			h = b
			c.mu.Lock()
			c.workers[h.WorkerID] = time.Now()
			c.mu.Unlock()
		}
	})
	if err != nil {
		return fmt.Errorf("subscribe heartbeats: %w", err)
	}
	defer hb.Unsubscribe()
	content, err := c.nc.QueueSubscribe(proto.ContentSubject, "coordinator", c.serveContent)
	if err != nil {
		return fmt.Errorf("subscribe content requests: %w", err)
	}
	defer content.Unsubscribe()
	adv, err := c.nc.Subscribe(broker.MaxDeliveriesSubject(), func(m *nats.Msg) { c.onMaxDeliveries(ctx, m.Data) })
	if err != nil {
		return fmt.Errorf("subscribe max-deliveries advisory: %w", err)
	}
	defer adv.Unsubscribe()

	var wg sync.WaitGroup
	errc := make(chan error, 4)
	loops := []func(context.Context) error{c.dispatchLoop, c.resultLoop, c.maintainLoop, c.console.Run}
	if len(c.sources) > 0 {
		loops = append(loops, c.probeLoop)
	}
	for _, loop := range loops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := loop(ctx); err != nil && ctx.Err() == nil {
				errc <- err
			}
		}()
	}
	c.log.Info("coordinator started", "budget_per_s", c.opts.Budget, "host_rate_per_s", c.opts.HostRate, "max_in_flight", c.opts.MaxInFlight, "policy", c.opts.Policy.Name())
	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-errc:
	}
	wg.Wait()
	c.log.Info("coordinator stopped")
	return runErr
}

func (c *Coordinator) dispatchLoop(ctx context.Context) error {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for ctx.Err() == nil {
		now := time.Now()
		c.mu.Lock()
		var d schedule.Dispatch
		var ok bool
		var next time.Time
		if len(c.inflight) < c.opts.MaxInFlight {
			d, ok, next = c.sched.Next(now)
		}
		var task proto.Task
		if ok {
			task = newTask(d, now)
			c.probeTask(d.URL, &task)
			c.inflight[task.ID] = inflight{url: d.URL, at: now}
			c.m.inFlight.Set(float64(len(c.inflight)))
		}
		c.mu.Unlock()
		if !ok {
			wait := time.Second
			if !next.IsZero() {
				wait = min(wait, max(next.Sub(now), time.Millisecond))
			}
			timer.Reset(wait)
			select {
			case <-ctx.Done():
				return nil
			case <-c.wake:
			case <-timer.C:
			}
			continue
		}
		// The global budget: never more than Budget tasks a second.
		if err := c.limiter.Wait(ctx); err != nil {
			c.release(task.ID, now, now)
			return nil
		}
		if err := c.publish(ctx, task); err != nil {
			c.log.Warn("publish task failed; will retry", "url", task.URL, "err", err)
			c.release(task.ID, now, now.Add(time.Second))
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
	return nil
}

// newTask builds the task of a dispatch. Its id is the URL's hash and due
// time, so a republish of the same fetch is dropped by JetStream.
func newTask(d schedule.Dispatch, now time.Time) proto.Task {
	h := sha256.Sum256([]byte(d.URL))
	id := hex.EncodeToString(h[:8]) + "-" + fmt.Sprint(d.Due.UnixNano())
	kind := proto.KindFetch
	if d.Capture {
		kind = proto.KindCapture
	}
	return proto.Task{V: proto.Version, ID: id, Kind: kind, URL: d.URL, Host: d.Host, IssuedAt: now, NotBefore: now, MinGap: d.Gap}
}

// publish fills the task's previous version from the store and sends it.
func (c *Coordinator) publish(ctx context.Context, t proto.Task) error {
	var rec store.URL
	hasRaw := false
	err := c.db.View(func(tx *store.Tx) error {
		if t.Kind == proto.KindProbe {
			return nil
		}
		u, found, err := tx.Get(t.URL)
		if err != nil || !found {
			return err
		}
		rec = u
		hasRaw = u.KeepRaw && tx.HasRaw(t.URL)
		return nil
	})
	if err != nil {
		return err
	}
	t.Selector, t.Ignore = rec.Selector, mergeIgnore(c.opts.DefaultIgnore, rec.Ignore)
	// The previous text is not sent: most fetches find the page unchanged,
	// and a worker that finds it changed asks for it (ContentSubject).
	t.ETag, t.LastModified, t.PrevHash = rec.ETag, rec.LastMod, rec.Hash
	if t.KeepRaw = rec.KeepRaw; t.KeepRaw && !hasRaw {
		// No raw body kept yet: ask for one, unconditionally, so a 304
		// does not leave the URL without it.
		t.NeedRaw, t.ETag, t.LastModified = true, "", ""
	}
	b, err := proto.Encode(t)
	if err != nil {
		return err
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := c.js.Publish(pctx, proto.TaskSubject(t.Kind), b, jetstream.WithMsgID(t.ID)); err != nil {
		return fmt.Errorf("publish task %s: %w", t.ID, err)
	}
	c.m.dispatched.Inc()
	return nil
}

// serveContent answers a worker's request for a URL's stored version.
func (c *Coordinator) serveContent(m *nats.Msg) {
	url := string(m.Data)
	var text, hash string
	err := c.db.View(func(tx *store.Tx) error {
		u, found, err := tx.Get(url)
		if err != nil || !found {
			return err
		}
		text, hash = tx.Content(url), u.Hash
		return nil
	})
	reply := nats.NewMsg(m.Reply)
	if err != nil {
		c.log.Warn("content request", "url", url, "err", err)
	} else {
		reply.Header.Set(proto.ContentHashHeader, hash)
		reply.Data = []byte(text)
	}
	_ = m.RespondMsg(reply)
}

// probeLoop starts the probe rounds of keyword-search sources when due.
func (c *Coordinator) probeLoop(ctx context.Context) error {
	every := time.Second
	for _, ss := range c.sources {
		every = min(every, max(ss.Source().TimeUnit/10, 10*time.Millisecond))
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			c.probeRounds(now)
		}
	}
}

// mergeIgnore adds a URL's own noise rules to the defaults; the URL's
// minimum change, when set, wins.
func mergeIgnore(def, own proto.IgnoreRules) proto.IgnoreRules {
	out := proto.IgnoreRules{MinChange: def.MinChange}
	out.Selectors = append(append(out.Selectors, def.Selectors...), own.Selectors...)
	out.Patterns = append(append(out.Patterns, def.Patterns...), own.Patterns...)
	if own.MinChange > 0 {
		out.MinChange = own.MinChange
	}
	return out
}

// release ends a task without a result (publish failed, lost, failed).
func (c *Coordinator) release(taskID string, fetchedAt, due time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	in, ok := c.inflight[taskID]
	if !ok {
		return
	}
	delete(c.inflight, taskID)
	c.sched.Abort(in.url, fetchedAt, due)
	c.m.inFlight.Set(float64(len(c.inflight)))
	c.poke()
}

// MaintainEvery is the period of the maintenance loop, which among other
// things asks the scheduler whether a plan is due. The virtual benchmark
// checks for a due plan on the same period.
const MaintainEvery = 2 * time.Second

// maintainLoop re-plans, watches the queue, forgets stale workers and
// releases tasks that are lost for good.
func (c *Coordinator) maintainLoop(ctx context.Context) error {
	tick := time.NewTicker(MaintainEvery)
	defer tick.Stop()
	prune := time.NewTicker(10 * time.Minute)
	defer prune.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-prune.C:
			if n, err := c.db.PruneFolded(time.Now().Add(-24 * time.Hour)); err != nil {
				c.log.Warn("prune fold marks", "err", err)
			} else if n > 0 {
				c.log.Debug("pruned fold marks", "n", n)
			}
		case now := <-tick.C:
			qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			q, err := broker.Queue(qctx, c.js)
			cancel()
			c.mu.Lock()
			if err == nil {
				c.queue = q
			}
			for id, at := range c.workers {
				if now.Sub(at) > time.Minute {
					delete(c.workers, id)
				}
			}
			c.m.workers.Set(float64(len(c.workers)))
			// A task is lost for good once every delivery could have timed
			// out; the advisory normally tells us sooner.
			lostAfter := c.opts.AckWait*time.Duration(c.opts.MaxDeliver) + time.Minute
			var lost []string
			for id, in := range c.inflight {
				if now.Sub(in.at) > lostAfter {
					lost = append(lost, id)
				}
			}
			due := c.sched.ReplanDue(now)
			c.mu.Unlock()
			c.m.queue.WithLabelValues("pending").Set(float64(q.Pending))
			c.m.queue.WithLabelValues("ack_pending").Set(float64(q.AckPending))
			c.m.queue.WithLabelValues("redelivered").Set(float64(q.Redelivered))
			c.m.queue.WithLabelValues("results").Set(float64(q.Results))
			for _, id := range lost {
				c.log.Warn("task lost, rescheduling", "task", id)
				c.release(id, now, now)
			}
			if due {
				c.replan(now)
			}
		}
	}
}

// replan re-solves the policy over all URLs and sets every interval.
func (c *Coordinator) replan(now time.Time) {
	c.mu.Lock()
	out, err := c.sched.Replan(now)
	_, _, inUse := c.sched.Plan()
	n := c.sched.Len()
	disallowed := c.sched.Disallowed()
	c.mu.Unlock()
	if err != nil {
		c.log.Error("plan failed; keeping the previous one", "policy", c.opts.Policy.Name(), "err", err)
		return
	}
	c.m.fresh.Set(out.Freshness)
	c.m.age.Set(out.Age)
	c.m.givenUp.Set(float64(out.GivenUp))
	c.m.capped.Set(float64(out.CappedHosts))
	c.m.budgetInUse.Set(inUse)
	c.m.unabsorbed.Set(out.Unabsorbed)
	c.m.urls.Set(float64(n))
	c.m.disallowed.Set(float64(disallowed))
	if out.Unabsorbed > 0 && n > 0 {
		c.log.Warn("budget exceeds what the hosts can take under politeness", "unabsorbed_per_s", out.Unabsorbed)
	}
	c.poke()
}

func (c *Coordinator) onMaxDeliveries(ctx context.Context, data []byte) {
	adv, err := broker.ParseMaxDeliveries(data)
	if err != nil {
		c.log.Warn("bad advisory", "err", err)
		return
	}
	if ctx.Err() != nil {
		return
	}
	st, err := c.js.Stream(ctx, proto.TaskStream)
	if err != nil {
		c.log.Warn("task stream", "err", err)
		return
	}
	raw, err := st.GetMsg(ctx, adv.StreamSeq)
	if err != nil {
		c.log.Warn("read failed task", "seq", adv.StreamSeq, "err", err)
		return
	}
	task, err := proto.DecodeTask(raw.Data)
	if err == nil {
		c.recordFailed(task, fmt.Sprintf("gave up after %d deliveries", adv.Deliveries))
	}
	// A work-queue stream keeps a message that ran out of deliveries.
	if err := st.DeleteMsg(ctx, adv.StreamSeq); err != nil {
		c.log.Warn("delete failed task", "seq", adv.StreamSeq, "err", err)
	}
}

func (c *Coordinator) recordFailed(task proto.Task, why string) {
	now := time.Now()
	_, err := c.db.Fold(task.ID, func(tx *store.Tx) error {
		u, found, err := tx.Get(task.URL)
		if err != nil || !found {
			return err
		}
		u.Failed++
		u.Errors++
		if u.ErrorKinds == nil {
			u.ErrorKinds = map[string]int64{}
		}
		u.ErrorKinds[string(proto.ErrFailed)]++
		u.LastErrKind, u.LastErr = string(proto.ErrFailed), why
		return tx.Put(u)
	})
	if err != nil {
		c.log.Error("record failed task", "task", task.ID, "err", err)
	}
	c.m.failed.Inc()
	c.m.errors.WithLabelValues(string(proto.ErrFailed)).Inc()
	c.counts.Lock()
	c.counts.failed++
	c.counts.errors[string(proto.ErrFailed)]++
	c.counts.Unlock()
	c.log.Warn("task failed", "task", task.ID, "url", task.URL, "why", why)
	c.release(task.ID, now, now.Add(time.Duration(float64(time.Second)/c.opts.HostRate)))
}
