// Package coordinator is the shell that runs freshcrawl's data path: it
// loads the store into the schedule, runs the dispatcher, pulls results
// and has them folded, re-plans, plans keyword probes, and serves the
// HTTP API and metrics. The work itself lives in the packages it wires:
//
//	seed → store → schedule → dispatch → task stream → worker
//	     → result stream → fold → store (and the schedule's feedback)
package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/freshcrawl/freshcrawl/coordinator/internal/dispatch"
	"github.com/freshcrawl/freshcrawl/coordinator/internal/fold"
	"github.com/freshcrawl/freshcrawl/internal/api"
	"github.com/freshcrawl/freshcrawl/internal/broker"
	"github.com/freshcrawl/freshcrawl/internal/logx"
	"github.com/freshcrawl/freshcrawl/internal/notify"
	"github.com/freshcrawl/freshcrawl/internal/optcheck"
	"github.com/freshcrawl/freshcrawl/internal/schedule"
	"github.com/freshcrawl/freshcrawl/internal/seed"
	"github.com/freshcrawl/freshcrawl/internal/source"
	"github.com/freshcrawl/freshcrawl/proto"
	"github.com/freshcrawl/freshcrawl/store"
	"github.com/freshcrawl/freshcrawl/worker/extract"
)

// Options configure a coordinator. Start from DefaultOptions: every field
// is taken as it is, and New refuses what Validate refuses.
type Options struct {
	// Budget is the total fetches per second.
	Budget float64
	// HostRate is the most fetches per second any one host gets.
	HostRate float64
	// MaxInFlight bounds tasks dispatched and not yet folded.
	MaxInFlight int
	// Policy turns estimates into frequencies.
	Policy schedule.Policy
	// Replan is how often the plan is re-solved; it is also re-solved
	// when estimates moved enough.
	Replan time.Duration
	// PriorRate is the change rate assumed for a URL never observed,
	// changes per second.
	PriorRate float64
	// HalfLife is the age at which an observation counts half in the
	// change-rate estimate: shorter follows drift faster, longer is
	// steadier.
	HalfLife time.Duration
	// LMSkew is the clock skew tolerated when checking Last-Modified.
	LMSkew time.Duration
	// ExploreShare is the share of the plan's frequency floor given to URLs
	// the optimum gives up on, so a wrong estimate can recover: such a URL
	// is fetched at ExploreShare × (budget / URLs).
	ExploreShare float64
	// Sources are the keyword-search sources (the content-freshness paper) and ProbePolicy
	// how their tracked items are refreshed: greedy (keyword probes),
	// naive1 or naive2 (fetch by id; baselines).
	Sources     []source.Source
	ProbePolicy string
	// CaptureUniform keeps capture URLs on uniform polls (a baseline).
	CaptureUniform bool
	// CoChange refetches the URLs tied to a URL seen changed (the same
	// content, the same dated last change) when that is worth a fetch
	// (schedule.SchedulerOptions.CoChange).
	CoChange bool
	// DefaultIgnore are the noise rules every URL gets; a seed's own rules
	// add to them.
	DefaultIgnore proto.IgnoreRules
	// Retention bounds the versions and the change log kept in the
	// store; it is applied while the coordinator runs.
	Retention store.Retention
	// AckWait and MaxDeliver mirror the task consumer, to tell when a task
	// is lost for good.
	AckWait    time.Duration
	MaxDeliver int
	// MinBackoff and MaxBackoff bound a URL's error backoff: its n-th
	// failure in a row puts its next fetch max(interval, MinBackoff)·2^n
	// after the failure, at most MaxBackoff. GoneAfter is how long a URL
	// answers 404 before it is gone (a 410 is gone at once).
	MinBackoff, MaxBackoff, GoneAfter time.Duration
	// Log receives structured logs (nil: slog.Default()).
	Log *slog.Logger
	// Link is the NATS connection, whose state status and /healthz show
	// (nil: not shown).
	Link *broker.Link
	// Lease is the coordinator lease this coordinator holds (nil: none,
	// as in tests).
	Lease *broker.Lease
	// ConsoleEvery is the sampling period of the console's charts.
	ConsoleEvery time.Duration
	// Webhooks configure the delivery of change events to webhooks (the
	// config's and each seed's own); a nil Webhooks.Log logs to Log.
	Webhooks notify.Options
	// Metrics are served on /metrics besides the coordinator's own (the
	// in-process workers' of `run` and `demo`).
	Metrics prometheus.Gatherer
}

// DefaultOptions hold the defaults of every setting, each taken from the
// package that owns it; the config takes its defaults from here.
func DefaultOptions() Options {
	sched, nats, failures := schedule.DefaultSchedulerOptions(), broker.DefaultSettings(), fold.DefaultOptions()
	return Options{
		Budget: sched.Budget, HostRate: sched.HostRate, MaxInFlight: dispatch.DefaultOptions().MaxInFlight,
		Policy: sched.Policy, Replan: sched.Replan, PriorRate: sched.PriorRate, HalfLife: sched.HalfLife,
		LMSkew: schedule.DefaultLMSkew, ExploreShare: sched.ExploreShare, ProbePolicy: schedule.DefaultProbePolicy, CoChange: sched.CoChange,
		Retention: store.DefaultRetention(), AckWait: nats.AckWait, MaxDeliver: nats.MaxDeliver,
		MinBackoff: failures.MinBackoff, MaxBackoff: failures.MaxBackoff, GoneAfter: failures.GoneAfter,
		ConsoleEvery: 5 * time.Second, Webhooks: notify.DefaultOptions(),
	}
}

// failures are the fold's options of o.
func (o Options) failures() fold.Options {
	f := fold.DefaultOptions()
	f.MinBackoff, f.MaxBackoff, f.GoneAfter = o.MinBackoff, o.MaxBackoff, o.GoneAfter
	return f
}

// Validate reports every field New would refuse, each by its name (a
// field of nested options by its path: Retention.Versions), and compiles
// the default noise rules as a worker will.
func (o Options) Validate() error {
	var errs optcheck.Errors
	errs.Check("", o.schedulerOptions(nil, nil).Validate())
	// The dispatcher checks what it is given; the budget is the
	// scheduler's check above, so only the dispatcher's own field goes.
	do := dispatch.DefaultOptions()
	do.MaxInFlight = o.MaxInFlight
	errs.Check("", do.Validate())
	// At least a second, because HTTP dates have whole seconds.
	if o.LMSkew < time.Second {
		errs.Check("LMSkew", fmt.Errorf("must be ≥ 1s (HTTP dates have whole seconds), got %s", o.LMSkew))
	}
	errs.Check("ProbePolicy", schedule.CheckProbePolicy(o.ProbePolicy))
	errs.Check("Retention", o.Retention.Validate())
	errs.Check("", o.failures().Validate())
	// AckWait and MaxDeliver mirror the task consumer, whatever created
	// it: only what the coordinator computes with them is checked.
	if o.AckWait <= 0 {
		errs.Check("AckWait", fmt.Errorf("must be > 0, got %s", o.AckWait))
	}
	if o.MaxDeliver < 1 {
		errs.Check("MaxDeliver", fmt.Errorf("must be ≥ 1, got %d", o.MaxDeliver))
	}
	// The console checks its own period; here it goes by this field's name.
	console := api.DefaultOptions()
	console.Every = o.ConsoleEvery
	for _, f := range optcheck.Fields(console.Validate()) {
		errs.Check("ConsoleEvery", f.Err)
	}
	errs.Check("Webhooks", o.Webhooks.Validate())
	errs.Check("DefaultIgnore", checkIgnore(o.DefaultIgnore))
	return errs.Err()
}

// checkIgnore compiles the default noise rules as a worker compiles them:
// each kind on its own first, so that every bad one is named by its field
// (Selectors, Patterns, MinChange), then together.
func checkIgnore(r proto.IgnoreRules) error {
	var errs optcheck.Errors
	for _, part := range []proto.IgnoreRules{{Selectors: r.Selectors}, {Patterns: r.Patterns}, {MinChange: r.MinChange}} {
		if _, err := extract.Compile("", part); err != nil {
			errs.Check(ignoreField(err), err)
		}
	}
	if err := errs.Err(); err != nil {
		return err
	}
	if _, err := extract.Compile("", r); err != nil {
		errs.Check(ignoreField(err), err)
	}
	return errs.Err()
}

// ignoreField is the field of proto.IgnoreRules a compile error is about.
func ignoreField(err error) string {
	var re *extract.RuleError
	if !errors.As(err, &re) {
		return ""
	}
	switch {
	case strings.HasPrefix(re.Field, "ignore.selectors"):
		return "Selectors"
	case strings.HasPrefix(re.Field, "ignore.patterns"):
		return "Patterns"
	case re.Field == "ignore.min_change":
		return "MinChange"
	}
	return ""
}

// Coordinator is one running coordinator. Its state is split by what
// guards it, so that no lock is held across slow work:
//
//   - the live schedule and the tasks in flight: the dispatcher's lock
//     (dispatch.Dispatcher), never held across I/O or a policy's solve;
//   - worker heartbeats: workers;
//   - one-off probe requests and what their results showed: probes;
//   - the sources' probe planners: rounds, held while a round is planned;
//   - the per-minute windows: their own (the totals are the store's).
//
// A goroutine holding rounds may take probes, and one holding probes may
// take the dispatcher's lock; never the other way round.
type Coordinator struct {
	opts   Options
	db     *store.DB
	nc     *nats.Conn
	js     jetstream.JetStream
	log    *slog.Logger
	m      *metrics
	disp   *dispatch.Dispatcher
	folder *fold.Folder
	prune  retention // applies opts.Retention
	// est is the folder's estimator, for the standard error of the prior
	// a URL never fetched starts with (withPrior).
	est schedule.Estimator

	sources []*sourceState // fixed after New; their planners are guarded by rounds
	rounds  sync.Mutex

	workers struct {
		sync.Mutex
		seen map[string]time.Time // worker id → last heartbeat
	}
	probes struct {
		sync.Mutex
		reqs map[string]schedule.ProbeRequest // one-off probe URL → its request
		seen map[string][]probeSeen           // by source: what results taught since its last round
	}
	queue atomic.Pointer[broker.QueueInfo]
	// foldErr is the last fold that failed, cleared by the next that
	// succeeds: status and /healthz show it (a full disk, a damaged store).
	foldErr atomic.Pointer[foldFailure]
	// loaded is set once the schedule is loaded from the store: a Run
	// after a step-down (the lease lost and taken back, the store
	// untouched meanwhile) keeps the schedule it has.
	loaded atomic.Bool
	// lease is the coordinator lease held (nil: none).
	lease atomic.Pointer[broker.Lease]

	console *api.Server // the operator's console: dashboard and URL lifecycle

	// Change events leave the store through these two: the change stream
	// (and core subscribers), and the webhooks.
	publisher *notify.Publisher
	hooks     *notify.Deliverer
	cond      conditions

	fetchWin window
	chgWin   window
	// sigc and sigm count the sitemap and feed results (signals.go).
	sigc signalCounts
	sigm signalMetrics
	// smaps are the sitemaps the coordinator fetches (sitemaps.go).
	smaps sitemaps
}

// New builds a coordinator on an open store and NATS connection. Streams
// must exist (broker.Ensure). It fails on a bad source definition.
func New(db *store.DB, nc *nats.Conn, js jetstream.JetStream, opts Options) (*Coordinator, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("coordinator options: %w", err)
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	c := &Coordinator{opts: opts, db: db, nc: nc, js: js, log: opts.Log.With("role", "coordinator")}
	c.cond.budget.Material = budgetMoved(opts.Budget)
	est, sched, err := newSchedule(opts, db, c.log)
	if err != nil {
		return nil, err
	}
	c.opts.Policy = sched.Policy()
	est.Trust.ClockSkew = opts.LMSkew.Seconds()
	do := dispatch.DefaultOptions()
	do.Budget, do.MaxInFlight, do.Prepare, do.Log = opts.Budget, opts.MaxInFlight, c.prepare, c.log
	if c.disp, err = dispatch.New(js, sched, do); err != nil {
		return nil, err
	}
	if c.folder, err = fold.New(db, est, opts.failures(), c.log); err != nil {
		return nil, err
	}
	c.est = est
	c.prune.pruner = store.NewPruner(db, opts.Retention)
	c.m = newMetrics(c.disp)
	c.sigm = newSignalMetrics(c.m.reg)
	c.workers.seen = map[string]time.Time{}
	c.probes.reqs = map[string]schedule.ProbeRequest{}
	c.probes.seen = map[string][]probeSeen{}
	ao := api.DefaultOptions()
	ao.Log, ao.Every, ao.AllowPrivateWebhooks = c.log, opts.ConsoleEvery, opts.Webhooks.AllowPrivate
	if c.console, err = api.New(console{c}, ao); err != nil {
		return nil, err
	}
	c.m.budget.Set(opts.Budget)
	if c.publisher, err = notify.NewPublisher(db, js, c.log); err != nil {
		return nil, err
	}
	wo := opts.Webhooks
	if wo.Log == nil {
		wo.Log = c.log
	}
	if c.hooks, err = notify.NewDeliverer(db, wo); err != nil {
		return nil, err
	}
	if c.hooks.Unsigned() {
		c.log.Warn("some webhooks have no secret: their requests are not signed (set --webhook-secret or the webhook's secret)")
	}
	c.m.addWebhooks(c.hooks, db)
	if opts.Lease != nil {
		c.lease.Store(opts.Lease)
	}
	for _, src := range opts.Sources {
		ss, err := newSourceState(src, opts.ProbePolicy, opts.PriorRate)
		if err != nil {
			return nil, err
		}
		c.sources = append(c.sources, ss)
	}
	return c, nil
}

// load rebuilds the in-memory schedule from the store.
func (c *Coordinator) load() error {
	n, err := c.loadInto(c.disp.Do)
	if err != nil {
		return err
	}
	c.m.urls.Set(float64(n))
	c.log.Info("schedule loaded from store", "urls", n)
	return nil
}

// loadInto adds every stored URL to the schedule do gives access to, a
// batch at a time: the store decodes the next batch while this one is
// added (store.DB.ForEachScheduleBatch: only the fields a schedule
// reads), and the schedule is locked once a batch.
func (c *Coordinator) loadInto(do func(func(*schedule.Scheduler))) (int, error) {
	now := time.Now()
	n := 0
	if total, err := c.db.URLCount(); err == nil {
		// Sized once rather than doubling while millions are added; a
		// failed count only loses the hint (the load reports the store).
		do(func(s *schedule.Scheduler) { s.Grow(total) })
	}
	var infos []schedule.URLInfo
	err := c.db.ForEachScheduleBatch(func(batch []store.URL) error {
		infos = infos[:0]
		var capture map[string][]store.Version
		for _, u := range batch {
			u = c.withPrior(u)
			if u.Mode == string(seed.ModeCapture) {
				// Capture URLs relearn their rhythm from the stored versions.
				vs, err := c.db.Versions(u.URL)
				if err != nil {
					return err
				}
				if capture == nil {
					capture = map[string][]store.Version{}
				}
				capture[u.URL] = vs
			}
			infos = append(infos, info(u))
		}
		do(func(s *schedule.Scheduler) {
			for i := range infos {
				s.Add(infos[i], now)
				for _, v := range capture[infos[i].URL] {
					s.ObserveVersion(infos[i].URL, v.After, v.Before, v.Exact, v.CapturedAt)
				}
			}
		})
		n += len(batch)
		return nil
	})
	if err != nil {
		return n, fmt.Errorf("load schedule from store: %w", err)
	}
	c.restoreHazard(do)
	c.restoreHosts(do)
	return n, nil
}

// restoreHazard gives the schedule the hazard counts the previous
// coordinator stored (saveHazard). Counts that cannot be read cost only
// what they held: the schedule starts from the hazard's prior, as a new
// crawl does.
func (c *Coordinator) restoreHazard(do func(func(*schedule.Scheduler))) {
	h, found, err := c.db.Hazard()
	if err != nil {
		c.log.Warn("the stored hazard counts are unreadable; the hazard of a rate change starts from its prior", "err", err)
		return
	}
	if !found {
		return
	}
	do(func(s *schedule.Scheduler) { err = s.RestoreHazardCounts(h.ChangePoints, h.Observed, h.At) })
	if err != nil {
		c.log.Warn("the stored hazard counts were not restored", "err", err)
	}
}

// saveHazard stores the schedule's hazard counts for the next coordinator
// (restoreHazard); before the first observation there are none to store.
func (c *Coordinator) saveHazard() {
	var h store.Hazard
	c.disp.Do(func(s *schedule.Scheduler) { h.ChangePoints, h.Observed, h.At = s.HazardCounts() })
	if h.At.IsZero() {
		return
	}
	if err := c.db.SetHazard(h); err != nil {
		c.log.Warn("could not store the hazard counts; a restart would start them from the prior", "err", err)
	}
}

// LoadScheduler builds the schedule a coordinator with opts starts from
// on db, the way Run does before it plans, without NATS: the restart
// benchmark (freshcrawl bench scale) measures it.
func LoadScheduler(db *store.DB, opts Options) (*schedule.Scheduler, int, error) {
	if err := opts.Validate(); err != nil {
		return nil, 0, fmt.Errorf("coordinator options: %w", err)
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	est, sched, err := newSchedule(opts, db, opts.Log)
	if err != nil {
		return nil, 0, err
	}
	c := &Coordinator{opts: opts, db: db, est: est, log: opts.Log}
	n, err := c.loadInto(func(fn func(*schedule.Scheduler)) { fn(sched) })
	return sched, n, err
}

// newSchedule builds the estimator and the scheduler of opts. The
// scheduler holds each URL's store id, not the URL, and spells URLs
// through db (storeURLs).
func newSchedule(opts Options, db *store.DB, log *slog.Logger) (schedule.Estimator, *schedule.Scheduler, error) {
	est := schedule.NewEstimator(opts.HalfLife, opts.PriorRate)
	sched, err := schedule.NewScheduler(opts.schedulerOptions(est.Priors, storeURLs{db: db, log: log}))
	return est, sched, err
}

// schedulerOptions are the scheduler's options of o, with the priors it
// shares with the estimator and the store's spelling of URLs.
func (o Options) schedulerOptions(priors *schedule.PriorSet, urls schedule.URLSource) schedule.SchedulerOptions {
	s := schedule.DefaultSchedulerOptions()
	s.Budget, s.HostRate, s.Policy, s.ExploreShare, s.Replan, s.CaptureUniform = o.Budget, o.HostRate, o.Policy, o.ExploreShare, o.Replan, o.CaptureUniform
	s.CoChange = o.CoChange
	s.PriorRate, s.HalfLife, s.Priors, s.URLs = o.PriorRate, o.HalfLife, priors, urls
	return s
}

// storeURLs spells the schedule's URLs by their store ids and reads
// their estimator states (schedule.URLSource), one read transaction a
// call.
type storeURLs struct {
	db  *store.DB
	log *slog.Logger
}

// URLs reads ids' URLs from the store. A failed read, or an id the store
// no longer holds (a URL deleted while scheduled), is logged: the
// schedule keeps the URL and tries it again.
func (s storeURLs) URLs(ids []uint64, fn func(i int, url string)) error {
	n := 0
	err := s.db.URLsByID(ids, func(i int, url string) { n++; fn(i, url) })
	if err != nil {
		s.log.Error("read the schedule's URLs from the store", "ids", len(ids), "err", err)
		return err
	}
	if n < len(ids) {
		s.log.Warn("the store does not hold scheduled URL ids", "missing", len(ids)-n, "of", len(ids))
	}
	return nil
}

// Estimates reads the estimator states of ids' URLs from the store, for
// a plan's refit and re-summaries. A failed read is logged: the plan goes
// on without them and the next one reads them again.
func (s storeURLs) Estimates(ids []uint64, fn func(i int, est []byte)) error {
	if err := s.db.EstimatesByID(ids, fn); err != nil {
		s.log.Error("read the schedule's estimator states from the store", "ids", len(ids), "err", err)
		return err
	}
	return nil
}

// info is what the scheduler needs of a stored URL.
func info(u store.URL) schedule.URLInfo {
	period, _ := time.ParseDuration(u.Period) // validated when seeded
	return schedule.URLInfo{URL: u.URL, ID: u.ID, Host: u.Host, Weight: u.Weight, Capture: u.Mode == string(seed.ModeCapture), Rate: u.Rate, Interval: u.Interval, NextDue: u.NextDue, Disallowed: u.Disallowed,
		Period: period, Polls: u.Polls, Paused: u.Paused, RateSE: u.RateSE, LastOK: u.LastOK, Estimate: u.Estimate, Gone: u.Gone, Backoff: u.ErrStreak > 0}
}

// SetLease records the lease the coordinator holds again after a
// step-down, for status and /healthz.
func (c *Coordinator) SetLease(l *broker.Lease) { c.lease.Store(l) }

// Run serves until ctx is done. Stopped, it finishes the fold under way
// and leaves every other task and result in the streams, for the next
// coordinator.
//
// Run may be called again once it has returned, when the coordinator
// holds the lease again after a step-down: it keeps its schedule and
// reconciles the tasks in the stream anew.
func (c *Coordinator) Run(ctx context.Context) error {
	// Heartbeats are heard from the start: loading a large store and the
	// first plan take seconds, and a worker's first heartbeat sent in
	// that time would otherwise be lost, leaving it unlisted until its
	// next one.
	hb, err := c.nc.Subscribe(proto.HeartbeatSubject, func(m *nats.Msg) {
		if h, err := decodeHeartbeat(m.Data); err == nil {
			c.sawWorkers(time.Now(), h.WorkerID)
		}
	})
	if err != nil {
		return fmt.Errorf("subscribe heartbeats: %w", err)
	}
	defer hb.Unsubscribe()
	if !c.loaded.Load() {
		if err := c.load(); err != nil {
			return err
		}
		c.loaded.Store(true)
	}
	// Tasks left in the stream by a previous run, or by the coordinator
	// this one took over from, are still being fetched: keep them.
	if err := broker.Retry(ctx, c.log, "reconcile tasks", c.reconcile); err != nil {
		return err
	}
	if err := broker.Retry(ctx, c.log, "fold results left in the stream", c.foldLeftResults); err != nil {
		return err
	}
	c.replan()

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

	// A loop that fails stops the others: a coordinator that dispatches
	// without folding would fill every host's slot and stall unseen.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	loops := []func(context.Context) error{c.disp.Run, c.resultLoop, c.maintainLoop, c.console.Run, c.publisher.Run, c.hooks.Run}
	if len(c.sources) > 0 {
		loops = append(loops, c.probeLoop)
	}
	errc := make(chan error, len(loops))
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
		c.log.Error("coordinator stopping", "err", runErr)
		cancel()
	}
	wg.Wait()
	c.saveHazard()
	c.log.Info("coordinator stopped")
	return runErr
}

// sawWorkers records that the named workers were alive at t.
func (c *Coordinator) sawWorkers(t time.Time, ids ...string) {
	c.workers.Lock()
	defer c.workers.Unlock()
	for _, id := range ids {
		if id != "" {
			c.workers.seen[id] = t
		}
	}
}

func decodeHeartbeat(b []byte) (proto.Heartbeat, error) {
	var h proto.Heartbeat
	if err := json.Unmarshal(b, &h); err != nil {
		return h, err
	}
	if h.V != proto.Version || h.WorkerID == "" {
		return h, errors.New("bad heartbeat")
	}
	return h, nil
}

// prepare completes a task before the dispatcher publishes it: a probe's
// spec, the URL's selector and noise rules, and the previous version's
// validators from the store. The previous text is not sent: most fetches
// find the page unchanged, and a worker that finds it changed asks for it
// (ContentSubject).
func (c *Coordinator) prepare(_ context.Context, t *proto.Task) error {
	if c.sitemapTask(t) {
		return nil
	}
	c.probeTask(t)
	var rec store.URL
	hasRaw := false
	if t.Kind != proto.KindProbe {
		err := c.db.View(func(tx *store.Tx) error {
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
	}
	t.Selector, t.Ignore = rec.Selector, mergeIgnore(c.opts.DefaultIgnore, proto.IgnoreRules(rec.Ignore))
	t.ETag, t.LastModified, t.PrevHash = rec.ETag, rec.LastMod, rec.Hash
	if rec.NoArchive {
		// No copy is kept of that version: should the page allow one
		// now, the worker sends its text as a first version's.
		t.PrevHash = ""
	}
	if t.KeepRaw = rec.KeepRaw; t.KeepRaw && !hasRaw {
		// No raw body kept yet: ask for one, unconditionally, so a 304
		// does not leave the URL without it.
		t.NeedRaw, t.ETag, t.LastModified = true, "", ""
	}
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

// MaintainEvery is the period of the maintenance loop, which among other
// things asks the scheduler whether a plan is due. The virtual benchmark
// checks for a due plan on the same period.
const MaintainEvery = 2 * time.Second

// maintainPeriod is the maintenance loop's period: MaintainEvery, or half
// the re-plan period when that is shorter, so that a plan due every
// Replan is not made only every MaintainEvery (with a simulated day of
// half a second, a re-plan a day would otherwise wait four days). The
// other chores of the loop only get done more often.
func maintainPeriod(replan time.Duration) time.Duration {
	if replan > 0 && replan/2 < MaintainEvery {
		return max(replan/2, time.Millisecond)
	}
	return MaintainEvery
}

// replanCostFactor bounds the time re-plans for moved estimates take:
// after a plan that took d, the next waits until (replanCostFactor+1)·d
// after its start, so re-planning holds at most 1/(replanCostFactor+1)
// of the maintenance loop's time. A plan of 10 000 URLs takes about
// 0.1–0.3 s; at thousands of folds a second the scheduler's "a tenth of
// the estimates moved" holds at every tick, and a plan (with its priors'
// refit) every MaintainEvery took a seventh of the coordinator's CPU.
// Small plans (milliseconds) are not held back at all: the tick is
// longer than the wait.
const replanCostFactor = 19

// replanNotBefore is the earliest start of the next re-plan for moved
// estimates, after one that ran from start to end.
func replanNotBefore(start, end time.Time) time.Time {
	return end.Add(replanCostFactor * end.Sub(start))
}

// maintainLoop re-plans, watches the queue, forgets stale workers and
// releases tasks that are lost for good.
func (c *Coordinator) maintainLoop(ctx context.Context) error {
	replanEvery := c.opts.Replan
	var nextPlan time.Time // the earliest re-plan for moved estimates
	tick := time.NewTicker(maintainPeriod(c.opts.Replan))
	defer tick.Stop()
	prune := time.NewTicker(foldMarkPruneEvery)
	defer prune.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-prune.C:
			c.pruneFoldMarks(ctx, now)
		case now := <-tick.C:
			qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			q, err := broker.Queue(qctx, c.js)
			cancel()
			if err == nil {
				c.queue.Store(&q)
				c.m.queue.WithLabelValues("pending").Set(float64(q.Pending))
				c.m.queue.WithLabelValues("ack_pending").Set(float64(q.AckPending))
				c.m.queue.WithLabelValues("redelivered").Set(float64(q.Redelivered))
				c.m.queue.WithLabelValues("results").Set(float64(q.Results))
			}
			c.workers.Lock()
			for id, at := range c.workers.seen {
				if now.Sub(at) > time.Minute {
					delete(c.workers.seen, id)
				}
			}
			c.m.workers.Set(float64(len(c.workers.seen)))
			c.workers.Unlock()
			// A task is lost for good once every delivery could have timed
			// out; the advisory normally tells us sooner.
			for _, id := range c.disp.Lost(now, c.opts.AckWait*time.Duration(c.opts.MaxDeliver)+time.Minute) {
				c.log.Warn("task lost, rescheduling", "task", id)
				c.disp.Release(id, now, now)
			}
			var due, old bool
			c.disp.Do(func(s *schedule.Scheduler) {
				due = s.ReplanDue(now)
				_, at, _ := s.Plan()
				old = at.IsZero() || now.Sub(at) >= replanEvery
			})
			// A plan due only because estimates moved waits out its cost
			// share; one never made or older than Replan does not.
			if due && (old || !now.Before(nextPlan)) {
				start := time.Now()
				c.replan()
				nextPlan = replanNotBefore(start, time.Now())
			}
			c.applyRetention(now)
		}
	}
}

// replan re-solves the policy over all URLs and sets every interval,
// without holding the schedule's lock while the policy runs
// (dispatch.Dispatcher.Replan).
func (c *Coordinator) replan() {
	start := time.Now()
	out, err := c.disp.Replan(time.Now)
	c.m.planSeconds.Observe(time.Since(start).Seconds())
	if err != nil {
		c.cond.plan.Hold(context.Background(), c.log, slog.LevelError, err.Error(), "plan failed; keeping the previous one", "policy", c.opts.Policy.Name(), "err", err)
		return
	}
	c.cond.plan.End(context.Background(), c.log, "plan solved again", "policy", c.opts.Policy.Name())
	c.saveHazard()
	var inUse float64
	var n, disallowed int
	c.disp.Do(func(s *schedule.Scheduler) {
		_, _, inUse = s.Plan()
		n, disallowed = s.Len(), s.Disallowed()
	})
	c.m.fresh.Set(finite(out.ModelFreshness))
	c.m.planFresh.Set(finite(out.Freshness))
	c.m.age.Set(finite(out.Age))
	c.m.givenUp.Set(float64(out.GivenUp))
	c.m.capped.Set(float64(out.CappedHosts))
	c.m.budgetInUse.Set(finite(inUse))
	c.m.unabsorbed.Set(finite(out.Unabsorbed))
	c.m.urls.Set(float64(n))
	c.m.disallowed.Set(float64(disallowed))
	if out.Unabsorbed > 0 && n > 0 {
		c.cond.budget.Hold(context.Background(), c.log, slog.LevelWarn, out.Unabsorbed, "budget exceeds what the hosts can take under politeness",
			"unabsorbed_per_s", out.Unabsorbed, "budget_per_s", c.opts.Budget, "hint", "add hosts or raise --host-rate, or lower --budget; logged again only when the figure moves by a tenth, and when it ends")
	} else {
		c.cond.budget.End(context.Background(), c.log, "the hosts take the whole budget again")
	}
}

// conditions are the coordinator's warnings that persist, each logged
// when it starts, when it changes materially and when it ends: the loops
// that check them run every second or every --replan, and a line per
// check would bury every other (and a demo's table). "Materially" is the
// state's Material; for the error conditions it is a new error text or
// kind.
type conditions struct {
	budget  logx.Condition[float64] // the budget per second the hosts cannot take
	plan    logx.Condition[string]  // the policy's error
	fold    logx.Condition[string]  // the kind of fold failure (full disk or other)
	consume logx.Condition[string]  // reading the result stream
	prune   logx.Condition[string]  // pruning fold marks
	retain  logx.Condition[string]  // applying retention
}

// budgetMoved is the budget shortfall's "materially": by more than a
// tenth of the figure last logged and by more than 1 % of the budget. The
// shortfall wanders with every re-plan's estimates (0.05 to 0.18 of a
// demo's 20/s), and only a move an operator would act on is news.
func budgetMoved(budget float64) func(last, cur float64) bool {
	return func(last, cur float64) bool {
		d := math.Abs(cur - last)
		return d > 0.1*last && d > 0.01*budget
	}
}

// onMaxDeliveries records a task that ran out of deliveries as failed and
// deletes it from the work queue, which keeps such a message otherwise.
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
	if err := st.DeleteMsg(ctx, adv.StreamSeq); err != nil {
		c.log.Warn("delete failed task", "seq", adv.StreamSeq, "err", err)
	}
}

func (c *Coordinator) recordFailed(task proto.Task, why string) {
	now := time.Now()
	if _, err := c.folder.Failed(task, why); err != nil {
		c.log.Error("record failed task", "task", task.ID, "err", err)
	}
	c.m.failed.Inc()
	c.m.errors.WithLabelValues(string(proto.ErrFailed)).Inc()
	c.log.Warn("task failed", "task", task.ID, "url", task.URL, "why", why)
	c.disp.Release(task.ID, now, now.Add(time.Duration(float64(time.Second)/c.opts.HostRate)))
}

// foldMarkPruneEvery is how often fold marks past their age are deleted;
// the marks kept are then at most this much beyond the age.
const foldMarkPruneEvery = time.Minute

// foldMarkSkew is the clock skew allowed between the NATS server that
// stamps a stored result and this process, which stamps fold marks.
const foldMarkSkew = 10 * time.Minute

// pruneFoldMarks deletes the fold marks older than the retention's age,
// but never one that a result still in the results stream may need. A
// result folded and not acknowledged (the coordinator stopped between the
// commit and the ack, possibly for longer than the age) is still in the
// stream, and its mark is younger than when it was stored there: marks
// from before the oldest stored result, less the skew, are kept too.
// When the stream cannot be read, nothing is pruned this time.
func (c *Coordinator) pruneFoldMarks(ctx context.Context, now time.Time) {
	cutoff := now.Add(-c.opts.Retention.FoldMarksAge)
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	oldest, err := broker.OldestResult(qctx, c.js)
	cancel()
	if err != nil {
		c.cond.prune.Hold(ctx, c.log, slog.LevelWarn, err.Error(), "prune fold marks: skipped until the result stream can be read", "err", err)
		return
	}
	if keep := oldest.Add(-foldMarkSkew); !oldest.IsZero() && keep.Before(cutoff) {
		cutoff = keep
	}
	n, err := c.db.PruneFolded(cutoff)
	if err != nil {
		c.cond.prune.Hold(ctx, c.log, slog.LevelWarn, err.Error(), "prune fold marks", "err", err)
		return
	}
	c.cond.prune.End(ctx, c.log, "fold marks pruned again")
	if n > 0 {
		c.log.Debug("pruned fold marks", "n", n, "before", cutoff)
	}
}
