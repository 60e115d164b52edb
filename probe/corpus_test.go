package probe

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

// corpus is a synthetic citation data set after the paper's §5.2.
type corpus struct {
	items   []Item
	now     float64
	counter CounterFunc
	groups  int
	// authorOnly is Σ_g ⌈|R_S(author g)|/K⌉ for K = 10: the Method 1 cost of
	// the plan that sends one author query per group.
	authorOnly int
}

const (
	corpusVocab   = 2000      // title vocabulary
	corpusWords   = 6         // distinct title words per paper
	corpusServer  = 2_000_000 // papers on the server
	corpusMaxSize = 10        // papers per author group (§5.2: at most 10)
)

// paperCorpus generates n papers as in §5.2:
//
//   - initial citations from N_C(x) = 2/x³, x ≥ 1. Its CDF is 1 − x⁻², so
//     by inversion x = (1−u)^(−1/2) for u uniform in [0,1); the count is
//     ⌊x⌋ (at least one citation, the paper's minimum).
//   - λ = a quarter of the initial count (attachment rate A_k = 0.25k) and
//     weight w = the count (§3.1's example weight).
//   - n/5 author groups (200 for 1000 papers), at most 10 papers each, 5 on
//     average: papers draw a group uniformly, redrawing when it is full.
//     Every paper of a group carries the group's author keyword.
//   - six distinct title words from a Zipf(1) vocabulary of 2000 words.
//   - last syncs uniform in [0, 10), planning time 10.
//
// Server counts: an author has its local papers plus U{0..10} more on the
// server; a title word w matches 6·S·p(w) of S = 2·10⁶ server papers; two
// words co-occur in 30·S·p(a)p(b); an author and a word in the local
// matches plus the author's extra papers that contain the word in
// expectation. Every count is at least the local count.
func paperCorpus(seed uint64, n int) corpus {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	groups := max(n/5, 1)
	size := make([]int, groups)
	extra := make([]int, groups)
	for g := range extra {
		extra[g] = rng.IntN(11)
	}
	// Zipf(1) over the vocabulary.
	p := make([]float64, corpusVocab)
	cum := make([]float64, corpusVocab)
	var z float64
	for j := range p {
		p[j] = 1 / float64(j+1)
		z += p[j]
	}
	var acc float64
	prob := map[string]float64{}
	for j := range p {
		p[j] /= z
		acc += p[j]
		cum[j] = acc
		prob[fmt.Sprintf("w%d", j)] = p[j]
	}
	authorOf := map[string]int{}
	c := corpus{now: 10, groups: groups}
	for i := range n {
		g := rng.IntN(groups)
		for size[g] >= corpusMaxSize {
			g = rng.IntN(groups)
		}
		size[g]++
		x := math.Floor(math.Pow(1-rng.Float64(), -0.5))
		author := fmt.Sprintf("au%d", g)
		authorOf[author] = g
		kws := []string{author}
		seen := map[int]bool{}
		for len(seen) < corpusWords {
			j := sort.SearchFloat64s(cum, rng.Float64())
			j = min(j, corpusVocab-1)
			if !seen[j] {
				seen[j] = true
				kws = append(kws, fmt.Sprintf("w%d", j))
			}
		}
		c.items = append(c.items, Item{
			ID:       fmt.Sprintf("paper%04d", i),
			Keywords: kws,
			Weight:   x,
			Rate:     x / 4,
			LastSync: 10 * rng.Float64(),
		})
	}
	for g := range groups {
		if size[g] > 0 {
			c.authorOnly += (size[g] + extra[g] + 9) / 10
		}
	}
	c.counter = func(q Query, local int) float64 {
		ga, aAuthor := authorOf[q.A]
		gb, bAuthor := authorOf[q.B]
		var s float64
		switch {
		case q.B == "" && aAuthor:
			s = float64(size[ga] + extra[ga])
		case q.B == "":
			s = 6 * corpusServer * prob[q.A]
		case aAuthor && bAuthor:
			s = 0
		case aAuthor:
			s = float64(local) + float64(extra[ga])*6*prob[q.B]
		case bAuthor:
			s = float64(local) + float64(extra[gb])*6*prob[q.A]
		default:
			s = 30 * corpusServer * prob[q.A] * prob[q.B]
		}
		return max(math.Round(s), float64(local))
	}
	return c
}

func TestPaperCorpus(t *testing.T) {
	c := paperCorpus(1, 1000)
	if len(c.items) != 1000 {
		t.Fatalf("%d items", len(c.items))
	}
	// The §5.2 grouping experiment queries the author attribute only
	// ("the papers in a group are synchronized by one query together");
	// §5.3 also searches titles. Run both.
	authors := make([]Item, len(c.items))
	for i, it := range c.items {
		it.Keywords = it.Keywords[:1]
		authors[i] = it
	}
	type run struct {
		name  string
		items []Item
		opts  Options
	}
	runs := []run{
		{"author/m1/eq2", authors, Options{Method: MethodAllPages}},
		{"author/m2/eq2", authors, Options{Method: MethodFirstPage}},
		{"author/m1/eq2/quota100", authors, Options{Method: MethodAllPages, Quota: 100}},
		{"all/m1/eq2/top100", c.items, Options{Method: MethodAllPages}},
		{"all/m2/eq2/top100", c.items, Options{Method: MethodFirstPage}},
		{"all/m1/eq2/topAll", c.items, Options{Method: MethodAllPages, TopK: 1 << 20}},
		{"all/m1/req/topAll", c.items, Options{Method: MethodAllPages, TopK: 1 << 20, Score: ScorePerRequest}},
		{"all/m1/req/top100/min1", c.items, Options{Method: MethodAllPages, Score: ScorePerRequest, MinSpeedup: 1}},
		{"all/m1/req/top5/min1", c.items, Options{Method: MethodAllPages, TopK: 5, Score: ScorePerRequest, MinSpeedup: 1}},
		{"all/m2/req/top5/min1", c.items, Options{Method: MethodFirstPage, TopK: 5, Score: ScorePerRequest, MinSpeedup: 1}},
	}
	t.Logf("author-only plan: %d requests for 1000 papers, speedup %.2f", c.authorOnly, 1000/float64(c.authorOnly))
	plans := map[string]Plan{}
	for _, r := range runs {
		r.opts.K = 10
		r.opts.Counts = c.counter
		p, err := GreedyProbes(r.items, c.now, r.opts)
		if err != nil {
			t.Fatal(err)
		}
		plans[r.name] = p
		rep := p.Report
		t.Logf("%-24s queries %4d requests %6d coverage %.3f speedup %.2f fallback %3d uncertain %3d F before %.1f after %.2f",
			r.name, len(p.Queries), rep.Requests, rep.CoverageRatio, rep.SpeedupRatio,
			len(p.Fallback), len(p.Uncertain), rep.FreshnessBefore, rep.FreshnessAfterQueries)
		checkCorpusPlan(t, r.name, p, r.opts)
	}
	// Author attribute: the candidates are the 200 author queries and each
	// covers its whole group, so Eq. 2 must pick each exactly once: full
	// coverage at exactly Σ_g ⌈|R_S(g)|/10⌉ requests. An author has at most
	// 10 + 10 server papers, i.e. at most 2 pages, so this is ≤ 400 requests
	// and the speedup is ≥ 1000/400 = 2.5.
	au := plans["author/m1/eq2"].Report
	if au.CoverageRatio != 1 || au.Requests != c.authorOnly || au.SpeedupRatio < 2.5 {
		t.Errorf("author/m1: coverage %v requests %d (want %d) speedup %.2f (want ≥ 2.5)",
			au.CoverageRatio, au.Requests, c.authorOnly, au.SpeedupRatio)
	}
	// Method 2 reads one page per author: fewer requests, partial coverage.
	if m2 := plans["author/m2/eq2"].Report; m2.Requests >= au.Requests || m2.CoverageRatio >= 1 || m2.SpeedupRatio <= au.SpeedupRatio {
		t.Errorf("author/m2: %+v", m2)
	}
	// Titles and authors mixed: with page-aware scoring, MinSpeedup 1 and a
	// small k the greedy must find the author structure again (coverage
	// ≥ 99%, speedup ≥ 2.5, the author-only worst case).
	mix := plans["all/m1/req/top5/min1"].Report
	if mix.CoverageRatio < 0.99 || mix.SpeedupRatio < 2.5 {
		t.Errorf("all/m1/req/top5/min1: coverage %.3f speedup %.2f, want ≥ 0.99 and ≥ 2.5", mix.CoverageRatio, mix.SpeedupRatio)
	}
	// Under a quota the greedy spends it on the stalest groups: it must
	// remove a larger share of staleness than of items.
	q := plans["author/m1/eq2/quota100"].Report
	removed := 1 - q.FreshnessAfterQueries/q.FreshnessBefore
	t.Logf("quota 100: removes %.1f%% of staleness with %.1f%% coverage", 100*removed, 100*q.CoverageRatio)
	if removed <= q.CoverageRatio {
		t.Errorf("quota run removed %.3f of staleness but covered %.3f of items", removed, q.CoverageRatio)
	}

	// §4.3 order on the full plan: ascending a_i, and no worse than random
	// permutations of the same slots.
	p := plans["author/m1/eq2"]
	o := Order(p.Slots, p.Items, 1, p.Model)
	for i := 1; i < len(o); i++ {
		if o[i].A < o[i-1].A {
			t.Fatalf("order not ascending at %d: %v < %v", i, o[i].A, o[i-1].A)
		}
	}
	best4 := LoopFreshness(o, p.Items, 1, p.Model)
	// The greedy sends the stalest group first, which the rearrangement
	// inequality makes the worst place for it (§4.3).
	if greedy := LoopFreshness(p.Slots, p.Items, 1, p.Model); best4 > greedy {
		t.Errorf("ascending a_i gives E[F(L;kI)] = %v, greedy order %v: the order made it worse", best4, greedy)
	}
	rng := rand.New(rand.NewPCG(2, 2))
	for range 20 {
		perm := append([]Slot(nil), p.Slots...)
		rng.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		if f := LoopFreshness(perm, p.Items, 1, p.Model); f < best4 {
			t.Errorf("random order %v beats ascending a_i %v", f, best4)
		}
	}
	// §4.4 on the full plan: the interval found keeps the ordered loop
	// within α and no longer one does. Under ½λt² the loop's freshness is
	// C·I², so the largest interval is √(α/C) with C its value at I = 1.
	alpha := p.Report.FreshnessBefore
	I, err := p.FindInterval(alpha, IntervalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f := func(I float64) float64 { return LoopFreshness(o, p.Items, I, p.Model) }
	if f(I) > alpha || f(I*(1+2e-9)) <= alpha {
		t.Errorf("interval %v: E[F] = %v at I and %v just above, want ≤ α = %v < the latter", I, f(I), f(I*(1+2e-9)), alpha)
	}
	if exact := math.Sqrt(alpha / best4); math.Abs(I-exact) > 1e-8*exact {
		t.Errorf("interval %v, closed form √(α/E[F at I=1]) = %v", I, exact)
	}
	t.Logf("loop of %d slots; E[F(L;kI)] at I=1: %.1f (greedy order %.1f); largest I keeping it ≤ %.1f: %.4g",
		len(o), best4, LoopFreshness(p.Slots, p.Items, 1, p.Model), alpha, I)

	// Eq. 2 over whole result pages ranks exactly as expected staleness per
	// request: the same plan.
	if a, b := queries(plans["all/m1/eq2/topAll"]), queries(plans["all/m1/req/topAll"]); !slices.Equal(a, b) {
		t.Errorf("per result and per request chose different plans: %d vs %d queries", len(a), len(b))
	}
	// Options.TopK's advice: a large TopK, or a small TopK with MinSpeedup,
	// beats the default TopK, whose most frequent title words have whole
	// result lists to read for few items.
	for _, good := range []string{"all/m1/eq2/topAll", "all/m1/req/top5/min1"} {
		if g, b := plans[good].Report.SpeedupRatio, plans["all/m1/eq2/top100"].Report.SpeedupRatio; g <= b {
			t.Errorf("%s speedup %.2f not above all/m1/eq2/top100 %.2f", good, g, b)
		}
	}
}

// checkCorpusPlan checks what must hold of any plan GreedyProbes returns
// for the corpus: its report adds up, it respects the options, and under
// Method 1 with no quota and no MinSpeedup it covers every item.
func checkCorpusPlan(t *testing.T, name string, p Plan, o Options) {
	t.Helper()
	rep := p.Report
	if rep.Items != p.Items || p.Items == 0 {
		t.Errorf("%s: report of %d items, plan of %d", name, rep.Items, p.Items)
	}
	// Every item is covered for sure, reached only by chance (Method 2
	// first pages) or left to a fetch by id.
	if got := rep.Covered + len(p.Uncertain) + len(p.Fallback); got != rep.Items {
		t.Errorf("%s: covered %d + uncertain %d + fallback %d = %d, want %d items", name, rep.Covered, len(p.Uncertain), len(p.Fallback), got, rep.Items)
	}
	requests := 0
	for _, q := range p.Queries {
		requests += q.Requests
		// Under Method 1 a query's expected new coverage is exactly the
		// uncovered items it matches, the figure MinSpeedup bounds.
		if o.Method == MethodAllPages && o.MinSpeedup > 0 && q.ExpectedCoverage/float64(q.Requests) < o.MinSpeedup {
			t.Errorf("%s: query %v covers %.2f items in %d requests, below MinSpeedup %v", name, q.Query, q.ExpectedCoverage, q.Requests, o.MinSpeedup)
		}
	}
	if requests != rep.Requests {
		t.Errorf("%s: queries cost %d requests, report says %d", name, requests, rep.Requests)
	}
	if o.Quota > 0 && rep.Requests > o.Quota {
		t.Errorf("%s: %d requests over quota %d", name, rep.Requests, o.Quota)
	}
	if rep.Requests > 0 && math.Abs(rep.SpeedupRatio-rep.ExpectedCovered/float64(rep.Requests)) > 1e-12 {
		t.Errorf("%s: speedup %v, want expected coverage %v / %d requests", name, rep.SpeedupRatio, rep.ExpectedCovered, rep.Requests)
	}
	if rep.CoverageRatio < 0 || rep.CoverageRatio > 1 || math.Abs(rep.CoverageRatio-rep.ExpectedCovered/float64(rep.Items)) > 1e-12 {
		t.Errorf("%s: coverage ratio %v, expected coverage %v of %d items", name, rep.CoverageRatio, rep.ExpectedCovered, rep.Items)
	}
	if !(rep.FreshnessAfterQueries >= 0 && rep.FreshnessAfterQueries <= rep.FreshnessBefore) {
		t.Errorf("%s: content freshness %v after the queries, %v before", name, rep.FreshnessAfterQueries, rep.FreshnessBefore)
	}
	if o.Method == MethodAllPages {
		if len(p.Uncertain) != 0 || float64(rep.Covered) != rep.ExpectedCovered {
			t.Errorf("%s: Method 1 left %d items uncertain (covered %d, expected %v)", name, len(p.Uncertain), rep.Covered, rep.ExpectedCovered)
		}
		if o.Quota == 0 && o.MinSpeedup == 0 && (rep.Covered != rep.Items || rep.FreshnessAfterQueries != 0) {
			t.Errorf("%s: no quota, yet %d of %d items covered (F after %v)", name, rep.Covered, rep.Items, rep.FreshnessAfterQueries)
		}
	}
}

// tinyInstance draws a small random instance in which every query has at
// most K server results (unit cost, π = 1) unless extra > 0 adds up to
// extra further server results per query.
func tinyInstance(rng *rand.Rand, extra int) ([]Item, CounterFunc) {
	n := 5 + rng.IntN(4)
	items := make([]Item, n)
	for i := range items {
		k := 1 + rng.IntN(3)
		kws := map[string]bool{}
		for len(kws) < k {
			kws[fmt.Sprintf("k%d", rng.IntN(5))] = true
		}
		var ks []string
		for w := range kws {
			ks = append(ks, w)
		}
		sort.Strings(ks)
		items[i] = Item{ID: fmt.Sprint(i), Keywords: ks, Weight: 0.5 + rng.Float64(), Rate: 2 * rng.Float64(), LastSync: rng.Float64()}
	}
	add := map[Query]float64{}
	for a := range 5 {
		for b := a; b < 5; b++ {
			add[Pair(fmt.Sprintf("k%d", a), fmt.Sprintf("k%d", b))] = 0
			if extra > 0 {
				add[Pair(fmt.Sprintf("k%d", a), fmt.Sprintf("k%d", b))] = float64(rng.IntN(extra + 1))
			}
		}
	}
	return items, func(q Query, local int) float64 { return float64(local) + add[q] }
}

// allCandidates lists every single keyword and co-occurring pair with its
// matching items.
func allCandidates(items []Item) map[Query][]int {
	m := map[Query][]int{}
	for i, it := range items {
		for a, ka := range it.Keywords {
			m[Single(ka)] = append(m[Single(ka)], i)
			for _, kb := range it.Keywords[a+1:] {
				m[Pair(ka, kb)] = append(m[Pair(ka, kb)], i)
			}
		}
	}
	return m
}

func coveredValue(items []Item, now float64, sets [][]int) float64 {
	seen := map[int]bool{}
	var v float64
	for _, s := range sets {
		for _, i := range s {
			if !seen[i] {
				seen[i] = true
				v += ItemFreshness(items[i], now, ModelAccumulated)
			}
		}
	}
	return v
}

// With unit costs the quota is a cardinality constraint and greedy max
// coverage is within 1 − 1/e of the optimum (Nemhauser–Wolsey–Fisher); we
// check it by brute force, and that greedy beats random picks on average.
func TestGreedyVersusBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	const now = 1
	var sumGreedy, sumRandom float64
	for trial := range 200 {
		items, counter := tinyInstance(rng, 0)
		cands := allCandidates(items)
		var qs []Query
		for q := range cands {
			qs = append(qs, q)
		}
		sort.Slice(qs, func(i, j int) bool { return qs[i].String() < qs[j].String() })
		budget := 1 + trial%3
		p, err := GreedyProbes(items, now, Options{K: 10, Method: MethodFirstPage, Score: ScorePerRequest, Quota: budget, Counts: counter})
		if err != nil {
			t.Fatal(err)
		}
		var chosen [][]int
		for _, q := range p.Queries {
			chosen = append(chosen, cands[q.Query])
		}
		greedy := coveredValue(items, now, chosen)
		if got := (p.Report.FreshnessBefore - p.Report.FreshnessAfterQueries) * float64(len(items)); math.Abs(got-greedy) > 1e-9 {
			t.Fatalf("trial %d: report gain %v, brute-force value %v", trial, got, greedy)
		}
		// Optimum over all subsets of at most budget queries.
		var opt float64
		var rec func(start int, sets [][]int)
		rec = func(start int, sets [][]int) {
			opt = max(opt, coveredValue(items, now, sets))
			if len(sets) == budget {
				return
			}
			for i := start; i < len(qs); i++ {
				rec(i+1, append(sets, cands[qs[i]]))
			}
		}
		rec(0, nil)
		if greedy < (1-1/math.E)*opt-1e-9 {
			t.Errorf("trial %d: greedy %v < (1−1/e)·opt %v", trial, greedy, opt)
		}
		var rnd float64
		for range 50 {
			perm := rng.Perm(len(qs))
			var sets [][]int
			for _, i := range perm[:min(budget, len(qs))] {
				sets = append(sets, cands[qs[i]])
			}
			rnd += coveredValue(items, now, sets) / 50
		}
		sumGreedy += greedy
		sumRandom += rnd
	}
	t.Logf("unit cost: mean greedy value %.3f vs random %.3f", sumGreedy/200, sumRandom/200)
	if sumGreedy <= sumRandom {
		t.Errorf("greedy %v not better than random %v on average", sumGreedy, sumRandom)
	}
}

// With Method 1 page costs and the paper's Eq. 2 score, greedy should still
// beat random affordable picks on average for the same quota.
func TestGreedyEq2BeatsRandomWithPageCosts(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 11))
	const now, k, budget = 1, 3, 4
	var sumGreedy, sumRandom float64
	for range 200 {
		items, counter := tinyInstance(rng, 8)
		cands := allCandidates(items)
		var qs []Query
		for q := range cands {
			qs = append(qs, q)
		}
		sort.Slice(qs, func(i, j int) bool { return qs[i].String() < qs[j].String() })
		p, err := GreedyProbes(items, now, Options{K: k, Quota: budget, Counts: counter})
		if err != nil {
			t.Fatal(err)
		}
		var chosen [][]int
		for _, q := range p.Queries {
			chosen = append(chosen, cands[q.Query])
		}
		sumGreedy += coveredValue(items, now, chosen)
		for range 50 {
			left := budget
			var sets [][]int
			for _, i := range rng.Perm(len(qs)) {
				cost := int(math.Ceil(counter(qs[i], len(cands[qs[i]])) / k))
				if cost <= left {
					left -= cost
					sets = append(sets, cands[qs[i]])
				}
			}
			sumRandom += coveredValue(items, now, sets) / 50
		}
	}
	t.Logf("page costs, Eq. 2: mean greedy value %.3f vs random %.3f", sumGreedy/200, sumRandom/200)
	if sumGreedy <= sumRandom {
		t.Errorf("greedy %v not better than random %v on average", sumGreedy, sumRandom)
	}
}

func benchmarkGreedy(b *testing.B, n int, opts Options) {
	benchmarkCorpus(b, paperCorpus(3, n), opts)
}

func benchmarkCorpus(b *testing.B, c corpus, opts Options) {
	opts.K = 10
	opts.Counts = c.counter
	b.ReportAllocs()
	var p Plan
	for b.Loop() {
		var err error
		p, err = GreedyProbes(c.items, c.now, opts)
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(p.Queries)), "queries")
	b.ReportMetric(p.Report.SpeedupRatio, "speedup")
}

func BenchmarkGreedyProbes1000(b *testing.B) {
	benchmarkGreedy(b, 1000, Options{})
}

func BenchmarkGreedyProbes10000(b *testing.B) {
	benchmarkGreedy(b, 10000, Options{})
}

// A crawler's round: a quota of 10 requests shared with fetches by id.
func BenchmarkGreedyProbes1000ByIDQuota10(b *testing.B) {
	benchmarkGreedy(b, 1000, Options{ByID: true, Quota: 10})
}

func BenchmarkGreedyProbes10000ByIDQuota100(b *testing.B) {
	benchmarkGreedy(b, 10000, Options{ByID: true, Quota: 100})
}

func BenchmarkGreedyProbes10000PerRequest(b *testing.B) {
	benchmarkGreedy(b, 10000, Options{Score: ScorePerRequest})
}

func BenchmarkGreedyProbes10000Method2(b *testing.B) {
	benchmarkGreedy(b, 10000, Options{Method: MethodFirstPage})
}

// choice is one step of naiveGreedy: a keyword query, or a fetch by id
// (id set).
type choice struct {
	q   Query
	id  string
	eff float64
}

// naiveGreedy recomputes every candidate's score at every step (no top-k
// limit): the reference the incremental heap implementation must match.
func naiveGreedy(items []Item, now float64, o Options) []choice {
	o, _ = o.normalised()
	cands := allCandidates(items)
	miss := make([]float64, len(items))
	for i := range miss {
		miss[i] = 1
	}
	used := map[Query]bool{}
	left := o.Quota
	var out []choice
	score := func(gain float64, cost int) float64 {
		s := gain / float64(cost)
		if o.Score == ScorePerResult {
			s /= float64(o.K)
		}
		return s
	}
	for {
		var best choice
		bestItem := -1
		bestScore, bestEff, bestKey, found := 0.0, 0.0, "", false
		consider := func(c choice, item int, s, eff float64, key string) {
			if found && (item < 0) != (bestItem < 0) && nearlyEqual(s, bestScore) {
				if item < 0 { // a query beats a fetch by id of the same efficiency
					best, bestItem, bestScore, bestEff, bestKey = c, item, s, eff, key
				}
				return
			}
			if !found || s > bestScore || (s == bestScore && (eff > bestEff || (eff == bestEff && key < bestKey))) {
				best, bestItem, bestScore, bestEff, bestKey, found = c, item, s, eff, key, true
			}
		}
		for q, post := range cands {
			if used[q] {
				continue
			}
			rs := max(o.Counts.ServerCount(q, len(post)), float64(len(post)), 1)
			cost, pi := 1, 1.0
			if o.Method == MethodAllPages {
				cost = int(math.Ceil(rs / float64(o.K)))
			} else {
				pi = min(1, float64(o.K)/rs)
			}
			var sum float64
			live := 0
			for _, r := range post {
				if miss[r] > 0 {
					sum += miss[r] * ItemFreshness(items[r], now, o.Model)
					live++
				}
			}
			if live == 0 || (o.Quota > 0 && cost > left) {
				continue
			}
			s := score(pi*sum, cost)
			consider(choice{q: q, eff: s}, -1, s, pi*float64(live)/float64(cost), q.A+"\x00"+q.B)
		}
		if o.ByID {
			for r, it := range items {
				if miss[r] > 0 {
					s := score(miss[r]*ItemFreshness(it, now, o.Model), 1)
					consider(choice{id: it.ID, eff: s}, r, s, 1, "\xff"+it.ID)
				}
			}
		}
		if !found {
			return out
		}
		out = append(out, best)
		if bestItem >= 0 {
			miss[bestItem] = 0
			left--
		} else {
			used[best.q] = true
			post := cands[best.q]
			rs := max(o.Counts.ServerCount(best.q, len(post)), float64(len(post)), 1)
			pi := 1.0
			if o.Method == MethodAllPages {
				left -= int(math.Ceil(rs / float64(o.K)))
			} else {
				pi = min(1, float64(o.K)/rs)
				left--
			}
			for _, r := range post {
				miss[r] -= miss[r] * pi
			}
		}
		if o.Quota > 0 && left == 0 {
			return out
		}
	}
}

// The incremental greedy (indexed heap, incremental sums, bucketed top-k)
// must make choices of the same efficiency as recomputing everything, with
// and without fetches by id among the candidates.
func TestGreedyMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for trial := range 600 {
		items, counter := tinyInstance(rng, 12)
		o := Options{K: 4, Method: Method(1 + trial%2), Score: Score(trial / 2 % 2), Quota: trial % 7, Counts: counter, ByID: trial >= 300}
		p, err := GreedyProbes(items, 1, o)
		if err != nil {
			t.Fatal(err)
		}
		var wantQ []float64
		var wantID []string
		for _, c := range naiveGreedy(items, 1, o) {
			if c.id != "" {
				wantID = append(wantID, c.id)
			} else {
				wantQ = append(wantQ, c.eff)
			}
		}
		if len(p.Queries) != len(wantQ) || !slices.Equal(p.ByID, wantID) {
			t.Fatalf("trial %d %+v: %d queries and ids %v, naive %d and %v", trial, o, len(p.Queries), p.ByID, len(wantQ), wantID)
		}
		for i, q := range p.Queries {
			if math.Abs(q.Efficiency-wantQ[i]) > 1e-9*max(1, wantQ[i]) {
				t.Fatalf("trial %d step %d: efficiency %v, naive %v", trial, i, q.Efficiency, wantQ[i])
			}
		}
		if o.Quota > 0 && p.Report.Requests+p.Report.ByIDRequests > o.Quota {
			t.Fatalf("trial %d: %d + %d requests over quota %d", trial, p.Report.Requests, p.Report.ByIDRequests, o.Quota)
		}
	}
}

// The §5.2 author-group setting at 10 000 papers (2 000 groups).
func BenchmarkGreedyProbes10000Authors(b *testing.B) {
	c := paperCorpus(3, 10000)
	for i := range c.items {
		c.items[i].Keywords = c.items[i].Keywords[:1]
	}
	benchmarkCorpus(b, c, Options{})
}
