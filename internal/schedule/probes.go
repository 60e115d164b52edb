package schedule

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/freshcrawl/freshcrawl/internal/seed"
	"github.com/freshcrawl/freshcrawl/internal/source"
	"github.com/freshcrawl/freshcrawl/probe"
)

// Keyword-search probes (docs/design.md, "Keyword-search sources"; the
// paper "Content freshness" with greedyProbes). Every round, for each
// source, a Prober plans keyword queries with probe.GreedyProbes over the
// tracked items (or, as baselines, fetches items by id: Naive 1
// round-robin over all items, Naive 2 only items with λ < 1 per time
// unit). The coordinator sends the requests in ascending a_i as one-off
// requests under the same host politeness and robots rules as every page,
// and folds the items on the result pages back into the tracked items.

// Probe policies.
const (
	probeGreedy = "greedy"
	probeNaive1 = "naive1"
	probeNaive2 = "naive2"
)

// CheckProbePolicy reports whether name is a probe policy.
func CheckProbePolicy(name string) error {
	switch name {
	case probeGreedy, probeNaive1, probeNaive2:
		return nil
	}
	return fmt.Errorf("probe policy %q: want %s, %s or %s", name, probeGreedy, probeNaive1, probeNaive2)
}

// ProbeRequest is one planned request of a round: a result page of a
// keyword query, or (Item set) one item's own page.
type ProbeRequest struct {
	Source string
	Query  []string
	Page   int
	Item   string
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

// ProbeStatus is what status shows of a keyword-search source.
type ProbeStatus struct {
	Source string      `json:"source"`
	Policy string      `json:"policy"`
	Rounds int         `json:"rounds"`
	Last   RoundReport `json:"last_round"`
}

// TrackedItem is what the planner needs of a tracked item.
type TrackedItem struct {
	ID       string
	Attrs    map[string]string
	Rate     float64   // changes per second; 0: not estimated yet
	LastSync time.Time // when the local copy was last refreshed (or added)
}

// Prober is the planning state of one keyword-search source. It is not
// safe for concurrent use.
type Prober struct {
	src      source.Source
	host     string
	policy   string
	prior    float64             // changes per second of an item never observed
	observed map[probe.Query]int // totals seen on result pages
	next     time.Time
	last     RoundReport
	rounds   int
}

// NewProber validates src and returns its planner under policy (one of
// the Probe* constants); priorRate is the change rate, per second, of an
// item never observed.
func NewProber(src source.Source, policy string, priorRate float64) (*Prober, error) {
	if err := CheckProbePolicy(policy); err != nil {
		return nil, err
	}
	if err := src.Validate(); err != nil {
		return nil, err
	}
	_, host, err := seed.Normalize(src.SearchURL([]string{"x"}, 1))
	if err != nil {
		return nil, fmt.Errorf("source %s: search_url: %w", src.Name, err)
	}
	return &Prober{src: src, host: host, policy: policy, prior: priorRate, observed: map[probe.Query]int{}}, nil
}

// Source is the prober's source definition.
func (p *Prober) Source() *source.Source { return &p.src }

// Host is the host the source's requests go to.
func (p *Prober) Host() string { return p.host }

// Due reports whether a round should start at now.
func (p *Prober) Due(now time.Time) bool { return !now.Before(p.next) }

// Idle defers the next round by one time unit (no items to plan for).
func (p *Prober) Idle(now time.Time) { p.next = now.Add(p.src.TimeUnit) }

// ObserveTotal records the total result count a query's first result
// page showed: the planner's server count for it (paper §4.1).
func (p *Prober) ObserveTotal(query []string, total int) {
	if total > 0 && len(query) > 0 {
		p.observed[queryOf(query)] = total
	}
}

// Status is the source's status.
func (p *Prober) Status() ProbeStatus {
	return ProbeStatus{Source: p.src.Name, Policy: p.policy, Rounds: p.rounds, Last: p.last}
}

// unit converts a time to the source's planning time units.
func (p *Prober) unit(t time.Time) float64 {
	return float64(t.UnixNano()) / float64(p.src.TimeUnit)
}

// items turns tracked items into the planner's items.
func (p *Prober) items(items []TrackedItem) []probe.Item {
	out := make([]probe.Item, 0, len(items))
	for _, it := range items {
		rate := it.Rate
		if rate <= 0 {
			rate = p.prior
		}
		last := p.unit(it.LastSync) // set when the item was added: its attributes are a copy as of then
		out = append(out, probe.Item{ID: it.ID, Keywords: p.src.Keywords(it.Attrs), Weight: p.src.Weight(it.Attrs),
			Rate: rate * p.src.TimeUnit.Seconds(), LastSync: last})
	}
	return out
}

// options are the probe.Options the source implies: observed totals first,
// then the reference counts scaled by ReferenceScale (paper §4.1).
func (p *Prober) options() probe.Options {
	refs := make(map[probe.Query]int, len(p.src.References))
	for q, n := range p.src.References {
		a, b, _ := strings.Cut(q, " ")
		refs[probe.Pair(a, b)] = n
	}
	o := probe.Options{
		K:      p.src.PageSize,
		Method: probe.Method(p.src.Method),
		Quota:  p.src.Quota,
		Counts: probe.Counts{Observed: p.observed, Reference: refs, ReferenceScale: p.src.ReferenceScale, LocalRatio: p.src.LocalRatio},
	}
	if p.src.Score == "per_request" {
		o.Score = probe.ScorePerRequest
	}
	return o
}

// Round plans the round due at now over the tracked items: the requests
// in send order, the time they are spread over, and the report. The
// round counts as started.
func (p *Prober) Round(items []TrackedItem, now time.Time) ([]ProbeRequest, time.Duration, RoundReport, error) {
	reqs, rep, err := p.plan(items, now)
	if err != nil {
		return nil, 0, rep, err
	}
	length := time.Duration(rep.Interval * float64(p.src.TimeUnit))
	p.next = now.Add(length)
	p.last = rep
	p.rounds++
	return reqs, length, rep, nil
}

func (p *Prober) plan(items []TrackedItem, now time.Time) ([]ProbeRequest, RoundReport, error) {
	rep := RoundReport{Source: p.src.Name, Policy: p.policy, At: now, Items: len(items)}
	pitems := p.items(items)
	t := p.unit(now)
	rep.ContentFreshness = probe.ContentFreshness(pitems, t, probe.ModelAccumulated)
	rep.Interval = p.src.Interval
	if rep.Interval <= 0 {
		rep.Interval = 1
	}
	budget := p.src.Quota // requests a round; 0 = no limit
	var reqs []ProbeRequest
	switch p.policy {
	case probeNaive1, probeNaive2:
		// Fetch by id, stalest first (round robin), up to the quota.
		order := make([]int, 0, len(pitems))
		for i, it := range pitems {
			if p.policy == probeNaive2 && it.Rate >= 1 {
				continue // Naive 2 never syncs items that change more than once a unit
			}
			order = append(order, i)
		}
		sort.SliceStable(order, func(a, b int) bool { return pitems[order[a]].LastSync < pitems[order[b]].LastSync })
		if budget > 0 && len(order) > budget {
			order = order[:budget]
		}
		for _, i := range order {
			reqs = append(reqs, ProbeRequest{Source: p.src.Name, Item: pitems[i].ID})
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
	plan, err := probe.GreedyProbes(pitems, t, p.options())
	if err != nil {
		return nil, rep, fmt.Errorf("source %s: plan: %w", p.src.Name, err)
	}
	if p.src.Alpha > 0 {
		if iv, err := plan.FindInterval(p.src.Alpha, probe.IntervalOptions{Start: p.src.Interval}); err == nil && iv > 0 && !math.IsInf(iv, 1) {
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
		for pg := 1; pg <= max(q.Requests, 1); pg++ {
			reqs = append(reqs, ProbeRequest{Source: p.src.Name, Query: terms, Page: pg})
			used++
		}
		rep.Queries++
	}
	// Uncovered items fall back to fetch by id, stalest first, within what
	// is left of the round's budget.
	if p.src.ItemTemplate != "" {
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
			reqs = append(reqs, ProbeRequest{Source: p.src.Name, Item: id})
			rep.ByID++
			used++
		}
	}
	rep.Requests = used
	rep.CoverageRatio = plan.Report.CoverageRatio
	rep.SpeedupRatio = plan.Report.SpeedupRatio
	return reqs, rep, nil
}

// URL is the request's URL.
func (p *Prober) URL(r ProbeRequest) string {
	if r.Item != "" {
		return p.src.ItemURL(r.Item)
	}
	return p.src.SearchURL(r.Query, r.Page)
}

// queryOf is the probe.Query of a request's terms.
func queryOf(terms []string) probe.Query {
	if len(terms) == 1 {
		return probe.Single(terms[0])
	}
	return probe.Pair(terms[0], strings.Join(terms[1:], " "))
}
