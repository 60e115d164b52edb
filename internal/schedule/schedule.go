package schedule

import (
	"crypto/sha256"
	"encoding/binary"
	"math"
	"sort"
	"time"
)

// SchedulerOptions configure a Scheduler. Zero fields take the defaults
// (defaults.go).
type SchedulerOptions struct {
	// Budget is the total fetches per second.
	Budget float64
	// HostRate is the most fetches per second of one host.
	HostRate float64
	// Policy turns estimates into frequencies (default: the optimal
	// policy for freshness, DefaultPolicy).
	Policy Policy
	// ExploreShare keeps URLs the optimum gives up on at ExploreShare ×
	// budget/URLs, so that a wrong estimate can recover.
	ExploreShare float64
	// Replan is the longest time between two plans.
	Replan time.Duration
	// DisallowRetry is how often a URL disallowed by robots.txt is checked
	// again (default 1h); the check hits the shared robots.txt cache, not
	// the host, until the cache expires.
	DisallowRetry time.Duration
	// CaptureUniform keeps capture URLs on uniform polls at fixed phases
	// (k·T/N), never learning: the baseline of Ashish, Kulkarni & Wang.
	CaptureUniform bool
}

// URLInfo is what the scheduler is told about a URL.
type URLInfo struct {
	URL, Host  string
	Weight     float64
	Capture    bool
	Rate       float64       // estimated changes per second (0: prior)
	Interval   time.Duration // from a previous plan (0: none yet)
	NextDue    time.Time     // zero: new URL, first fetch soon
	Disallowed bool
	// Capture URLs: the period of their rhythm (0: detect it) and polls
	// per period (0: from the URL's share of the budget).
	Period time.Duration
	Polls  int
	// Paused URLs are known but not fetched (lifecycle.go); RateSE is the
	// standard error of Rate.
	Paused bool
	RateSE float64
}

// Dispatch is a URL the scheduler hands out.
type Dispatch struct {
	URL, Host string
	Capture   bool
	Gap       time.Duration // least time between requests to the host
	Due       time.Time     // the time it was due (identifies the fetch)
}

// Feedback is what a fetch taught the scheduler.
type Feedback struct {
	Start, End   time.Time // when the request started and finished
	OK           bool
	Changed      bool
	NotModified  bool
	Disallowed   bool
	LastModified time.Time // zero if unknown
	// Rate is the URL's new estimated change rate (0 = unchanged) and
	// RateSE its standard error.
	Rate   float64
	RateSE float64
	// HostGap is the gap the host now needs (Crawl-delay; 0 = base rate)
	// and HostNotBefore when it may be fetched again (Retry-After,
	// backoff).
	HostGap       time.Duration
	HostNotBefore time.Time
}

// adaptivePolicy is a policy that sets each URL's interval from its own fetch
// outcomes (Nutch, StormCrawler) instead of from a global allocation.
type adaptivePolicy interface {
	Policy
	// Initial is the interval of a URL never fetched.
	Initial() time.Duration
	// Next returns the URL's new interval and next due time after a fetch.
	Next(interval time.Duration, fb Feedback) (time.Duration, time.Time)
}

// Scheduler is the scheduling step with no I/O and no clock of its own:
// every call says what time it is, so the same code runs in the
// coordinator on the wall clock and in `freshcrawl bench policies
// --mode virtual` on a simulated one. It is not safe for concurrent use:
// the coordinator's dispatcher holds it under its lock, and re-plans in
// three steps (Snapshot, PlanJob.Solve, Apply) so that the lock is never
// held while the policy runs.
type Scheduler struct {
	o      SchedulerOptions
	front  *frontier
	plan   PlanOutput
	planAt time.Time
	moved  int
	inUse  float64
	shots  int      // one-off entries queued or in flight
	list   []*entry // every URL (not one-off requests), in the order added: the plan's element order

	// The plan's input, kept up to date element by element (mirror) so a
	// re-plan copies arrays instead of walking a million entries under
	// the caller's lock. Index i is list[i].
	rates   []float64
	rateSEs []float64 // standard errors of rates, for the plan's freshness band
	weights []float64 // 0 for a disallowed or paused URL: it takes no budget
	blocked []bool    // disallowed by robots.txt or paused: no fetches, not even exploration
	freqs   []float64 // the URL's frequency now, 1/interval (0: unscheduled, disallowed or paused): an adaptive policy's plan
	// fixed is the rate a capture URL polls at whatever the plan says
	// (its configured or learnt polls per period; 0: planned like any
	// URL). The plan takes it off the budget and the host's capacity, so
	// that the budget in use is what is really dispatched.
	fixed []float64
	// hosts[i] indexes planHosts, in order of first appearance in list.
	// Appends never touch its first elements, so a snapshot may share
	// them; Remove builds a new array.
	hosts     []int32
	planHosts []*hostQueue

	disallowed int                 // URLs disallowed now
	captures   map[*entry]struct{} // capture URLs

	// planList is the list the last plan was made over: plan.Freq[i]
	// is list element planList[i] (removed ones have pos < 0).
	planList []*entry
	life     lifecycle
}

// NewScheduler returns an empty scheduler.
func NewScheduler(o SchedulerOptions) *Scheduler {
	if o.Budget <= 0 {
		o.Budget = DefaultBudget
	}
	if o.HostRate <= 0 {
		o.HostRate = DefaultHostRate
	}
	if o.Policy == nil {
		o.Policy = defaultPolicy()
	}
	if o.ExploreShare <= 0 {
		o.ExploreShare = DefaultExploreShare
	}
	if o.Replan <= 0 {
		o.Replan = DefaultReplan
	}
	if o.DisallowRetry <= 0 {
		o.DisallowRetry = DefaultDisallowRetry
	}
	return &Scheduler{o: o, front: newFrontier(), captures: map[*entry]struct{}{}}
}

// mirror copies e's plan input into the scheduler's arrays; every change
// of e's rate (or its error), weight, interval, disallowed or paused flag
// ends with it.
func (s *Scheduler) mirror(e *entry) {
	if e.pos < 0 {
		return
	}
	off := e.disallowed || e.paused
	w, f, fx := e.weight, 0.0, 0.0
	if off {
		w = 0
	} else if e.interval > 0 {
		f = float64(time.Second) / float64(e.interval)
	}
	if e.cap != nil && !off {
		if fx = e.cap.rate(); fx > 0 {
			f = fx
		}
	}
	s.rates[e.pos], s.rateSEs[e.pos], s.weights[e.pos], s.blocked[e.pos], s.freqs[e.pos], s.fixed[e.pos] = e.rate, e.rateSE, w, off, f, fx
}

// setDisallowed sets e's disallowed flag, keeping the count.
func (s *Scheduler) setDisallowed(e *entry, v bool) {
	if e.disallowed == v {
		return
	}
	e.disallowed = v
	if v {
		s.disallowed++
	} else {
		s.disallowed--
	}
}

// Policy is the scheduler's policy.
func (s *Scheduler) Policy() Policy { return s.o.Policy }

func (s *Scheduler) baseGap() time.Duration {
	return time.Duration(float64(time.Second) / s.o.HostRate)
}

// Len is the number of URLs (one-off requests not counted).
func (s *Scheduler) Len() int { return len(s.front.urls) - s.shots }

// Enqueue adds a one-off request (a keyword-search probe, a fetch of an
// item by id) due at `at`. It is dispatched under the same host politeness
// as every URL and forgotten once Done. It returns false if url is already
// known.
func (s *Scheduler) Enqueue(url, host string, at time.Time) bool {
	if _, ok := s.front.urls[url]; ok {
		return false
	}
	e, _ := s.front.add(url, host, s.baseGap())
	e.oneShot, e.interval = true, time.Hour // any interval > 0 keeps it queued
	s.shots++
	s.front.schedule(e, at)
	return true
}

// Hosts is the number of hosts.
func (s *Scheduler) Hosts() int { return len(s.front.hosts) }

// Has reports whether url is known.
func (s *Scheduler) Has(url string) bool { _, ok := s.front.urls[url]; return ok }

// Add adds a URL, or for a known one updates its weight and mode only (it
// keeps its estimate and schedule).
func (s *Scheduler) Add(u URLInfo, now time.Time) bool {
	if e, ok := s.front.urls[u.URL]; ok {
		if e.weight != u.Weight {
			s.moved++
		}
		e.weight, e.capture = u.Weight, u.Capture
		s.setCapture(e, u)
		s.mirror(e)
		if e.index >= 0 && e.strict != (e.cap != nil) {
			s.front.schedule(e, e.nextDue) // into the heap of its new mode
		}
		return false
	}
	e, _ := s.front.add(u.URL, u.Host, s.baseGap())
	e.weight, e.capture, e.rate = u.Weight, u.Capture, u.Rate
	e.pos = len(s.list)
	s.list = append(s.list, e)
	if e.host.plan < 0 {
		e.host.plan = int32(len(s.planHosts))
		s.planHosts = append(s.planHosts, e.host)
	}
	s.hosts = append(s.hosts, e.host.plan)
	s.rates, s.rateSEs, s.weights, s.blocked, s.freqs = append(s.rates, 0), append(s.rateSEs, 0), append(s.weights, 0), append(s.blocked, false), append(s.freqs, 0)
	s.fixed = append(s.fixed, 0)
	s.setCapture(e, u)
	s.moved++
	s.setDisallowed(e, u.Disallowed)
	e.paused, e.rateSE = u.Paused, u.RateSE
	e.interval = u.Interval
	if e.interval <= 0 {
		if a, ok := s.o.Policy.(adaptivePolicy); ok {
			e.interval = a.Initial()
		} else {
			// Until the next plan: the uniform share, so a new URL is
			// fetched soon and learnt.
			e.interval = time.Duration(float64(s.Len()) / s.o.Budget * float64(time.Second))
		}
	}
	due := u.NextDue
	if due.IsZero() {
		// First fetch soon, phases spread over the time the budget needs
		// to fetch every URL once, so a big seed list is not one burst.
		spread := float64(s.Len()) / s.o.Budget * float64(time.Second)
		due = now.Add(time.Duration(spread * frac(u.URL)))
	}
	s.mirror(e)
	s.front.schedule(e, due)
	return true
}

// setCapture gives a capture URL its capture state, keeping what it learnt
// when only the seed's fields change.
func (s *Scheduler) setCapture(e *entry, u URLInfo) {
	if !u.Capture {
		e.cap = nil
		delete(s.captures, e)
		return
	}
	s.captures[e] = struct{}{}
	if e.cap == nil || (e.cap.configured && e.cap.period != u.Period.Seconds()) || (!e.cap.configured && u.Period > 0) {
		e.cap = newCaptureState(u.Period, u.Polls)
		e.cap.uniform = s.o.CaptureUniform
		return
	}
	e.cap.polls = u.Polls
}

// observeCapture records an update a poll of a capture URL saw: exactly at
// `to` (trustworthy Last-Modified) or somewhere in (from, to].
func (s *Scheduler) observeCapture(url string, from, to time.Time, exact bool) {
	e, ok := s.front.urls[url]
	if !ok || e.cap == nil {
		return
	}
	before := e.cap.rate()
	if exact {
		e.cap.exactAt(secs(to))
	} else {
		e.cap.changedIn(secs(from), secs(to))
	}
	e.cap.maybeLearn(e.interval)
	s.captureMoved(e, before)
}

// CaptureStatus lists the capture URLs' schedules (at most limit).
func (s *Scheduler) CaptureStatus(limit int) []CaptureStatus {
	var out []CaptureStatus
	for e := range s.captures {
		if e.cap != nil {
			out = append(out, e.cap.status(e.url, e.interval))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].URL < out[j].URL })
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}

// frac is a stable pseudo-random number in [0,1) from s, to spread phases
// deterministically.
func frac(s string) float64 {
	h := sha256.Sum256([]byte(s))
	return float64(binary.BigEndian.Uint64(h[:8])>>11) / float64(uint64(1)<<53)
}

// Next hands out the URL to fetch now, if any; otherwise it says when the
// next one is due (zero if none is queued).
func (s *Scheduler) Next(now time.Time) (Dispatch, bool, time.Time) {
	e, next := s.front.next(now)
	if e == nil {
		return Dispatch{}, false, next
	}
	return Dispatch{URL: e.url, Host: e.host.name, Capture: e.capture, Gap: e.host.gap, Due: e.nextDue}, true, time.Time{}
}

// Done folds a fetch's outcome into the schedule: the host's spacing, the
// URL's rate, and its next due time.
func (s *Scheduler) Done(url string, fb Feedback) {
	if s.releaseOrphan(url, fb.End) {
		return
	}
	e, ok := s.front.urls[url]
	if !ok {
		return
	}
	h := e.host
	gap := max(s.baseGap(), fb.HostGap)
	s.front.setGap(h, gap, fb.HostNotBefore)
	if !fb.End.IsZero() && !fb.Start.IsZero() {
		h.took(fb.End.Sub(fb.Start))
	}
	if e.oneShot {
		end := fb.End
		if end.Before(fb.Start) {
			end = fb.Start
		}
		s.shots--
		s.front.finish(e, end)
		return
	}
	if fb.Rate > 0 && fb.Rate != e.rate {
		e.rate, e.rateSE = fb.Rate, fb.RateSE
		s.moved++
	}
	if e.disallowed != fb.Disallowed {
		s.setDisallowed(e, fb.Disallowed)
		s.moved++
	}
	if e.interval <= 0 {
		e.interval = time.Duration(float64(s.Len()) / s.o.Budget * float64(time.Second))
	}
	// Space the host from when the request finished: measured at the
	// server, a request's start can lag ours by the connection set-up, so
	// spacing from our start could bring two requests closer than the gap.
	end := fb.End
	if end.Before(fb.Start) {
		end = fb.Start
	}
	due := fb.Start.Add(e.interval)
	switch a, adaptive := s.o.Policy.(adaptivePolicy); {
	case e.disallowed:
		due = fb.Start.Add(s.o.DisallowRetry)
	case e.cap != nil && e.interval > 0:
		if fb.OK {
			before := e.cap.rate()
			e.cap.poll(fb.Start, fb.Changed, e.interval)
			if e.cap.rate() != before {
				s.moved++ // mirrored below
			}
		}
		// After the poll just made, and after the phase it was due at:
		// a poll handed out early (a retry) must not be due again at
		// the same phase, where it would get the same task id.
		due = e.cap.next(e.url, latest(fb.Start, e.nextDue), e.interval)
	case adaptive && e.interval > 0:
		e.interval, due = a.Next(e.interval, fb)
	}
	s.mirror(e)
	s.front.done(e, end, due)
}

// Abort requeues a URL whose fetch produced no result (lost, failed,
// never published): it is due again at due.
func (s *Scheduler) Abort(url string, at, due time.Time) {
	if s.releaseOrphan(url, at) {
		return
	}
	if e, ok := s.front.urls[url]; ok {
		s.front.done(e, at, due)
	}
}

// Interval is the URL's current interval (0 if unknown or unscheduled).
func (s *Scheduler) Interval(url string) time.Duration {
	if e, ok := s.front.urls[url]; ok {
		return e.interval
	}
	return 0
}

// Rate is the URL's current estimated rate.
func (s *Scheduler) Rate(url string) float64 {
	if e, ok := s.front.urls[url]; ok {
		return e.rate
	}
	return 0
}

// ReplanDue reports whether the plan is stale: never made, older than
// Replan, or more than a tenth of the estimates moved since.
func (s *Scheduler) ReplanDue(now time.Time) bool {
	return s.plan.Freq == nil || now.Sub(s.planAt) >= s.o.Replan || s.moved > s.Len()/10+1
}

// Plan is the last plan.
func (s *Scheduler) Plan() (PlanOutput, time.Time, float64) { return s.plan, s.planAt, s.inUse }

// Disallowed counts URLs robots.txt disallows (rechecked every
// DisallowRetry, with no share of the budget).
func (s *Scheduler) Disallowed() int { return s.disallowed }

// Replan re-solves the policy over all URLs and sets every interval: the
// three steps of a PlanJob at once, for a caller that owns the Scheduler
// (the virtual benchmark). An adaptive policy has no global plan: only the
// model's freshness is refreshed.
func (s *Scheduler) Replan(now time.Time) (PlanOutput, error) {
	j := s.Snapshot(now)
	if err := j.Solve(); err != nil {
		return PlanOutput{}, err
	}
	for !s.Apply(j, now, len(j.freq)) {
	}
	return j.out, nil
}

// PlanJob is one re-plan, split so that a caller sharing the Scheduler
// under a lock holds the lock only for the cheap steps:
//
//	j := s.Snapshot(now) // locked: copies the plan input, O(n) memcpy
//	err := j.Solve()     // unlocked: runs the policy, the slow part
//	s.Apply(j, now, k)   // locked, repeated until it returns true: sets k intervals a call
//
// URLs added after the snapshot keep their interval until the next plan;
// estimates that move meanwhile count towards the next one (ReplanDue).
// Only one PlanJob of a Scheduler may be in progress at a time.
type PlanJob struct {
	at       time.Time
	policy   Policy
	adaptive bool
	explore  float64
	in       PlanInput
	rateSE   []float64 // per element: the standard error of its rate
	blocked  []bool
	fixed    []float64 // per element: a capture URL's own rate, 0 if planned
	moved    int       // Scheduler.moved at the snapshot
	// list is the scheduler's list at the snapshot, element i of the
	// plan. Appends never touch it and Remove builds a new list, so it is
	// shared, not copied; a URL removed meanwhile has pos < 0.
	list []*entry

	out   PlanOutput
	band  freshnessBand
	freq  []float64 // per element, exploration included
	sat   []bool    // per host: the plan gives it all it can take
	inUse float64
	next  int // elements applied so far
}

// size is the number of URLs the plan covers.
func (j *PlanJob) size() int { return len(j.in.Rates) }

// Output is the policy's plan once solved.
func (j *PlanJob) Output() PlanOutput { return j.out }

// Snapshot copies what a re-plan needs at now: every URL's rate, weight
// and host, and every host's capacity. It costs a copy of three arrays of
// n numbers, not a walk over the entries.
func (s *Scheduler) Snapshot(now time.Time) *PlanJob {
	n := len(s.list)
	_, adaptive := s.o.Policy.(adaptivePolicy)
	j := &PlanJob{at: now, policy: s.o.Policy, adaptive: adaptive, explore: s.o.ExploreShare, moved: s.moved, list: s.list[:n:n]}
	j.in = PlanInput{
		Budget:  s.o.Budget,
		Rates:   append([]float64(nil), s.rates...),
		Weights: append([]float64(nil), s.weights...),
		// Appends never touch the first n elements, so the slice is
		// shared; the cap stops the policy from appending into it.
		Hosts:    s.hosts[:n:n],
		HostCaps: make([]float64, len(s.planHosts)),
	}
	j.blocked = append([]bool(nil), s.blocked...)
	j.fixed = append([]float64(nil), s.fixed...)
	j.rateSE = append([]float64(nil), s.rateSEs...)
	for i, h := range s.planHosts {
		// The cap is what the host can take given its gap (host rate,
		// Crawl-delay) and how long its requests last.
		j.in.HostCaps[i] = h.capacity()
	}
	if adaptive {
		j.freq = append([]float64(nil), s.freqs...)
	}
	return j
}

// Solve runs the policy over the snapshot. It touches nothing of the
// Scheduler, so it runs without the caller's lock.
func (j *PlanJob) Solve() error {
	in := j.in
	if j.adaptive {
		j.inUse = 0
		for _, f := range j.freq {
			j.inUse += f
		}
		j.out = PlanOutput{Freq: j.freq}
		j.out.Freshness, j.out.Age = modelFreshness(in, j.freq)
		j.band = bandOf(in, j.rateSE, j.out.Freq)
		return nil
	}
	// Capture URLs that poll at their own rate take it off the budget
	// and off their host's capacity; the policy shares out the rest
	// among the other URLs.
	in, keep, fixedHost := withoutFixed(in, j.fixed, j.blocked)
	out, err := j.policy.Plan(in)
	if err != nil {
		return err
	}
	// URLs the optimum gives up on are still explored. Their fetches come
	// out of the budget, not on top of it (else the global limiter would
	// make every other URL late), so the plan is solved again with what
	// exploration leaves.
	// A URL's exploration rate is a share of its uniform frequency, and
	// on a host that cannot give every URL that much, of the host's share.
	uniform := in.Budget / math.Max(1, float64(len(in.Rates)))
	perHost := make([]int, len(in.HostCaps))
	for _, h := range in.Hosts {
		perHost[h]++
	}
	explore := func(i int) float64 {
		h := in.Hosts[i]
		return j.explore * math.Min(uniform, in.HostCaps[h]/float64(perHost[h]))
	}
	if givenUp(out.Freq, in.Weights) > 0 {
		spent := 0.0
		caps := append([]float64(nil), in.HostCaps...)
		for i, f := range out.Freq {
			if f <= 0 && in.Weights[i] > 0 {
				spent += explore(i)
				caps[in.Hosts[i]] -= explore(i)
			}
		}
		again := in
		again.Budget = math.Max(in.Budget-spent, in.Budget/2)
		again.HostCaps = caps
		if o2, err := j.policy.Plan(again); err == nil {
			out = o2
		}
	}
	freq := make([]float64, len(in.Rates))
	for i := range freq {
		if j.blocked[keep[i]] {
			continue
		}
		freq[i] = out.Freq[i]
		if freq[i] <= 0 {
			freq[i] = explore(i)
		}
	}
	// Exploration must not push a host past its capacity either: a host
	// over it would queue and fetch every URL late.
	sum := make([]float64, len(in.HostCaps))
	for i, f := range freq {
		sum[in.Hosts[i]] += f
	}
	for i := range freq {
		if h := in.Hosts[i]; sum[h] > in.HostCaps[h] && in.HostCaps[h] > 0 {
			freq[i] *= in.HostCaps[h] / sum[h]
		}
	}
	if len(keep) != len(j.fixed) {
		// Back to one frequency per element: the planned ones where they
		// were, the capture URLs at their own rate.
		all := make([]float64, len(j.fixed))
		for i, f := range freq {
			all[keep[i]] = f
		}
		for i, fx := range j.fixed {
			if fx > 0 && !j.blocked[i] {
				all[i] = fx
			}
		}
		freq = all
		out.Freq = spread(out.Freq, keep, len(j.fixed))
	}
	// Saturated against the whole capacity: the capture polls' share
	// included, the rest is what the freshness URLs may fill.
	j.sat = make([]bool, len(in.HostCaps))
	for h := range j.sat {
		whole := in.HostCaps[h] + fixedHost[h]
		j.sat[h] = whole > 0 && sum[h]+fixedHost[h] >= 0.98*whole
	}
	j.inUse = 0
	for _, f := range freq {
		if f > 0 {
			j.inUse += f
		}
	}
	j.out, j.freq = out, freq
	j.band = bandOf(j.in, j.rateSE, out.Freq) // every element: out.Freq is spread back above
	return nil
}

// Apply sets the intervals of up to limit more URLs from a solved job,
// moving each queued URL's next fetch by the change of its interval, and
// reports whether the job is done; the plan takes effect (Plan,
// ReplanDue) with the last call. A caller that shares the Scheduler under
// a lock takes it for each call, so that a fold waits for at most limit
// URLs' worth of heap updates.
func (s *Scheduler) Apply(j *PlanJob, now time.Time, limit int) bool {
	if j.next == 0 && !j.adaptive {
		for h, sat := range j.sat {
			if hq := s.planHosts[h]; hq.saturated != sat {
				hq.saturated = sat
				s.front.fixHost(hq)
			}
		}
	}
	end := len(j.freq)
	if j.adaptive {
		j.next = end
	}
	if limit < end-j.next {
		end = j.next + limit
	}
	for i := j.next; i < end; i++ {
		e := j.list[i]
		if e.pos < 0 || e.paused {
			// Removed since the snapshot, or paused: a paused URL keeps
			// its interval for when it is resumed.
			continue
		}
		if e.disallowed {
			e.interval = s.o.DisallowRetry
			s.mirror(e)
			continue
		}
		f := j.freq[i]
		if f <= 0 {
			continue
		}
		old := e.interval
		iv := time.Duration(float64(time.Second) / f)
		if iv < time.Millisecond {
			iv = time.Millisecond
		}
		e.interval = iv
		if e.index >= 0 && old > 0 && !e.nextDue.IsZero() && e.cap == nil {
			// Keep the phase: move the next fetch by the change of
			// interval, but never further than one new interval away.
			due := e.nextDue.Add(iv - old)
			if due.After(now.Add(iv)) {
				due = now.Add(time.Duration(float64(iv) * frac(e.url)))
			}
			s.front.schedule(e, due)
		}
		s.mirror(e)
	}
	j.next = end
	if j.next < len(j.freq) {
		return false
	}
	s.plan, s.planAt, s.inUse, s.planList, s.life.band = j.out, j.at, j.inUse, j.list, j.band
	s.moved -= j.moved
	if s.moved < 0 {
		s.moved = 0
	}
	return true
}

// withoutFixed returns the plan input without the elements that poll at a
// fixed rate (capture URLs with their own polls), with the budget and each
// host's capacity less those rates; keep maps the returned elements to the
// input's, and fixedHost is each host's fixed rate. With no fixed element
// it returns in itself and keep is the identity.
func withoutFixed(in PlanInput, fixed []float64, blocked []bool) (out PlanInput, keep []int, fixedHost []float64) {
	fixedHost = make([]float64, len(in.HostCaps))
	n := 0
	for i, fx := range fixed {
		if fx > 0 && !blocked[i] {
			fixedHost[in.Hosts[i]] += fx
			n++
		}
	}
	keep = make([]int, 0, len(fixed)-n)
	for i, fx := range fixed {
		if fx <= 0 || blocked[i] {
			keep = append(keep, i)
		}
	}
	if n == 0 {
		return in, keep, fixedHost
	}
	out = PlanInput{
		Rates:    make([]float64, len(keep)),
		Weights:  make([]float64, len(keep)),
		Hosts:    make([]int32, len(keep)),
		HostCaps: make([]float64, len(in.HostCaps)),
		Budget:   in.Budget,
	}
	for k, i := range keep {
		out.Rates[k], out.Weights[k], out.Hosts[k] = in.Rates[i], in.Weights[i], in.Hosts[i]
	}
	for h, c := range in.HostCaps {
		out.HostCaps[h] = math.Max(0, c-fixedHost[h])
		out.Budget -= fixedHost[h]
	}
	out.Budget = math.Max(0, out.Budget)
	return out, keep, fixedHost
}

// spread scatters the per-kept-element xs back to n elements (0 elsewhere).
func spread(xs []float64, keep []int, n int) []float64 {
	if xs == nil {
		return nil
	}
	all := make([]float64, n)
	for k, i := range keep {
		all[i] = xs[k]
	}
	return all
}

// givenUp counts the elements that matter (weight > 0) and get no fetches.
func givenUp(freq, weights []float64) int {
	n := 0
	for i, f := range freq {
		if f <= 0 && weights[i] > 0 {
			n++
		}
	}
	return n
}
