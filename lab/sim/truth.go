package sim

import (
	"cmp"
	"math"
	"slices"
	"sort"
	"time"
)

// Report is the ground truth of a crawl over a window [From, To), computed
// from the sim's own change schedule and request log.
//
// The crawler's copy of a page at time t is the version served by the most
// recent successful GET response (200, or 304, which confirms the copy equals
// the version current at that request) at or before t; responses before
// From count, so a warm-up crawl carries over. HEAD requests, errors and
// responses whose body could not be written do not update the copy.
//
// Freshness and age follow Cho & Garcia-Molina, Definitions 1–3: F(e_i; t) is 1 when
// the copy equals the current version, else 0; A(e_i; t) is 0 when fresh,
// else t minus the time the copy became stale, which is the first change
// after the copy's version. A page never fetched by t has no copy: it is
// stale and, by the convention of this package, has been stale since From
// (its age is t − From). Both are integrated exactly over the window (the
// state is piecewise constant between events), averaged over time per page
// and then over pages, as F̄(S) = (1/N) Σ F̄(e_i).
//
// If To is not after From every metric is zero.
type Report struct {
	From  time.Time `json:"from"`
	To    time.Time `json:"to"`
	Pages int       `json:"pages"`

	// Freshness is the time-averaged fraction of pages whose copy is current.
	Freshness float64 `json:"freshness"`
	// AgeSeconds is the time-averaged age in real seconds; AgeDays is the
	// same in simulated days (Config.Day).
	AgeSeconds float64 `json:"age_seconds"`
	AgeDays    float64 `json:"age_days"`

	// Counts over requests at times in [From, To).
	Requests     int   `json:"requests"`      // every request to every host
	PageRequests int   `json:"page_requests"` // requests for page URLs
	Fetches      int   `json:"fetches"`       // successful page GETs: 200 or 304
	NotModified  int   `json:"not_modified"`  // 304 responses
	Bytes        int64 `json:"bytes"`         // body bytes sent
	// NotModifiedShare is NotModified / Fetches (0 without fetches).
	NotModifiedShare float64 `json:"not_modified_share"`

	// Hosts has one entry per host, in host index order.
	Hosts []HostReport `json:"hosts"`
	// MinGap is the smallest gap between consecutive requests to one host
	// (any path, robots.txt included) over all hosts; -1 when no host had
	// two requests.
	MinGap time.Duration `json:"min_gap_ns"`

	// Disallowed counts requests robots.txt forbade for their user agent;
	// a polite crawler has none. DisallowedPaths lists up to 20 of them.
	Disallowed      int      `json:"disallowed"`
	DisallowedPaths []string `json:"disallowed_paths,omitempty"`

	// Change recall of periodic pages (Ashish, Kulkarni & Wang): versions captured over
	// versions published in [From, To). A version is published by a change
	// in the window and captured if some successful response served it. 0
	// when nothing was published (see RecallPublished).
	Recall          float64 `json:"recall"`
	RecallPublished int     `json:"recall_published"`
	RecallCaptured  int     `json:"recall_captured"`

	// Step and Series: when a step was requested, Series[k] is the exact
	// time average over [From + k·Step, min(From + (k+1)·Step, To)).
	Step   time.Duration `json:"step_ns,omitempty"`
	Series []SeriesPoint `json:"series,omitempty"`

	PerPage []PageTruth `json:"per_page"`
}

// HostReport is the traffic one host received in the window.
type HostReport struct {
	Index    int    `json:"index"`
	Host     string `json:"host"`
	Requests int    `json:"requests"`
	Robots   int    `json:"robots"` // requests for /robots.txt
	// MinGap is the smallest gap between consecutive requests; -1 when the
	// host had fewer than two.
	MinGap time.Duration `json:"min_gap_ns"`
}

// PageTruth is the truth for one page over the window.
type PageTruth struct {
	Index      int     `json:"index"`
	URL        string  `json:"url"`
	Kind       string  `json:"kind"`
	Freshness  float64 `json:"freshness"`
	AgeSeconds float64 `json:"age_seconds"`
	AgeDays    float64 `json:"age_days"`
	Fetches    int     `json:"fetches"`   // successful GETs in the window
	Published  int     `json:"published"` // changes (new versions) in the window
	Captured   int     `json:"captured"`  // of those, versions some response served
}

// SeriesPoint is the database freshness and age averaged over one step.
type SeriesPoint struct {
	Time       time.Time `json:"time"` // start of the step
	Freshness  float64   `json:"freshness"`
	AgeSeconds float64   `json:"age_seconds"`
}

// TruthOption adjusts Truth.
type TruthOption func(*truthOptions)

type truthOptions struct{ step time.Duration }

// WithStep adds Report.Series with one point per step (for plots). Steps
// that would make more than maxSeriesPoints points are widened.
func WithStep(step time.Duration) TruthOption {
	return func(o *truthOptions) { o.step = step }
}

const (
	maxSeriesPoints    = 100_000
	maxDisallowedPaths = 20
)

// Fetch is one successful fetch of a page as the crawler's copy sees it:
// when, as an offset from the time origin of the page's change times, and
// the version it delivered or confirmed (the number of changes at or before
// At; version 0 is the page as it was at the origin).
type Fetch struct {
	At      time.Duration
	Version int
}

// Truth computes the Report for the window [from, to). It may run while the
// site is serving; requests logged after it snapshots the log are ignored.
func (s *Sim) Truth(from, to time.Time, opts ...TruthOption) Report {
	var o truthOptions
	for _, opt := range opts {
		opt(&o)
	}
	f, t := from.Sub(s.epoch), to.Sub(s.epoch)
	rep := Report{From: from, To: to, Pages: len(s.pages), MinGap: -1}

	s.mu.Lock()
	log := s.log[:len(s.log):len(s.log)] // records are never modified once appended
	port := s.port
	s.mu.Unlock()

	resps := s.trafficStats(&rep, log, f, t)
	if t <= f {
		return rep
	}

	total := (t - f).Seconds()
	var ser *SeriesSum
	if o.step > 0 {
		ser = NewSeriesSum(o.step, t-f)
		rep.Step = ser.stepDuration()
	}

	daySec := s.cfg.Day.Seconds()
	rep.PerPage = make([]PageTruth, len(s.pages))
	var sumFresh, sumAge float64
	for i, p := range s.pages {
		p.mu.Lock()
		changes := p.sched.until(t)
		p.mu.Unlock()
		pt := IntegratePage(changes, resps[i], f, t, ser)
		pt.Index, pt.URL, pt.Kind = i, s.pageURL(i, port), p.kind
		pt.Freshness /= total
		pt.AgeSeconds /= total
		pt.AgeDays = pt.AgeSeconds / daySec
		sumFresh += pt.Freshness
		sumAge += pt.AgeSeconds
		if p.kind == "periodic" {
			rep.RecallPublished += pt.Published
			rep.RecallCaptured += pt.Captured
		}
		rep.PerPage[i] = pt
	}
	n := float64(len(s.pages))
	rep.Freshness = sumFresh / n
	rep.AgeSeconds = sumAge / n
	rep.AgeDays = rep.AgeSeconds / daySec
	if rep.RecallPublished > 0 {
		rep.Recall = float64(rep.RecallCaptured) / float64(rep.RecallPublished)
	}
	if ser != nil {
		rep.Series = ser.Points(from, len(s.pages))
	}
	return rep
}

// trafficStats fills the request counters of rep for requests in [f, t) and
// returns, per page, the successful GET responses before t sorted by time.
func (s *Sim) trafficStats(rep *Report, log []record, f, t time.Duration) [][]Fetch {
	hosts := s.cfg.Hosts
	rep.Hosts = make([]HostReport, hosts)
	for h := range rep.Hosts {
		rep.Hosts[h] = HostReport{Index: h, Host: hostIP(h), MinGap: -1}
	}
	// Count first, then fill flat arrays: two passes keep allocation to a
	// handful of slices even for millions of requests.
	perPage := make([]int, len(s.pages)+1)
	perHost := make([]int, hosts+1)
	for i := range log {
		r := &log[i]
		if r.off >= t {
			continue
		}
		if successfulGet(r) {
			perPage[r.page+1]++
		}
		if r.off >= f {
			perHost[int(r.host)+1]++
		}
	}
	for i := 1; i < len(perPage); i++ {
		perPage[i] += perPage[i-1]
	}
	for h := 1; h < len(perHost); h++ {
		perHost[h] += perHost[h-1]
	}
	flatResp := make([]Fetch, perPage[len(perPage)-1])
	flatHost := make([]time.Duration, perHost[len(perHost)-1])
	nextResp := slices.Clone(perPage[:len(perPage)-1])
	nextHost := slices.Clone(perHost[:len(perHost)-1])
	seenDisallowed := make(map[string]bool)

	for i := range log {
		r := &log[i]
		if r.off >= t {
			continue
		}
		if successfulGet(r) {
			flatResp[nextResp[r.page]] = Fetch{At: r.off, Version: int(r.version)}
			nextResp[r.page]++
		}
		if r.off < f {
			continue
		}
		flatHost[nextHost[r.host]] = r.off
		nextHost[r.host]++
		rep.Requests++
		rep.Bytes += r.bytes
		hr := &rep.Hosts[r.host]
		hr.Requests++
		if r.path == "/robots.txt" {
			hr.Robots++
		}
		if r.page >= 0 {
			rep.PageRequests++
			if successfulGet(r) {
				rep.Fetches++
				if r.status == 304 {
					rep.NotModified++
				}
			}
		}
		if r.disallowed {
			rep.Disallowed++
			if !seenDisallowed[r.path] && len(rep.DisallowedPaths) < maxDisallowedPaths {
				seenDisallowed[r.path] = true
				rep.DisallowedPaths = append(rep.DisallowedPaths, r.path)
			}
		}
	}
	if rep.Fetches > 0 {
		rep.NotModifiedShare = float64(rep.NotModified) / float64(rep.Fetches)
	}

	// Concurrent handlers append in lock order, which can differ from clock
	// order by a hair: sort where needed.
	for h := range hosts {
		offs := flatHost[perHost[h]:perHost[h+1]]
		if !slices.IsSorted(offs) {
			slices.Sort(offs)
		}
		for k := 1; k < len(offs); k++ {
			if gap := offs[k] - offs[k-1]; rep.Hosts[h].MinGap < 0 || gap < rep.Hosts[h].MinGap {
				rep.Hosts[h].MinGap = gap
			}
		}
		if g := rep.Hosts[h].MinGap; g >= 0 && (rep.MinGap < 0 || g < rep.MinGap) {
			rep.MinGap = g
		}
	}
	resps := make([][]Fetch, len(s.pages))
	for i := range resps {
		rs := flatResp[perPage[i]:perPage[i+1]:perPage[i+1]]
		if !slices.IsSortedFunc(rs, cmpFetch) {
			slices.SortStableFunc(rs, cmpFetch)
		}
		resps[i] = rs
	}
	return resps
}

func cmpFetch(a, b Fetch) int { return cmp.Compare(a.At, b.At) }

// successfulGet reports whether r delivered or confirmed a page version.
func successfulGet(r *record) bool {
	return r.page >= 0 && r.method == methodGET && !r.aborted && (r.status == 200 || r.status == 304)
}

// IntegratePage integrates the freshness and age of one page over the
// window [from, to) exactly, with the definitions of Report: the copy at
// time x is the Version of the latest fetch at or before x; a page with no
// fetch by x has no copy and is stale since from; a copy of version v is
// stale from changes[v] on (the change that published version v+1), and
// its age at x is x − changes[v]. The state is piecewise constant between
// changes and fetches, so each piece is integrated in closed form.
//
// changes are the page's change offsets in increasing order, fetches its
// successful fetches in time order, both on the same time origin as from
// and to; changes and fetches at or after to are ignored. A Version that
// does not match the change times (more than the changes at or before At)
// is taken as stale since the page's last change before to, or since from
// when there is none: the result stays finite whatever the input.
//
// The result's Freshness and AgeSeconds are integrals over the window
// (seconds and seconds²), not yet divided by its length; Fetches counts the
// fetches in the window, Published the versions published in it and
// Captured those some fetch delivered (change recall). Index, URL, Kind and
// AgeDays are left for the caller. When series is not nil, the page's
// fresh time and age integral per step are added to it; its steps count
// from from.
func IntegratePage(changes []time.Duration, fetches []Fetch, from, to time.Duration, series *SeriesSum) PageTruth {
	var pt PageTruth
	f, t := from, to
	changes = changes[:sort.Search(len(changes), func(k int) bool { return changes[k] >= t })]
	fetches = fetches[:sort.Search(len(fetches), func(k int) bool { return fetches[k].At >= t })]
	// State at f: the version current (changes ≤ f) and the copy (last
	// fetch ≤ f; -1 = none).
	ci := sort.Search(len(changes), func(k int) bool { return changes[k] > f })
	cur := ci
	cp, ri := -1, 0
	for ri < len(fetches) && fetches[ri].At <= f {
		cp = fetches[ri].Version
		ri++
	}
	// A fetch at f both sets the copy at f and counts in the window.
	pt.Fetches = len(fetches) - sort.Search(len(fetches), func(k int) bool { return fetches[k].At >= f })
	// Recall: versions published in [f, t) are those created by changes in
	// that range; change k (0-based) creates version k+1.
	firstPub := sort.Search(len(changes), func(k int) bool { return changes[k] >= f }) + 1
	lastPub := len(changes)
	pt.Published = max(lastPub-firstPub+1, 0)
	prevVer := -1
	for _, r := range fetches { // versions are non-decreasing in time
		if v := r.Version; v != prevVer && v >= firstPub && v <= lastPub {
			pt.Captured++
		}
		prevVer = r.Version
	}
	// staleSince is when a copy of version v went stale.
	staleSince := func(v int) time.Duration {
		switch {
		case v < 0 || len(changes) == 0:
			return f // no copy: stale since the window opened
		case v < len(changes):
			return changes[v] // the change that replaced the copy's version
		}
		return changes[len(changes)-1]
	}

	sec := func(d time.Duration) float64 { return (d - f).Seconds() }
	for a := f; a < t; {
		b := t
		if ci < len(changes) && changes[ci] < b {
			b = changes[ci]
		}
		if ri < len(fetches) && fetches[ri].At < b {
			b = fetches[ri].At
		}
		if b > a {
			sa, sb := sec(a), sec(b)
			if cp == cur {
				pt.Freshness += sb - sa
				series.addFresh(sa, sb)
			} else {
				ss := sec(staleSince(cp))
				pt.AgeSeconds += (sb - sa) * ((sa+sb)/2 - ss)
				series.addAge(sa, sb, ss)
			}
		}
		a = b
		for ci < len(changes) && changes[ci] <= a {
			cur++
			ci++
		}
		for ri < len(fetches) && fetches[ri].At <= a {
			cp = fetches[ri].Version
			ri++
		}
	}
	return pt
}

// SeriesSum accumulates, over pages, the exact integrals of the freshness
// indicator and of age over each step of a window, for Report.Series and
// the benchmarks' plots. A segment adds its partial first and last steps
// directly and its whole interior steps through difference arrays, so each
// segment costs O(1) however many steps it spans. A nil *SeriesSum ignores
// everything.
type SeriesSum struct {
	stepDur     time.Duration
	step, total float64 // seconds
	fresh, age  []float64
	dFresh      []float64 // interior fresh time per step
	dAgeK       []float64 // interior age integral: coefficient of k
	dAge0       []float64 // interior age integral: constant term
}

// NewSeriesSum returns an empty sum over a window of the given length in
// steps of step (the last one shorter when step does not divide it). A
// step that would make more than 100 000 points is widened, and a step or
// length that is not positive gives one step over the window.
func NewSeriesSum(step, length time.Duration) *SeriesSum {
	length = max(length, 1)
	if step <= 0 {
		step = length
	}
	if n := math.Ceil(float64(length) / float64(step)); n > maxSeriesPoints {
		step = time.Duration(math.Ceil(float64(length) / maxSeriesPoints))
	}
	total := length.Seconds()
	n := max(int(math.Ceil(float64(length)/float64(step))), 1)
	return &SeriesSum{
		stepDur: step, step: step.Seconds(), total: total,
		fresh: make([]float64, n), age: make([]float64, n),
		dFresh: make([]float64, n+1), dAgeK: make([]float64, n+1), dAge0: make([]float64, n+1),
	}
}

// stepDuration is the length of a step (after any widening).
func (sa *SeriesSum) stepDuration() time.Duration { return sa.stepDur }

// span returns the first and last step that [a, b) touches.
func (sa *SeriesSum) span(a, b float64) (int, int) {
	n := len(sa.fresh)
	i0 := min(max(int(a/sa.step), 0), n-1)
	i1 := min(max(int(math.Ceil(b/sa.step))-1, i0), n-1)
	return i0, i1
}

func (sa *SeriesSum) addFresh(a, b float64) {
	if sa == nil {
		return
	}
	i0, i1 := sa.span(a, b)
	if i0 == i1 {
		sa.fresh[i0] += b - a
		return
	}
	sa.fresh[i0] += float64(i0+1)*sa.step - a
	sa.fresh[i1] += b - float64(i1)*sa.step
	sa.dFresh[i0+1] += sa.step
	sa.dFresh[i1] -= sa.step
}

// addAge adds ∫ (x − s) dx over [a, b).
func (sa *SeriesSum) addAge(a, b, s float64) {
	if sa == nil {
		return
	}
	integ := func(x, y float64) float64 { return (y - x) * ((x+y)/2 - s) }
	i0, i1 := sa.span(a, b)
	if i0 == i1 {
		sa.age[i0] += integ(a, b)
		return
	}
	st := sa.step
	sa.age[i0] += integ(a, float64(i0+1)*st)
	sa.age[i1] += integ(float64(i1)*st, b)
	// Whole step k contributes st·((k+½)·st − s) = st²·k + st·(st/2 − s).
	sa.dAgeK[i0+1] += st * st
	sa.dAgeK[i1] -= st * st
	sa.dAge0[i0+1] += st * (st/2 - s)
	sa.dAge0[i1] -= st * (st/2 - s)
}

// Points are the sums averaged over each step's length and over pages
// pages (the unweighted database freshness and age per step); from is the
// time of the window's start. Zero pages give zero points' values.
func (sa *SeriesSum) Points(from time.Time, pages int) []SeriesPoint {
	out := make([]SeriesPoint, len(sa.fresh))
	n := float64(max(pages, 1))
	var runFresh, runK, run0 float64
	for k := range out {
		runFresh += sa.dFresh[k]
		runK += sa.dAgeK[k]
		run0 += sa.dAge0[k]
		length := min(sa.step, sa.total-float64(k)*sa.step)
		out[k] = SeriesPoint{
			Time:       from.Add(time.Duration(k) * sa.stepDur),
			Freshness:  (sa.fresh[k] + runFresh) / (n * length),
			AgeSeconds: (sa.age[k] + runK*float64(k) + run0) / (n * length),
		}
	}
	return out
}
