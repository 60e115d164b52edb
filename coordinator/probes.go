package coordinator

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/freshcrawl/freshcrawl/probe"
	"github.com/freshcrawl/freshcrawl/proto"
	"github.com/freshcrawl/freshcrawl/seed"
	"github.com/freshcrawl/freshcrawl/source"
	"github.com/freshcrawl/freshcrawl/store"
)

// Keyword-search probes (DESIGN.md §3.6, paper 000). Every round, for each
// source, the coordinator plans keyword queries with probe.GreedyProbes
// over the tracked items (or, as baselines, fetches items by id: Naive 1
// round-robin over all items, Naive 2 only items with λ < 1 per time
// unit), sends them in ascending a_i as one-off requests under the same
// host politeness and robots rules as every page, and folds the items on
// the result pages back into the tracked items.

// Probe policies.
const (
	ProbeGreedy = "greedy"
	ProbeNaive1 = "naive1"
	ProbeNaive2 = "naive2"
)

// probeRequest is one planned request of a round.
type probeRequest struct {
	source string
	query  []string
	page   int
	item   string
}

// RoundReport is what one planning round of a source did.
type RoundReport struct {
	Source        string    `json:"source"`
	Policy        string    `json:"policy"`
	At            time.Time `json:"at"`
	Items         int       `json:"items"`
	Queries       int       `json:"queries"`
	Requests      int       `json:"requests"` // keyword requests + fetches by id planned
	ByID          int       `json:"by_id"`
	CoverageRatio float64   `json:"coverage_ratio"`
	SpeedupRatio  float64   `json:"speedup_ratio"`
	Interval      float64   `json:"interval_units"`
	// ContentFreshness is the model's expected content freshness F(L;t)
	// of the items before the round (0 = in sync; larger is staler).
	ContentFreshness float64 `json:"content_freshness"`
}

// sourceState is the coordinator's state of one source.
type sourceState struct {
	src      source.Source
	def      json.RawMessage
	host     string
	observed map[probe.Query]int // totals seen on result pages
	next     time.Time
	last     RoundReport
	rounds   int
}

func newSourceState(src source.Source) (*sourceState, error) {
	if err := src.Validate(); err != nil {
		return nil, err
	}
	wire := src
	wire.References = nil // only the planner needs the reference counts
	def, err := json.Marshal(wire)
	if err != nil {
		return nil, fmt.Errorf("source %s: encode definition: %w", src.Name, err)
	}
	_, host, err := seed.Normalize(src.SearchURL([]string{"x"}, 1))
	if err != nil {
		return nil, fmt.Errorf("source %s: search_url: %w", src.Name, err)
	}
	return &sourceState{src: src, def: def, host: host, observed: map[probe.Query]int{}}, nil
}

// unit converts a time to the source's planning time units.
func (ss *sourceState) unit(t time.Time) float64 {
	return float64(t.UnixNano()) / float64(ss.src.TimeUnit)
}

// probeItems turns tracked items into the planner's items.
func (ss *sourceState) probeItems(items []store.Item, prior float64) []probe.Item {
	out := make([]probe.Item, 0, len(items))
	for _, it := range items {
		rate := it.Rate
		if rate <= 0 {
			rate = prior
		}
		last := ss.unit(it.LastSync) // set when the item was added: its attributes are a copy as of then
		out = append(out, probe.Item{ID: it.ID, Keywords: ss.src.Keywords(it.Attrs), Weight: ss.src.Weight(it.Attrs),
			Rate: rate * ss.src.TimeUnit.Seconds(), LastSync: last})
	}
	return out
}

// planRound plans one round of a source: the requests in send order and
// the report. Pure apart from reading items.
func (c *Coordinator) planRound(ss *sourceState, items []store.Item, now time.Time) ([]probeRequest, RoundReport, error) {
	rep := RoundReport{Source: ss.src.Name, Policy: c.opts.ProbePolicy, At: now, Items: len(items)}
	pitems := ss.probeItems(items, c.opts.PriorRate)
	t := ss.unit(now)
	rep.ContentFreshness = probe.ContentFreshness(pitems, t, probe.ModelAccumulated)
	rep.Interval = ss.src.Interval
	if rep.Interval <= 0 {
		rep.Interval = 1
	}
	budget := ss.src.Quota // requests a round; 0 = no limit
	var reqs []probeRequest
	switch c.opts.ProbePolicy {
	case ProbeNaive1, ProbeNaive2:
		// Fetch by id, stalest first (round robin), up to the quota.
		order := make([]int, 0, len(pitems))
		for i, it := range pitems {
			if c.opts.ProbePolicy == ProbeNaive2 && it.Rate >= 1 {
				continue // Naive 2 never syncs items that change more than once a unit
			}
			order = append(order, i)
		}
		sort.SliceStable(order, func(a, b int) bool { return pitems[order[a]].LastSync < pitems[order[b]].LastSync })
		if budget > 0 && len(order) > budget {
			order = order[:budget]
		}
		for _, i := range order {
			reqs = append(reqs, probeRequest{source: ss.src.Name, item: pitems[i].ID})
		}
		rep.ByID = len(reqs)
		rep.Requests = len(reqs)
		if len(items) > 0 {
			rep.CoverageRatio = float64(len(reqs)) / float64(len(items))
		}
		if rep.Requests > 0 {
			rep.SpeedupRatio = 1
		}
		return reqs, rep, nil
	}
	plan, err := probe.GreedyProbes(pitems, t, ss.src.ProbeOptions(ss.observed))
	if err != nil {
		return nil, rep, fmt.Errorf("source %s: plan: %w", ss.src.Name, err)
	}
	if ss.src.Alpha > 0 {
		if iv, err := plan.FindInterval(ss.src.Alpha, probe.IntervalOptions{Start: ss.src.Interval}); err == nil && iv > 0 && !math.IsInf(iv, 1) {
			rep.Interval = iv
		}
	}
	// Queries in ascending a_i (paper §4.3); a Method-1 query reads all
	// its result pages.
	byQuery := map[probe.Query]probe.PlannedQuery{}
	for _, q := range plan.Queries {
		byQuery[q.Query] = q
	}
	used := 0
	for _, slot := range probe.Order(plan.Slots, plan.Items, rep.Interval, plan.Model) {
		if slot.ID != "" {
			continue // fallback fetches come after the queries
		}
		q, ok := byQuery[slot.Query]
		if !ok {
			continue
		}
		terms := []string{q.Query.A}
		if q.Query.B != "" {
			terms = append(terms, q.Query.B)
		}
		for p := 1; p <= max(q.Requests, 1); p++ {
			reqs = append(reqs, probeRequest{source: ss.src.Name, query: terms, page: p})
			used++
		}
		rep.Queries++
	}
	// Uncovered items fall back to fetch by id, stalest first, within what
	// is left of the round's budget.
	if ss.src.ItemTemplate != "" {
		fallback := append(append([]string(nil), plan.Fallback...), plan.Uncertain...)
		stale := map[string]float64{}
		for _, it := range pitems {
			stale[it.ID] = probe.ItemFreshness(it, t, probe.ModelAccumulated)
		}
		sort.SliceStable(fallback, func(a, b int) bool { return stale[fallback[a]] > stale[fallback[b]] })
		for _, id := range fallback {
			if budget > 0 && used >= budget {
				break
			}
			reqs = append(reqs, probeRequest{source: ss.src.Name, item: id})
			rep.ByID++
			used++
		}
	}
	rep.Requests = used
	rep.CoverageRatio = plan.Report.CoverageRatio
	rep.SpeedupRatio = plan.Report.SpeedupRatio
	return reqs, rep, nil
}

// url is the request's URL.
func (ss *sourceState) url(r probeRequest) string {
	if r.item != "" {
		return ss.src.ItemURL(r.item)
	}
	return ss.src.SearchURL(r.query, r.page)
}

// probeRounds starts the rounds that are due; the caller holds no lock.
func (c *Coordinator) probeRounds(now time.Time) {
	for _, ss := range c.sources {
		c.mu.Lock()
		due := !now.Before(ss.next)
		c.mu.Unlock()
		if !due {
			continue
		}
		items, err := c.db.Items(ss.src.Name)
		if err != nil {
			c.log.Error("probe round: read items", "source", ss.src.Name, "err", err)
			continue
		}
		if len(items) == 0 {
			c.mu.Lock()
			ss.next = now.Add(ss.src.TimeUnit)
			c.mu.Unlock()
			continue
		}
		c.mu.Lock()
		reqs, rep, err := c.planRound(ss, items, now)
		if err != nil {
			c.mu.Unlock()
			c.log.Error("probe round", "source", ss.src.Name, "err", err)
			continue
		}
		length := time.Duration(rep.Interval * float64(ss.src.TimeUnit))
		// Spread the round's requests over its length, in order.
		queued := 0
		for i, r := range reqs {
			u := ss.url(r)
			at := now.Add(time.Duration(float64(length) * float64(i) / float64(len(reqs))))
			if c.sched.Enqueue(u, ss.host, at) {
				c.probes[u] = r
				queued++
			}
		}
		ss.next = now.Add(length)
		ss.last = rep
		ss.rounds++
		c.mu.Unlock()
		c.m.probeRequests.Add(float64(queued))
		c.m.contentFreshness.WithLabelValues(ss.src.Name).Set(rep.ContentFreshness)
		c.m.coverage.WithLabelValues(ss.src.Name).Set(rep.CoverageRatio)
		c.m.speedup.WithLabelValues(ss.src.Name).Set(rep.SpeedupRatio)
		c.log.Info("probe round", "source", ss.src.Name, "policy", rep.Policy, "items", rep.Items, "queries", rep.Queries,
			"requests", rep.Requests, "by_id", rep.ByID, "coverage", round(rep.CoverageRatio), "speedup", round(rep.SpeedupRatio),
			"content_freshness", round(rep.ContentFreshness), "interval_units", round(rep.Interval))
		c.poke()
	}
}

func round(v float64) float64 { return math.Round(v*1000) / 1000 }

// probeTask is the task of a one-off probe request.
func (c *Coordinator) probeTask(url string, t *proto.Task) bool {
	r, ok := c.probes[url]
	if !ok {
		return false
	}
	ss := c.sourceByName(r.source)
	if ss == nil {
		return false
	}
	t.Kind = proto.KindProbe
	t.Probe = &proto.ProbeSpec{Source: r.source, Def: ss.def, Query: r.query, Page: r.page, Item: r.item}
	return true
}

func (c *Coordinator) sourceByName(name string) *sourceState {
	for _, ss := range c.sources {
		if ss.src.Name == name {
			return ss
		}
	}
	return nil
}

// foldProbe folds a probe result into the tracked items: each item seen
// gets its new value, the dissimilarity of the refresh, its sync time and
// an observation for its change-rate estimate.
func (c *Coordinator) foldProbe(tx *store.Tx, r *proto.Result, req probeRequest, ss *sourceState) error {
	at := r.StartedAt
	for _, pi := range r.Items {
		it, found, err := tx.GetItem(ss.src.Name, pi.ID)
		if err != nil {
			return err
		}
		if !found {
			continue // not tracked: results also show items nobody asked for
		}
		if !it.HasValue {
			// The attributes the item was added with are the first copy.
			it.Value, it.HasValue = ss.src.Value(it.Attrs)
		}
		newV, ok := ss.src.Value(pi.Fields)
		if !ok {
			continue
		}
		changed := it.HasValue && newV != it.Value
		if it.HasValue {
			it.Dissimilarity += ss.src.Dissimilarity(it.Attrs, pi.Fields)
			if !it.LastSync.IsZero() && at.After(it.LastSync) {
				var st EstimateState
				if len(it.Estimate) > 0 {
					_ = st.unmarshal(it.Estimate)
				}
				it.Rate = c.est.Observe(&st, Fetch{At: at, Prev: it.LastSync, Changed: changed})
				it.Estimate = st.marshal()
			}
		}
		if changed {
			it.Changes++
		}
		if it.Attrs == nil {
			it.Attrs = map[string]string{}
		}
		for k, v := range pi.Fields {
			it.Attrs[k] = v
		}
		it.Value, it.HasValue = newV, true
		it.LastSync = at
		it.Syncs++
		if err := tx.PutItem(it); err != nil {
			return err
		}
	}
	return nil
}

// ProbeStatus is what status shows of the keyword-search sources.
type ProbeStatus struct {
	Source string      `json:"source"`
	Policy string      `json:"policy"`
	Rounds int         `json:"rounds"`
	Last   RoundReport `json:"last_round"`
}

func (c *Coordinator) probeStatus() []ProbeStatus {
	var out []ProbeStatus
	for _, ss := range c.sources {
		out = append(out, ProbeStatus{Source: ss.src.Name, Policy: c.opts.ProbePolicy, Rounds: ss.rounds, Last: ss.last})
	}
	return out
}

// queryOf is the probe.Query of a request's terms.
func queryOf(terms []string) probe.Query {
	if len(terms) == 1 {
		return probe.Single(terms[0])
	}
	return probe.Pair(terms[0], strings.Join(terms[1:], " "))
}
