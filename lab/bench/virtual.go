package bench

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/freshcrawl/freshcrawl/config"
	"github.com/freshcrawl/freshcrawl/coordinator"
	"github.com/freshcrawl/freshcrawl/internal/schedule"
	"github.com/freshcrawl/freshcrawl/lab/sim"
)

// Options configure a policies benchmark. Rates and durations are in
// simulated days, so the same options mean the same experiment in both
// modes.
type Options struct {
	Pages, Hosts int
	Seed         uint64
	// Days is the length of the run and Warmup the part of it left out of
	// the figures, in simulated days.
	Days, Warmup float64
	// Budget is the total fetches per simulated day (0: Pages/30, every
	// page once a month on average as in Cho & Garcia-Molina Table 6).
	Budget float64
	// Every, when > 0, sets the budget to every page once in Every
	// simulated days on average (Pages / Every, the run's pages): one of
	// Budget and Every may be set.
	Every float64
	// HostRate is the most fetches per simulated day of one host
	// (0: 10 × the uniform share of a host).
	HostRate float64
	// PriorRate (changes per simulated day), HalfLifeDays, Explore and
	// ReplanDays are the coordinator's options of the same names; the
	// first three default to config.Default's, read from it with a
	// simulated day for a day. ReplanDays is the longest time between two
	// plans (default one simulated day).
	PriorRate, HalfLifeDays, Explore, ReplanDays float64
	// TrueRates feeds the scheduler the true change rates instead of its
	// estimates: a diagnostic that separates the loss due to estimation
	// from the loss due to scheduling and dispatch.
	TrueRates bool
	// Sitemap is what every host's sitemap says of its pages (virtual
	// mode; sim.SitemapAbsent: none). The crawler fetches each host's
	// sitemap as the coordinator does, once in N/B, and its lastmods are
	// signals to the scheduler (schedule.Scheduler.Signal).
	Sitemap sim.SitemapMode
	// NoCoChange turns off the scheduler's ties between pages that change
	// together (schedule.SchedulerOptions.CoChange): the same policy
	// without them, to measure what they gain.
	NoCoChange bool
	// Deciles adds to the result the run's fetches and freshness by
	// decile of the true rate against the full-budget oracle's (virtual
	// mode): a diagnostic of where a policy loses.
	Deciles bool
	// Day is the length of a simulated day on the virtual clock (virtual
	// mode; 0: 24 h, so that every constant of the coordinator and of the
	// peers applies unscaled). Nothing the scheduler or the estimator
	// decides may depend on it: a run with a day of 0.5 s is the run with
	// a day of 24 h, time scaled (TestVirtualUnitFree).
	Day time.Duration
	// Latency is the virtual duration of one fetch (virtual mode; 0:
	// defaultLatency for a 24 h day, scaled with Day).
	Latency time.Duration
	// Steps is the number of points of the freshness series.
	Steps int
	// ColdStartPages is the size of the coldstart workload's seed list
	// (default coldStartPages).
	ColdStartPages int
}

// DefaultOptions are the options `freshcrawl bench policies` starts from:
// the crawler's defaults (config.Default) where the coordinator has an
// option of the same meaning.
func DefaultOptions() Options {
	c := config.Default()
	day := virtualDay.Seconds()
	return Options{
		Pages: 1000, Hosts: 10, Seed: 1, Days: 2000, Warmup: 500,
		PriorRate: c.PriorRate.PerSecond() * day, HalfLifeDays: c.HalfLife.Seconds() / day, Explore: c.Explore, ReplanDays: 1,
		Steps: 200, ColdStartPages: coldStartPages,
	}
}

func (o Options) withDefaults() (Options, error) {
	for _, f := range []struct {
		name string
		v    float64
	}{
		{"days", o.Days}, {"warm-up", o.Warmup}, {"budget", o.Budget}, {"every", o.Every}, {"host rate", o.HostRate},
		{"prior rate", o.PriorRate}, {"half-life", o.HalfLifeDays}, {"explore share", o.Explore}, {"replan", o.ReplanDays},
	} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			return o, fmt.Errorf("bench: %s %v: must be a finite number", f.name, f.v)
		}
	}
	d := DefaultOptions()
	if o.Pages <= 0 {
		o.Pages = d.Pages
	}
	if o.Hosts <= 0 {
		o.Hosts = d.Hosts
	}
	if o.Days <= 0 {
		o.Days = d.Days
	}
	if o.Warmup < 0 || o.Warmup >= o.Days {
		return o, fmt.Errorf("bench: warm-up %v days must be in [0, %v)", o.Warmup, o.Days)
	}
	switch {
	case o.Every > 0 && o.Budget > 0:
		return o, fmt.Errorf("bench: a budget of %v a day and every page once in %v days: set one", o.Budget, o.Every)
	case o.Every > 0:
		o.Budget = float64(o.Pages) / o.Every
	case o.Budget <= 0:
		o.Budget = float64(o.Pages) / 30
	}
	if o.HostRate <= 0 {
		o.HostRate = 10 * o.Budget / float64(o.Hosts)
	}
	if o.PriorRate <= 0 {
		o.PriorRate = d.PriorRate
	}
	if o.HalfLifeDays <= 0 {
		o.HalfLifeDays = d.HalfLifeDays
	}
	if o.Explore <= 0 {
		o.Explore = d.Explore
	}
	if o.ReplanDays <= 0 {
		o.ReplanDays = d.ReplanDays
	}
	if o.Day <= 0 {
		o.Day = virtualDay
	}
	if o.Latency <= 0 {
		o.Latency = scaleDay(defaultLatency, o.Day)
	}
	if o.Steps <= 0 {
		o.Steps = d.Steps
	}
	return o, nil
}

// virtualDay is the default length of a simulated day on the virtual
// clock: a real day, so every constant of the coordinator and of the peers
// applies unscaled.
const virtualDay = 24 * time.Hour

// defaultLatency is how long a fetch takes on the virtual clock when the
// simulated day is a real one.
const defaultLatency = 200 * time.Millisecond

// scaleDay is d, a duration meant for a 24 h day, on a clock whose
// simulated day lasts day.
func scaleDay(d, day time.Duration) time.Duration {
	return time.Duration(float64(d) * (float64(day) / float64(virtualDay)))
}

// virtualEpoch is the virtual clock's time zero (any fixed instant works;
// a fixed one keeps runs reproducible).
func virtualEpoch() time.Time { return time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC) }

// pageTruth is what the bench knows of one simulated page: its change
// offsets since the epoch, and its true rate (per second) in each segment:
// for a page whose change times are generated (Workload.hist), which has
// no single true rate, its mean rate over the measured window.
type pageTruth struct {
	changes []time.Duration
	rates   []float64 // per segment
}

// segment is a stretch of the run over which every page's rate is
// constant.
type segment struct{ from, to time.Duration }

// truthSet is the simulated web of one workload on the virtual clock.
type truthSet struct {
	pages    []pageTruth
	hosts    []int // host index by page
	segments []segment
	// site renders the pages (their bodies, for the bytes a 200 sends).
	site *sim.Sim
}

// buildTruth generates the change times of every page from the sim (the
// same generator the live mode serves), over [0, end).
func buildTruth(w Workload, o Options, day time.Duration, end time.Duration) (*truthSet, error) {
	base := w.simConfig(o, day)
	base.Now = virtualEpoch
	a, err := sim.New(base)
	if err != nil {
		return nil, fmt.Errorf("bench: workload %s: %w", w.Name, err)
	}
	if w.After == nil {
		return newTruthSet(a, nil, 0, end), nil
	}
	after := base
	after.Mix, after.Seed = w.After, o.Seed+1
	b, err := sim.New(after)
	if err != nil {
		return nil, fmt.Errorf("bench: workload %s: %w", w.Name, err)
	}
	return newTruthSet(a, b, w.DriftAt, end), nil
}

// newTruthSet reads the change times and true rates of every page of a
// over [0, end) from a's epoch; when b is not nil (the drift workload), of
// a up to driftAt·end and of b after it. b's pages must be a's.
func newTruthSet(a, b *sim.Sim, driftAt float64, end time.Duration) *truthSet {
	epoch := a.Epoch()
	offsets := func(ts []time.Time) []time.Duration {
		out := make([]time.Duration, len(ts))
		for i, t := range ts {
			out[i] = t.Sub(epoch)
		}
		return out
	}
	pa := a.Pages()
	ts := &truthSet{pages: make([]pageTruth, len(pa)), hosts: make([]int, len(pa)), site: a}
	if b == nil {
		ts.segments = []segment{{0, end}}
		for i := range ts.pages {
			ts.hosts[i] = pa[i].HostIndex
			ts.pages[i] = pageTruth{changes: offsets(a.ChangeTimes(i, epoch, epoch.Add(end))), rates: []float64{pa[i].Rate}}
		}
		return ts
	}
	pb := b.Pages()
	mid := time.Duration(float64(end) * driftAt)
	ts.segments = []segment{{0, mid}, {mid, end}}
	for i := range ts.pages {
		ts.hosts[i] = pa[i].HostIndex
		ch := offsets(a.ChangeTimes(i, epoch, epoch.Add(mid)))
		// Poisson processes are memoryless, so splicing the second sim's
		// changes after mid gives a page whose rate switches at mid.
		ch = append(ch, offsets(b.ChangeTimes(i, epoch.Add(mid), epoch.Add(end)))...)
		ts.pages[i] = pageTruth{changes: ch, rates: []float64{pa[i].Rate, pb[i].Rate}}
	}
	return ts
}

// versionAt is the number of changes at or before off.
func (p *pageTruth) versionAt(off time.Duration) int {
	return sort.Search(len(p.changes), func(k int) bool { return p.changes[k] > off })
}

// vpage is the crawler's side of one page in a virtual run.
type vpage struct {
	url     string
	host    string
	copyVer int // -1: never fetched
	lastOK  time.Time
	est     schedule.EstimateState
	rate    float64     // per second, as the coordinator stores it
	fetches []sim.Fetch // successful fetches, offsets from the epoch
}

// completion is a fetch in flight.
type completion struct {
	page       int
	start, end time.Time
}

// RunVirtual runs one policy on one workload on the virtual clock: the
// coordinator's Scheduler (estimates, plan, dispatch order, host spacing)
// with its budget limiter and the coordinator's estimator, every fetch
// taking o.Latency. It never touches the network.
func RunVirtual(ctx context.Context, w Workload, policy string, o Options) (Result, error) {
	o, err := w.options(o).withDefaults()
	if err != nil {
		return Result{}, err
	}
	wall := time.Now()
	end := time.Duration(o.Days * float64(o.Day))
	ts, err := buildTruth(w, o, o.Day, end)
	if err != nil {
		return Result{}, err
	}
	pol, err := newPolicy(policy, o.Day)
	if err != nil {
		return Result{}, err
	}
	r, err := newVirtualRun(w, o, ts, pol)
	if err != nil {
		return Result{}, err
	}
	if err := r.run(ctx, end); err != nil {
		return Result{}, err
	}
	res, err := r.result(w, policy, end)
	res.Wall = time.Since(wall)
	return res, err
}

// virtualRun is the state of one run on the virtual clock: the truth, the
// coordinator's scheduler and estimator, the crawler's pages and the
// fetches in flight.
type virtualRun struct {
	o      Options
	ts     *truthSet
	budget float64 // fetches per second
	est    schedule.Estimator
	sched  *schedule.Scheduler
	gaps   []time.Duration // Crawl-delay per host
	pages  []vpage
	index  map[string]int
	// pending is a FIFO: starts increase, latency is fixed.
	pending []completion
	// The model's freshness (what status shows), sampled every simulated
	// day after warm-up and averaged like the truth.
	nextSample time.Time
	modelSum   float64
	modelN     int
	// Each sample is kept as well, so that the model after the first full
	// pass (a cold start's warm-up) is set against the truth then.
	modelSamples []modelSample
	planErrs     int
	lastErr      error
	// sitemapFetches counts the sitemap fetches after warm-up, and
	// sitemapEvery is each host's sitemap interval.
	sitemapFetches int
	sitemapEvery   []time.Duration
}

// newVirtualRun sets up the scheduler and estimator the coordinator would
// run with under o, and seeds every page of ts at the epoch.
func newVirtualRun(w Workload, o Options, ts *truthSet, pol schedule.Policy) (*virtualRun, error) {
	daySec := o.Day.Seconds()
	budget := o.Budget / daySec // fetches per second
	// The estimator the coordinator folds results with (schedule.Estimator).
	halfLife := time.Duration(o.HalfLifeDays * float64(o.Day))
	est := schedule.NewEstimator(halfLife, o.PriorRate/daySec)
	// The Last-Modified trust check's clock skew is a minute of a 24 h
	// day, as the live mode scales it, and never under the second HTTP
	// dates are rounded to.
	est.Trust.ClockSkew = max(1, scaleDay(time.Duration(est.Trust.ClockSkew*float64(time.Second)), o.Day).Seconds())
	so := schedule.DefaultSchedulerOptions()
	so.Budget, so.HostRate, so.Policy = budget, o.HostRate/daySec, pol
	so.ExploreShare, so.Replan = o.Explore, time.Duration(o.ReplanDays*float64(o.Day))
	so.Priors, so.PriorRate, so.HalfLife = est.Priors, o.PriorRate/daySec, halfLife
	so.CoChange = !o.NoCoChange
	sched, err := schedule.NewScheduler(so)
	if err != nil {
		return nil, err
	}

	gaps := make([]time.Duration, o.Hosts)
	for h := range gaps {
		if d := w.crawlDelayDays(h, o.Hosts, o.Budget); d > 0 {
			gaps[h] = time.Duration(d * float64(o.Day))
		}
	}
	pages := make([]vpage, o.Pages)
	index := make(map[string]int, o.Pages)
	for i := range pages {
		pages[i] = vpage{url: "http://h" + strconv.Itoa(ts.hosts[i]) + "/p/" + strconv.Itoa(i), host: "h" + strconv.Itoa(ts.hosts[i]), copyVer: -1, rate: est.Prior.Mean()}
		index[pages[i].url] = i
		sched.Add(schedule.URLInfo{URL: pages[i].url, Host: pages[i].host, Weight: w.weight(i), Rate: pages[i].rate}, virtualEpoch())
	}
	r := &virtualRun{
		o: o, ts: ts, budget: budget, est: est, sched: sched, gaps: gaps, pages: pages, index: index,
		nextSample: virtualEpoch().Add(time.Duration(o.Warmup * float64(o.Day))),
	}
	if o.Sitemap != sim.SitemapAbsent {
		r.sitemapEvery = make([]time.Duration, o.Hosts)
		// A sitemap is a page index −1−h of no page: complete tells it
		// apart by its sign.
		for h := range o.Hosts {
			u := "http://h" + strconv.Itoa(h) + "/sitemap.xml"
			index[u] = -1 - h
			sched.Enqueue(u, "h"+strconv.Itoa(h), virtualEpoch())
		}
	}
	return r, nil
}

// run advances the virtual clock from the epoch to end: it samples the
// model, folds the fetches that have completed, replans when the
// coordinator would, and dispatches what the scheduler hands out.
func (r *virtualRun) run(ctx context.Context, end time.Duration) error {
	o := r.o
	maxInFlight := config.Default().MaxInFlight // what a crawler runs with
	replanEvery := time.Duration(o.ReplanDays * float64(o.Day))
	now := virtualEpoch()
	stop := virtualEpoch().Add(end)
	tokenAt := virtualEpoch()
	perFetch := time.Duration(float64(time.Second) / r.budget)
	var lastPlan, nextCheck time.Time
	for iter := 0; now.Before(stop); iter++ {
		if iter%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		r.sampleModel(now, stop)
		r.foldUntil(now)
		if !now.Before(nextCheck) && r.sched.ReplanDue(now) {
			// As the coordinator does: a failed plan is logged and the
			// previous one kept; the next tick tries again.
			if _, err := r.sched.Replan(now); err != nil {
				r.planErrs++
				r.lastErr = err
			}
			lastPlan = now
			// The coordinator's tick, as a share of a 24 h day: the
			// virtual clock scales everything of its own with the day.
			nextCheck = now.Add(scaleDay(coordinator.MaintainEvery, o.Day))
		}
		var next time.Time
		if len(r.pending) < maxInFlight {
			d, ok, n := r.sched.Next(now)
			if ok {
				// The coordinator's global limiter (burst 1): the task
				// waits for its token, and results fold meanwhile.
				start := now
				if tokenAt.After(start) {
					start = tokenAt
				}
				tokenAt = start.Add(perFetch)
				r.foldUntil(start)
				r.pending = append(r.pending, completion{page: r.index[d.URL], start: start, end: start.Add(o.Latency)})
				now = start
				continue
			}
			next = n
		}
		wake := lastPlan.Add(replanEvery)
		if !next.IsZero() && next.Before(wake) {
			wake = next
		}
		if len(r.pending) > 0 && r.pending[0].end.Before(wake) {
			wake = r.pending[0].end
		}
		if !wake.After(now) {
			wake = now.Add(max(scaleDay(time.Millisecond, o.Day), time.Nanosecond))
		}
		now = wake
	}
	return nil
}

// sampleModel takes the model's freshness at every sampling time up to
// now that falls before stop.
func (r *virtualRun) sampleModel(now, stop time.Time) {
	for !r.nextSample.After(now) && r.nextSample.Before(stop) {
		m := r.sched.ModelFreshness(r.nextSample)
		r.modelSum += m
		r.modelN++
		r.modelSamples = append(r.modelSamples, modelSample{at: r.nextSample.Sub(virtualEpoch()), model: m})
		r.nextSample = r.nextSample.Add(r.o.Day)
	}
}

// foldUntil folds the fetches in flight that have completed by t.
func (r *virtualRun) foldUntil(t time.Time) {
	for len(r.pending) > 0 && !r.pending[0].end.After(t) {
		r.complete(r.pending[0])
		r.pending = r.pending[1:]
	}
}

// complete folds one fetch as the coordinator would: the version the page
// was at when the fetch started decides changed or 304, and the estimator
// learns from it.
func (r *virtualRun) complete(c completion) {
	if c.page < 0 {
		r.sitemapFetched(-1-c.page, c)
		return
	}
	p := &r.pages[c.page]
	tr := &r.ts.pages[c.page]
	off := c.start.Sub(virtualEpoch())
	ver := tr.versionAt(off)
	first := p.copyVer < 0
	changed := !first && ver != p.copyVer
	// The worker sends the copy's ETag: an unchanged page is a 304.
	notModified := !first && ver == p.copyVer
	p.fetches = append(p.fetches, sim.Fetch{At: off, Version: ver})
	// The Last-Modified the page's server sends (true, none, or one of
	// the lies of sim.LastModifiedMode), as freshcrawl sim serves it.
	var last time.Duration
	if ver > 0 {
		last = tr.changes[ver-1]
	}
	lm, ok := r.ts.site.LastModifiedFor(c.page, c.start, last)
	if !ok {
		lm = time.Time{}
	}
	// The coordinator's fold learns through the same call.
	fb := r.est.Learn(&p.est, p.rate, schedule.Observation{
		URL: p.url, Host: p.host, Start: c.start, End: c.end, OK: true, First: first, Prev: p.lastOK, Changed: changed, NotModified: notModified,
		LastModified: lm, HostGap: r.gaps[r.ts.hosts[c.page]],
		Content: contentKey(r.ts.site.BodyOf(c.page), ver), Hinted: r.sched.Hinted(p.url),
	})
	if r.o.TrueRates {
		fb.Rate = r.ts.rateAt(c.page, off)
	}
	p.rate = fb.Rate
	p.copyVer, p.lastOK = ver, c.start
	r.sched.Done(p.url, fb)
}

// sitemapFetched folds a fetch of host h's sitemap as the coordinator
// does: every lastmod is a signal about its page, and the sitemap is
// fetched again one uniform interval (N/B) later.
func (r *virtualRun) sitemapFetched(h int, c completion) {
	useful := false
	for i, ph := range r.ts.hosts {
		if ph != h {
			continue
		}
		// As the coordinator does: a lastmod within the clock skew of
		// the response is the response time, not a change.
		if lm, ok := r.ts.site.SitemapLastMod(i, c.start); ok && lm.Before(c.start.Add(-scaleDay(schedule.DefaultLMSkew, r.o.Day))) {
			if r.sched.Signal(r.pages[i].url, "sitemap", lm, c.end) {
				useful = true
			}
		}
	}
	if c.start.Sub(virtualEpoch()) >= time.Duration(r.o.Warmup*float64(r.o.Day)) {
		r.sitemapFetches++
	}
	u, host := "http://h"+strconv.Itoa(h)+"/sitemap.xml", "h"+strconv.Itoa(h)
	r.sched.Done(u, schedule.Feedback{Start: c.start, End: c.end, OK: true})
	// The coordinator's schedule of a sitemap (coordinator.nextSitemapInterval).
	shortest := time.Duration(float64(r.o.Hosts) / (0.1 * r.budget) * float64(time.Second))
	longest := time.Duration(float64(r.sched.Len()) / r.budget * float64(time.Second))
	every := r.sitemapEvery[h]
	switch {
	case every <= 0:
		every = shortest
	case useful:
		every /= 2
	default:
		every *= 2
	}
	every = min(max(every, shortest), max(longest, shortest))
	r.sitemapEvery[h] = every
	r.sched.Enqueue(u, host, c.end.Add(every))
}

// contentKey is the fingerprint of the body page body serves at version
// ver, as the fold takes it from the worker's hash: mirrors (one body
// under several names) share it.
func contentKey(body, ver int) uint64 {
	return max(uint64(body)<<32^uint64(ver)*0x9e3779b97f4a7c15, 1)
}

// result measures the run against the truth and adds the model's figures
// and the plan errors.
func (r *virtualRun) result(w Workload, policy string, end time.Duration) (Result, error) {
	o := r.o
	res, err := measure(w, r.ts, r.pages, o, end)
	res.Mode, res.Workload, res.Policy = "virtual", w.Name, policy
	res.SitemapFetches = r.sitemapFetches
	for _, h := range r.sched.CoChange() {
		res.Hints, res.HintsConfirmed = res.Hints+h.Sent, res.HintsConfirmed+h.Confirmed
	}
	res.Pages, res.Hosts = o.Pages, o.Hosts
	if o.Deciles && err == nil {
		res.Deciles, err = deciles(w, r.ts, r.pages, o, time.Duration(o.Warmup*float64(o.Day)), end)
	}
	if r.modelN > 0 {
		res.ModelFreshness = r.modelSum / float64(r.modelN)
	}
	res.ModelAfterFirstPass = -1
	if res.FirstPassDays > o.Warmup {
		// Only a first pass that ends inside the measured window (a cold
		// start's) has a model after it that the columns do not show.
		res.ModelAfterFirstPass = modelAfter(r.modelSamples, res.FirstPassDays, o.Day)
	}
	res.PlanErrors, res.LastPlanError = r.planErrs, r.lastErr
	return res, err
}

// modelSample is the model's freshness at a time of a virtual run.
type modelSample struct {
	at    time.Duration // since the start of the run
	model float64
}

// modelAfter is the mean of the samples taken at or after the first full
// pass (firstPassDays, −1 when there was none: then −1 as well).
func modelAfter(samples []modelSample, firstPassDays float64, day time.Duration) float64 {
	if firstPassDays < 0 {
		return -1
	}
	from := time.Duration(firstPassDays * float64(day))
	var sum float64
	n := 0
	for _, s := range samples {
		if s.at >= from {
			sum += s.model
			n++
		}
	}
	if n == 0 {
		return -1
	}
	return sum / float64(n)
}

// measure computes the truth of a virtual run with sim.IntegratePage, the
// integral sim.Report uses, and its oracle. A failed oracle is an error;
// the result then holds the truth without it.
func measure(w Workload, ts *truthSet, pages []vpage, o Options, end time.Duration) (Result, error) {
	var res Result
	from := time.Duration(o.Warmup * float64(o.Day))
	series := sim.NewSeriesSum(end/time.Duration(o.Steps), end)
	var fresh, age, wsum float64
	for i := range pages {
		wt := w.weight(i)
		changes, fetches := ts.pages[i].changes, pages[i].fetches
		pt := sim.IntegratePage(changes, fetches, from, end, nil)
		sim.IntegratePage(changes, fetches, 0, end, series)
		fresh += wt * pt.Freshness
		age += wt * pt.AgeSeconds
		wsum += wt
		for k, fr := range fetches {
			if fr.At < from || fr.At >= end {
				continue
			}
			res.Fetches++
			// The worker sends the copy's ETag: a fetch that finds the
			// version the fetch before it saw is a 304 with no body.
			if k > 0 && fetches[k-1].Version == fr.Version {
				res.NotModified++
			} else {
				res.Bytes += int64(ts.site.BodySize(i, fr.Version))
			}
		}
	}
	if !(wsum > 0) {
		return res, fmt.Errorf("bench: workload %s: total importance %v", w.Name, wsum)
	}
	window := (end - from).Seconds()
	res.Freshness = fresh / wsum / window
	res.AgeDays = age / wsum / window / o.Day.Seconds()
	// Series: unweighted fraction fresh per step (the plot's shape), as the
	// live mode plots it.
	for _, p := range series.Points(virtualEpoch(), len(pages)) {
		res.Series = append(res.Series, Point{Day: p.Time.Sub(virtualEpoch()).Seconds() / o.Day.Seconds(), Freshness: p.Freshness})
	}
	res.FetchesPerDay = float64(res.Fetches) / (window / o.Day.Seconds())
	orc, err := SolveOracle(ts.oracleInput(w, o, from, end, res.FetchesPerDay))
	if err != nil {
		return res, fmt.Errorf("bench: workload %s: %w", w.Name, err)
	}
	res.Oracle, res.OracleAgeDays = orc.Freshness, orc.Age
	if res.Oracle > 0 {
		res.Ratio = res.Freshness / res.Oracle
	}
	full, err := SolveOracle(ts.oracleInput(w, o, from, end, o.Budget))
	if err != nil {
		return res, fmt.Errorf("bench: workload %s: full-budget oracle: %w", w.Name, err)
	}
	res.FullOracle = full.Freshness
	if res.FullOracle > 0 {
		res.FullRatio = res.Freshness / res.FullOracle
	}
	res.Budget, res.EveryDays = o.Budget, float64(len(pages))/o.Budget
	if res.Signal, err = signalOracle(w, ts, o, from, end); err != nil {
		return res, fmt.Errorf("bench: workload %s: %w", w.Name, err)
	}
	if res.Signal.Freshness > 0 {
		res.SignalRatio = res.Freshness / res.Signal.Freshness
	}
	// The first full pass: when the last page was fetched for the first
	// time, and the truth from then on.
	res.FirstPassDays = -1
	var firstPass time.Duration
	for i := range pages {
		if len(pages[i].fetches) == 0 {
			firstPass = -1
			break
		}
		firstPass = max(firstPass, pages[i].fetches[0].At)
	}
	if firstPass >= 0 && firstPass < end {
		res.FirstPassDays = firstPass.Seconds() / o.Day.Seconds()
		var f, ws float64
		for i := range pages {
			pt := sim.IntegratePage(ts.pages[i].changes, pages[i].fetches, firstPass, end, nil)
			f += w.weight(i) * pt.Freshness
			ws += w.weight(i)
		}
		res.FreshAfterFirstPass = f / ws / (end - firstPass).Seconds()
	}
	return res, nil
}

// oracleInput is the oracle's view of the run's window [from, end): the
// rate segments that overlap it, by their length there, with rates per
// simulated day, at perDay fetches a simulated day.
func (t *truthSet) oracleInput(w Workload, o Options, from, end time.Duration, perDay float64) OracleInput {
	daySec := o.Day.Seconds()
	in := OracleInput{Weights: w.Weights, Hosts: make([]int32, len(t.pages)), HostCaps: hostCapsPerDay(w, o), Fetches: perDay}
	for i, h := range t.hosts {
		in.Hosts[i] = int32(h)
	}
	for si, sg := range t.segments {
		lo, hi := max(sg.from, from), min(sg.to, end)
		if hi <= lo {
			continue
		}
		rates := make([]float64, len(t.pages))
		for i := range rates {
			rates[i] = t.pages[i].rates[si] * daySec
		}
		in.Segments = append(in.Segments, RateSegment{Length: (hi - lo).Seconds(), Rates: rates})
	}
	return in
}

// rateAt is the page's true rate (changes per second) at off.
func (t *truthSet) rateAt(i int, off time.Duration) float64 {
	for si, sg := range t.segments {
		if off >= sg.from && off < sg.to {
			return t.pages[i].rates[si]
		}
	}
	return t.pages[i].rates[len(t.pages[i].rates)-1]
}
