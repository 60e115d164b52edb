package schedule

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/freshcrawl/freshcrawl/alloc"
	"github.com/freshcrawl/freshcrawl/estimate"
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
	// ExploreShare is the largest share of the budget (and of each host's
	// cap) exploration may take (docs/design.md §3.7): probes of URLs
	// whose rate is not resolved and checks of URLs given up. Policies
	// with no multiplier (uniform, proportional, the LambdaCrawl peers)
	// keep URLs the plan gives up on at ExploreShare × budget/URLs.
	ExploreShare float64
	// Priors are the population priors shared with the Estimator that
	// folds results (Estimator.Priors); the scheduler refits them from
	// the collection. Nil: a set of its own around PriorRate.
	Priors *PriorSet
	// PriorRate is the change rate (per second) the priors start from
	// when Priors is nil.
	PriorRate float64
	// HalfLife is the estimator's half-life: what it learns is forgotten
	// on that scale, which bounds how long the exploration rule counts on
	// knowledge lasting (default 90 days).
	HalfLife time.Duration
	// Replan is the longest time between two plans.
	Replan time.Duration
	// DisallowRetry is how often a URL disallowed by robots.txt is checked
	// again (default 1h); the check hits the shared robots.txt cache, not
	// the host, until the cache expires.
	DisallowRetry time.Duration
	// CaptureUniform keeps capture URLs on uniform polls at fixed phases
	// (k·T/N), never learning: the baseline of Ashish, Kulkarni & Wang.
	CaptureUniform bool
	// URLs, when set, spells URLs by their store ids (URLInfo.ID): the
	// scheduler then holds a fingerprint and the id of each URL instead
	// of the URL (a coordinator, whose store holds the URLs). Nil: the
	// scheduler holds the URLs (front coded, urlIndex).
	URLs URLSource
}

// URLInfo is what the scheduler is told about a URL.
type URLInfo struct {
	URL, Host string
	// ID is the URL's id in the store SchedulerOptions.URLs reads (0: not
	// known; the scheduler then holds the URL). Without a source it is
	// not used.
	ID         uint64
	Weight     float64
	Capture    bool
	Rate       float64       // estimated changes per second (0: prior)
	Interval   time.Duration // from a previous plan (0: none yet)
	NextDue    time.Time     // zero: new URL, first fetch soon
	Disallowed bool
	// LastOK is the URL's last successful fetch (zero: never fetched, so
	// its copy is stale and its first fetch is due at once).
	LastOK time.Time
	// Estimate is the URL's estimator state as stored (nil: none), from
	// which its posterior is recomputed under the current priors.
	Estimate []byte
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
	// Learnt is set when the fetch updated the URL's estimate: Posterior
	// is then its posterior (computed under the priors of version
	// PriorVersion) and State its estimator state.
	Learnt       bool
	Posterior    estimate.Summary
	State        estimate.State
	PriorVersion uint64
	// Model is the URL's posterior under the model's priors, for the
	// model freshness (valid when Learnt).
	Model estimate.Sketch
	// ChangePoint: the estimator found the URL's rate had changed
	// (estimate.State's change points).
	ChangePoint bool
	// First: this fetch saw the URL's content for the first time.
	First bool
	// Dated: the URL's Last-Modified has earned the estimator's trust and
	// came with this fetch, so that one fetch dates the URL's last change
	// (a recheck of a URL given up is then one fetch, not a pair:
	// docs/design.md §3.7).
	Dated bool
}

// adaptivePolicy is a policy that sets each URL's interval from its own fetch
// outcomes (Nutch, StormCrawler) instead of from a global allocation.
type adaptivePolicy interface {
	Policy
	// Initial is the interval of a URL never fetched.
	Initial() time.Duration
	// Next returns the URL's new state and next due time after a fetch.
	Next(st adaptiveState, fb Feedback) (adaptiveState, time.Time)
}

// adaptiveState is what an Adaptive policy keeps per URL.
type adaptiveState struct {
	Interval time.Duration
	// Modified is the policy's own record of the page's last change
	// (Nutch's modifiedTime; zero: unknown).
	Modified time.Time
	// Reset: the next fetch has nothing to compare with (Nutch clears a
	// page's signature when it forces a refetch).
	Reset bool
}

// Scheduler is the scheduling step with no I/O and no clock of its own:
// every call says what time it is, so the same code runs in the
// coordinator on the wall clock and in `freshcrawl bench policies
// --mode virtual` on a simulated one. It is not safe for concurrent use:
// the coordinator's dispatcher holds it under its lock, and re-plans in
// three steps (Snapshot, PlanJob.Solve, Apply) so that the lock is never
// held while the policy runs.
type Scheduler struct {
	o         SchedulerOptions
	front     *frontier
	plan      PlanOutput
	planAt    time.Time
	moved     int
	inUse     float64
	shots     int      // one-off entries queued or in flight
	unspelled int      // Next could not spell a due URL (URLSource): Unspelled
	unread    int      // plans whose estimator states the URL source could not read: UnreadStates
	list      []uint32 // every URL's entry id (not one-off requests), in the order added: the plan's element order

	// The plan's input, kept up to date element by element (mirror) so a
	// re-plan copies arrays instead of walking a million entries under
	// the caller's lock. Index i is list[i].
	rates []float64
	// rateSEs are the standard errors of rates, for the plan's freshness
	// band (bandOf), which is reported, never planned by: float32's 7
	// digits are more than an error needs.
	rateSEs []float32
	weights []float64 // the URL's weight; the plan's input is 0 where blocked (it takes no budget)
	blocked bitset    // disallowed by robots.txt or paused: no fetches, not even exploration
	// Under an adaptive policy only (adaptive; nil otherwise): the URL's
	// frequency now, 1/interval (0: unscheduled, disallowed or paused),
	// which is the policy's plan, and the policy's record of the page's
	// last change (adaptiveState.Modified, Unix ns).
	adaptive   bool
	freqs      []float64
	adModified []int64
	// fixed is the rate a capture URL polls at whatever the plan says
	// (its configured or learnt polls per period; 0: planned like any
	// URL). The plan takes it off the budget and the host's capacity, so
	// that the budget in use is what is really dispatched. Nil until a
	// URL has a fixed rate: most collections have no capture URL.
	fixed []float64
	// hosts[i] indexes planHosts, in order of first appearance in list.
	// Appends never touch its first elements, so a snapshot may share
	// them; Remove builds a new array.
	hosts     []int32
	planHosts []*hostQueue

	// Per element as well: the posterior summary and the last successful
	// fetch (unix nanoseconds, 0: never), for the model's freshness and
	// for exploration.
	posts   []postSummary
	models  []estimate.Sketch // the posterior under the model's priors (Feedback.Model)
	lastOK  []int64
	prevGap []float32 // seconds from the successful fetch before lastOK to it (okGap; 0: fewer than two)
	probing bitset    // explored by the last plan
	probes  []uint8   // fetches in the URL's current probe session
	dated   bitset    // the newest fetch's Last-Modified was trusted (Feedback.Dated)

	disallowed int                      // URLs disallowed now
	captures   map[uint32]*captureState // capture URLs (entry ids): their capture state
	// rechecks holds the probe interval of the URLs (entry ids) given
	// up and rechecked (flagRecheck): each check is followed by a probe
	// that long after it; flagRechecked is set between the two. Few
	// URLs have one, so it is not in every entry.
	rechecks map[uint32]time.Duration
	// retired are the ids of removed URLs, with the number of snapshots
	// made before their removal: a plan made over an older list may
	// still name them, so they are reused only once a plan made after
	// it has taken effect (Apply).
	retired   []retiredEntry
	snapshots uint64

	priors *PriorSet
	// Interned path templates: an entry holds the index in tmplNames.
	tmpls     map[string]uint32
	tmplNames []string
	// What the exploration rule and the refits need to know of the
	// collection: change points seen and the time the observations
	// covered, both faded (the hazard of a rate change), and new
	// observations since the priors were last fitted.
	changePoints, urlTime float64
	hazardAt              time.Time
	learnt                int     // URLs with an estimate
	unfetched             int     // URLs never fetched successfully (flagUnfetched)
	exploreLift           float64 // the last plan's PlanJob.lift
	exploreItems          int     // the last plan's PlanJob.itemsHint
	sinceRefit            int
	resumFrom             int // where the next re-summary batch starts
	life                  lifecycle
}

// retiredEntry is the id of a removed URL and the number of snapshots
// made before it was removed.
type retiredEntry struct {
	id       uint32
	snapshot uint64
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
	if o.HalfLife <= 0 {
		o.HalfLife = DefaultHalfLife
	}
	if o.Priors == nil {
		o.Priors = newPriorSet(o.PriorRate)
	}
	_, adaptive := o.Policy.(adaptivePolicy)
	front := newFrontier()
	if o.URLs != nil {
		front.urls.src = newSourceIndex(o.URLs)
	}
	return &Scheduler{o: o, front: front, captures: map[uint32]*captureState{}, rechecks: map[uint32]time.Duration{}, priors: o.Priors, tmpls: map[string]uint32{}, adaptive: adaptive}
}

// mirror copies e's plan input into the scheduler's arrays; every change
// of e's rate (or its error), weight, interval, disallowed or paused flag
// ends with it.
func (s *Scheduler) mirror(e *entry) {
	if e.pos < 0 {
		return
	}
	off := e.is(flagDisallowed) || e.is(flagPaused)
	f, fx := 0.0, 0.0
	if !off && e.interval > 0 {
		f = float64(time.Second) / float64(e.interval)
	}
	if cs := s.capOf(e); cs != nil && !off {
		if fx = cs.rate(); fx > 0 {
			f = fx
		}
	}
	s.blocked.set(int(e.pos), off)
	if s.fixed == nil && fx != 0 {
		s.fixed = make([]float64, len(s.list))
	}
	if s.fixed != nil {
		s.fixed[e.pos] = fx
	}
	if s.adaptive {
		s.freqs[e.pos] = f
	}
}

// postSummary is an estimate.Summary held for every URL
// (Scheduler.posts) in 24 bytes instead of 48: its mean and harmonic mean
// as float32, and its quantiles (ln λ) as fixed-point offsets from the
// harmonic mean's logarithm, quantStep apart (quantCode). The plan's
// rates come from the estimates (Scheduler.rates); the summaries weigh
// exploration and the expected freshness, for which a quantile within
// quantStep/2 (0.037 % of the rate) is as good as exact
// (docs/benchmarks.md, "The schedule's memory per URL").
type postSummary struct {
	mean, harmonic float32
	q              [estimate.SummaryQuantiles]uint16
}

// quantSpan bounds, in ln λ, how far a quantile may lie from its
// summary's harmonic mean for its code to hold it to within quantStep/2:
// farther ones are held at the span's ends. A posterior's quantiles and
// harmonic mean lie on its rate grid (rateGridFor: 21 in ln λ from end to
// end, TestQuantileCodes), well within it.
const quantSpan = 24.0

// quantStep is the spacing of the quantiles' codes, 7.3e-4 in ln λ:
// quantSpan over 32 767 steps either way of the anchor, whose own code
// (quantZero) reads back as it, so that a point summary's quantiles
// (pointSummary) do.
const (
	quantZero = math.MaxInt16
	quantStep = quantSpan / quantZero
)

// quantAnchor is the ln λ the quantiles of a summary with harmonic mean
// h are coded from (a rate of 0, no posterior, as pointSummary's).
func quantAnchor(h float32) float64 { return math.Log(math.Max(float64(h), 1e-300)) }

// quantCode is the code of quantile u of a summary anchored at a.
func quantCode(u float32, a float64) uint16 {
	c := math.Round((float64(u)-a)/quantStep) + quantZero
	if !(c >= 0) { // below the span, or no number
		return 0
	}
	return uint16(math.Min(c, 2*quantZero))
}

// quantValue is the quantile of code c anchored at a.
func quantValue(c uint16, a float64) float32 {
	return float32(a + float64(int(c)-quantZero)*quantStep)
}

// compactSummary is s as a postSummary.
func compactSummary(s estimate.Summary) postSummary {
	p := postSummary{mean: float32(s.Mean), harmonic: float32(s.Harmonic)}
	a := quantAnchor(p.harmonic)
	for k, u := range s.Q {
		p.q[k] = quantCode(u, a)
	}
	return p
}

// summary is p as an estimate.Summary.
func (p postSummary) summary() estimate.Summary {
	s := estimate.Summary{Mean: float64(p.mean), Harmonic: float64(p.harmonic)}
	a := quantAnchor(p.harmonic)
	for k, c := range p.q {
		s.Q[k] = quantValue(c, a)
	}
	return s
}

// okGap is what Scheduler.prevGap holds for the successful fetches prev
// and last (Unix ns; prev 0: none): the seconds from prev to last as
// float32, which holds a gap of a year to within 2 s (2^-24 of it: the
// gap only sets how far back a URL's data reach, and a share of the
// collection's observed time), and a gap of 0 as the negative number
// nearest 0, so that 0 means "fewer than two fetches" only.
func okGap(prev, last int64) float32 {
	if prev == 0 {
		return 0
	}
	g := float32(time.Duration(last - prev).Seconds())
	if g == 0 {
		return -math.SmallestNonzeroFloat32
	}
	return g
}

// prevOK is the successful fetch before element i's last (Unix ns; 0:
// fewer than two), from its gap (okGap).
func (s *Scheduler) prevOK(i int32) int64 {
	g := s.prevGap[i]
	if g == 0 {
		return 0
	}
	return s.lastOK[i] - int64(math.Round(float64(g)*1e9))
}

// pointSummary is the summary of a rate known exactly: the stand-in until
// a URL's posterior is computed.
func pointSummary(rate float64) estimate.Summary {
	s := estimate.Summary{Mean: rate, Harmonic: rate}
	u := float32(math.Log(math.Max(rate, 1e-300)))
	for j := range s.Q {
		s.Q[j] = u
	}
	return s
}

// setDisallowed sets e's disallowed flag, keeping the count.
func (s *Scheduler) setDisallowed(e *entry, v bool) {
	if e.is(flagDisallowed) == v {
		return
	}
	e.set(flagDisallowed, v)
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
func (s *Scheduler) Len() int { return s.front.urls.len() - s.shots }

// Enqueue adds a one-off request (a keyword-search probe, a fetch of an
// item by id) due at `at`. It is dispatched under the same host politeness
// as every URL and forgotten once Done. It returns false if url is already
// known.
func (s *Scheduler) Enqueue(url, host string, at time.Time) bool {
	_, ok, collided := s.front.urls.find(url, 0)
	if ok {
		return false
	}
	e := s.front.insert(url, host, s.baseGap(), 0, collided)
	e.set(flagOneShot, true)
	e.interval = time.Hour // any interval > 0 keeps it queued
	s.shots++
	s.front.schedule(e, at)
	return true
}

// Hosts is the number of hosts.
func (s *Scheduler) Hosts() int { return len(s.front.hosts) }

// Has reports whether url is known.
func (s *Scheduler) Has(url string) bool { _, ok := s.front.urls.get(url); return ok }

// Add adds a URL, or for a known one updates its weight and mode only (it
// keeps its estimate and schedule).
func (s *Scheduler) Add(u URLInfo, now time.Time) bool {
	e, ok, collided := s.front.urls.find(u.URL, u.ID)
	if ok {
		s.front.urls.learnID(e, u.ID)
		if e.pos >= 0 && s.weights[e.pos] != u.Weight {
			s.moved++
			s.weights[e.pos] = u.Weight
		}
		e.set(flagCapture, u.Capture)
		s.setCapture(e, u)
		s.mirror(e)
		if e.index >= 0 && e.is(flagStrict) != e.is(flagCapture) {
			s.front.schedule(e, fromNanos(e.nextDue)) // into the heap of its new mode
		}
		return false
	}
	e = s.front.insert(u.URL, u.Host, s.baseGap(), u.ID, collided) // not found above
	e.set(flagCapture, u.Capture)
	e.tmpl = s.template(u.URL)
	dated := false
	if len(u.Estimate) > 0 {
		var st EstimateState
		if st.UnmarshalBinary(u.Estimate) == nil {
			s.setState(e, st.State)
			if e.observed() {
				s.learnt++
			}
			// As Learn would say after the stored fetch (Feedback.Dated):
			// the trust counts are the estimator's defaults; only the
			// clock skew of a check is configured.
			dated = !st.PrevLM.IsZero() && st.Trust.Trustworthy(estimate.DefaultTrustConfig())
		}
	}
	// The posterior is recomputed under the current priors by the next
	// plans (a batch each, in PlanJob.Solve); until then the rate stands
	// for it.
	e.priorVer = 0
	e.set(flagStale, true)
	e.pos = int32(len(s.list))
	s.list = append(s.list, e.id)
	if h := s.front.hostOf(e); h.plan < 0 {
		h.plan = int32(len(s.planHosts))
		s.planHosts = append(s.planHosts, h)
	}
	s.hosts = append(s.hosts, s.front.hostOf(e).plan)
	s.rates, s.rateSEs, s.weights = append(s.rates, u.Rate), append(s.rateSEs, float32(u.RateSE)), append(s.weights, u.Weight)
	n := len(s.list)
	s.blocked, s.probing, s.dated = s.blocked.extend(n), s.probing.extend(n), s.dated.extend(n)
	s.blocked.set(n-1, false)
	s.probing.set(n-1, false)
	s.dated.set(n-1, dated)
	if s.adaptive {
		s.freqs, s.adModified = append(s.freqs, 0), append(s.adModified, 0)
	}
	if s.fixed != nil {
		s.fixed = append(s.fixed, 0)
	}
	s.posts, s.lastOK, s.probes = append(s.posts, compactSummary(pointSummary(u.Rate))), append(s.lastOK, nanos(u.LastOK)), append(s.probes, 0)
	s.models = append(s.models, estimate.PointSketch(s.priors.load().grid(), u.Rate))
	s.prevGap = append(s.prevGap, 0)
	s.setCapture(e, u)
	s.moved++
	s.setDisallowed(e, u.Disallowed)
	e.set(flagPaused, u.Paused)
	if u.LastOK.IsZero() {
		e.set(flagUnfetched, true)
		s.unfetched++
	}
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
		// Never scheduled: due now, so the first pass over a new list runs
		// at the full budget from the first second (docs/design.md §3.7,
		// cold start). The frontier interleaves hosts (each host is
		// spaced by its gap), and within a host a stable pseudo-random
		// order, the frac of the URL within one fetch's share of the
		// budget (a time relative to the budget, not an absolute one,
		// so that nothing depends on the unit of time), keeps
		// neighbours of a seed file apart.
		due = now.Add(time.Duration(frac(u.URL) / s.o.Budget * float64(time.Second)))
	}
	s.mirror(e)
	s.front.schedule(e, due)
	return true
}

// setCapture gives a capture URL its capture state, keeping what it learnt
// when only the seed's fields change.
func (s *Scheduler) setCapture(e *entry, u URLInfo) {
	if !u.Capture {
		delete(s.captures, e.id)
		return
	}
	cs := s.captures[e.id]
	if cs == nil || (cs.configured && cs.period != u.Period.Seconds()) || (!cs.configured && u.Period > 0) {
		cs = newCaptureState(u.Period, u.Polls)
		cs.uniform = s.o.CaptureUniform
		s.captures[e.id] = cs
		return
	}
	cs.polls = u.Polls
}

// capOf is e's capture state: nil unless e is a capture URL. Few URLs
// are, so it lives in Scheduler.captures, not in every entry.
func (s *Scheduler) capOf(e *entry) *captureState {
	if !e.is(flagCapture) {
		return nil
	}
	return s.captures[e.id]
}

// recheckTau is the probe interval of e's recheck (0: none).
func (s *Scheduler) recheckTau(e *entry) time.Duration {
	if !e.is(flagRecheck) {
		return 0
	}
	return s.rechecks[e.id]
}

// setRecheckTau sets the probe interval of e's recheck (0: none).
func (s *Scheduler) setRecheckTau(e *entry, tau time.Duration) {
	switch {
	case tau != 0:
		s.rechecks[e.id] = tau
	case e.is(flagRecheck):
		delete(s.rechecks, e.id)
	}
	e.set(flagRecheck, tau != 0)
}

// observeCapture records an update a poll of a capture URL saw: exactly at
// `to` (trustworthy Last-Modified) or somewhere in (from, to].
func (s *Scheduler) observeCapture(url string, from, to time.Time, exact bool) {
	e, ok := s.front.urls.get(url)
	if !ok || s.capOf(e) == nil {
		return
	}
	cs := s.capOf(e)
	before := cs.rate()
	if exact {
		cs.exactAt(secs(to))
	} else {
		cs.changedIn(secs(from), secs(to))
	}
	cs.maybeLearn(e.interval)
	s.captureMoved(e, before)
}

// CaptureStatus lists the capture URLs' schedules (at most limit).
func (s *Scheduler) CaptureStatus(limit int) []CaptureStatus {
	var out []CaptureStatus
	var es []*entry
	var css []*captureState
	for id, cs := range s.captures {
		es, css = append(es, s.front.entry(id)), append(css, cs)
	}
	// A URL the source cannot spell is left out (the source logs why).
	_ = s.front.urls.spellAll(es, func(i int, url string) {
		out = append(out, css[i].status(url, es[i].interval))
	})
	sort.Slice(out, func(i, j int) bool { return out[i].URL < out[j].URL })
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}

// template interns the path template of url: its index in tmplNames.
func (s *Scheduler) template(url string) uint32 {
	t := PathTemplate(url)
	if v, ok := s.tmpls[t]; ok {
		return v
	}
	v := uint32(len(s.tmplNames))
	s.tmpls[t] = v
	s.tmplNames = append(s.tmplNames, t)
	return v
}

// frac is a stable pseudo-random number in [0,1) from s, to spread phases
// deterministically.
func frac(s string) float64 {
	h := sha256.Sum256([]byte(s))
	return float64(binary.BigEndian.Uint64(h[:8])>>11) / float64(uint64(1)<<53)
}

// phase is a stable pseudo-random number in [0,1) for e: frac of its URL,
// or with a URL source, of its store id (the same across restarts, and
// no read of the source).
func (s *Scheduler) phase(e *entry) float64 {
	if s.front.urls.src == nil {
		return frac(s.front.url(e))
	}
	if id := s.front.urls.src.storeID(e); id != 0 {
		return fracID(id)
	}
	return frac(s.front.urls.src.held[e.id])
}

// fracID is a stable pseudo-random number in [0,1) from id (SplitMix64's
// finaliser: neighbouring ids land far apart).
func fracID(id uint64) float64 {
	z := id + 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	z ^= z >> 31
	return float64(z>>11) / float64(uint64(1)<<53)
}

// Spelling a URL through the URL source may fail (the store could not be
// read, or no longer holds it): Next then puts the URL back, due again
// after unspelledRetry, and tries the next due one, up to
// maxUnspelled times a call, after which it waits unspelledWait.
const (
	unspelledRetry = time.Minute
	maxUnspelled   = 16
	unspelledWait  = time.Second
)

// Next hands out the URL to fetch now, if any; otherwise it says when the
// next one is due (zero if none is queued).
func (s *Scheduler) Next(now time.Time) (Dispatch, bool, time.Time) {
	for tries := 0; ; tries++ {
		e, next := s.front.next(now)
		if e == nil {
			return Dispatch{}, false, next
		}
		url, err := s.front.urls.spell(e)
		if err != nil {
			// Nothing is lost: the URL stays in the schedule and is
			// tried again (the source logs what failed).
			s.unspelled++
			s.front.done(e, now, now.Add(unspelledRetry))
			if tries+1 >= maxUnspelled {
				return Dispatch{}, false, now.Add(unspelledWait)
			}
			continue
		}
		h := s.front.hostOf(e)
		return Dispatch{URL: url, Host: h.name, Capture: e.is(flagCapture), Gap: h.gap, Due: fromNanos(e.nextDue)}, true, time.Time{}
	}
}

// Unspelled is how many times Next could not spell a due URL through the
// URL source and put it back.
func (s *Scheduler) Unspelled() int { return s.unspelled }

// UnreadStates is how many plans could not read the estimator states of
// their refit sample and re-summaries from the URL source
// (URLSource.Estimates): each went on with the summaries it had, and the
// next plan picks those URLs again.
func (s *Scheduler) UnreadStates() int { return s.unread }

// setState keeps e's estimator state: in its slab's arena, or, when the
// URL source holds it (urlIndex.stateID: the store, which a fold writes
// before Done), only whether it holds observations.
func (s *Scheduler) setState(e *entry, st estimate.State) {
	if s.front.urls.stateID(e) != 0 {
		s.front.ents.dropState(e)
		e.set(flagObserved, st.Observations() > 0)
		return
	}
	s.front.ents.setState(e, st)
}

// Done folds a fetch's outcome into the schedule: the host's spacing, the
// URL's rate, and its next due time.
func (s *Scheduler) Done(url string, fb Feedback) {
	if s.releaseOrphan(url, fb.End) {
		return
	}
	e, ok := s.front.urls.get(url)
	if !ok {
		return
	}
	h := s.front.hostOf(e)
	gap := max(s.baseGap(), fb.HostGap)
	s.front.setGap(h, gap, fb.HostNotBefore)
	if !fb.End.IsZero() && !fb.Start.IsZero() {
		h.took(fb.End.Sub(fb.Start))
	}
	if e.is(flagOneShot) {
		end := fb.End
		if end.Before(fb.Start) {
			end = fb.Start
		}
		s.shots--
		s.front.finish(e, end)
		return
	}
	if fb.Rate > 0 && fb.Rate != s.rates[e.pos] {
		s.rates[e.pos], s.rateSEs[e.pos] = fb.Rate, float32(fb.RateSE)
		s.moved++
	}
	if fb.OK {
		s.prevGap[e.pos], s.lastOK[e.pos] = okGap(s.lastOK[e.pos], nanos(fb.Start)), nanos(fb.Start)
		if e.is(flagUnfetched) {
			e.set(flagUnfetched, false)
			s.unfetched--
		}
	}
	if fb.Learnt && e.pos >= 0 {
		s.dated.set(int(e.pos), fb.Dated)
	}
	if fb.Learnt {
		if !e.observed() && fb.State.Observations() > 0 {
			s.learnt++
		}
		s.setState(e, fb.State)
		e.priorVer = uint32(fb.PriorVersion)
		e.set(flagStale, false)
		if e.pos >= 0 {
			s.posts[e.pos] = compactSummary(fb.Posterior)
			s.models[e.pos] = fb.Model
			if !fb.Model.Valid() {
				s.models[e.pos] = fb.Posterior.Sketch(s.priors.load().grid())
			}
		}
		e.seq++
		s.sinceRefit++
	}
	if fb.Learnt && !fb.First {
		// The time this observation covered, for the hazard of a rate
		// change per unit of observed time.
		s.updateHazard(fb.Start)
		if prev := s.prevOK(e.pos); s.lastOK[e.pos] != 0 && nanos(fb.Start) > prev && prev != 0 {
			s.urlTime += fb.Start.Sub(fromNanos(prev)).Seconds()
		}
	}
	if fb.ChangePoint {
		s.changePoints++
		s.moved++
		s.probes[e.pos] = 0
	}
	if fb.OK && e.pos >= 0 && s.probing.has(int(e.pos)) && s.probes[e.pos] < math.MaxUint8 {
		s.probes[e.pos]++
	}
	if e.is(flagDisallowed) != fb.Disallowed {
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
	// Keep the phase: the next fetch is one interval after this one was
	// due, not after it started, so that waiting for the budget's token
	// or a busy host does not stretch every interval and lose fetches.
	// A fetch later than half an interval starts a new phase.
	due := fb.Start.Add(e.interval)
	// A URL's first fetch has no phase to keep: its due time was when it
	// was added. A cold start fetches N URLs over N/B at the budget; one
	// interval after each (or after the seeding) would leave the budget
	// idle until the first of them comes due, for as long as the plan's
	// intervals exceed N/B. A stable random phase within the interval,
	// counted from when the URLs never fetched will have been fetched at
	// the budget, spreads them over it at the plan's rate and leaves the
	// first pass the whole budget. (Counting the URLs with no estimate
	// instead put it up to N/B later: a first fetch often gives the
	// estimator no observation.)
	firstOK := fb.OK && e.pos >= 0 && s.prevGap[e.pos] == 0
	recheckTau := s.recheckTau(e)
	if firstOK && recheckTau == 0 {
		due = fb.Start.Add(s.firstPassLeft() + time.Duration(float64(e.interval)*s.phase(e)))
	} else if recheckTau > 0 && fb.OK && !e.is(flagRechecked) {
		// The check of a URL given up is followed by its probe.
		e.set(flagRechecked, true)
		due = fb.Start.Add(recheckTau)
	} else if d := fromNanos(e.nextDue).Add(e.interval); e.nextDue != 0 && e.nextDue <= nanos(fb.Start) && d.Before(due) {
		due = d
		if half := fb.Start.Add(e.interval / 2); due.Before(half) {
			due = half
		}
	}
	if recheckTau == 0 || !fb.OK || due.Sub(fb.Start) != recheckTau {
		e.set(flagRechecked, false)
	}
	cs := s.capOf(e)
	switch a, adaptive := s.o.Policy.(adaptivePolicy); {
	case e.is(flagDisallowed):
		due = fb.Start.Add(s.o.DisallowRetry)
	case cs != nil && e.interval > 0:
		if fb.OK {
			before := cs.rate()
			cs.poll(fb.Start, fb.Changed, e.interval)
			if cs.rate() != before {
				s.moved++ // mirrored below
			}
		}
		// After the poll just made, and after the phase it was due at:
		// a poll handed out early (a retry) must not be due again at
		// the same phase, where it would get the same task id.
		due = cs.next(url, latest(fb.Start, fromNanos(e.nextDue)), e.interval)
	case adaptive && e.interval > 0:
		var st adaptiveState
		st, due = a.Next(adaptiveState{Interval: e.interval, Modified: fromNanos(s.adModified[e.pos]), Reset: e.is(flagAdReset)}, fb)
		e.interval, s.adModified[e.pos] = st.Interval, nanos(st.Modified)
		e.set(flagAdReset, st.Reset)
	}
	s.mirror(e)
	s.front.done(e, end, due)
}

// firstPassLeft is how long the URLs never fetched take at the budget:
// when the first pass over them ends if it runs at the budget.
func (s *Scheduler) firstPassLeft() time.Duration {
	return time.Duration(float64(max(0, s.unfetched-s.disallowed)) / s.o.Budget * float64(time.Second))
}

// Abort requeues a URL whose fetch produced no result (lost, failed,
// never published): it is due again at due.
func (s *Scheduler) Abort(url string, at, due time.Time) {
	if s.releaseOrphan(url, at) {
		return
	}
	if e, ok := s.front.urls.get(url); ok {
		s.front.done(e, at, due)
	}
}

// Interval is the URL's current interval (0 if unknown or unscheduled).
func (s *Scheduler) Interval(url string) time.Duration {
	if e, ok := s.front.urls.get(url); ok {
		return e.interval
	}
	return 0
}

// Rate is the URL's current estimated rate.
func (s *Scheduler) Rate(url string) float64 {
	if e, ok := s.front.urls.get(url); ok && e.pos >= 0 {
		return s.rates[e.pos]
	}
	return 0
}

// ReplanDue reports whether the plan is stale: never made, older than
// Replan, or more than a tenth of the estimates moved since.
func (s *Scheduler) ReplanDue(now time.Time) bool {
	return s.planAt.IsZero() || now.Sub(s.planAt) >= s.o.Replan || s.moved > s.Len()/10+1
}

// Plan is the last plan and when it was made (zero before the first),
// without its frequencies: the URLs' intervals hold them.
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
	rateSE   []float32 // per element: the standard error of its rate
	blocked  bitset
	fixed    []float64 // per element: a capture URL's own rate, 0 if planned
	moved    int       // Scheduler.moved at the snapshot
	posts    []estimate.Summary
	models   []estimate.Sketch // the model's posteriors (Scheduler.models), on priors.grid()
	lastOK   []int64
	probing  bitset    // explored by the previous plan
	probes   []uint8   // fetches in each URL's probe session
	dated    bitset    // each URL's Last-Modified is trusted: one fetch dates its last change
	lastIv   []float64 // each URL's last interval between successful fetches, seconds (0: none)
	horizon  float64   // seconds a rate is expected to last (1/hazard)
	halfLife float64   // the estimator's half-life, seconds
	hazard   float64   // rate changes per URL per second
	// list is the scheduler's list at the snapshot (entry ids), element
	// i of the plan. Appends never touch it and Remove builds a new list,
	// so it is shared, not copied; a URL removed meanwhile has pos < 0
	// (its id is not reused until a later plan takes effect).
	list     []uint32
	snapshot uint64 // snapshots made before this one

	// Priors: the current ones, a sample to refit them from (nil: no
	// refit due), and URLs whose posterior is recomputed under the
	// (refitted) priors.
	priors   *Priors
	refit    *refitInput
	resum    []resummary
	newPrior *Priors
	// With a URL source (nil: none), the states the snapshot left to it
	// (stateID ≠ 0) are read in Solve: refitIDs[k] is the store id of
	// refit.states[k] (0: the snapshot copied it), resummary.id the
	// same. On a failed read (stateErr) Apply restores the refit's
	// count (refitSince) and the re-summaries' round robin (resumStart)
	// so that the next plan picks them again.
	states     URLSource
	refitIDs   []uint64
	stateErr   error
	refitSince int
	resumStart int

	out          PlanOutput
	band         freshnessBand
	freq         []float64 // per element, exploration included
	recheckTau   []float64 // per element: a recheck's probe interval, or a pair's (0: none)
	paired       []bool    // per element: kept by the plan, fetched in pairs (planAround)
	probe        []bool    // per element: probed for what it teaches
	sessionsOver []int     // elements whose probe session ended: resolved
	sat          []bool    // per host: the plan gives it all it can take
	inUse        float64
	next         int // elements applied so far
	// liftGuess is the previous plan's lift, the ratio of exploration's
	// multiplier to the full plan's (exploreByValue's warm start; 0:
	// none), and lift this plan's (0: exploration did not move it).
	liftGuess, lift float64
	// itemsHint is how many items the last exploreItems listed (0:
	// none yet), to size the next list.
	itemsHint int
	around    aroundScratch // planAround's scratch arrays
}

// aroundScratch holds planAround's per-element scratch arrays between the
// evaluations of one plan.
type aroundScratch struct{ pairTau, pairValue, weights []float64 }

// reuse returns *buf as n zeros, reallocating it only when it is too short.
func reuse(buf *[]float64, n int) []float64 {
	if cap(*buf) < n {
		*buf = make([]float64, n)
	}
	*buf = (*buf)[:n]
	clear(*buf)
	return *buf
}

// resummary is one URL's posterior to recompute under the priors.
type resummary struct {
	i          int
	seq        uint16
	id         uint64 // store id to read st by (0: st copied by the snapshot)
	st         estimate.State
	host, tmpl string
	post       estimate.Summary
	model      estimate.Sketch
}

// Budgets of the work a plan does on the estimates, so that a re-plan of
// millions of URLs stays cheap: the priors are refitted on a sample, and
// the posteriors of at most resumPerPlan URLs are recomputed per plan
// (the rest follow in later plans, or when they are next fetched).
const (
	refitSample  = 20_000
	resumPerPlan = 20_000
)

// size is the number of URLs the plan covers.
func (j *PlanJob) size() int { return len(j.in.Rates) }

// Output is the policy's plan once solved.
func (j *PlanJob) Output() PlanOutput { return j.out }

// Snapshot copies what a re-plan needs at now: every URL's rate, weight,
// host, posterior summary and last fetch, and every host's capacity; when
// due, a sample of estimator states to refit the priors from, and a batch
// of URLs whose posterior was computed under older priors. It costs a
// copy of a few arrays of n numbers, not a walk over the entries.
func (s *Scheduler) Snapshot(now time.Time) *PlanJob {
	n := len(s.list)
	_, adaptive := s.o.Policy.(adaptivePolicy)
	j := &PlanJob{at: now, policy: s.o.Policy, adaptive: adaptive, explore: s.o.ExploreShare, moved: s.moved, list: s.list[:n:n], liftGuess: s.exploreLift, itemsHint: s.exploreItems, snapshot: s.snapshots, states: s.o.URLs}
	s.snapshots++
	// The posterior summaries are half of the bytes copied (48 a URL):
	// copied on the other core meanwhile, since a caller holds its lock
	// (folds wait) for the whole snapshot. Nothing below touches them.
	var posts sync.WaitGroup
	posts.Go(func() {
		j.posts = make([]estimate.Summary, n)
		for i := range j.posts {
			j.posts[i] = s.posts[i].summary()
		}
	})
	j.in = PlanInput{
		Budget:  s.o.Budget,
		Rates:   append([]float64(nil), s.rates...),
		Weights: make([]float64, n),
		// Appends never touch the first n elements, so the slice is
		// shared; the cap stops the policy from appending into it.
		Hosts:    s.hosts[:n:n],
		HostCaps: make([]float64, len(s.planHosts)),
	}
	j.blocked = append(bitset(nil), s.blocked...)
	for i, w := range s.weights {
		if !j.blocked.has(i) {
			j.in.Weights[i] = w
		}
	}
	if s.fixed != nil {
		j.fixed = append([]float64(nil), s.fixed...)
	}
	j.rateSE = append([]float32(nil), s.rateSEs...)
	j.models = append([]estimate.Sketch(nil), s.models...)
	j.lastOK = append([]int64(nil), s.lastOK...)
	j.probing = append(bitset(nil), s.probing...)
	j.probes = append([]uint8(nil), s.probes...)
	j.dated = append(bitset(nil), s.dated...)
	j.lastIv = make([]float64, n)
	for i, last := range s.lastOK {
		if g := s.prevGap[i]; last != 0 && g > 0 {
			j.lastIv[i] = float64(g)
		}
	}
	for i, h := range s.planHosts {
		// The cap is what the host can take given its gap (host rate,
		// Crawl-delay) and how long its requests last.
		j.in.HostCaps[i] = h.capacity()
	}
	if adaptive {
		j.freq = append([]float64(nil), s.freqs...)
	}
	s.updateHazard(now)
	j.hazard = CollectionHazard(s.changePoints, s.urlTime, s.o.HalfLife)
	j.horizon = 1 / j.hazard
	s.priors.setHazard(j.hazard)
	j.halfLife = s.o.HalfLife.Seconds()
	j.priors = s.priors.load()
	if s.learnt > 0 && (j.priors.revision() == 0 || s.sinceRefit >= max(50, s.learnt/4)) {
		j.refit, j.refitIDs = s.sampleStates()
		j.refitSince, s.sinceRefit = s.sinceRefit, 0
	}
	s.pickResummaries(j)
	posts.Wait()
	return j
}

// CollectionHazard is the hazard of a change of a URL's rate (per URL per
// second) that the exploration, the rechecks and the model freshness use:
// changePoints detected over observed seconds of the collection's URLs,
// with the prior's one change in hazardPriorTime half-lives added, so that
// a young collection is not taken to have none.
func CollectionHazard(changePoints, observed float64, halfLife time.Duration) float64 {
	return (changePoints + 1) / (observed + hazardPriorTime*halfLife.Seconds())
}

// hazardPriorTime is the prior's observed time of the hazard estimate, in
// half-lives (20 × 90 days ≈ five years), so that it scales with the
// clock a simulated web runs on:
// one rate change in five years of observation until the collection
// shows more.
const hazardPriorTime = 20.0

// hazardMemory is the half-life of the hazard estimate's counts, as a
// share of the estimator's: short, so that a wave of rate changes across
// the collection shortens the rechecks of URLs given up within weeks.
const hazardMemory = 1.0 / 3

// updateHazard fades the change-point count and the observed time to
// now. The hazard is change points per unit of time the observations
// covered (each fetch covers the time since the previous one): a page
// rechecked after a year has been watched for a year.
func (s *Scheduler) updateHazard(now time.Time) {
	if !s.hazardAt.IsZero() && now.After(s.hazardAt) {
		dt := now.Sub(s.hazardAt).Seconds()
		f := math.Exp2(-dt / (hazardMemory * s.o.HalfLife.Seconds()))
		s.changePoints *= f
		s.urlTime *= f
	}
	if now.After(s.hazardAt) {
		s.hazardAt = now
	}
}

// HazardCounts is what the scheduler has counted of the collection for
// the hazard of a rate change (CollectionHazard): the change points seen
// and the seconds of observation, faded to at (zero before any
// observation). A coordinator stores them so that a restart goes on from
// them (RestoreHazardCounts).
func (s *Scheduler) HazardCounts() (changePoints, observed float64, at time.Time) {
	return s.changePoints, s.urlTime, s.hazardAt
}

// RestoreHazardCounts sets the counts HazardCounts gave, in a scheduler
// that has counted nothing yet (a plan may have been made); they fade from
// at as if the scheduler had run since. Counts a scheduler cannot have
// made (negative, NaN, infinite, undated) are refused, as are counts over a
// scheduler's own.
func (s *Scheduler) RestoreHazardCounts(changePoints, observed float64, at time.Time) error {
	ok := func(x float64) bool { return x >= 0 && !math.IsInf(x, 1) }
	switch {
	case !ok(changePoints) || !ok(observed) || at.IsZero():
		return fmt.Errorf("schedule: restore hazard counts: invalid (change points %g, observed %g s, at %v)", changePoints, observed, at)
	case s.changePoints != 0 || s.urlTime != 0:
		return fmt.Errorf("schedule: restore hazard counts: the scheduler has counted %g change points over %g s since %v", s.changePoints, s.urlTime, s.hazardAt)
	}
	s.changePoints, s.urlTime, s.hazardAt = changePoints, observed, at
	return nil
}

// sampleStates is a sample of at most refitSample estimator states of
// URLs with observations, evenly strided over the collection, and with a
// URL source the store ids to read them by in Solve (0: the state is
// copied here; urlIndex.stateID).
func (s *Scheduler) sampleStates() (*refitInput, []uint64) {
	stride := max(1, s.learnt/refitSample)
	m := s.learnt/stride + 1 // about the sample's size: sized once, not doubled
	in := &refitInput{states: make([]estimate.State, 0, m), hosts: make([]string, 0, m), tmpls: make([]string, 0, m)}
	var ids []uint64
	if s.o.URLs != nil {
		ids = make([]uint64, 0, m)
	}
	k := 0
	for _, id := range s.list {
		e := s.front.entry(id)
		if !e.observed() || e.is(flagDisallowed) {
			continue
		}
		if k++; k%stride != 0 {
			continue
		}
		var st estimate.State
		if id := s.front.urls.stateID(e); id != 0 {
			ids = append(ids, id)
		} else {
			st = s.front.ents.state(e)
			if ids != nil {
				ids = append(ids, 0)
			}
		}
		in.states = append(in.states, st)
		in.hosts = append(in.hosts, s.front.hostOf(e).name)
		in.tmpls = append(in.tmpls, s.tmplNames[e.tmpl])
	}
	return in, ids
}

// pickResummaries copies, for Solve to recompute, the states of up to
// resumPerPlan URLs whose posterior predates the priors (or will, after
// the refit this plan makes): round robin over the collection.
func (s *Scheduler) pickResummaries(j *PlanJob) {
	n := len(s.list)
	if n == 0 {
		return
	}
	// Whether a refit made by this plan moves the priors is known only
	// after Solve: the posteriors computed under earlier versions are
	// recomputed now, those under this one by the plans after it.
	ver := j.priors.revision()
	j.resum = make([]resummary, 0, min(n, resumPerPlan)) // a state each: sized once, not doubled
	start := s.resumFrom % n
	j.resumStart = s.resumFrom
	for k := 0; k < n && len(j.resum) < resumPerPlan; k++ {
		i := (start + k) % n
		e := s.front.entry(s.list[i])
		// A URL never observed keeps the rate it was added with until the
		// priors have been fitted to the collection (version > 0): before
		// that, the configured prior rate is all there is.
		if e.is(flagDisallowed) || (!e.is(flagStale) && uint64(e.priorVer) >= ver) || (ver == 0 && !e.observed()) {
			continue
		}
		r := resummary{i: i, seq: e.seq, id: s.front.urls.stateID(e), host: s.front.hostOf(e).name, tmpl: s.tmplNames[e.tmpl]}
		if r.id == 0 {
			r.st = s.front.ents.state(e)
		}
		j.resum = append(j.resum, r)
		s.resumFrom = i + 1
	}
}

// Solve runs the policy over the snapshot. It touches nothing of the
// Scheduler, so it runs without the caller's lock. Before planning it
// refits the priors and recomputes the posteriors picked by the snapshot;
// after, it adds exploration (docs/design.md §3.7).
func (j *PlanJob) Solve() error {
	j.readStates()
	in := j.in
	pr := j.priors
	if j.refit != nil {
		iters := 30
		if pr.revision() == 0 {
			iters = 300
		}
		pr = pr.refit(*j.refit, iters)
		j.newPrior = pr
	}
	for k := range j.resum {
		r := &j.resum[k]
		prior := pr.For(r.host, r.tmpl)
		post := prior.Posterior(r.st)
		r.post = post.Summary()
		r.model = modelSketch(&post, prior, pr.ForModel(r.host, r.tmpl))
		j.posts[r.i], j.models[r.i] = r.post, r.model
		in.Rates[r.i] = r.post.Harmonic
	}
	now := j.at.UnixNano()
	if j.adaptive {
		j.inUse = 0
		for _, f := range j.freq {
			j.inUse += f
		}
		j.out = PlanOutput{Freq: j.freq}
		j.out.Freshness, j.out.Age = modelFreshness(in, j.freq)
		j.out.ModelFreshness = modelNow(in.Weights, j.blocked, j.models, pr.RateSwitch(j.hazard), j.lastOK, now)
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
	// The exploration below works on the planned elements only: a
	// restricted view of the job when capture URLs were taken out.
	ej := j
	if len(keep) != len(j.fixed) {
		ej = j.restricted(keep)
	}
	var freq []float64
	if out.Mu > 0 && !math.IsInf(out.Mu, 1) {
		freq, out, err = ej.exploreByValue(in, out)
		if err != nil {
			return err
		}
	} else {
		freq, out = ej.exploreFloor(in, out)
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
	if ej != j {
		// Back to one value per element: the planned ones where they
		// were, the capture URLs at their own rate.
		n := len(j.fixed)
		all := make([]float64, n)
		for k, f := range freq {
			all[keep[k]] = f
		}
		for i, fx := range j.fixed {
			if fx > 0 && !j.blocked.has(i) {
				all[i] = fx
			}
		}
		freq = all
		out.Freq = spread(out.Freq, keep, n)
		j.recheckTau = spread(ej.recheckTau, keep, n)
		if ej.probe != nil {
			j.probe = make([]bool, n)
			for k, p := range ej.probe {
				j.probe[keep[k]] = p
			}
		}
		if ej.paired != nil {
			j.paired = make([]bool, n)
			for k, p := range ej.paired {
				j.paired[keep[k]] = p
			}
		}
		for _, k := range ej.sessionsOver {
			j.sessionsOver = append(j.sessionsOver, keep[k])
		}
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
	// Three passes over every URL that read the plan and write nothing
	// shared: the plan's expected freshness on one core, the model's
	// freshness now and the band on the other. Each sums in element
	// order, so the figures do not depend on the split.
	var wg sync.WaitGroup
	wg.Go(func() { out.Freshness = expectedFreshness(j.in.Weights, j.posts, freq) })
	model := modelNow(j.in.Weights, j.blocked, j.models, pr.RateSwitch(j.hazard), j.lastOK, now)
	band := bandOf(j.in, j.rateSE, out.Freq) // every element: out.Freq is spread back above
	wg.Wait()
	out.ModelFreshness = model
	j.out, j.freq, j.band = out, freq, band
	return nil
}

// readStates reads from the URL source, in one call, the estimator states
// the snapshot left to it (refitIDs, resummary.id). A URL the source no
// longer holds, or whose state it cannot decode, is left out of the
// refit's sample and of the re-summaries (the latter is picked again by
// a later plan: it is still stale). A failed read leaves out all of them
// and the refit, and Apply has the next plan pick them again (stateErr).
func (j *PlanJob) readStates() {
	if j.states == nil {
		return
	}
	// ask[k] is where the k-th id asked goes: the refit sample's element
	// ask[k] when ≥ 0, else the re-summary −ask[k]−1.
	var ids []uint64
	var ask []int
	for k, id := range j.refitIDs {
		if id != 0 {
			ids, ask = append(ids, id), append(ask, k)
		}
	}
	for k := range j.resum {
		if id := j.resum[k].id; id != 0 {
			ids, ask = append(ids, id), append(ask, -k-1)
		}
	}
	if len(ids) == 0 {
		return
	}
	read := make([]bool, len(ids))
	err := j.states.Estimates(ids, func(i int, est []byte) {
		var st EstimateState
		if len(est) > 0 && st.UnmarshalBinary(est) != nil {
			return // unreadable: left out, as if not held
		}
		read[i] = true
		if k := ask[i]; k >= 0 {
			j.refit.states[k] = st.State
		} else {
			j.resum[-k-1].st = st.State
		}
	})
	if err != nil {
		j.stateErr = err
		clear(read)
		j.refit = nil
	}
	keepRefit := make([]bool, len(j.refitIDs))
	keepResum := make([]bool, len(j.resum))
	for k := range keepRefit {
		keepRefit[k] = j.refitIDs[k] == 0
	}
	for k := range keepResum {
		keepResum[k] = j.resum[k].id == 0
	}
	for i, ok := range read {
		if !ok {
			continue
		}
		if k := ask[i]; k >= 0 {
			keepRefit[k] = true
		} else {
			keepResum[-k-1] = true
		}
	}
	if j.refit != nil {
		in := j.refit
		n := 0
		for k, keep := range keepRefit {
			if keep {
				in.states[n], in.hosts[n], in.tmpls[n] = in.states[k], in.hosts[k], in.tmpls[k]
				n++
			}
		}
		in.states, in.hosts, in.tmpls = in.states[:n], in.hosts[:n], in.tmpls[:n]
		if n == 0 {
			j.refit = nil
		}
	}
	n := 0
	for k, keep := range keepResum {
		if keep {
			j.resum[n] = j.resum[k]
			n++
		}
	}
	j.resum = j.resum[:n]
}

// restricted is a copy of j whose per-element arrays hold only the
// elements keep lists (the planned ones), for the exploration of a plan
// made without the capture URLs; what exploration sets on it is mapped
// back by Solve.
func (j *PlanJob) restricted(keep []int) *PlanJob {
	r := *j
	r.posts = make([]estimate.Summary, len(keep))
	r.lastOK = make([]int64, len(keep))
	r.probes = make([]uint8, len(keep))
	r.lastIv = make([]float64, len(keep))
	r.blocked, r.probing, r.dated = j.blocked.pick(keep), j.probing.pick(keep), j.dated.pick(keep)
	for k, i := range keep {
		r.posts[k], r.lastOK[k] = j.posts[i], j.lastOK[i]
		r.probes[k], r.lastIv[k] = j.probes[i], j.lastIv[i]
	}
	r.recheckTau, r.probe, r.paired, r.sessionsOver = nil, nil, nil, nil
	return &r
}

// exploreFloor is the exploration of a policy with no multiplier
// (uniform, proportional, the LambdaCrawl peers): every URL is fetched at
// least ExploreShare times its uniform share (or its host's, where that
// is smaller), out of the budget, and the plan is solved again with what
// the floor leaves. A URL the plan gives up on is rechecked at the floor,
// and so is one it keeps at less: a kept URL is never fetched more rarely
// than a given-up one. Proportional gives nothing up, and kept a page seen
// unchanged once or twice at its posterior's rate, years apart; its copy
// was then worth what the model prior's slow region said, a region no
// fetch of the collection had tested (docs/design.md §3.7, "An honest
// model").
func (j *PlanJob) exploreFloor(in PlanInput, out PlanOutput) ([]float64, PlanOutput) {
	uniform := in.Budget / math.Max(1, float64(len(in.Rates)))
	perHost := make([]int, len(in.HostCaps))
	for _, h := range in.Hosts {
		perHost[h]++
	}
	floor := func(i int) float64 {
		if !(in.Weights[i] > 0) || j.blocked.has(i) {
			return 0
		}
		h := in.Hosts[i]
		return j.explore * math.Min(uniform, in.HostCaps[h]/float64(perHost[h]))
	}
	spent := 0.0
	caps := append([]float64(nil), in.HostCaps...)
	for i, f := range out.Freq {
		if d := floor(i) - math.Max(f, 0); d > 0 {
			spent += d
			caps[in.Hosts[i]] -= d
		}
	}
	if spent > 0 {
		again := in
		again.Budget = math.Max(in.Budget-spent, in.Budget/2)
		again.HostCaps = caps
		if o2, err := j.policy.Plan(again); err == nil {
			out = o2
		}
	}
	freq := make([]float64, len(in.Rates))
	for i, f := range out.Freq {
		if j.blocked.has(i) {
			continue
		}
		freq[i] = math.Max(f, floor(i))
	}
	return freq, out
}

// exploreByValue adds to the optimal plan the exploration of
// docs/design.md §3.7, weighed against the plan's multipliers:
//
//   - a URL fetched before whose rate is not resolved for the plan's
//     decision (the posterior probability that it is worth fetching at
//     all, P(λ < w/μ), is neither below nor above the resolution
//     threshold) is probed at the interval ln2/λ* that makes its outcome a
//     fair coin at the give-up threshold λ* = w/μ, if the value of what
//     the probes teach (probeValue) exceeds their cost, μ a fetch;
//   - a URL given up (resolved) is rechecked every recheckInterval, the
//     interval that balances the cost of checks against the value lost
//     while a rate that fell below the threshold goes unnoticed, at the
//     rate-change hazard the collection shows;
//   - everything else gets the plan's frequency.
//
// Exploration takes at most ExploreShare of the budget and of each host's
// cap, the most valuable first; the plan is then solved again over the
// other URLs with what exploration leaves. Exploration raises the plan's
// multiplier (the plan has less budget), so a probe must be worth the
// multiplier of the plan it leaves: the multiplier is the fixed point of
// the two, found by bisection, started from the previous plan's (a
// re-plan then usually solves the allocation once or twice, not six times).
func (j *PlanJob) exploreByValue(in PlanInput, out PlanOutput) ([]float64, PlanOutput, error) {
	// The collection's prior, for the value of rechecks.
	pr := j.priors
	if j.newPrior != nil {
		pr = j.newPrior
	}
	popPost := pr.population().Posterior(estimate.State{})
	pop := popPost.Summary()
	// Exploration at a multiplier μ leaves the plan a budget whose own
	// multiplier is M(μ); exploration is consistent with the plan where
	// M(μ) = μ. At the full plan's μ₀, M(μ₀) ≥ μ₀ (exploration only takes
	// budget away); at μ₁ = M(μ₀), less is explored, so M(μ₁) ≤ μ₁. The
	// root is bracketed and found by bisection in ln μ; the upper end is
	// used, so that exploration errs on the side of the plan.
	type result struct {
		freq, tau     []float64
		plan          PlanOutput
		probe, paired []bool
	}
	at := func(mu float64) (result, error) {
		mult := out
		mult.Mu = mu
		items := j.exploreItems(in, mult, &pop)
		freq, tau, plan, probe, paired, err := j.planAround(in, items)
		return result{freq, tau, plan, probe, paired}, err
	}
	valid := func(mu float64) bool { return mu > 0 && !math.IsInf(mu, 1) }
	// Warm start: the previous plan's lift of the multiplier, a little
	// above it, so that one evaluation usually brackets the root within
	// the tolerance. M is decreasing, so an evaluation at g gives both
	// ends: if M(g) ≤ g, the root lies in [M(g), g], else in [g, M(g)].
	lo, hi := out.Mu, 0.0
	var r, rHi result
	if g := out.Mu * j.liftGuess * 1.01; j.liftGuess > 1.02 {
		rg, err := at(g)
		if err != nil {
			return nil, out, err
		}
		switch m := rg.plan.Mu; {
		case !valid(m):
		case m <= g:
			lo, hi, rHi = max(lo, m), g, rg
		default:
			lo, hi = g, m
			if rHi, err = at(hi); err != nil {
				return nil, out, err
			}
		}
	}
	if hi == 0 {
		var err error
		if r, err = at(lo); err != nil {
			return nil, out, err
		}
		if r.plan.Mu > lo*1.02 && valid(r.plan.Mu) {
			hi = r.plan.Mu
			if rHi, err = at(hi); err != nil {
				return nil, out, err
			}
		}
	}
	if hi > 0 {
		for range 4 {
			if hi <= lo*1.03 {
				break
			}
			mid := math.Sqrt(lo * hi)
			rm, err := at(mid)
			if err != nil {
				return nil, out, err
			}
			if rm.plan.Mu > mid {
				lo = mid
			} else {
				hi, rHi = mid, rm
			}
		}
		r = rHi
		j.lift = math.Sqrt(lo*hi) / out.Mu
	}
	freq, plan, probe := r.freq, r.plan, r.probe
	j.probe, j.recheckTau, j.paired = probe, r.tau, r.paired
	return freq, plan, nil
}

// exploreItem is one URL exploration wants: at frequency f, with its value
// per fetch over the cost of a fetch (score; 1 for a recheck).
type exploreItem struct {
	i      int
	f      float64
	score  float64
	sticky bool    // probed by the previous plan: kept until resolved
	tau    float64 // a recheck's probe interval, seconds (0: a probe)
	// fallback is the recheck of a probe whose URL the plan gives up, for
	// when the probe finds no room: without it the URL would wait for the
	// longest recheck (f 0: none).
	fallback exploreItem0
	// pairTau is the probe interval of a URL whose rate is not resolved
	// (0: resolved): if it gets no probe of its own, its planned fetches
	// may come in pairs that far apart (planAround). pairOnly: a URL not
	// worth a probe of its own, listed only for its pairs. pairValue is
	// the value of what one probe teaches (probeValue), which a pair
	// must be worth (pairLoss).
	pairTau   float64
	pairOnly  bool
	pairValue float64
	// rank and key order the items (exploreItems).
	rank int
	key  float64
}

// exploreItem0 is a recheck: frequency and probe interval.
type exploreItem0 struct{ f, tau float64 }

// isRecheck reports whether it is a recheck (not a probe).
func (it exploreItem) isRecheck() bool { return it.score == 1 && !it.sticky }

// exploreItems lists the URLs exploration wants at the multipliers of
// mult (exploreByValue).
func (j *PlanJob) exploreItems(in PlanInput, mult PlanOutput, pop *estimate.Summary) []exploreItem {
	muOf := func(i int) float64 {
		h := in.Hosts[i]
		if int(h) < len(mult.HostNu) {
			return mult.Mu + mult.HostNu[h]
		}
		return mult.Mu
	}
	type keepKey struct{ w, mu float64 }
	kept := map[keepKey][2]float64{}
	// recheck is the recheck interval of a URL given up (recheckInterval),
	// never shorter than its probe interval nor longer than maxRecheck.
	// A check is one fetch where the URL's Last-Modified is trusted, two
	// otherwise (checkFetches).
	recheck := func(w, mu, tau float64, dated bool) float64 {
		k := keepKey{w, mu}
		kv, ok := kept[k]
		if !ok {
			a, b := keptValue(pop, w, mu)
			kv = [2]float64{a, b}
			kept[k] = kv
		}
		t := math.Max(recheckInterval(mu, checkFetches(dated), j.hazard, kv[0], kv[1]), tau)
		if longest := maxRecheck * j.halfLife; math.IsInf(t, 1) || t > longest {
			t = longest
		}
		return t
	}
	// Many URLs share a posterior (the same history), so the value of
	// probing is memoised.
	type voiKey struct {
		q               [estimate.SummaryQuantiles]float32
		w, mu, tau, rho float64
		dated           bool
	}
	voi := map[voiKey]float64{}
	probeWorth := func(post *estimate.Summary, w, mu, tau, rho float64, dated bool) float64 {
		k := voiKey{post.Q, w, mu, tau, rho, dated}
		v, ok := voi[k]
		if !ok {
			// What probes teach is used for as long as the estimator
			// keeps it: its mean memory, which for a URL given up is
			// at least eight of its recheck intervals (the fading
			// floor of Estimator.Observe); and no longer than the rate
			// is expected to last.
			mem := math.Max(j.halfLife, minMemory*recheck(w, mu, tau, dated)) / math.Ln2
			v = probeValue(beliefOf(post, pop, rho), w, mu, tau, math.Min(j.horizon, mem))
			voi[k] = v
		}
		return v
	}
	// Sized from the previous evaluation: a plan evaluates several
	// multipliers, each listing about as many items (hundreds of
	// thousands at scale), and growing the list by doubling copied it
	// several times.
	items := make([]exploreItem, 0, j.itemsHint+j.itemsHint/8)
	for i := range in.Rates {
		w := in.Weights[i]
		if j.blocked.has(i) || !(w > 0) || j.lastOK[i] == 0 || !j.posts[i].Valid() {
			continue
		}
		mu := muOf(i)
		if !(mu > 0) || math.IsInf(mu, 1) {
			continue
		}
		post := &j.posts[i]
		// The data behind the posterior span about the estimator's memory
		// (at least eight of the URL's intervals); at hazard ĥ the rate
		// was redrawn since with probability 1 − e^{−ĥ·span}, and is then
		// a draw from the prior (docs/design.md §3.7). The intervals are
		// those the URL was last fetched at, not the plan's: a URL just
		// probed and given up has fresh data, though its plan now waits
		// a year (counting that year would unresolve it at once, and it
		// would be probed again and again).
		span := j.halfLife / math.Ln2
		if j.lastIv != nil && j.lastIv[i] > 0 {
			span = math.Max(j.halfLife, minMemory*j.lastIv[i]) / math.Ln2
		}
		rho := -math.Expm1(-j.hazard * span)
		pKeep := keepProbability(post, pop, rho, w, mu)
		lamStar := w / mu
		tau := math.Ln2 / lamStar
		if j.probes[i] > 0 && (pKeep >= 1-resolved || pKeep <= resolved) {
			j.sessionsOver = append(j.sessionsOver, i)
		}
		// A URL the plan gives up on is rechecked unless it is probed: a
		// recheck is two fetches a period, the check and its probe, or
		// one where the URL's Last-Modified is trusted (checkFetches).
		planned := i < len(mult.Freq) && mult.Freq[i] > 0
		dated := j.dated.has(i)
		recheckItem := exploreItem{i: i, f: 2 / recheck(w, mu, tau, dated), score: 1, tau: tau}
		if dated {
			recheckItem.f, recheckItem.tau = 1/recheck(w, mu, tau, dated), 0
		}
		switch {
		case pKeep >= 1-resolved:
			// Worth fetching: the plan's frequency, or a recheck if the
			// plan gives it up.
			if !planned {
				items = append(items, recheckItem)
			}
			continue
		case pKeep > resolved && j.probes[i] >= maxProbes:
			// As resolved as probes make it: the plan's frequency, its
			// fetches in pairs that go on testing the threshold, or a
			// recheck if the plan gives it up.
			if !planned {
				items = append(items, recheckItem)
			} else {
				items = append(items, exploreItem{i: i, pairTau: tau, pairOnly: true, pairValue: probeWorth(post, w, mu, tau, rho, dated)})
			}
		case pKeep <= resolved:
			items = append(items, recheckItem)
		default:
			v := probeWorth(post, w, mu, tau, rho, dated)
			switch {
			case v > mu:
				it := exploreItem{i: i, f: 1 / tau, score: v / mu, sticky: j.probing.has(i), pairTau: tau, pairValue: v}
				if !planned {
					it.fallback = exploreItem0{recheckItem.f, recheckItem.tau}
				}
				items = append(items, it)
			case !planned:
				items = append(items, recheckItem)
			default:
				items = append(items, exploreItem{i: i, pairTau: tau, pairOnly: true, pairValue: v})
			}
		}
	}
	// Rechecks first (they are few and cheap), then the probes under way,
	// which run until their URL is resolved (a probe dropped half way
	// has cost its fetches for nothing, and its URL would wait a whole
	// plan interval before the next), then the most valuable.
	rank := func(it exploreItem) int {
		switch {
		case it.pairOnly:
			return 3
		case it.isRecheck():
			return 0
		case it.sticky:
			return 1
		}
		return 2
	}
	// The sort keys are computed once: a re-plan of a large collection
	// sorts hundreds of thousands of items several times (the
	// multiplier's bisection), and a logarithm per comparison showed in
	// the cold start's profile.
	for k := range items {
		items[k].rank = rank(items[k])
		items[k].key = scoreKey(items[k].score)
	}
	slices.SortStableFunc(items, func(a, b exploreItem) int {
		if a.rank != b.rank {
			return cmp.Compare(a.rank, b.rank)
		}
		return cmp.Compare(b.key, a.key)
	})
	j.itemsHint = len(items)
	return items
}

// scoreKey is an exploration score rounded to six significant digits in
// its logarithm: URLs with the same history score the same up to the
// rounding of the value-of-information search, which depends on the unit
// of time, and a tie must fall to the URLs' order, not to that rounding,
// or a run would depend on the unit of time (TestVirtualUnitFree).
func scoreKey(score float64) float64 { return math.Round(math.Log(score) * 1e6) }

// planAround gives the items their exploration within ExploreShare of the
// budget and of each host's cap, and solves the plan over the other URLs
// with what is left. It returns every URL's frequency, the probe interval
// of those fetched in pairs (rechecks, and unresolved URLs that got no
// probe of their own: see below), the plan, and which URLs are probed.
func (j *PlanJob) planAround(in PlanInput, items []exploreItem) (freq, tauOf []float64, plan PlanOutput, probe, paired []bool, err error) {
	n := len(in.Rates)
	capAll := j.explore * in.Budget
	hostLeft := make([]float64, len(in.HostCaps))
	for h, c := range in.HostCaps {
		hostLeft[h] = j.explore * c
	}
	freq = make([]float64, n)
	probe = make([]bool, n)
	paired = make([]bool, n)
	tauOf = make([]float64, n)
	// Scratch arrays, reused by the plan's next evaluation (each
	// evaluation returns only freq, tauOf, probe and paired): at scale
	// they are megabytes each, fresh memory to fault in and collect.
	sc := &j.around
	pairTau := reuse(&sc.pairTau, n)
	pairValue := reuse(&sc.pairValue, n)
	spent := 0.0
	caps := append([]float64(nil), in.HostCaps...)
	weights := append(reuse(&sc.weights, n)[:0], in.Weights...)
	// Rechecks that do not all fit are stretched by one factor (overall,
	// and per host), to longer intervals, rather than some dropped: a
	// URL given up and never rechecked would not see its rate fall (the
	// drift workload), while a later recheck still does.
	// The fallback rechecks of probes are counted in, so that a probe
	// that finds no room still has its recheck.
	var recheckSum float64
	recheckHost := make([]float64, len(in.HostCaps))
	for _, it := range items {
		f := it.fallback.f
		if it.isRecheck() {
			f = it.f
		}
		recheckSum += f
		recheckHost[in.Hosts[it.i]] += f
	}
	stretch := 1.0
	if recheckSum > capAll {
		stretch = capAll / recheckSum
	}
	stretched := func(f float64, h int32) float64 {
		f *= stretch
		if recheckHost[h]*stretch > hostLeft[h] && recheckHost[h] > 0 {
			f *= hostLeft[h] / (recheckHost[h] * stretch)
		}
		return f * (1 - 1e-9) // rounding: the stretched rechecks fill the cap exactly
	}
	// reserved is what the fallback rechecks still to be placed hold back.
	reserved := 0.0
	reservedHost := make([]float64, len(in.HostCaps))
	for _, it := range items {
		if !it.isRecheck() && it.fallback.f > 0 {
			f := stretched(it.fallback.f, in.Hosts[it.i])
			reserved += f
			reservedHost[in.Hosts[it.i]] += f
		}
	}
	for _, it := range items {
		h := in.Hosts[it.i]
		if it.pairOnly {
			pairTau[it.i], pairValue[it.i] = it.pairTau, it.pairValue
			continue
		}
		f, tau := it.f, it.tau
		isProbe := !it.isRecheck()
		if !isProbe {
			f = stretched(f, h)
		}
		var fb float64
		if isProbe && it.fallback.f > 0 {
			fb = stretched(it.fallback.f, h)
			reserved -= fb
			reservedHost[h] -= fb
		}
		if isProbe && (f > capAll-spent-reserved || f > hostLeft[h]-reservedHost[h]) {
			// A probe at a longer interval than its own would not test
			// the threshold; it waits for room in a later plan. Its URL,
			// if the plan gives it up, is rechecked meanwhile; if the
			// plan keeps it, its planned fetches come in pairs.
			if fb <= 0 || fb > capAll-spent || fb > hostLeft[h] {
				pairTau[it.i], pairValue[it.i] = it.pairTau, it.pairValue
				continue
			}
			f, tau, isProbe = fb, it.fallback.tau, false
		} else if !isProbe && (f > capAll-spent || f > hostLeft[h]) {
			continue
		}
		freq[it.i], probe[it.i] = f, isProbe
		tauOf[it.i] = tau
		spent += f
		hostLeft[h] -= f
		caps[h] -= f
		weights[it.i] = 0 // out of the plan
	}
	again := in
	again.Budget = in.Budget - spent
	again.HostCaps = caps
	again.Weights = weights
	plan, err = j.policy.Plan(again)
	if err != nil {
		return nil, nil, PlanOutput{}, nil, nil, err
	}
	for i := range freq {
		if j.blocked.has(i) {
			freq[i] = 0
			continue
		}
		if freq[i] == 0 {
			freq[i] = plan.Freq[i]
			// An unresolved URL the plan keeps, with no probe of its
			// own (the exploration share is spent, or probing it is
			// worth less than it costs): its fetches may come in
			// pairs, the second pairTau after the first, at the planned
			// rate. Each pair is an observation at the interval that
			// tests the threshold (kept at a long interval, a URL that
			// changes at every fetch teaches only that its rate is not
			// small), but a pair is not free: two fetches close together
			// keep the copy fresh for less of the period than two spread
			// evenly, which near the threshold halves the URL's
			// freshness. A pair is made only where what its probe
			// teaches is worth more than the freshness it costs, and
			// never for a URL whose Last-Modified is trusted: each of
			// its planned fetches dates the last change, which teaches
			// at a long interval at least what a fetch at the probe
			// interval would.
			if t := pairTau[i]; t > 0 && freq[i] > 0 && 1/freq[i] > 2*t && !j.dated.has(i) && pairValue[i] > pairLoss(&j.posts[i], in.Weights[i], freq[i], t) {
				tauOf[i], paired[i] = t, true
			}
		}
	}
	plan.GivenUp = givenUp(freq, in.Weights)
	return freq, tauOf, plan, probe, paired, nil
}

// maxProbes ends a probe session that has not resolved its URL: after
// this many probes at the threshold's interval the rate is known to within
// about a third, and a rate that close to the threshold λ* = w/μ is worth
// little either way (the best net value of a URL at rate λ, w·e^{−r} with
// g(r) = μλ/w, vanishes at the threshold), so the URL is planned at its
// estimate until a change point (or a plan whose threshold moved past its
// posterior) starts a new session.
const maxProbes = 8

// resolved is how sure the posterior must be that a URL is (or is not)
// worth fetching at the plan's multiplier for it to count as resolved.
const resolved = 0.05

// maxRecheck bounds the time a given-up URL waits for a recheck, in
// half-lives: 4 × 90 days, about a year, and as many simulated days when a
// benchmark scales the half-life to its simulated day.
const maxRecheck = 4.0

// modelNow is the model's expected freshness of the copies now
// (docs/design.md §3.7, "An honest model"): Σ w·P(copy current) / Σ w
// over the URLs that count (weight > 0, not disallowed), the copy of a
// URL never fetched counting as stale, the probability over each URL's
// posterior under the model's priors (models) and a switch of its rate
// since the fetch (sw). It is always a number in [0, 1].
func modelNow(weights []float64, blocked bitset, models []estimate.Sketch, sw *estimate.RateSwitch, lastOK []int64, now int64) float64 {
	var num, den float64
	for i, w := range weights {
		if !(w > 0) || math.IsInf(w, 1) || blocked.has(i) {
			continue
		}
		den += w
		if lastOK[i] == 0 || !models[i].Valid() {
			continue
		}
		age := float64(now-lastOK[i]) / 1e9
		if p := sw.ExpectFresh(models[i], math.Max(age, 0)); p >= 0 && p <= 1 {
			num += w * p
		}
	}
	if !(den > 0) {
		return 0
	}
	return num / den
}

// expectedFreshness is the plan's steady-state freshness under the
// posteriors: Σ w·E[F(λ, f)] / Σ w, the fixed-order freshness averaged
// over each URL's posterior rather than at one rate (which, for a URL
// seen changed at every fetch, could be far too kind).
//
// The expectations, the costly part, are taken on every core into one
// array; the sum then runs in element order, so the figure does not
// depend on the number of cores.
func expectedFreshness(weights []float64, posts []estimate.Summary, freq []float64) float64 {
	vs := make([]float64, len(weights))
	var wg sync.WaitGroup
	parts := max(1, min(runtime.GOMAXPROCS(0), len(weights)/4096))
	for k := range parts {
		lo, hi := k*len(weights)/parts, (k+1)*len(weights)/parts
		wg.Go(func() {
			for i := lo; i < hi; i++ {
				if w := weights[i]; w > 0 && !math.IsInf(w, 1) && posts[i].Valid() {
					f := freq[i]
					vs[i] = posts[i].Expect(func(l float64) float64 { return alloc.FixedOrder.Freshness(l, f) })
				}
			}
		})
	}
	wg.Wait()
	var num, den float64
	for i, w := range weights {
		if !(w > 0) || math.IsInf(w, 1) {
			continue
		}
		den += w
		if !posts[i].Valid() {
			continue
		}
		if v := vs[i]; v >= 0 && v <= 1 {
			num += w * v
		}
	}
	if !(den > 0) {
		return 1
	}
	return num / den
}

// ModelFreshness is the model's expected freshness of the copies at now
// (modelNow over every URL): O(n), for a caller that owns the Scheduler
// (the virtual benchmark); the coordinator reports the value each plan
// computes (PlanOutput.ModelFreshness).
func (s *Scheduler) ModelFreshness(now time.Time) float64 {
	pr := s.priors.load()
	return modelNow(s.weights, s.blocked, s.models, pr.RateSwitch(s.priors.hazard()), s.lastOK, now.UnixNano())
}

// Apply sets the intervals of up to limit more URLs from a solved job,
// moving each queued URL's next fetch by the change of its interval, and
// reports whether the job is done; the plan takes effect (Plan,
// ReplanDue) with the last call. A caller that shares the Scheduler under
// a lock takes it for each call, so that a fold waits for at most limit
// URLs' worth of heap updates. The first call also installs refitted
// priors and the recomputed posteriors (at most resumPerPlan).
func (s *Scheduler) Apply(j *PlanJob, now time.Time, limit int) bool {
	if j.next == 0 {
		if j.newPrior != nil {
			s.priors.store(j.newPrior)
		}
		s.exploreLift, s.exploreItems = j.lift, j.itemsHint
		if j.stateErr != nil {
			// The states were not read: the refit and the re-summaries
			// left out are the next plan's.
			s.unread++
			s.sinceRefit += j.refitSince
			s.resumFrom = j.resumStart
		}
		ver := s.priors.load().revision()
		for _, r := range j.resum {
			e := s.front.entry(j.list[r.i])
			if e.pos < 0 || e.seq != r.seq {
				continue // fetched meanwhile: its own posterior is newer
			}
			s.posts[e.pos], s.models[e.pos], e.priorVer = compactSummary(r.post), r.model, uint32(ver)
			e.set(flagStale, false)
			if r.post.Harmonic > 0 && r.post.Harmonic != s.rates[e.pos] {
				s.rates[e.pos] = r.post.Harmonic
			}
			s.mirror(e)
		}
		// The job's elements are its list's; a URL removed since the
		// snapshot has pos < 0, and the others may have moved.
		clear(s.probing)
		for i, p := range j.probe {
			if e := s.front.entry(j.list[i]); p && e.pos >= 0 {
				s.probing.set(int(e.pos), true)
			}
		}
		for _, i := range j.sessionsOver {
			if e := s.front.entry(j.list[i]); e.pos >= 0 {
				s.probes[e.pos] = 0
			}
		}
		if !j.adaptive {
			for h, sat := range j.sat {
				if hq := s.planHosts[h]; hq.saturated != sat {
					hq.saturated = sat
					s.front.fixHost(hq)
				}
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
		e := s.front.entry(j.list[i])
		if e.pos < 0 || e.is(flagPaused) {
			// Removed since the snapshot, or paused: a paused URL keeps
			// its interval for when it is resumed.
			continue
		}
		if e.is(flagDisallowed) {
			e.interval = s.o.DisallowRetry
			s.mirror(e)
			continue
		}
		f := j.freq[i]
		if f <= 0 {
			if !(j.in.Weights[i] > 0) {
				continue
			}
			// Given up, and no room for its recheck in this plan: it
			// must not keep the interval it had (it would go on taking
			// budget the plan gave to others); it waits for the longest
			// recheck interval or a later plan's recheck.
			f = 1 / (maxRecheck * j.halfLife)
		}
		tau := time.Duration(0)
		if j.recheckTau != nil && j.recheckTau[i] > 0 {
			// A recheck: a fetch every 2/f, each followed by its probe.
			tau = time.Duration(j.recheckTau[i] * float64(time.Second))
			f /= 2
		}
		s.setRecheckTau(e, tau)
		old := e.interval
		// f is within the host's cap, so iv is at least the host's gap;
		// the floor only keeps a rounding from making it zero (which
		// would unschedule the URL), and is no time scale of its own.
		iv := max(time.Duration(float64(time.Second)/f), time.Nanosecond)
		e.interval = iv
		if e.index >= 0 && old > 0 && e.nextDue != 0 && !e.is(flagCapture) && s.lastOK[e.pos] != 0 {
			// Keep the phase: move the next fetch by the change of
			// interval, but never further than one new interval away.
			// A URL never fetched keeps its due time: the first pass
			// is not pushed back by a plan.
			due := fromNanos(e.nextDue).Add(iv - old)
			if s.prevGap[e.pos] == 0 {
				// Fetched once: Done put its next fetch at a random
				// phase of its interval after the first pass, not one
				// interval after the fetch. Scaling its wait past the
				// pass's end (or now) by the change of interval keeps
				// that phase: the URLs fetched once stay spread over
				// their new intervals after the pass, at the plan's
				// rate, and none moves into the first pass to take a
				// slot from a URL not fetched yet.
				ref := now.Add(s.firstPassLeft())
				if d := fromNanos(e.nextDue); d.After(ref) {
					due = ref.Add(time.Duration(float64(d.Sub(ref)) * (float64(iv) / float64(old))))
				} else {
					due = d
				}
			}
			if due.After(now.Add(iv)) {
				due = now.Add(time.Duration(float64(iv) * s.phase(e)))
			}
			// A URL whose due time stays (its interval did not move,
			// as for most URLs in a re-plan) is where it was in its
			// host's heap, and so is the host: nothing to fix.
			if nanos(due) != e.nextDue || e.is(flagStrict) {
				s.front.schedule(e, due)
			}
		}
		s.mirror(e)
	}
	j.next = end
	if j.next < len(j.freq) {
		return false
	}
	s.plan, s.planAt, s.inUse, s.life.band = j.out, j.at, j.inUse, j.band
	// The frequencies are in the entries' intervals now; what the views
	// still need of them is which URLs they give up.
	s.life.givenUp = s.life.givenUp.truncate(0).extend(int(s.front.ents.next))
	for i, f := range s.plan.Freq {
		if f <= 0 && i < len(j.list) {
			s.life.givenUp.set(int(j.list[i]), true)
		}
	}
	s.plan.Freq = nil
	s.reuseRetired(j.snapshot)
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
// it returns in itself and keep is the identity (empty for a nil fixed:
// no URL has a fixed rate).
func withoutFixed(in PlanInput, fixed []float64, blocked bitset) (out PlanInput, keep []int, fixedHost []float64) {
	fixedHost = make([]float64, len(in.HostCaps))
	n := 0
	for i, fx := range fixed {
		if fx > 0 && !blocked.has(i) {
			fixedHost[in.Hosts[i]] += fx
			n++
		}
	}
	keep = make([]int, 0, len(fixed)-n)
	for i, fx := range fixed {
		if fx <= 0 || blocked.has(i) {
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
