package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/freshcrawl/freshcrawl/config"
	"github.com/freshcrawl/freshcrawl/internal/schedule"
	"github.com/freshcrawl/freshcrawl/internal/source"
	"github.com/freshcrawl/freshcrawl/lab/sim"
	"github.com/freshcrawl/freshcrawl/worker/probeparse"
)

// The virtual mode of the keyword-probe benchmark drives the real Prober
// (planning, interval search, what it learns from result pages), the real
// result-page parser and the sim's search site, served in process
// (sim.SearchHandler) on a virtual clock: hundreds of time units take
// seconds, long enough for the rate estimates to leave the prior, which is
// what the paper's Naive 2 needs. What the coordinator does between them
// (sending the round's requests spread over its length, folding the items
// read back into the tracked items) is done here the same way, without
// NATS, bbolt or sockets.

// vclock is the virtual clock the sim reads.
type vclock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *vclock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *vclock) set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// vitem is the crawler's copy of one tracked item (what store.Item holds).
type vitem struct {
	attrs    map[string]string
	value    float64
	hasValue bool
	lastSync time.Time
	rate     float64
	est      schedule.EstimateState
}

// RoundLog is one round of a virtual run: the Prober's report and the
// truth's content freshness at the same instant.
type RoundLog struct {
	Units float64 // time units since the start
	schedule.RoundReport
	Truth float64 // F(L; t−) from the sim
}

// virtualSearchPort is the port in the search source's URLs in virtual
// mode; nothing listens on it.
const virtualSearchPort = 8080

// probesVirtual runs one policy on the virtual clock; alpha > 0 sets the
// source's alpha (greedy only).
func probesVirtual(ctx context.Context, o ProbesOptions, policy string, alpha float64) (ProbesResult, error) {
	r, err := newProbeRun(o, policy, alpha)
	if err != nil {
		return ProbesResult{}, err
	}
	unit := o.TimeUnit.Seconds()
	start := virtualEpoch()
	end := start.Add(time.Duration(o.Units * float64(o.TimeUnit)))
	var rounds []RoundLog
	now := start
	for now.Before(end) {
		if err := ctx.Err(); err != nil {
			return ProbesResult{}, err
		}
		reqs, length, rep, err := r.prober.Round(r.tracked(), now)
		if err != nil {
			return ProbesResult{}, err
		}
		rounds = append(rounds, RoundLog{Units: now.Sub(start).Seconds() / unit, RoundReport: rep})
		// As the coordinator does: the round's requests spread evenly over
		// its length, in order.
		for i, req := range reqs {
			at := now.Add(time.Duration(float64(length) * float64(i) / float64(len(reqs))))
			if !at.Before(end) {
				break
			}
			if err := r.send(req, at); err != nil {
				return ProbesResult{}, err
			}
		}
		if length <= 0 {
			length = o.TimeUnit
		}
		now = now.Add(length)
	}
	return measureProbes(r.sim, o, policy, alpha, rounds, start, end)
}

// probeRun is a keyword-probe run on the virtual clock: the sim's search
// site, the real Prober, and the crawler's copies of the tracked items.
type probeRun struct {
	clk     *vclock
	sim     *sim.Sim
	src     source.Source
	parser  *probeparse.Parser
	prober  *schedule.Prober
	est     schedule.Estimator
	handler http.Handler
	ids     []string // tracked items, in the sim's order
	items   map[string]*vitem
}

// newProbeRun sets up the sim's search site and a Prober for policy, and
// tracks every item the site lists, as synced at the epoch.
func newProbeRun(o ProbesOptions, policy string, alpha float64) (*probeRun, error) {
	clk := &vclock{now: virtualEpoch()}
	s, err := sim.New(sim.Config{Hosts: 1, Pages: 1, Seed: o.Seed, Day: time.Hour, Port: virtualSearchPort, Now: clk.Now,
		Search: &sim.SearchConfig{Papers: o.Papers, K: o.K, TimeUnit: o.TimeUnit, Seed: o.Seed, Absent: o.Absent, Renamed: o.Renamed, Untracked: o.Untracked}})
	if err != nil {
		return nil, err
	}
	src, err := s.SearchSource()
	if err != nil {
		return nil, err
	}
	src.Alpha = alpha
	if o.Score != "" {
		src.Score = o.Score
		if err := src.Validate(); err != nil {
			return nil, err
		}
	}
	unit := o.TimeUnit.Seconds()
	prior := 0.25 / unit // one citation's rate: the live bench's --prior-rate
	prober, err := schedule.NewProber(src, policy, prior)
	if err != nil {
		return nil, err
	}
	parser, err := probeparse.New(&src)
	if err != nil {
		return nil, err
	}
	r := &probeRun{clk: clk, sim: s, src: src, parser: parser, prober: prober,
		est: schedule.NewEstimator(config.Default().HalfLife, prior), handler: s.SearchHandler()}
	listed := s.SearchItems()
	r.ids = make([]string, len(listed))
	r.items = make(map[string]*vitem, len(listed))
	start := virtualEpoch()
	for i, it := range listed {
		r.ids[i] = it.ID
		r.items[it.ID] = &vitem{lastSync: start, attrs: map[string]string{
			"title": it.Title, "authors": it.Authors,
			"citations": strconv.Itoa(it.Citations), "weight": strconv.FormatFloat(it.Weight, 'f', -1, 64),
		}}
	}
	return r, nil
}

// tracked is the tracked items as the coordinator hands them to a round.
func (r *probeRun) tracked() []schedule.TrackedItem {
	out := make([]schedule.TrackedItem, len(r.ids))
	for i, id := range r.ids {
		it := r.items[id]
		out[i] = schedule.TrackedItem{ID: id, Attrs: it.attrs, Rate: it.rate, LastSync: it.lastSync}
	}
	return out
}

// fold is the coordinator's fold of one item read off a page.
func (r *probeRun) fold(id string, fields map[string]string, at time.Time) {
	it, ok := r.items[id]
	if !ok {
		return // not tracked
	}
	if !it.hasValue {
		it.value, it.hasValue = r.src.Value(it.attrs)
	}
	v, ok := r.src.Value(fields)
	if !ok {
		return
	}
	if it.hasValue && !it.lastSync.IsZero() && at.After(it.lastSync) {
		it.rate = r.prober.ObserveRefresh(r.est, &it.est, it.lastSync, at, it.attrs, fields)
	}
	attrs := make(map[string]string, len(it.attrs))
	for k, x := range it.attrs {
		attrs[k] = x
	}
	for k, x := range fields {
		attrs[k] = x
	}
	it.attrs, it.value, it.hasValue, it.lastSync = attrs, v, true, at
}

// send serves one request of a round at virtual time at, and folds what
// its page shows.
func (r *probeRun) send(pr schedule.ProbeRequest, at time.Time) error {
	r.clk.set(at)
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, r.prober.URL(pr), nil)
	r.handler.ServeHTTP(rec, req)
	body := rec.Body.Bytes()
	if pr.Item != "" {
		switch rec.Code {
		case http.StatusOK:
			pi, err := r.parser.Item(pr.Item, body)
			if err != nil {
				return fmt.Errorf("bench: item %s: %w", pr.Item, err)
			}
			r.fold(pi.ID, pi.Fields, at)
		case http.StatusNotFound, http.StatusGone:
			r.prober.ObserveGone(pr.Item)
		}
		return nil
	}
	if rec.Code != http.StatusOK {
		return fmt.Errorf("bench: %s: status %d", req.URL, rec.Code)
	}
	found, total, err := r.parser.Results(body)
	if err != nil {
		return fmt.Errorf("bench: %s: %w", req.URL, err)
	}
	seen := make([]string, len(found))
	for i, pi := range found {
		seen[i] = pi.ID
		r.fold(pi.ID, pi.Fields, at)
	}
	r.prober.ObserveResults(pr.Query, pr.Page, total, seen, at)
	return nil
}

// measureProbes reads the truth of a virtual run: its content freshness
// over the window after the warm-up, the series over the whole run, and the
// truth at every round for the model comparison.
func measureProbes(s *sim.Sim, o ProbesOptions, policy string, alpha float64, rounds []RoundLog, start, end time.Time) (ProbesResult, error) {
	unit := o.TimeUnit.Seconds()
	from := start.Add(time.Duration(o.WarmupUnits * float64(o.TimeUnit)))
	rep, err := s.ContentFreshness(from, end)
	if err != nil {
		return ProbesResult{}, err
	}
	steps := max(o.Steps, 1)
	whole, err := s.ContentFreshness(start, end, sim.WithStep(end.Sub(start)/time.Duration(steps)))
	if err != nil {
		return ProbesResult{}, err
	}
	times := make([]time.Time, len(rounds))
	for i, r := range rounds {
		times[i] = r.At
	}
	truth, err := s.ContentFreshnessAt(times)
	if err != nil {
		return ProbesResult{}, err
	}
	units := end.Sub(from).Seconds() / unit
	res := ProbesResult{
		Policy: policy, Mode: "virtual", Alpha: alpha,
		ContentFreshness: rep.ContentFreshness, Final: rep.Final, Requests: rep.Requests,
		SearchRequests: rep.SearchRequests, ItemRequests: rep.ItemRequests, RequestsPerUnit: float64(rep.Requests) / units,
		Synced: rep.Synced, Papers: rep.Papers, Absent: rep.Absent,
	}
	if alpha > 0 {
		res.Policy = fmt.Sprintf("%s α=%g", policy, alpha)
	}
	for _, p := range whole.Series {
		res.Series = append(res.Series, SeriesPoint{Units: p.Time.Sub(start).Seconds() / unit, ContentFreshness: p.ContentFreshness})
	}
	var model, tr []float64
	var intervals []float64
	var expSum, lenSum float64
	for i := range rounds {
		rounds[i].Truth = truth[i]
		if rounds[i].At.Before(from) {
			continue
		}
		model = append(model, rounds[i].ContentFreshness)
		tr = append(tr, truth[i])
		intervals = append(intervals, rounds[i].Interval)
		expSum += rounds[i].ExpectedMean * rounds[i].Interval
		lenSum += rounds[i].Interval
	}
	if lenSum > 0 {
		res.ExpectedMean = expSum / lenSum
	}
	res.Rounds = rounds
	res.RoundsMeasured = len(model)
	if len(model) > 0 {
		res.ModelMean, res.TruthAtRounds = mean(model), mean(tr)
		if res.TruthAtRounds > 0 {
			res.ModelRatio = res.ModelMean / res.TruthAtRounds
		}
		slices.Sort(intervals)
		res.IntervalMin, res.IntervalMedian, res.IntervalMax = intervals[0], intervals[len(intervals)/2], intervals[len(intervals)-1]
	}
	if n := len(rounds); n > 0 {
		last := rounds[n-1]
		res.LocalRatio, res.PairRatio, res.Unreached, res.Gone = last.LocalRatio, last.PairRatio, last.Unreached, last.Gone
	}
	return res, nil
}

func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// SeriesPoint is the truth's content freshness averaged over one step.
type SeriesPoint struct {
	Units            float64 // start of the step, in time units
	ContentFreshness float64
}

// ProbesVirtual runs every policy of o on the virtual clock (concurrently,
// each against its own copy of the site with the same seed), and with
// o.Alpha > 0 the greedy policy once more with the §4.4 interval search,
// then prints the comparison.
func ProbesVirtual(ctx context.Context, o ProbesOptions, out io.Writer) ([]ProbesResult, error) {
	type job struct {
		policy string
		alpha  float64
	}
	var jobs []job
	for _, p := range o.Policies {
		jobs = append(jobs, job{p, 0})
	}
	if o.Alpha > 0 {
		jobs = append(jobs, job{schedule.ProbeGreedy, o.Alpha})
	}
	results := make([]ProbesResult, len(jobs))
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = probesVirtual(ctx, o, j.policy, j.alpha)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	printProbes(out, o, results)
	return results, nil
}

func printProbes(out io.Writer, o ProbesOptions, rs []ProbesResult) {
	score := o.Score
	if score == "" {
		score = "the source's"
	}
	fmt.Fprintf(out, "content freshness on the simulated citation search (the content-freshness paper §5.2), virtual clock, seed %d: %d papers on the site, %d of them tracked,\n",
		o.Seed, o.Papers-int(math.Round(o.Absent*float64(o.Papers))), rsPapers(rs))
	fmt.Fprintf(out, "%d more tracked but absent from the site, %.0f%% listed under an old title; K=%d; score %s\n",
		rsAbsent(rs), 100*o.Renamed, o.K, score)
	fmt.Fprintf(out, "at most 10 requests per time unit; %g time units measured after %g\n\n", o.Units-o.WarmupUnits, o.WarmupUnits)
	fmt.Fprintf(out, "%-14s %12s %9s %8s %7s %6s %9s %7s %10s %10s %6s\n", "policy", "content-fr.", "final", "requests", "search", "by-id", "req/unit", "synced", "model", "truth", "ratio")
	for _, r := range rs {
		fmt.Fprintf(out, "%-14s %12.2f %9.2f %8d %7d %6d %9.2f %7d %10.2f %10.2f %6.2f\n", r.Policy, r.ContentFreshness, r.Final, r.Requests,
			r.SearchRequests, r.ItemRequests, r.RequestsPerUnit, r.Synced, r.ModelMean, r.TruthAtRounds, r.ModelRatio)
	}
	fmt.Fprintln(out, "\ncontent-fr.: the truth's time-averaged weighted dissimilarity of the crawler's copy (citations missed; lower is fresher)")
	fmt.Fprintln(out, "model, truth: mean over the measured rounds of the round report's content freshness and of the truth at the same instants")
	var base *ProbesResult
	for i := range rs {
		if rs[i].Policy == schedule.ProbeNaive1 {
			base = &rs[i]
		}
	}
	for _, r := range rs {
		if base != nil && r.Policy != base.Policy && base.ContentFreshness > 0 {
			fmt.Fprintf(out, "%s / naive1 = %.3f\n", r.Policy, r.ContentFreshness/base.ContentFreshness)
		}
	}
	for _, r := range rs {
		if r.LocalRatio > 0 {
			fmt.Fprintf(out, "%s: learnt server/local ratio %.2f (single keywords), %.2f (pairs); %d items unreached by their keywords, %d gone\n",
				r.Policy, r.LocalRatio, r.PairRatio, r.Unreached, r.Gone)
		}
		if r.Alpha > 0 {
			fmt.Fprintf(out, "%s: round interval min %.3g, median %.3g, max %.3g time units over %d measured rounds; the rounds expected %.2f on average (α %g), the truth measured %.2f\n",
				r.Policy, r.IntervalMin, r.IntervalMedian, r.IntervalMax, r.RoundsMeasured, r.ExpectedMean, r.Alpha, r.ContentFreshness)
		}
	}
}

func rsAbsent(rs []ProbesResult) int {
	if len(rs) == 0 {
		return 0
	}
	return rs[0].Absent
}

func rsPapers(rs []ProbesResult) int {
	if len(rs) == 0 {
		return 0
	}
	return rs[0].Papers
}

// WriteRoundsCSV writes every round of the results: policy, time, the
// interval found, requests, and the model's and the truth's content
// freshness.
func WriteRoundsCSV(w io.Writer, rs []ProbesResult) error {
	if _, err := fmt.Fprintln(w, "policy,units,interval_units,requests,queries,by_id,model_content_freshness,truth_content_freshness,expected_mean"); err != nil {
		return fmt.Errorf("bench: rounds: %w", err)
	}
	for _, r := range rs {
		for _, x := range r.Rounds {
			if _, err := fmt.Fprintf(w, "%s,%.4f,%.6g,%d,%d,%d,%.6g,%.6g,%.6g\n", r.Policy, x.Units, x.Interval, x.Requests, x.Queries, x.ByID,
				x.ContentFreshness, x.Truth, x.ExpectedMean); err != nil {
				return fmt.Errorf("bench: rounds: %w", err)
			}
		}
	}
	return nil
}
