package sim

import (
	"errors"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// ContentReport is the ground truth of content freshness (the content-freshness paper)
// (§3.1 Definition 1, docs/design.md §3.6) for the search source over a window
// [From, To), computed from what the search host actually served.
//
// The crawler's copy of a paper at time t is the citation count served in
// the most recent successful, complete GET (a result page listing the paper
// or its item page) at or before t; before any such response it is the
// initial count from searchItems (the seed file, in sync at time zero).
// Responses before From count, so a warm-up crawl carries over. The
// dissimilarity is |server count − copy count| (§3.1), the weight w(r) is
// set by SearchConfig.Weight, and
//
//	F(L; t) = (1/|L|) Σ_r w(r)·|S_r(t) − C_r(t)|
//
// is integrated exactly over the window (both counts are piecewise constant
// between the Poisson jumps and the responses) and divided by its length.
// Units are citations (weighted), independent of TimeUnit. L is the listed
// papers the site has: an Absent paper has no server copy to be in sync
// with, so it is left out (and counted in Absent), and an Untracked paper
// has no copy.
type ContentReport struct {
	From   time.Time `json:"from"`
	To     time.Time `json:"to"`
	Papers int       `json:"papers"`
	Absent int       `json:"absent,omitempty"`

	// ContentFreshness is the time average of F(L; t); 0 is perfectly in
	// sync, larger is staler.
	ContentFreshness float64 `json:"content_freshness"`
	// MeanDissimilarity is the same with every weight 1.
	MeanDissimilarity float64 `json:"mean_dissimilarity"`
	// Final is F(L; t) just before To, for comparison with the paper's
	// Fig. 2, which plots the instantaneous value.
	Final float64 `json:"final"`

	// Requests counts requests to /search and /item/ on the search host in
	// the window (any status): the cost of the freshness.
	Requests       int `json:"requests"`
	SearchRequests int `json:"search_requests"`
	ItemRequests   int `json:"item_requests"`
	// Synced is the number of papers served at least once in the window,
	// Served the number of paper copies served (a result page of K papers
	// serves K).
	Synced int `json:"synced"`
	Served int `json:"served"`
	// Updates is the number of citation jumps in the window.
	Updates int `json:"updates"`

	// Step and Series: with WithStep, Series[k] is the exact time average
	// of F(L; t) over [From + k·Step, min(From + (k+1)·Step, To)).
	Step   time.Duration  `json:"step_ns,omitempty"`
	Series []ContentPoint `json:"series,omitempty"`
}

// ContentPoint is F(L; t) averaged over one step.
type ContentPoint struct {
	Time             time.Time `json:"time"` // start of the step
	ContentFreshness float64   `json:"content_freshness"`
}

// ContentFreshness computes the ContentReport for [from, to). WithStep adds
// a series. It may run while the site is serving; responses recorded after
// it snapshots the log are ignored. It fails only without Config.Search.
func (s *Sim) ContentFreshness(from, to time.Time, opts ...TruthOption) (ContentReport, error) {
	site := s.search
	if site == nil {
		return ContentReport{}, errors.New("sim: no search source (Config.Search is nil)")
	}
	var o truthOptions
	for _, opt := range opts {
		opt(&o)
	}
	f, t := from.Sub(s.epoch), to.Sub(s.epoch)
	rep := ContentReport{From: from, To: to}
	for _, p := range site.papers {
		switch {
		case p.absent:
			rep.Absent++
		case !p.untracked:
			rep.Papers++
		}
	}

	s.mu.Lock()
	log := s.log[:len(s.log):len(s.log)]
	s.mu.Unlock()
	for i := range log {
		r := &log[i]
		if r.off < f || r.off >= t || int(r.host) != site.cfg.Host {
			continue
		}
		switch {
		case r.path == "/search":
			rep.SearchRequests++
		case strings.HasPrefix(r.path, "/item/"):
			rep.ItemRequests++
		}
	}
	rep.Requests = rep.SearchRequests + rep.ItemRequests
	if t <= f || rep.Papers == 0 {
		return rep, nil
	}

	// Snapshot the serve log and every schedule up to t, then integrate
	// without the lock.
	site.mu.Lock()
	log2 := slices.Clone(site.served)
	changes := make([][]time.Duration, len(site.papers))
	for i, p := range site.papers {
		changes[i] = p.sched.until(t)
	}
	site.mu.Unlock()

	perPaper := make([][]served, len(site.papers))
	for _, sv := range log2 {
		if sv.off >= t {
			continue
		}
		perPaper[sv.paper] = append(perPaper[sv.paper], sv)
		if sv.off >= f {
			rep.Served++
		}
	}

	total := (t - f).Seconds()
	var acc *contentAcc
	if o.step > 0 {
		rep.Step = o.step
		if n := math.Ceil(total / o.step.Seconds()); n > maxSeriesPoints {
			rep.Step = time.Duration(math.Ceil(float64(t-f) / maxSeriesPoints))
		}
		acc = newContentAcc(rep.Step.Seconds(), total)
	}
	var weighted, plain, final float64
	for i, p := range site.papers {
		if p.absent || p.untracked {
			continue
		}
		resps := perPaper[i]
		if !slices.IsSortedFunc(resps, cmpServed) {
			slices.SortStableFunc(resps, cmpServed)
		}
		pt := integrateContent(p.initial, changes[i], resps, f, t, p.weight, acc)
		weighted += p.weight * pt.integral
		plain += pt.integral
		final += p.weight * pt.final
		rep.Updates += pt.updates
		if pt.synced {
			rep.Synced++
		}
	}
	n := float64(rep.Papers)
	rep.ContentFreshness = weighted / total / n
	rep.MeanDissimilarity = plain / total / n
	rep.Final = final / n
	if acc != nil {
		rep.Series = acc.points(from, rep.Step, n)
	}
	return rep, nil
}

// ContentFreshnessAt returns the content freshness F(L; t−) just before each
// of the given times (the state a crawler planning at t sees: responses and
// citation jumps at t itself not yet counted), with L and w as in
// ContentReport. Times need not be sorted. It fails only without
// Config.Search.
func (s *Sim) ContentFreshnessAt(times []time.Time) ([]float64, error) {
	site := s.search
	if site == nil {
		return nil, errors.New("sim: no search source (Config.Search is nil)")
	}
	out := make([]float64, len(times))
	if len(times) == 0 {
		return out, nil
	}
	offs := make([]time.Duration, len(times))
	last := time.Duration(math.MinInt64)
	for k, tm := range times {
		offs[k] = tm.Sub(s.epoch)
		last = max(last, offs[k])
	}
	site.mu.Lock()
	log := slices.Clone(site.served)
	changes := make([][]time.Duration, len(site.papers))
	for i, p := range site.papers {
		if !p.absent && !p.untracked {
			changes[i] = p.sched.until(last)
		}
	}
	site.mu.Unlock()
	perPaper := make([][]served, len(site.papers))
	for _, sv := range log {
		perPaper[sv.paper] = append(perPaper[sv.paper], sv)
	}
	n := 0
	for i, p := range site.papers {
		if p.absent || p.untracked {
			continue
		}
		n++
		resps := perPaper[i]
		slices.SortStableFunc(resps, cmpServed)
		for k, off := range offs {
			server := int64(p.initial) + int64(sort.Search(len(changes[i]), func(j int) bool { return changes[i][j] >= off }))
			cp := int64(p.initial)
			if j := sort.Search(len(resps), func(j int) bool { return resps[j].off >= off }); j > 0 {
				cp = resps[j-1].value
			}
			out[k] += p.weight * float64(abs64(server-cp))
		}
	}
	if n > 0 {
		for k := range out {
			out[k] /= float64(n)
		}
	}
	return out, nil
}

func cmpServed(a, b served) int {
	switch {
	case a.off < b.off:
		return -1
	case a.off > b.off:
		return 1
	}
	return 0
}

// paperContent is one paper's share of a ContentReport.
type paperContent struct {
	integral float64 // ∫ |S − C| dt over the window, in seconds·citations
	final    float64 // |S − C| just before the window's end
	updates  int
	synced   bool
}

// integrateContent integrates |S(x) − C(x)| over [f, t) exactly. S is
// initial plus the number of changes ≤ x; C is the value of the last
// response ≤ x, or initial before any. acc (may be nil) receives w·|S − C|.
func integrateContent(initial int, changes []time.Duration, resps []served, f, t time.Duration, w float64, acc *contentAcc) paperContent {
	var pc paperContent
	ci := sort.Search(len(changes), func(k int) bool { return changes[k] > f })
	server := int64(initial) + int64(ci)
	cp, ri := int64(initial), 0
	for ri < len(resps) && resps[ri].off <= f {
		cp = resps[ri].value
		ri++
	}
	pc.synced = ri < len(resps) // some response in (f, t)
	if ri > 0 && resps[ri-1].off == f {
		pc.synced = true
	}
	pc.updates = sort.Search(len(changes), func(k int) bool { return changes[k] >= t }) -
		sort.Search(len(changes), func(k int) bool { return changes[k] >= f })

	sec := func(d time.Duration) float64 { return (d - f).Seconds() }
	d := float64(abs64(server - cp))
	for a := f; a < t; {
		b := t
		if ci < len(changes) && changes[ci] < b {
			b = changes[ci]
		}
		if ri < len(resps) && resps[ri].off < b {
			b = resps[ri].off
		}
		if b > a && d > 0 {
			pc.integral += d * (sec(b) - sec(a))
			acc.add(sec(a), sec(b), w*d)
		}
		pc.final = d
		a = b
		for ci < len(changes) && changes[ci] <= a {
			server++
			ci++
		}
		for ri < len(resps) && resps[ri].off <= a {
			cp = resps[ri].value
			ri++
		}
		d = float64(abs64(server - cp))
	}
	return pc
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// contentAcc accumulates exact per-step integrals of a piecewise-constant
// function; a segment's whole interior steps go through a difference array,
// so each segment costs O(1). A nil *contentAcc ignores everything.
type contentAcc struct {
	step, total float64
	sum, diff   []float64
}

func newContentAcc(step, total float64) *contentAcc {
	n := max(int(math.Ceil(total/step)), 1)
	return &contentAcc{step: step, total: total, sum: make([]float64, n), diff: make([]float64, n+1)}
}

// add adds the constant v over [a, b) (seconds from the window start).
func (c *contentAcc) add(a, b, v float64) {
	if c == nil {
		return
	}
	n := len(c.sum)
	i0 := min(max(int(a/c.step), 0), n-1)
	i1 := min(max(int(math.Ceil(b/c.step))-1, i0), n-1)
	if i0 == i1 {
		c.sum[i0] += v * (b - a)
		return
	}
	c.sum[i0] += v * (float64(i0+1)*c.step - a)
	c.sum[i1] += v * (b - float64(i1)*c.step)
	c.diff[i0+1] += v * c.step
	c.diff[i1] -= v * c.step
}

func (c *contentAcc) points(from time.Time, step time.Duration, papers float64) []ContentPoint {
	out := make([]ContentPoint, len(c.sum))
	var run float64
	for k := range out {
		run += c.diff[k]
		length := min(c.step, c.total-float64(k)*c.step)
		out[k] = ContentPoint{
			Time:             from.Add(time.Duration(k) * step),
			ContentFreshness: (c.sum[k] + run) / (papers * length),
		}
	}
	return out
}
