package probe

import (
	"fmt"
	"math"
	"sort"
)

// Method says how much of a query's result list is read (paper §5.1).
type Method int

const (
	// MethodAllPages is the paper's Method 1: scan every result page, so a
	// query covers all of R_L(q) at a cost of N(q) = ⌈|R_S(q)|/K⌉ requests.
	MethodAllPages Method = 1
	// MethodFirstPage is the paper's Method 2: read the first page only,
	// one request. We model the first page as a uniform sample of the
	// query's results, as the paper's E_coverage(q) = K·|R_L(q)|/|R_S(q)|
	// does: each local match appears on it with probability
	// π(q) = min(1, K/|R_S(q)|). Queries with |R_S(q)| ≤ K therefore cover
	// their matches with certainty; others only in expectation. An item
	// reached only by π < 1 queries is reported in Plan.Uncertain: fetch it
	// by id if it is absent from the first pages actually read.
	MethodFirstPage Method = 2
)

// Score selects the greedy efficiency heuristic.
type Score int

const (
	// ScorePerResult is the paper's Eq. 2, Σ_{r∈R_L(q) uncovered} w(r)F(r;t)
	// divided by the server results the query transfers (objective (4) of
	// §3.3), with the results counted as the slots of the result pages
	// actually read: K·N(q), i.e. |R_S(q)| rounded up to whole pages, and
	// under Method 2 the expected gain π(q)·Σ w F over the K slots of the
	// first page. The numerator counts each item with its probability of
	// still being uncovered, so under Method 1 it is exactly the paper's
	// sum over uncovered items. This is the default.
	//
	// Why whole pages: the paper prices a query at N(q) = |R_S(q)|/K
	// requests (§5.1), a fraction of a request for a query with fewer than
	// K results. Read literally, Eq. 2 then rates a pair query with one
	// server result at K times the efficiency of a full page of results,
	// although both cost one request: under a quota counted in requests the
	// greedy degenerates into one-result queries, each a whole request for
	// one item, no better than fetching the item by id. Counting the page a
	// result occupies removes that artefact and changes nothing for queries
	// that fill their pages, the case the paper's analysis has in mind.
	ScorePerResult Score = iota
	// ScorePerRequest divides the expected gain π(q)·Σ w F by the request
	// cost N(q): the textbook budgeted-greedy ratio for a request quota.
	// Since ScorePerResult counts whole pages, the two differ by the
	// constant factor K and rank every candidate alike; ScorePerRequest is
	// kept so that configurations naming it keep their meaning.
	ScorePerRequest
)

// DefaultTopK is the candidate keyword-set size used when Options.TopK is
// 0: up to 100 single keywords and 4 950 pairs.
const DefaultTopK = 100

// maxCost caps a query's request cost so absurd server counts cannot
// overflow integer arithmetic.
const maxCost = 1 << 30

// Options configure [GreedyProbes].
type Options struct {
	// K is the number of results per page (p in the paper §5.1); required.
	K int
	// Method is MethodAllPages (1) or MethodFirstPage (2); 0 means 1.
	Method Method
	// Quota is the maximum number of requests (Algorithm 2 stopping
	// condition (1)): keyword requests, and with ByID the fetches by id the
	// greedy chooses; 0 means unlimited (stop at full coverage, condition
	// (2)). Plan.Fallback, the items left over, is not counted against it.
	Quota int
	// TopK is k of paper §5.3: at every greedy step the candidate keyword
	// set is the TopK most frequent keywords among the uncovered items, and
	// candidates are those keywords and their pairs that co-occur in an
	// uncovered item. If every candidate built from the current top-k is
	// spent while items remain uncovered, those keywords are retired so the
	// next most frequent ones enter. 0 means DefaultTopK. Frequency is a
	// poor proxy for selectivity (frequent title words match millions of
	// server papers, paper §5.3): small TopK with MinSpeedup, or a large
	// TopK, work best on the synthetic corpus of our tests.
	TopK int
	// MaxTerms is the largest query size, 1 or 2; 0 means 2 (paper §5.1).
	MaxTerms int
	// Counts estimates |R_S(q)|; nil means the zero [Counts] (the
	// pessimistic local-ratio fallback for every query).
	Counts Counter
	// Model is the staleness model for F(r;t); the zero value is the
	// paper's ½λt².
	Model Model
	// Score is the efficiency heuristic; the zero value is the paper's
	// Eq. 2.
	Score Score
	// MinSpeedup, when positive, discards a query once π(q) times the
	// number of its matching items not yet covered for certain, per
	// request, falls below it (under Method 1: the items it newly covers
	// per request). The paper has no such rule (Method 1 on a single title
	// word can cost thousands of pages for one item); MinSpeedup = 1 keeps
	// only queries at least as cheap as fetching their items by id. It does
	// not apply to fetches by id.
	MinSpeedup float64
	// ByID makes a fetch by id of each item a candidate of the greedy: one
	// request that synchronises that item for certain, scored like a
	// query (one page's worth of results under ScorePerResult). The quota
	// is then shared between keyword queries and fetches by id, and a
	// keyword query is chosen only while it removes more staleness per
	// request than fetching the stalest item it would reach; the ids chosen
	// are the stalest items no chosen query covers (paper §1.3's fallback,
	// within the quota). Set it when the source can fetch items by id.
	ByID bool
}

func (o Options) normalised() (Options, error) {
	if o.K <= 0 {
		return o, fmt.Errorf("probe: Options.K: results per page must be positive, got %d", o.K)
	}
	if o.Method == 0 {
		o.Method = MethodAllPages
	}
	if o.Method != MethodAllPages && o.Method != MethodFirstPage {
		return o, fmt.Errorf("probe: Options.Method: must be 1 (all pages) or 2 (first page), got %d", o.Method)
	}
	if o.Quota < 0 {
		return o, fmt.Errorf("probe: Options.Quota: must be ≥ 0 (0 = unlimited), got %d", o.Quota)
	}
	if o.TopK < 0 {
		return o, fmt.Errorf("probe: Options.TopK: must be ≥ 0 (0 = default %d), got %d", DefaultTopK, o.TopK)
	}
	if o.TopK == 0 {
		o.TopK = DefaultTopK
	}
	if o.MaxTerms < 0 || o.MaxTerms > 2 {
		return o, fmt.Errorf("probe: Options.MaxTerms: must be 1 or 2 (0 = 2), got %d", o.MaxTerms)
	}
	if o.MaxTerms == 0 {
		o.MaxTerms = 2
	}
	if !o.Model.valid() {
		return o, fmt.Errorf("probe: Options.Model: unknown model %d", int(o.Model))
	}
	if o.Score != ScorePerResult && o.Score != ScorePerRequest {
		return o, fmt.Errorf("probe: Options.Score: unknown score %d", int(o.Score))
	}
	if math.IsNaN(o.MinSpeedup) || o.MinSpeedup < 0 || math.IsInf(o.MinSpeedup, 0) {
		return o, fmt.Errorf("probe: Options.MinSpeedup: must be finite and ≥ 0, got %v", o.MinSpeedup)
	}
	if o.Counts == nil {
		o.Counts = Counts{}
	}
	return o, nil
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

func validateItems(items []Item, now float64) error {
	if !finite(now) {
		return fmt.Errorf("probe: now: must be finite, got %v", now)
	}
	seen := make(map[string]int, len(items))
	for i, it := range items {
		switch {
		case it.ID == "":
			return fmt.Errorf("probe: items[%d].ID: empty", i)
		case !finite(it.Weight) || it.Weight < 0:
			return fmt.Errorf("probe: items[%d].Weight (id %q): must be finite and ≥ 0, got %v", i, it.ID, it.Weight)
		case !finite(it.Rate) || it.Rate < 0:
			return fmt.Errorf("probe: items[%d].Rate (id %q): must be finite and ≥ 0, got %v", i, it.ID, it.Rate)
		case !finite(it.LastSync):
			return fmt.Errorf("probe: items[%d].LastSync (id %q): must be finite, got %v", i, it.ID, it.LastSync)
		}
		if j, dup := seen[it.ID]; dup {
			return fmt.Errorf("probe: items[%d].ID: %q duplicates items[%d]", i, it.ID, j)
		}
		seen[it.ID] = i
	}
	return nil
}

// PlannedQuery is one query chosen by [GreedyProbes], with the figures
// that justified it.
type PlannedQuery struct {
	Query Query
	// ServerCount is the (sanitised) estimate of |R_S(q)|.
	ServerCount float64
	// LocalCount is |R_L(q)| over the whole local relation.
	LocalCount int
	// Requests is N(q): ⌈|R_S(q)|/K⌉ under Method 1, 1 under Method 2.
	Requests int
	// CoverProb is π(q), the probability that a matching local item is
	// obtained: 1 under Method 1, min(1, K/|R_S(q)|) under Method 2.
	CoverProb float64
	// Efficiency is the greedy score at selection time (see [Score]).
	Efficiency float64
	// Gain is the expected weighted staleness Σ w(r)F(r;t) this query
	// removes, given the queries chosen before it.
	Gain float64
	// Group is g_i of paper §4.3: ids of the items this query is the first
	// chosen query to reach, so the groups of a plan are disjoint ("we can
	// artificially remove duplicates"), in input order.
	Group []string
	// ExpectedCoverage is the expected number of items this query newly
	// covers (E_coverage, paper §5.1, restricted to not-yet-covered items).
	ExpectedCoverage float64
}

// Report gives the figures of one planning round (paper §5.1 performance
// measures).
type Report struct {
	// Items is |L|.
	Items int
	// Covered counts items covered with certainty by the keyword queries
	// (fetches by id are not counted here or in the coverage and speedup
	// ratios, which measure the queries as the paper's §5.1 does).
	Covered int
	// ExpectedCovered is Σ_r P(r obtained by some query); equals Covered
	// under Method 1.
	ExpectedCovered float64
	// CoverageRatio is Σ_q E_coverage(q) / |L| over the disjoint groups
	// (§5.1).
	CoverageRatio float64
	// Requests is Σ_q N(q), the keyword requests used.
	Requests int
	// ByIDRequests is the number of fetches by id the greedy chose
	// (len(Plan.ByID)); Requests + ByIDRequests ≤ Quota if set.
	ByIDRequests int
	// SpeedupRatio is ExpectedCovered / Requests: the id fetches the
	// covered items would have needed per keyword request actually spent.
	// The paper's §5.1 prints the reciprocal, Σ N(q) / |∪ R_L(q)|, but
	// calls it the speedup "between these two methods" and wants it high,
	// so we use the orientation where larger is better (> 1 beats
	// fetch-by-id). Under Method 2 the numerator is the expected coverage
	// rather than |∪ R_L(q)|, which would credit items the first page
	// probably misses. 0 when no request is planned.
	SpeedupRatio float64
	// ExpectedFallbackRequests is Σ_r P(r not obtained) over the items no
	// chosen fetch by id reaches: the expected id fetches still needed,
	// len(Fallback) plus the Uncertain items' miss probabilities.
	ExpectedFallbackRequests float64
	// FreshnessBefore is the expected content freshness F(L; now).
	FreshnessBefore float64
	// FreshnessAfterQueries is the expected content freshness right after
	// the keyword queries and the chosen fetches by id, under the paper's
	// §4.1 assumption that they run instantaneously, before any Fallback
	// fetch.
	FreshnessAfterQueries float64
}

// Plan is the outcome of one [GreedyProbes] round.
type Plan struct {
	// Queries are the chosen queries in greedy (selection) order. Send them
	// in the order given by [Order] (paper §4.3).
	Queries []PlannedQuery
	// ByID lists the fetches by id the greedy chose (Options.ByID), in
	// selection order: stalest first. They count against the quota.
	ByID []string
	// Fallback lists, in input order, the ids of items neither a chosen
	// query nor a chosen fetch by id reaches: without Options.ByID and a
	// quota, fetch each by id (one request each); with them, these are the
	// items the quota left for a later round.
	Fallback []string
	// Uncertain lists, in input order, items reached only by Method 2
	// first pages with π < 1: fetch them by id if the pages actually read
	// did not contain them. Always empty under Method 1.
	Uncertain []string
	// Slots are the units of one refresh loop in plan order — one per
	// keyword query (its Group), then one per ByID id, then one per
	// Fallback id — with Σ w·λ of each group, ready for [Order],
	// [LoopFreshness] and the §4.4 interval search. Uncertain items count
	// in the group of the first query that reaches them.
	Slots []Slot
	// Model and Items (|L|) are recorded for the interval search.
	Model  Model
	Items  int
	Report Report
}

// GreedyProbes chooses keyword queries for one refresh event (paper
// Algorithm 2). At every step it takes the TopK most frequent keywords
// among the uncovered items, forms their single-keyword queries and the
// pairs that co-occur in some uncovered item, adds a fetch by id of every
// uncovered item when Options.ByID is set, and picks the candidate of
// highest efficiency (Eq. 2 by default, see [Score]) — until Quota
// requests are spent, every item is covered, or no candidate can cover
// anything more. On equal efficiency a keyword query is preferred to a
// fetch by id: it costs the same and its result page shows the query's
// total, which sharpens later estimates. Items nothing reaches are
// returned as Plan.Fallback.
//
// The implementation is an exact greedy, not an approximation of one:
// each candidate's numerator Σ P(uncovered)·w·F is kept current by
// subtracting an item's contribution from the candidates containing it
// when it is covered, and the candidates live in an indexed max-heap that
// is re-sifted on every change. Because candidate gains only ever decrease
// (coverage is monotone submodular), a candidate that is unaffordable for
// the remaining quota, or below MinSpeedup, is discarded for good.
// Keyword frequencies are kept in a bucketed array so that the top-k set
// is updated in O(1) per covered keyword occurrence.
//
// Server counts are sanitised: a count below |R_L(q)| (impossible, since
// L ⊆ S) is raised to |R_L(q)|, counts are at least 1, and a NaN or +Inf
// count marks the query unusable (it could never be read in full, and its
// first page reaches a local item with probability 0).
func GreedyProbes(items []Item, now float64, opts Options) (Plan, error) {
	o, err := opts.normalised()
	if err != nil {
		return Plan{}, err
	}
	if err := validateItems(items, now); err != nil {
		return Plan{}, err
	}
	g := newGreedy(items, now, o)
	g.run()
	return g.plan(), nil
}

// cand is a candidate query, or a fetch by id (a < 0, post = the item).
type cand struct {
	a, b    int32 // keyword ids; b < 0 for a single keyword; a < 0 for a fetch by id
	key     string
	post    []int32 // indices of all local items matching the query
	rs      float64 // |R_S(q)|
	cost    int     // N(q)
	pi      float64 // π(q)
	sum     float64 // Σ_{r∈post} miss[r]·val[r]
	live    int32   // #{r ∈ post : miss[r] > 0}
	score   float64
	liveEff float64 // π·live/cost, tie-breaker
	hidx    int32   // heap position, -1 if absent
	dead    bool    // chosen or discarded; never re-enters the heap
}

type greedy struct {
	o     Options
	items []Item
	val   []float64 // w(r)·E[F(r;now)]
	miss  []float64 // P(r not yet obtained)
	owner []int32   // index into chosen of the first query reaching r, -1 if none
	kwOf  [][]int32
	names []string
	post  [][]int32

	// Keyword frequencies among not-fully-covered items, kept sorted in
	// descending order: bound[f] = number of keywords with freq ≥ f, so
	// bucket f occupies order[bound[f+1]:bound[f]].
	freq  []int32
	order []int32
	pos   []int32
	bound []int32
	inTop []bool

	touched   []int32
	isTouched []bool

	open  [][]int32 // per keyword, items possibly not fully covered (lazily compacted)
	seen  []uint32  // per keyword, stamp of the last enter that paired it
	stamp uint32

	cands     []cand
	byKey     map[uint64]int32
	kwCands   [][]int32
	itemCands [][]int32
	heap      []int32
	kwInHeap  int       // keyword candidates in the heap (the rest are fetches by id)
	viaID     []bool    // item reached by a chosen fetch by id
	missAtID  []float64 // its miss probability when the fetch was chosen
	byID      []int32   // chosen fetches by id, items in selection order

	remaining int // quota left; -1 unlimited
	uncovered int // items with miss > 0
	chosen    []PlannedQuery
	requests  int
}

func newGreedy(items []Item, now float64, o Options) *greedy {
	n := len(items)
	g := &greedy{
		o:         o,
		items:     items,
		val:       make([]float64, n),
		miss:      make([]float64, n),
		owner:     make([]int32, n),
		viaID:     make([]bool, n),
		missAtID:  make([]float64, n),
		kwOf:      make([][]int32, n),
		itemCands: make([][]int32, n),
		byKey:     make(map[uint64]int32),
		remaining: -1,
		uncovered: n,
	}
	if o.Quota > 0 {
		g.remaining = o.Quota
	}
	ids := make(map[string]int32)
	for i, it := range items {
		g.val[i] = ItemFreshness(it, now, o.Model)
		g.miss[i] = 1
		g.owner[i] = -1
		kws := make([]int32, 0, len(it.Keywords))
		for _, k := range it.Keywords {
			if k == "" {
				continue
			}
			id, ok := ids[k]
			if !ok {
				id = int32(len(g.names))
				ids[k] = id
				g.names = append(g.names, k)
				g.post = append(g.post, nil)
			}
			if l := len(g.post[id]); l > 0 && g.post[id][l-1] == int32(i) {
				continue // duplicate keyword within the item
			}
			g.post[id] = append(g.post[id], int32(i))
			kws = append(kws, id)
		}
		g.kwOf[i] = kws
	}
	v := len(g.names)
	g.freq = make([]int32, v)
	g.order = make([]int32, v)
	g.pos = make([]int32, v)
	g.inTop = make([]bool, v)
	g.isTouched = make([]bool, v)
	g.kwCands = make([][]int32, v)
	g.seen = make([]uint32, v)
	g.open = make([][]int32, v)
	for k, p := range g.post {
		g.open[k] = append([]int32(nil), p...)
	}
	maxF := int32(0)
	for k := range g.names {
		g.freq[k] = int32(len(g.post[k]))
		g.order[k] = int32(k)
		maxF = max(maxF, g.freq[k])
	}
	// Deterministic initial order: frequency descending, then keyword.
	sort.Slice(g.order, func(i, j int) bool {
		a, b := g.order[i], g.order[j]
		if g.freq[a] != g.freq[b] {
			return g.freq[a] > g.freq[b]
		}
		return g.names[a] < g.names[b]
	})
	for p, k := range g.order {
		g.pos[k] = int32(p)
	}
	g.bound = make([]int32, maxF+2)
	for _, k := range g.order {
		for f := int32(0); f <= g.freq[k]; f++ {
			g.bound[f]++
		}
	}
	return g
}

func (g *greedy) eligible(k int32) bool {
	return int(g.pos[k]) < g.o.TopK && g.freq[k] > 0
}

// decrement lowers a keyword's frequency by one, keeping order sorted.
func (g *greedy) decrement(k int32) {
	f := g.freq[k]
	if f <= 0 {
		return
	}
	p, q := g.pos[k], g.bound[f]-1
	other := g.order[q]
	g.order[p], g.order[q] = other, k
	g.pos[other], g.pos[k] = p, q
	g.bound[f]--
	g.freq[k]--
	g.touch(k)
	g.touch(other)
}

func (g *greedy) touch(k int32) {
	if !g.isTouched[k] {
		g.isTouched[k] = true
		g.touched = append(g.touched, k)
	}
}

func pairKey(a, b int32) uint64 {
	if b < 0 {
		return uint64(uint32(a))<<32 | math.MaxUint32
	}
	if b < a {
		a, b = b, a
	}
	return uint64(uint32(a))<<32 | uint64(uint32(b))
}

// intersect returns the items of the shorter posting list of a and b that
// also carry the other keyword: O(min(|a|,|b|)·keywords per item) rather
// than a merge over both lists, which matters for frequent title words.
func (g *greedy) intersect(a, b int32) []int32 {
	x := g.post[a]
	if len(g.post[b]) < len(x) {
		x, a, b = g.post[b], b, a
	}
	var out []int32
	for _, r := range x {
		for _, k := range g.kwOf[r] {
			if k == b {
				out = append(out, r)
				break
			}
		}
	}
	return out
}

// candidate returns the id of the candidate for keywords a (and b ≥ 0),
// creating it if needed.
func (g *greedy) candidate(a, b int32) int32 {
	key := pairKey(a, b)
	if id, ok := g.byKey[key]; ok {
		return id
	}
	var q Query
	var post []int32
	if b < 0 {
		q, post = Single(g.names[a]), g.post[a]
	} else {
		q, post = Pair(g.names[a], g.names[b]), g.intersect(a, b)
	}
	local := len(post)
	rs := g.o.Counts.ServerCount(q, local)
	switch {
	case math.IsNaN(rs):
		rs = math.Inf(1)
	case rs < float64(local):
		rs = float64(local)
	}
	rs = max(rs, 1)
	c := cand{a: a, b: b, key: q.A + "\x00" + q.B, post: post, rs: rs, cost: 1, pi: 1, hidx: -1}
	if g.o.Method == MethodAllPages {
		pages := math.Ceil(rs / float64(g.o.K))
		if pages > maxCost || math.IsNaN(pages) {
			pages = maxCost
		}
		c.cost = int(pages)
	} else {
		c.pi = min(1, float64(g.o.K)/rs)
	}
	id := int32(len(g.cands))
	for _, r := range post {
		if g.miss[r] > 0 {
			c.sum += g.miss[r] * g.val[r]
			c.live++
		}
		g.itemCands[r] = append(g.itemCands[r], id)
	}
	g.cands = append(g.cands, c)
	g.rescore(&g.cands[id])
	g.byKey[key] = id
	g.kwCands[a] = append(g.kwCands[a], id)
	if b >= 0 {
		g.kwCands[b] = append(g.kwCands[b], id)
	}
	return id
}

func (g *greedy) rescore(c *cand) {
	if c.live <= 0 || c.sum < 0 {
		c.sum = 0
	}
	cost := float64(c.cost)
	c.score = c.pi * c.sum / cost
	if g.o.Score == ScorePerResult {
		// Per result slot of the pages read (see ScorePerResult).
		c.score /= float64(g.o.K)
	}
	c.liveEff = c.pi * float64(c.live) / cost
}

// idCandidates adds a fetch by id of every item (Options.ByID) to the
// heap. They never leave it except when chosen or spent.
func (g *greedy) idCandidates() {
	for r := range g.items {
		id := int32(len(g.cands))
		c := cand{a: -1, b: -1, key: "\xff" + g.items[r].ID, post: []int32{int32(r)}, rs: 1, cost: 1, pi: 1, hidx: -1}
		if g.miss[r] > 0 {
			c.sum, c.live = g.miss[r]*g.val[r], 1
		}
		g.itemCands[r] = append(g.itemCands[r], id)
		g.cands = append(g.cands, c)
		g.rescore(&g.cands[id])
		g.push(id)
	}
}

// enter makes keyword k's candidates available: its single query and its
// pairs with the other top-k keywords that co-occur in an uncovered item.
func (g *greedy) enter(k int32) {
	g.candidate(k, -1)
	if g.o.MaxTerms >= 2 {
		// Compact the keyword's list of not-fully-covered items in place
		// (amortised: each item is dropped once per keyword), and visit each
		// co-occurring partner once.
		g.stamp++
		open := g.open[k][:0]
		for _, r := range g.open[k] {
			if g.miss[r] == 0 {
				continue
			}
			open = append(open, r)
			for _, o := range g.kwOf[r] {
				if o != k && g.inTop[o] && g.seen[o] != g.stamp {
					g.seen[o] = g.stamp
					g.candidate(k, o)
				}
			}
		}
		g.open[k] = open
	}
	for _, id := range g.kwCands[k] {
		c := &g.cands[id]
		if c.dead || c.hidx >= 0 || !g.inTop[c.a] || (c.b >= 0 && !g.inTop[c.b]) {
			continue
		}
		g.push(id)
	}
}

func (g *greedy) exit(k int32) {
	for _, id := range g.kwCands[k] {
		if g.cands[id].hidx >= 0 {
			g.remove(int(g.cands[id].hidx))
		}
	}
}

// refreshTop applies the top-k membership changes of touched keywords.
func (g *greedy) refreshTop() {
	var in, out []int32
	for _, k := range g.touched {
		g.isTouched[k] = false
		if e := g.eligible(k); e != g.inTop[k] {
			g.inTop[k] = e
			if e {
				in = append(in, k)
			} else {
				out = append(out, k)
			}
		}
	}
	g.touched = g.touched[:0]
	for _, k := range out {
		g.exit(k)
	}
	for _, k := range in {
		g.enter(k)
	}
}

func (g *greedy) run() {
	for _, k := range g.order {
		if !g.eligible(k) {
			break
		}
		g.inTop[k] = true
	}
	for _, k := range g.order {
		if !g.inTop[k] {
			break
		}
		g.enter(k)
	}
	if g.o.ByID {
		g.idCandidates()
	}
	for g.uncovered > 0 && g.remaining != 0 {
		// With fetches by id in the heap it is never empty while items
		// are uncovered, so a stalled top-k shows as no keyword candidate
		// left in it.
		if g.kwInHeap == 0 && g.retireTop() {
			continue
		}
		if len(g.heap) == 0 {
			break
		}
		id := g.heap[0]
		g.remove(0)
		c := &g.cands[id]
		c.dead = true
		switch {
		case c.live == 0 || c.liveEff <= 0 || math.IsInf(c.rs, 1):
			continue // reaches nothing, or can never be read in full
		case g.remaining > 0 && c.cost > g.remaining:
			continue
		case c.a >= 0 && g.o.MinSpeedup > 0 && c.liveEff < g.o.MinSpeedup:
			continue
		}
		if c.a < 0 {
			g.chooseID(id)
		} else {
			g.choose(id)
		}
		g.refreshTop()
	}
}

// chooseID takes the fetch by id of candidate id's item.
func (g *greedy) chooseID(id int32) {
	r := g.cands[id].post[0]
	g.byID = append(g.byID, r)
	g.viaID[r], g.missAtID[r] = true, g.miss[r]
	if g.remaining > 0 {
		g.remaining--
	}
	g.cover(r, g.miss[r], 0)
}

// cover lowers item r's miss probability from old to nw, updating every
// candidate containing it and, once r is covered for certain, the keyword
// frequencies.
func (g *greedy) cover(r int32, old, nw float64) {
	covered := nw == 0
	if covered {
		g.uncovered--
		for _, k := range g.kwOf[r] {
			g.decrement(k)
		}
	}
	g.miss[r] = nw
	dv := (old - nw) * g.val[r]
	for _, oid := range g.itemCands[r] {
		o := &g.cands[oid]
		o.sum -= dv
		if covered {
			o.live--
		}
		g.rescore(o)
		if o.hidx >= 0 {
			g.fix(int(o.hidx))
		}
	}
}

// retireTop handles a stalled top-k: every candidate built from the
// current top-k keywords is spent (chosen, unaffordable, below MinSpeedup
// or reaching nothing) while items remain uncovered. Those keywords are
// retired from the frequency ranking (their frequency is drained to zero)
// so the next most frequent keywords enter, as Algorithm 2 line 4 would
// find them among the uncovered items. It reports whether any keyword was
// retired; each call retires at least one, so the search terminates.
func (g *greedy) retireTop() bool {
	var top []int32
	for _, k := range g.order[:min(g.o.TopK, len(g.order))] {
		if g.inTop[k] {
			top = append(top, k)
		}
	}
	if len(top) == 0 {
		return false
	}
	for _, k := range top {
		for g.freq[k] > 0 {
			g.decrement(k)
		}
	}
	g.refreshTop()
	return true
}

func (g *greedy) choose(id int32) {
	c := &g.cands[id]
	qi := int32(len(g.chosen))
	pq := PlannedQuery{
		Query:       Pair(g.names[c.a], ""),
		ServerCount: c.rs,
		LocalCount:  len(c.post),
		Requests:    c.cost,
		CoverProb:   c.pi,
		Efficiency:  c.score,
		Gain:        c.pi * c.sum,
	}
	if c.b >= 0 {
		pq.Query = Pair(g.names[c.a], g.names[c.b])
	}
	g.requests += c.cost
	if g.remaining > 0 {
		g.remaining -= c.cost
	}
	for _, r := range c.post {
		old := g.miss[r]
		if old == 0 {
			continue
		}
		if g.owner[r] < 0 {
			g.owner[r] = qi
			pq.Group = append(pq.Group, g.items[r].ID)
		}
		delta, nw := old, 0.0
		if c.pi < 1 {
			delta = old * c.pi
			nw = max(old-delta, 0)
		}
		pq.ExpectedCoverage += delta
		g.cover(r, old, nw)
	}
	g.chosen = append(g.chosen, pq)
}

func (g *greedy) plan() Plan {
	p := Plan{Queries: g.chosen, Model: g.o.Model, Items: len(g.items)}
	rep := Report{Items: len(g.items), Requests: g.requests, ByIDRequests: len(g.byID)}
	var before, after float64
	for i, it := range g.items {
		before += g.val[i]
		after += g.val[i] * g.miss[i]
		switch {
		case g.viaID[i]:
			// Only Method 2 can reach an item by query before its fetch
			// by id is chosen; the query's share is what it had then.
			if g.owner[i] >= 0 {
				rep.ExpectedCovered += 1 - g.missAtID[i]
			}
		case g.miss[i] == 0:
			rep.Covered++
			rep.ExpectedCovered++
		case g.owner[i] < 0:
			p.Fallback = append(p.Fallback, it.ID)
			rep.ExpectedFallbackRequests += g.miss[i]
		default:
			p.Uncertain = append(p.Uncertain, it.ID)
			rep.ExpectedCovered += 1 - g.miss[i]
			rep.ExpectedFallbackRequests += g.miss[i]
		}
	}
	// Slots: one per query group, then one per fetch by id, then one per
	// fallback item. An item fetched by id is synchronised by that fetch
	// for certain, so it counts in its id slot, not in a query's group.
	p.Slots = make([]Slot, 0, len(g.chosen)+len(g.byID)+len(p.Fallback))
	for i := range g.chosen {
		p.Slots = append(p.Slots, Slot{Query: g.chosen[i].Query, Requests: g.chosen[i].Requests})
	}
	for _, r := range g.byID {
		it := g.items[r]
		p.ByID = append(p.ByID, it.ID)
		p.Slots = append(p.Slots, Slot{ID: it.ID, Items: []string{it.ID}, WeightRate: it.Weight * it.Rate, Requests: 1})
	}
	for i, it := range g.items {
		wr := it.Weight * it.Rate
		switch o := g.owner[i]; {
		case g.viaID[i]:
		case o >= 0:
			p.Slots[o].Items = append(p.Slots[o].Items, it.ID)
			p.Slots[o].WeightRate += wr
		default:
			p.Slots = append(p.Slots, Slot{ID: it.ID, Items: []string{it.ID}, WeightRate: wr, Requests: 1})
		}
	}
	if n := float64(len(g.items)); n > 0 {
		rep.CoverageRatio = rep.ExpectedCovered / n
		rep.FreshnessBefore = before / n
		rep.FreshnessAfterQueries = after / n
	}
	if rep.Requests > 0 {
		rep.SpeedupRatio = rep.ExpectedCovered / float64(rep.Requests)
	}
	p.Report = rep
	return p
}

// Indexed max-heap over candidate ids ordered by better.

func (g *greedy) better(x, y int32) bool {
	a, b := &g.cands[x], &g.cands[y]
	if a.score != b.score {
		// A keyword query beats a fetch by id of the same efficiency (see
		// GreedyProbes). Sums kept incrementally carry rounding error, so
		// "the same" allows a relative 1e-9.
		if (a.a < 0) != (b.a < 0) && nearlyEqual(a.score, b.score) {
			return a.a >= 0
		}
		return a.score > b.score
	}
	if a.liveEff != b.liveEff {
		return a.liveEff > b.liveEff
	}
	return a.key < b.key
}

func nearlyEqual(a, b float64) bool { return math.Abs(a-b) <= 1e-9*max(math.Abs(a), math.Abs(b)) }

func (g *greedy) swap(i, j int) {
	g.heap[i], g.heap[j] = g.heap[j], g.heap[i]
	g.cands[g.heap[i]].hidx = int32(i)
	g.cands[g.heap[j]].hidx = int32(j)
}

func (g *greedy) up(i int) bool {
	moved := false
	for i > 0 {
		p := (i - 1) / 2
		if !g.better(g.heap[i], g.heap[p]) {
			break
		}
		g.swap(i, p)
		i = p
		moved = true
	}
	return moved
}

func (g *greedy) down(i int) {
	n := len(g.heap)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && g.better(g.heap[r], g.heap[l]) {
			m = r
		}
		if !g.better(g.heap[m], g.heap[i]) {
			return
		}
		g.swap(i, m)
		i = m
	}
}

func (g *greedy) push(id int32) {
	if g.cands[id].a >= 0 {
		g.kwInHeap++
	}
	g.heap = append(g.heap, id)
	g.cands[id].hidx = int32(len(g.heap) - 1)
	g.up(len(g.heap) - 1)
}

func (g *greedy) remove(i int) {
	last := len(g.heap) - 1
	id := g.heap[i]
	if i != last {
		g.swap(i, last)
	}
	g.heap = g.heap[:last]
	g.cands[id].hidx = -1
	if g.cands[id].a >= 0 {
		g.kwInHeap--
	}
	if i < last {
		g.fix(i)
	}
}

func (g *greedy) fix(i int) {
	if !g.up(i) {
		g.down(i)
	}
}
