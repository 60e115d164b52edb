package schedule

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/freshcrawl/freshcrawl/internal/source"
	"github.com/freshcrawl/freshcrawl/internal/urlnorm"
	"github.com/freshcrawl/freshcrawl/probe"
)

// Keyword-search probes (docs/design.md §3.6; the paper "Content freshness"
// with greedyProbes). Every round, for each source, a Prober plans keyword
// queries and fetches by id with probe.GreedyProbes over the tracked items
// (or, as baselines, fetches items by id only: Naive 1 round-robin over all
// items, Naive 2 only items with λ < 1 per time unit). The caller sends the
// requests in the planned order, spread over the round, under the same
// host politeness and robots rules as every page, folds the items on the
// pages back into the tracked items, and tells the Prober what the pages
// showed (ObserveResults, ObserveGone), which is all it knows of the site.

// Probe policies.
const (
	ProbeGreedy = "greedy"
	ProbeNaive1 = "naive1"
	ProbeNaive2 = "naive2"
)

// CheckProbePolicy reports whether name is a probe policy.
func CheckProbePolicy(name string) error {
	switch name {
	case ProbeGreedy, ProbeNaive1, ProbeNaive2:
		return nil
	}
	return fmt.Errorf("probe policy %q: want %s, %s or %s", name, ProbeGreedy, ProbeNaive1, ProbeNaive2)
}

// maxRoundFactor caps a round found by the interval search at this many
// times the source's interval, so a copy that nothing makes stale is still
// looked at now and then and new items are picked up. A round also lasts
// at most twice the one before it (see plan).
const maxRoundFactor = 64

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
	// Interval is the round's length in time units: the source's interval,
	// or with alpha set the one the §4.4 search found.
	Interval float64 `json:"interval_units"`
	// ContentFreshness is the model's expected content freshness F(L;t)
	// of the items before the round, in the units of the source's
	// dissimilarity: (1/|L|)·Σ w·λ·(t − last sync), the expected number of
	// updates missed, weighted (0 = in sync; larger is staler).
	ContentFreshness float64 `json:"content_freshness"`
	// ExpectedMean is the model's expected content freshness averaged
	// over the round, its requests included: what alpha bounds.
	ExpectedMean float64 `json:"expected_mean"`
	// LocalRatio and PairRatio are the server/local ratios the planner
	// assumed for single and pair queries it has no count for, learnt
	// from the totals seen so far (probe.LearnRatio).
	LocalRatio float64 `json:"local_ratio,omitempty"`
	PairRatio  float64 `json:"pair_ratio,omitempty"`
	// Unreached counts items a complete read of a query that should have
	// listed them did not (renamed on the site, or gone): they are
	// fetched by id until refreshed. Gone counts items whose page was not
	// found; they are left out of planning and of ContentFreshness.
	Unreached int `json:"unreached,omitempty"`
	Gone      int `json:"gone,omitempty"`
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

// queryRead follows the result pages of one query of the current round, to
// find the tracked items a complete read did not list.
type queryRead struct {
	local []string     // tracked items matching the query when planned
	pages map[int]bool // pages seen
	last  int          // a seen page with fewer than K results, 0 if none
	seen  map[string]bool
}

// Prober is the planning state of one keyword-search source. It is not
// safe for concurrent use.
type Prober struct {
	src    source.Source
	host   string
	policy string
	prior  float64 // changes per second of an item never observed

	// What the result pages showed: totals by query, and the local count
	// of the query when it was planned (the learnt ratio's sample).
	observed map[probe.Query]int
	planned  map[probe.Query]int
	reads    map[probe.Query]*queryRead
	// unreached: items a complete read should have listed but did not,
	// and when; they are planned by id only until refreshed after that.
	unreached map[string]time.Time
	gone      map[string]bool // item pages not found

	next   time.Time
	last   RoundReport
	rounds int
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
	_, host, err := urlnorm.Normalize(src.SearchURL([]string{"x"}, 1))
	if err != nil {
		return nil, fmt.Errorf("source %s: search_url: %w", src.Name, err)
	}
	return &Prober{src: src, host: host, policy: policy, prior: priorRate,
		observed: map[probe.Query]int{}, planned: map[probe.Query]int{}, reads: map[probe.Query]*queryRead{},
		unreached: map[string]time.Time{}, gone: map[string]bool{}}, nil
}

// Source is the prober's source definition.
func (p *Prober) Source() *source.Source { return &p.src }

// Host is the host the source's requests go to.
func (p *Prober) Host() string { return p.host }

// Due reports whether a round should start at now.
func (p *Prober) Due(now time.Time) bool { return !now.Before(p.next) }

// Idle defers the next round by one time unit (no items to plan for).
func (p *Prober) Idle(now time.Time) { p.next = now.Add(p.src.TimeUnit) }

// observeTotal records the total result count a query's first result
// page showed: the planner's server count for it (paper §4.1). It is
// ObserveResults without the items; prefer that.
func (p *Prober) observeTotal(query []string, total int) {
	if total >= 0 && len(query) > 0 {
		p.observed[queryOf(query)] = total
	}
}

// ObserveResults records what result page `page` (1-based) of a keyword
// query showed: the total result count (-1 when the page shows none; read
// on any page, it is the query's server count, paper §4.1) and the ids of
// the items listed, tracked or not. Once every page of the query has been
// seen (up to ⌈total/K⌉, or up to a page with fewer than K results), the
// tracked items that match the query but were not listed are marked
// unreached: the site no longer files them under their keywords (a
// renamed paper) or no longer has them. They are planned as fetches by id
// until a refresh updates their attributes, or left alone when the source
// has no item pages.
func (p *Prober) ObserveResults(query []string, page, total int, ids []string, at time.Time) {
	if len(query) == 0 || page < 1 {
		return
	}
	q := queryOf(query)
	if total >= 0 {
		p.observed[q] = total
	}
	for _, id := range ids {
		delete(p.gone, id)
	}
	r := p.reads[q]
	if r == nil {
		return
	}
	r.pages[page] = true
	for _, id := range ids {
		r.seen[id] = true
	}
	if len(ids) < p.src.PageSize && (r.last == 0 || page < r.last) {
		r.last = page
	}
	// The total, when the pages show one, says how many pages there are;
	// otherwise a short page is the last.
	pages := r.last
	if n, ok := p.observed[q]; ok {
		pages = max((n+p.src.PageSize-1)/p.src.PageSize, 1)
	}
	if pages == 0 {
		return
	}
	for pg := 1; pg <= pages; pg++ {
		if !r.pages[pg] {
			return
		}
	}
	delete(p.reads, q) // read in full: later pages change nothing
	for _, id := range r.local {
		if !r.seen[id] {
			p.unreached[id] = at
		}
	}
}

// ObserveGone records that the item page of id was not found (404 or 410):
// the site does not have the item. It is left out of planning, and of the
// model's content freshness, until a result page lists it again.
func (p *Prober) ObserveGone(id string) { p.gone[id] = true }

// ObserveRefresh folds one refresh of a tracked item, from attributes old
// (its copy, synchronised at prev) to fresh (read at at), into its
// change-rate estimate st and returns the new rate per second (of updates,
// when they are counted).
// When the source's dissimilarity counts updates (source.CountsUpdates:
// a citation count grows by one per citation) the dissimilarity of the
// refresh is the number of updates since prev, a Poisson count, which
// tells the estimator far more than whether the value changed; otherwise
// the change bit of the value is used. A first refresh (zero prev) only
// returns the current estimate.
func (p *Prober) ObserveRefresh(e Estimator, st *EstimateState, prev, at time.Time, old, fresh map[string]string) float64 {
	return ObserveRefresh(e, &p.src, st, prev, at, old, fresh)
}

// ObserveRefresh is Prober.ObserveRefresh for a source definition alone:
// the fold, which has the definition but not the planner, calls it.
func ObserveRefresh(e Estimator, src *source.Source, st *EstimateState, prev, at time.Time, old, fresh map[string]string) float64 {
	if prev.IsZero() || !at.After(prev) {
		return st.State.Rate(e.Prior)
	}
	if src.CountsUpdates() {
		return e.observeCount(st, at, prev, src.Dissimilarity(old, fresh))
	}
	a, okA := src.Value(old)
	b, okB := src.Value(fresh)
	return e.observe(st, fetchObs{At: at, Prev: prev, Changed: okA != okB || a != b})
}

// Status is the source's status.
func (p *Prober) Status() ProbeStatus {
	return ProbeStatus{Source: p.src.Name, Policy: p.policy, Rounds: p.rounds, Last: p.last}
}

// unit converts a time to the source's planning time units.
func (p *Prober) unit(t time.Time) float64 {
	return float64(t.UnixNano()) / float64(p.src.TimeUnit)
}

// items turns tracked items into the planner's items, leaving out items
// whose page was not found; an unreached item keeps no keywords (it can
// only be fetched by id) while the source has item pages.
func (p *Prober) items(items []TrackedItem) []probe.Item {
	out := make([]probe.Item, 0, len(items))
	byID := p.src.ItemTemplate != ""
	for _, it := range items {
		if p.gone[it.ID] {
			continue
		}
		rate := it.Rate
		if rate <= 0 {
			rate = p.prior
		}
		kws := p.src.Keywords(it.Attrs)
		if at, ok := p.unreached[it.ID]; ok {
			if it.LastSync.After(at) {
				delete(p.unreached, it.ID) // refreshed since: its attributes are the site's
			} else if byID {
				kws = nil
			}
		}
		last := p.unit(it.LastSync) // set when the item was added: its attributes are a copy as of then
		out = append(out, probe.Item{ID: it.ID, Keywords: kws, Weight: p.src.Weight(it.Attrs),
			Rate: rate * p.src.TimeUnit.Seconds(), LastSync: last})
	}
	return out
}

// ratios learns the server/local ratios of single and pair queries from
// the totals seen (probe.LearnRatio), with the source's local_ratio as the
// prior.
func (p *Prober) ratios() (single, pair float64) {
	var s, d []probe.RatioSample
	for q, n := range p.observed {
		l, ok := p.planned[q]
		if !ok {
			continue
		}
		if q.B == "" {
			s = append(s, probe.RatioSample{Server: n, Local: l})
		} else {
			d = append(d, probe.RatioSample{Server: n, Local: l})
		}
	}
	pooled := probe.LearnRatio(append(slices.Clip(s), d...), p.src.LocalRatio, 1)
	return probe.LearnRatio(s, pooled, 1), probe.LearnRatio(d, pooled, 1)
}

// options are the probe.Options the source implies: observed totals first,
// then the reference counts scaled by ReferenceScale (paper §4.1), then
// the learnt ratios; fetches by id compete in the greedy when the source
// has item pages.
func (p *Prober) options(single, pair float64) probe.Options {
	refs := make(map[probe.Query]int, len(p.src.References))
	for q, n := range p.src.References {
		a, b, _ := strings.Cut(q, " ")
		refs[probe.Pair(a, b)] = n
	}
	o := probe.Options{
		K:      p.src.PageSize,
		Method: probe.Method(p.src.Method),
		Quota:  p.src.Quota,
		ByID:   p.src.ItemTemplate != "",
		Counts: probe.Counts{Observed: p.observed, Reference: refs, ReferenceScale: p.src.ReferenceScale,
			LocalRatio: single, PairRatio: pair},
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
	rep := RoundReport{Source: p.src.Name, Policy: p.policy, At: now, Items: len(items), Gone: len(p.gone)}
	pitems := p.items(items)
	rep.Unreached = len(p.unreached)
	t := p.unit(now)
	rep.ContentFreshness = probe.ContentFreshness(pitems, t, probe.ModelCount)
	rep.Interval = p.src.Interval
	if rep.Interval <= 0 {
		rep.Interval = 1
	}
	if p.policy == ProbeNaive1 || p.policy == ProbeNaive2 {
		reqs, slots := p.naive(pitems)
		rep.ByID, rep.Requests = len(reqs), len(reqs)
		if len(items) > 0 {
			rep.CoverageRatio = float64(len(reqs)) / float64(len(items))
		}
		if rep.Requests > 0 {
			rep.SpeedupRatio = 1
		}
		rep.ExpectedMean = probe.RoundFreshness(pitems, slots, t, rep.Interval, probe.ModelCount, true)
		return reqs, rep, nil
	}
	rep.LocalRatio, rep.PairRatio = p.ratios()
	plan, err := probe.GreedyProbes(pitems, t, p.options(rep.LocalRatio, rep.PairRatio))
	if err != nil {
		return nil, rep, fmt.Errorf("source %s: plan: %w", p.src.Name, err)
	}
	// The round sends its queries and fetches by id in ascending a_i
	// (paper §4.3); a Method 1 query reads all its result pages. Fallback
	// slots (items nothing reached within the quota) are not sent.
	sent := plan.Slots[:len(plan.Queries)+len(plan.ByID)]
	order := probe.Order(sent, plan.Items, rep.Interval, plan.Model)
	// A query refreshes every tracked item it matches, not only the group
	// it was chosen for; the model of the round's end counts them all.
	local := make(map[probe.Query][]string, len(plan.Queries))
	reach := make([]probe.Slot, len(order))
	for i, sl := range order {
		reach[i] = sl
		if sl.ID == "" {
			local[sl.Query] = matching(pitems, sl.Query.Keywords())
			reach[i].Items = local[sl.Query]
		}
	}
	if p.src.Alpha > 0 {
		f := func(length float64) float64 {
			return probe.RoundFreshness(pitems, reach, t, length, probe.ModelCount, true)
		}
		// A round may at most double the last one: rates still at their
		// prior make a copy look fresher than it is, and must not stretch
		// the rounds before refreshes have shown the real ones.
		longest := maxRoundFactor * rep.Interval
		if p.rounds > 0 {
			longest = min(longest, max(2*p.last.Interval, rep.Interval))
		} else {
			longest = 2 * rep.Interval
		}
		iv, err := probe.RoundLength(f, p.src.Alpha, rep.Interval, longest, 0)
		if err != nil {
			return nil, rep, fmt.Errorf("source %s: interval search: %w", p.src.Name, err)
		}
		rep.Interval = iv
	}
	rep.ExpectedMean = probe.RoundFreshness(pitems, reach, t, rep.Interval, probe.ModelCount, true)
	byQuery := make(map[probe.Query]probe.PlannedQuery, len(plan.Queries))
	for _, q := range plan.Queries {
		byQuery[q.Query] = q
	}
	var reqs []ProbeRequest
	for _, slot := range order {
		if slot.ID != "" {
			reqs = append(reqs, ProbeRequest{Source: p.src.Name, Item: slot.ID})
			rep.ByID++
			continue
		}
		q, ok := byQuery[slot.Query]
		if !ok {
			continue
		}
		terms := q.Query.Keywords()
		for pg := 1; pg <= max(q.Requests, 1); pg++ {
			reqs = append(reqs, ProbeRequest{Source: p.src.Name, Query: terms, Page: pg})
		}
		p.planned[q.Query] = q.LocalCount
		p.reads[q.Query] = &queryRead{local: local[q.Query], pages: map[int]bool{}, seen: map[string]bool{}}
		rep.Queries++
	}
	rep.Requests = len(reqs)
	rep.CoverageRatio = plan.Report.CoverageRatio
	rep.SpeedupRatio = plan.Report.SpeedupRatio
	return reqs, rep, nil
}

// naive plans a baseline round: fetches by id, least recently synchronised
// first (round robin), up to the quota; Naive 2 skips items estimated to
// change at least once a time unit (the paper's §5.2). It returns the
// requests and their slots.
func (p *Prober) naive(pitems []probe.Item) ([]ProbeRequest, []probe.Slot) {
	order := make([]int, 0, len(pitems))
	for i, it := range pitems {
		if p.policy == ProbeNaive2 && it.Rate >= 1 {
			continue
		}
		order = append(order, i)
	}
	sort.SliceStable(order, func(a, b int) bool { return pitems[order[a]].LastSync < pitems[order[b]].LastSync })
	if q := p.src.Quota; q > 0 && len(order) > q {
		order = order[:q]
	}
	reqs := make([]ProbeRequest, 0, len(order))
	slots := make([]probe.Slot, 0, len(order))
	for _, i := range order {
		id := pitems[i].ID
		reqs = append(reqs, ProbeRequest{Source: p.src.Name, Item: id})
		slots = append(slots, probe.Slot{ID: id, Items: []string{id}, Requests: 1})
	}
	return reqs, slots
}

// matching returns the ids of the items whose keywords include every term.
func matching(items []probe.Item, terms []string) []string {
	var out []string
	for _, it := range items {
		ok := true
		for _, t := range terms {
			if !slices.Contains(it.Keywords, t) {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, it.ID)
		}
	}
	return out
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
