package bench

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/freshcrawl/freshcrawl/alloc"
	"github.com/freshcrawl/freshcrawl/internal/schedule"
	"github.com/freshcrawl/freshcrawl/internal/sim"
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
	// HostRate is the most fetches per simulated day of one host
	// (0: 10 × the uniform share of a host).
	HostRate float64
	// PriorRate (changes per simulated day), HalfLifeDays, Explore and
	// ReplanDays are the coordinator's options of the same names, with
	// config.Default's defaults (prior 0.25 changes a day, the mean of
	// the Table 6 population; half-life 90 days; explore share 0.3).
	// ReplanDays is the longest time between two plans.
	PriorRate, HalfLifeDays, Explore, ReplanDays float64
	// TrueRates feeds the scheduler the true change rates instead of its
	// estimates: a diagnostic that separates the loss due to estimation
	// from the loss due to scheduling and dispatch.
	TrueRates bool
	// Latency is the virtual duration of one fetch (virtual mode).
	Latency time.Duration
	// Steps is the number of points of the freshness series.
	Steps int
}

// DefaultOptions are the options `freshcrawl bench policies` starts from.
func DefaultOptions() Options {
	return Options{
		Pages: 1000, Hosts: 10, Seed: 1, Days: 2000, Warmup: 500,
		PriorRate: 0.25, HalfLifeDays: 90, Explore: 0.3, ReplanDays: 1,
		Latency: 200 * time.Millisecond, Steps: 200,
	}
}

func (o Options) withDefaults() (Options, error) {
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
	if o.Budget <= 0 {
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
	if o.Latency <= 0 {
		o.Latency = d.Latency
	}
	if o.Steps <= 0 {
		o.Steps = d.Steps
	}
	return o, nil
}

// statusTick is how often the coordinator checks whether a plan is due
// (its status loop).
const statusTick = 2 * time.Second

// virtualDay is the length of a simulated day on the virtual clock: a real
// day, so every constant of the coordinator and of the peers applies
// unscaled.
const virtualDay = 24 * time.Hour

// virtualEpoch is the virtual clock's time zero (any fixed instant works;
// a fixed one keeps runs reproducible).
func virtualEpoch() time.Time { return time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC) }

// nominalBody is the body size counted for each 200 in virtual mode, where
// no page is rendered: about the mean size of a sim page.
const nominalBody = 2300

// pageTruth is what the bench knows of one simulated page: its change
// offsets since the epoch, and its true rate (per second) in each segment.
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
}

// buildTruth generates the change times of every page from the sim (the
// same generator the live mode serves), over [0, end).
func buildTruth(w Workload, o Options, day time.Duration, end time.Duration) (*truthSet, error) {
	mk := func(mix []sim.RateClass, seed uint64) (*sim.Sim, error) {
		s, err := sim.New(sim.Config{Hosts: o.Hosts, Pages: o.Pages, Mix: mix, Day: day, Seed: seed, Now: func() time.Time { return virtualEpoch() }})
		if err != nil {
			return nil, fmt.Errorf("bench: workload %s: %w", w.Name, err)
		}
		return s, nil
	}
	a, err := mk(w.Mix, o.Seed)
	if err != nil {
		return nil, err
	}
	ts := &truthSet{pages: make([]pageTruth, o.Pages), hosts: make([]int, o.Pages)}
	pa := a.Pages()
	if w.After == nil {
		ts.segments = []segment{{0, end}}
		for i := range ts.pages {
			ts.hosts[i] = pa[i].HostIndex
			ts.pages[i] = pageTruth{changes: offsets(a.ChangeTimes(i, virtualEpoch(), virtualEpoch().Add(end))), rates: []float64{pa[i].Rate}}
		}
		return ts, nil
	}
	b, err := mk(w.After, o.Seed+1)
	if err != nil {
		return nil, err
	}
	pb := b.Pages()
	mid := time.Duration(float64(end) * w.DriftAt)
	ts.segments = []segment{{0, mid}, {mid, end}}
	for i := range ts.pages {
		ts.hosts[i] = pa[i].HostIndex
		ch := offsets(a.ChangeTimes(i, virtualEpoch(), virtualEpoch().Add(mid)))
		// Poisson processes are memoryless, so splicing the second sim's
		// changes after mid gives a page whose rate switches at mid.
		ch = append(ch, offsets(b.ChangeTimes(i, virtualEpoch().Add(mid), virtualEpoch().Add(end)))...)
		ts.pages[i] = pageTruth{changes: ch, rates: []float64{pa[i].Rate, pb[i].Rate}}
	}
	return ts, nil
}

func offsets(ts []time.Time) []time.Duration {
	out := make([]time.Duration, len(ts))
	for i, t := range ts {
		out[i] = t.Sub(virtualEpoch())
	}
	return out
}

// versionAt is the number of changes at or before off.
func (p *pageTruth) versionAt(off time.Duration) int {
	return sort.Search(len(p.changes), func(k int) bool { return p.changes[k] > off })
}

// fetchRec is one successful fetch: when, and the version it saw.
type fetchRec struct {
	at  time.Duration
	ver int
}

// vpage is the crawler's side of one page in a virtual run.
type vpage struct {
	url     string
	host    string
	copyVer int // -1: never fetched
	lastOK  time.Time
	est     schedule.EstimateState
	rate    float64 // per second, as the coordinator stores it
	fetches []fetchRec
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
	o, err := o.withDefaults()
	if err != nil {
		return Result{}, err
	}
	wall := time.Now()
	end := time.Duration(o.Days * float64(virtualDay))
	ts, err := buildTruth(w, o, virtualDay, end)
	if err != nil {
		return Result{}, err
	}
	pol, err := NewPolicy(policy, virtualDay)
	if err != nil {
		return Result{}, err
	}
	daySec := virtualDay.Seconds()
	budget := o.Budget / daySec // fetches per second
	sched := schedule.NewScheduler(schedule.SchedulerOptions{
		Budget: budget, HostRate: o.HostRate / daySec, Policy: pol,
		ExploreShare: o.Explore, Replan: time.Duration(o.ReplanDays * float64(virtualDay)),
	})
	// The estimator the coordinator folds results with (schedule.Estimator).
	est := schedule.NewEstimator(time.Duration(o.HalfLifeDays*float64(virtualDay)), o.PriorRate/daySec)

	gaps := make([]time.Duration, o.Hosts) // Crawl-delay per host
	for h := range gaps {
		if d := w.CrawlDelayDays(h, o.Hosts, o.Budget); d > 0 {
			gaps[h] = time.Duration(d * float64(virtualDay))
		}
	}
	pages := make([]vpage, o.Pages)
	index := make(map[string]int, o.Pages)
	for i := range pages {
		pages[i] = vpage{url: "http://h" + strconv.Itoa(ts.hosts[i]) + "/p/" + strconv.Itoa(i), host: "h" + strconv.Itoa(ts.hosts[i]), copyVer: -1, rate: est.Prior.Mean()}
		index[pages[i].url] = i
		sched.Add(schedule.URLInfo{URL: pages[i].url, Host: pages[i].host, Weight: w.Weight(i), Rate: pages[i].rate}, virtualEpoch())
	}

	complete := func(c completion) error {
		p := &pages[c.page]
		tr := &ts.pages[c.page]
		off := c.start.Sub(virtualEpoch())
		ver := tr.versionAt(off)
		first := p.copyVer < 0
		changed := !first && ver != p.copyVer
		// The worker sends the copy's ETag: an unchanged page is a 304.
		notModified := !first && ver == p.copyVer
		p.fetches = append(p.fetches, fetchRec{at: off, ver: ver})
		lm := virtualEpoch()
		if ver > 0 {
			lm = virtualEpoch().Add(tr.changes[ver-1]).Truncate(time.Second)
		}
		// The sim serves a truthful Last-Modified, as freshcrawl sim does.
		// The coordinator's fold learns through the same call.
		fb := est.Learn(&p.est, p.rate, schedule.Observation{
			Start: c.start, End: c.end, OK: true, First: first, Prev: p.lastOK, Changed: changed, NotModified: notModified,
			LastModified: lm, HostGap: gaps[ts.hosts[c.page]],
		})
		if o.TrueRates {
			fb.Rate = ts.rateAt(c.page, off)
		}
		p.rate = fb.Rate
		p.copyVer, p.lastOK = ver, c.start
		sched.Done(p.url, fb)
		return nil
	}

	const maxInFlight = 256 // coordinator default
	replanEvery := time.Duration(o.ReplanDays * float64(virtualDay))
	now := virtualEpoch()
	stop := virtualEpoch().Add(end)
	tokenAt := virtualEpoch()
	perFetch := time.Duration(float64(time.Second) / budget)
	var pending []completion // FIFO: starts increase, latency is fixed
	var lastPlan, nextCheck time.Time
	var planErrs int
	var lastErr error
	for iter := 0; now.Before(stop); iter++ {
		if iter%4096 == 0 && ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		for len(pending) > 0 && !pending[0].end.After(now) {
			if err := complete(pending[0]); err != nil {
				return Result{}, err
			}
			pending = pending[1:]
		}
		if !now.Before(nextCheck) && sched.ReplanDue(now) {
			// As the coordinator does: a failed plan is logged and the
			// previous one kept; the next tick tries again.
			if _, err := sched.Replan(now); err != nil {
				planErrs++
				lastErr = err
			}
			lastPlan = now
			nextCheck = now.Add(statusTick)
		}
		var next time.Time
		if len(pending) < maxInFlight {
			d, ok, n := sched.Next(now)
			if ok {
				// The coordinator's global limiter (burst 1): the task
				// waits for its token, and results fold meanwhile.
				start := now
				if tokenAt.After(start) {
					start = tokenAt
				}
				tokenAt = start.Add(perFetch)
				for len(pending) > 0 && !pending[0].end.After(start) {
					if err := complete(pending[0]); err != nil {
						return Result{}, err
					}
					pending = pending[1:]
				}
				pending = append(pending, completion{page: index[d.URL], start: start, end: start.Add(o.Latency)})
				now = start
				continue
			}
			next = n
		}
		wake := lastPlan.Add(replanEvery)
		if !next.IsZero() && next.Before(wake) {
			wake = next
		}
		if len(pending) > 0 && pending[0].end.Before(wake) {
			wake = pending[0].end
		}
		if !wake.After(now) {
			wake = now.Add(time.Millisecond)
		}
		now = wake
	}
	res := measure(w, ts, pages, o, end)
	res.Mode, res.Workload, res.Policy = "virtual", w.Name, policy
	res.PlanErrors, res.LastPlanError = planErrs, lastErr
	res.Wall = time.Since(wall)
	return res, nil
}

// measure computes the truth of a virtual run and its oracle.
func measure(w Workload, ts *truthSet, pages []vpage, o Options, end time.Duration) Result {
	var res Result
	from := time.Duration(o.Warmup * float64(virtualDay))
	steps := o.Steps
	step := end / time.Duration(steps)
	series := make([]float64, steps)
	var fresh, age, wsum float64
	for i := range pages {
		wt := w.Weight(i)
		f, a := integrate(ts.pages[i].changes, pages[i].fetches, from, end, nil, 0)
		_, _ = integrate(ts.pages[i].changes, pages[i].fetches, 0, end, series, step)
		fresh += wt * f
		age += wt * a
		wsum += wt
		for _, fr := range pages[i].fetches {
			if fr.at < from {
				continue
			}
			res.Fetches++
			if k := len(res.Series); k >= 0 && isNotModified(pages[i].fetches, fr) {
				res.NotModified++
			} else {
				res.Bytes += nominalBody
			}
		}
	}
	window := (end - from).Seconds()
	res.Freshness = fresh / wsum / window
	res.AgeDays = age / wsum / window / virtualDay.Seconds()
	// Series: unweighted fraction fresh per step (the plot's shape).
	for k := range series {
		res.Series = append(res.Series, Point{Day: (time.Duration(k) * step).Hours() / 24, Freshness: series[k] / step.Seconds() / float64(len(pages))})
	}
	res.FetchesPerDay = float64(res.Fetches) / (window / virtualDay.Seconds())
	res.Oracle, res.OracleAgeDays = oracle(w, ts, o, from, end, res.FetchesPerDay)
	if res.Oracle > 0 {
		res.Ratio = res.Freshness / res.Oracle
	}
	return res
}

// isNotModified reports whether fr saw the same version as the fetch
// before it (a 304 under ETag validation).
func isNotModified(all []fetchRec, fr fetchRec) bool {
	k := sort.Search(len(all), func(j int) bool { return all[j].at >= fr.at })
	return k > 0 && all[k-1].ver == fr.ver
}

// oracle is the optimum of docs/design.md §3.2 with the true rates and the
// host caps, for a budget of perDay fetches a simulated day, averaged over
// the rate segments that overlap [from, end) by their length there.
func oracle(w Workload, ts *truthSet, o Options, from, end time.Duration, perDay float64) (fresh, ageDays float64) {
	daySec := virtualDay.Seconds()
	caps := hostCapsPerDay(w, o)
	total := 0.0
	for si, sg := range ts.segments {
		lo, hi := max(sg.from, from), min(sg.to, end)
		if hi <= lo {
			continue
		}
		el := make([]alloc.Element, len(ts.pages))
		for i := range el {
			el[i] = alloc.Element{Rate: ts.pages[i].rates[si] * daySec, Weight: w.Weight(i), Host: int32(ts.hosts[i])}
		}
		f, a, err := solveOracle(el, caps, perDay)
		if err != nil {
			continue
		}
		span := (hi - lo).Seconds()
		fresh += span * f
		ageDays += span * a
		total += span
	}
	if total == 0 {
		return 0, 0
	}
	return fresh / total, ageDays / total
}

// integrate returns page freshness and age integrated over [f, t) exactly
// (seconds and seconds², not yet divided by the window), with the
// definitions of sim.Report: the copy is the version of the latest fetch
// at or before a time, a page never fetched is stale since f. When series
// is not nil it also adds the fresh time of each step of length step
// (counted from f) to series.
func integrate(changes []time.Duration, fetches []fetchRec, f, t time.Duration, series []float64, step time.Duration) (fresh, age float64) {
	ci := sort.Search(len(changes), func(k int) bool { return changes[k] > f })
	cur, cp, ri := ci, -1, 0
	for ri < len(fetches) && fetches[ri].at <= f {
		cp = fetches[ri].ver
		ri++
	}
	for a := f; a < t; {
		b := t
		if ci < len(changes) && changes[ci] < b {
			b = changes[ci]
		}
		if ri < len(fetches) && fetches[ri].at < b {
			b = fetches[ri].at
		}
		if b > a {
			sa, sb := (a - f).Seconds(), (b - f).Seconds()
			if cp == cur {
				fresh += sb - sa
				if series != nil {
					addSteps(series, step.Seconds(), sa, sb)
				}
			} else {
				stale := f
				if cp >= 0 {
					stale = changes[min(cp, len(changes)-1)]
				}
				ss := (stale - f).Seconds()
				age += (sb - sa) * ((sa+sb)/2 - ss)
			}
		}
		a = b
		for ci < len(changes) && changes[ci] <= a {
			cur++
			ci++
		}
		for ri < len(fetches) && fetches[ri].at <= a {
			cp = fetches[ri].ver
			ri++
		}
	}
	return fresh, age
}

// addSteps adds the length of [a, b) falling into each step to series.
func addSteps(series []float64, step, a, b float64) {
	for k := int(a / step); k < len(series) && float64(k)*step < b; k++ {
		lo, hi := max(a, float64(k)*step), min(b, float64(k+1)*step)
		if hi > lo {
			series[k] += hi - lo
		}
	}
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
