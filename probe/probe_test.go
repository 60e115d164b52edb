package probe

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// handItems is an instance whose greedy run can be followed by hand.
// now = 2 and LastSync = 0, so E[F] = ½λ·2² = 2λ and w = 1:
//
//	i1 {alpha, beta}  λ=1   v=2
//	i2 {alpha, beta}  λ=1   v=2
//	i3 {alpha, gamma} λ=3   v=6
//	i4 {delta}        λ=0.5 v=1
//
// With the observed counts below and K = 10, Eq. 2 efficiencies (staleness
// per result slot of the pages read, K·⌈|R_S|/K⌉) are
//
//	alpha 10/30  beta 4/40  gamma 6/10  delta 1/50
//	alpha∧beta 4/10   alpha∧gamma 6/10
//
// so the greedy picks alpha∧gamma (covers i3; it wins the tie with gamma on
// the key), then alpha∧beta (i1, i2; alpha has dropped to 4/30), then
// delta (i4). Method 1 costs are 1, 1 and ⌈50/10⌉ = 5 requests.
func handItems() ([]Item, Counts) {
	items := []Item{
		{ID: "i1", Keywords: []string{"alpha", "beta"}, Weight: 1, Rate: 1},
		{ID: "i2", Keywords: []string{"beta", "alpha"}, Weight: 1, Rate: 1},
		{ID: "i3", Keywords: []string{"alpha", "gamma"}, Weight: 1, Rate: 3},
		{ID: "i4", Keywords: []string{"delta"}, Weight: 1, Rate: 0.5},
	}
	c := Counts{Observed: map[Query]int{
		Single("alpha"): 30, Single("beta"): 40, Single("gamma"): 4, Single("delta"): 50,
		Pair("beta", "alpha"): 2, Pair("alpha", "gamma"): 2,
	}}
	return items, c
}

func queries(p Plan) []Query {
	var qs []Query
	for _, q := range p.Queries {
		qs = append(qs, q.Query)
	}
	return qs
}

func TestGreedyHandInstance(t *testing.T) {
	items, c := handItems()
	p, err := GreedyProbes(items, 2, Options{K: 10, Method: MethodAllPages, Counts: c})
	if err != nil {
		t.Fatal(err)
	}
	want := []Query{Pair("alpha", "gamma"), Pair("alpha", "beta"), Single("delta")}
	if got := queries(p); !reflect.DeepEqual(got, want) {
		t.Fatalf("queries = %v, want %v", got, want)
	}
	effs := []float64{0.6, 0.4, 1.0 / 50}
	groups := [][]string{{"i3"}, {"i1", "i2"}, {"i4"}}
	reqs := []int{1, 1, 5}
	for i, q := range p.Queries {
		if math.Abs(q.Efficiency-effs[i]) > 1e-12 || !reflect.DeepEqual(q.Group, groups[i]) || q.Requests != reqs[i] {
			t.Errorf("query %d = %+v, want efficiency %v group %v requests %d", i, q, effs[i], groups[i], reqs[i])
		}
	}
	r := p.Report
	if r.Requests != 7 || r.Covered != 4 || r.CoverageRatio != 1 || len(p.Fallback) != 0 {
		t.Errorf("report = %+v fallback %v", r, p.Fallback)
	}
	if math.Abs(r.SpeedupRatio-4.0/7) > 1e-12 {
		t.Errorf("speedup = %v, want 4/7", r.SpeedupRatio)
	}
	if want := (2 + 2 + 6 + 1) / 4.0; math.Abs(r.FreshnessBefore-want) > 1e-12 || r.FreshnessAfterQueries != 0 {
		t.Errorf("freshness before %v after %v, want %v and 0", r.FreshnessBefore, r.FreshnessAfterQueries, want)
	}
}

// Full coverage is Algorithm 2's stopping condition (2): once every item is
// covered no further query is chosen even though candidates (alpha, beta,
// gamma) remain.
func TestGreedyStopsAtFullCoverage(t *testing.T) {
	items, c := handItems()
	p, err := GreedyProbes(items[:3], 2, Options{K: 10, Counts: c})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Queries) != 2 || p.Report.CoverageRatio != 1 {
		t.Fatalf("queries %v coverage %v, want 2 queries and full coverage", queries(p), p.Report.CoverageRatio)
	}
}

func TestGreedyQuotaAndFallback(t *testing.T) {
	items, c := handItems()
	for quota := 1; quota <= 8; quota++ {
		p, err := GreedyProbes(items, 2, Options{K: 10, Quota: quota, Counts: c})
		if err != nil {
			t.Fatal(err)
		}
		if p.Report.Requests > quota {
			t.Errorf("quota %d: used %d requests", quota, p.Report.Requests)
		}
		// Fallback must be exactly the items no chosen query matches.
		covered := map[string]bool{}
		for _, q := range p.Queries {
			for _, id := range q.Group {
				covered[id] = true
			}
		}
		var want []string
		for _, it := range items {
			if !covered[it.ID] {
				want = append(want, it.ID)
			}
		}
		if !reflect.DeepEqual(p.Fallback, want) {
			t.Errorf("quota %d: fallback %v, want %v", quota, p.Fallback, want)
		}
		if got := float64(len(p.Fallback)); p.Report.ExpectedFallbackRequests != got {
			t.Errorf("quota %d: expected fallback requests %v, want %v", quota, p.Report.ExpectedFallbackRequests, got)
		}
	}
	// Quota 6: delta (5 requests) no longer fits after the two pairs.
	p, _ := GreedyProbes(items, 2, Options{K: 10, Quota: 6, Counts: c})
	if !reflect.DeepEqual(p.Fallback, []string{"i4"}) || p.Report.Requests != 2 {
		t.Errorf("quota 6: fallback %v requests %d, want [i4] and 2", p.Fallback, p.Report.Requests)
	}
}

// Method 2 reads the first page only: every query costs one request, and
// a query with |R_S| > K reaches a matching item only with π = K/|R_S|.
func TestMethod1VersusMethod2Cost(t *testing.T) {
	items, c := handItems()
	p1, err := GreedyProbes(items, 2, Options{K: 10, Method: MethodAllPages, Counts: c})
	if err != nil {
		t.Fatal(err)
	}
	p2, err := GreedyProbes(items, 2, Options{K: 10, Method: MethodFirstPage, Counts: c})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(queries(p1), queries(p2)) {
		t.Fatalf("same heuristic should pick the same queries: %v vs %v", queries(p1), queries(p2))
	}
	if p1.Report.Requests != 7 || p2.Report.Requests != 3 {
		t.Errorf("requests method1 %d method2 %d, want 7 and 3", p1.Report.Requests, p2.Report.Requests)
	}
	// delta: π = 10/50 = 0.2, so i4 is only expected to be covered.
	if q := p2.Queries[2]; q.CoverProb != 0.2 || q.ExpectedCoverage != 0.2 {
		t.Errorf("delta under method 2: %+v", q)
	}
	if !reflect.DeepEqual(p2.Uncertain, []string{"i4"}) || len(p2.Fallback) != 0 {
		t.Errorf("uncertain %v fallback %v, want [i4] and none", p2.Uncertain, p2.Fallback)
	}
	r := p2.Report
	if math.Abs(r.CoverageRatio-3.2/4) > 1e-12 || math.Abs(r.SpeedupRatio-3.2/3) > 1e-12 || r.Covered != 3 {
		t.Errorf("method 2 report %+v", r)
	}
	if math.Abs(r.FreshnessAfterQueries-0.8*1/4) > 1e-12 {
		t.Errorf("method 2 freshness after = %v, want 0.2", r.FreshnessAfterQueries)
	}
}

// The paper's §4.3 Table 3: λ = (1,2,3,4), w = 1, q1 covers e1,e2 and q2
// covers e3,e4; a1 = 0.375, a2 = 0.875 at I = 1, and sending q1 first
// gives the minimum 0.375 (q2 first gives 0.875).
func TestQueryOrderPaperTable3(t *testing.T) {
	items := []Item{
		{ID: "e1", Keywords: []string{"q1"}, Weight: 1, Rate: 1},
		{ID: "e2", Keywords: []string{"q1"}, Weight: 1, Rate: 2},
		{ID: "e3", Keywords: []string{"q2"}, Weight: 1, Rate: 3},
		{ID: "e4", Keywords: []string{"q2"}, Weight: 1, Rate: 4},
	}
	c := Counts{Observed: map[Query]int{Single("q1"): 2, Single("q2"): 2}}
	p, err := GreedyProbes(items, 1, Options{K: 10, Counts: c})
	if err != nil {
		t.Fatal(err)
	}
	// The greedy picks the stalest group first...
	if got := queries(p); !reflect.DeepEqual(got, []Query{Single("q2"), Single("q1")}) {
		t.Fatalf("greedy order %v", got)
	}
	// ...but §4.3 sends it last.
	o := Order(p.Slots, p.Items, 1, p.Model)
	if o[0].Query != Single("q1") || o[0].A != 0.375 || o[1].A != 0.875 {
		t.Fatalf("order = %+v", o)
	}
	if f := LoopFreshness(o, 4, 1, ModelAccumulated); f != 0.375 {
		t.Errorf("ordered freshness %v, want 0.375", f)
	}
	if f := LoopFreshness(p.Slots, 4, 1, ModelAccumulated); f != 0.875 {
		t.Errorf("greedy-order freshness %v, want 0.875", f)
	}
}

func TestFindIntervalLargest(t *testing.T) {
	items, c := handItems()
	p, err := GreedyProbes(items, 2, Options{K: 10, Counts: c})
	if err != nil {
		t.Fatal(err)
	}
	o := Order(p.Slots, p.Items, 1, p.Model)
	f := func(I float64) float64 { return LoopFreshness(o, p.Items, I, p.Model) }
	const tol = 1e-9
	for _, alpha := range []float64{1e-6, 0.01, 0.5, 3, 1e4} {
		I, err := p.FindInterval(alpha, IntervalOptions{RelTol: tol})
		if err != nil {
			t.Fatal(err)
		}
		if f(I) > alpha || f(I*(1+2*tol)) <= alpha {
			t.Errorf("alpha %v: I=%v f(I)=%v f(I(1+2tol))=%v", alpha, I, f(I), f(I*(1+2*tol)))
		}
		// E[F(L;kI)] = C·I² under ½λt², so I* = √(α/C).
		if exact := math.Sqrt(alpha / f(1)); math.Abs(I-exact) > 4*tol*exact {
			t.Errorf("alpha %v: I=%v, closed form %v", alpha, I, exact)
		}
		// §4.4 verbatim: g = f/(kI|L|) is linear in I, so I* = α/g(1).
		Ip, err := p.FindInterval(alpha, IntervalOptions{RelTol: tol, Criterion: CriterionPaper})
		if err != nil {
			t.Fatal(err)
		}
		g1 := f(1) / (float64(len(o)) * float64(p.Items))
		if exact := alpha / g1; math.Abs(Ip-exact) > 4*tol*exact {
			t.Errorf("alpha %v paper criterion: I=%v, closed form %v", alpha, Ip, exact)
		}
	}
}

func TestFindIntervalEdges(t *testing.T) {
	cube := func(x float64) float64 { return x * x * x }
	I, err := FindInterval(cube, 1e-3, IntervalOptions{Start: 64}) // halving path
	if err != nil || math.Abs(I-0.1) > 1e-9 {
		t.Errorf("cube root: %v %v", I, err)
	}
	if _, err := FindInterval(func(float64) float64 { return 0 }, 1, IntervalOptions{}); !errors.Is(err, ErrUnbounded) {
		t.Errorf("zero freshness: err %v, want ErrUnbounded", err)
	}
	if _, err := FindInterval(func(float64) float64 { return 5 }, 1, IntervalOptions{}); err == nil {
		t.Error("constant above alpha: want error")
	}
	for _, a := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		if _, err := FindInterval(cube, a, IntervalOptions{}); err == nil || !strings.Contains(err.Error(), "alpha") {
			t.Errorf("alpha %v: err %v", a, err)
		}
	}
	if _, err := FindInterval(nil, 1, IntervalOptions{}); err == nil {
		t.Error("nil function: want error")
	}
	if _, err := FindInterval(cube, 1, IntervalOptions{RelTol: 2}); err == nil || !strings.Contains(err.Error(), "RelTol") {
		t.Errorf("bad RelTol: %v", err)
	}
	if _, err := (Plan{}).FindInterval(1, IntervalOptions{}); !errors.Is(err, ErrUnbounded) {
		t.Errorf("empty plan: %v", err)
	}
}

func TestValidationNamesFields(t *testing.T) {
	good := []Item{{ID: "a", Keywords: []string{"x"}, Weight: 1, Rate: 1}}
	cases := []struct {
		items []Item
		now   float64
		opts  Options
		field string
	}{
		{good, 1, Options{}, "Options.K"},
		{good, 1, Options{K: 10, Method: 3}, "Options.Method"},
		{good, 1, Options{K: 10, Quota: -1}, "Options.Quota"},
		{good, 1, Options{K: 10, TopK: -1}, "Options.TopK"},
		{good, 1, Options{K: 10, MaxTerms: 3}, "Options.MaxTerms"},
		{good, 1, Options{K: 10, Model: 7}, "Options.Model"},
		{good, 1, Options{K: 10, Score: 7}, "Options.Score"},
		{good, 1, Options{K: 10, MinSpeedup: math.NaN()}, "Options.MinSpeedup"},
		{good, math.NaN(), Options{K: 10}, "now"},
		{[]Item{{}}, 1, Options{K: 10}, "items[0].ID"},
		{[]Item{{ID: "a", Weight: -1}}, 1, Options{K: 10}, "items[0].Weight"},
		{[]Item{{ID: "a", Rate: math.Inf(1)}}, 1, Options{K: 10}, "items[0].Rate"},
		{[]Item{{ID: "a", LastSync: math.NaN()}}, 1, Options{K: 10}, "items[0].LastSync"},
		{[]Item{{ID: "a"}, {ID: "a"}}, 1, Options{K: 10}, "items[1].ID"},
	}
	for _, c := range cases {
		_, err := GreedyProbes(c.items, c.now, c.opts)
		if err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: err = %v", c.field, err)
		}
	}
}

// Degenerate inputs must neither panic nor loop.
func TestDegenerateInputs(t *testing.T) {
	weird := CounterFunc(func(q Query, local int) float64 {
		switch len(q.A) % 3 {
		case 0:
			return math.NaN()
		case 1:
			return math.Inf(1)
		}
		return -5
	})
	items := []Item{
		{ID: "a"}, // no keywords
		{ID: "b", Keywords: []string{"", "x", "x"}, Weight: 1, Rate: 1},
		{ID: "c", Keywords: []string{"yy", "zzz"}, Weight: 0, Rate: 0, LastSync: 99},
	}
	for _, m := range []Method{MethodAllPages, MethodFirstPage} {
		for _, s := range []Score{ScorePerResult, ScorePerRequest} {
			p, err := GreedyProbes(items, 1, Options{K: 1, Method: m, Score: s, Counts: weird, TopK: 1})
			if err != nil {
				t.Fatal(err)
			}
			if !contains(p.Fallback, "a") {
				t.Errorf("item without keywords must fall back: %v", p.Fallback)
			}
			if _, err := p.FindInterval(1, IntervalOptions{}); err != nil && !errors.Is(err, ErrUnbounded) {
				t.Errorf("FindInterval: %v", err)
			}
		}
	}
	if p, err := GreedyProbes(nil, 0, Options{K: 1}); err != nil || len(p.Queries) != 0 || p.Report.SpeedupRatio != 0 {
		t.Errorf("empty input: %+v %v", p, err)
	}
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

func TestFreshnessModels(t *testing.T) {
	it := Item{ID: "x", Weight: 2, Rate: 3, LastSync: 1}
	if got := ItemFreshness(it, 5, ModelAccumulated); got != 2*0.5*3*16 {
		t.Errorf("accumulated: %v", got)
	}
	if got := ItemFreshness(it, 5, ModelCount); got != 2*3*4 {
		t.Errorf("count: %v", got)
	}
	if got := ItemFreshness(it, 0, ModelAccumulated); got != 0 {
		t.Errorf("sync in the future: %v", got)
	}
	items := []Item{it, {ID: "y", Weight: 1, Rate: 1, LastSync: 3}}
	if got, want := ContentFreshness(items, 5, ModelAccumulated), (48+2)/2.0; got != want {
		t.Errorf("content freshness %v, want %v", got, want)
	}
	if ContentFreshness(nil, 5, ModelAccumulated) != 0 {
		t.Error("empty relation")
	}
}

func TestCounts(t *testing.T) {
	c := Counts{
		Observed:       map[Query]int{Single("a"): 7, Single("bad"): -1},
		Reference:      map[Query]int{Single("a"): 1000, Pair("b", "c"): 10, Single("bad"): 2},
		ReferenceScale: 4.6,
	}
	for _, tc := range []struct {
		q     Query
		local int
		want  float64
	}{
		{Single("a"), 3, 7},     // observed wins
		{Pair("c", "b"), 3, 46}, // reference × c, canonical pair
		{Single("bad"), 1, 10},  // invalid observed ignored → reference
		{Single("z"), 3, 30},    // local × DefaultLocalRatio
	} {
		if got := c.ServerCount(tc.q, tc.local); got != tc.want {
			t.Errorf("%v: %v, want %v", tc.q, got, tc.want)
		}
	}
	if got := (Counts{LocalRatio: 2}).ServerCount(Single("z"), 3); got != 6 {
		t.Errorf("local ratio: %v", got)
	}
	// Pairs: their own ratio, capped by either keyword's observed total.
	pc := Counts{Observed: map[Query]int{Single("a"): 7}, LocalRatio: 2, PairRatio: 1.5}
	for _, tc := range []struct {
		q     Query
		local int
		want  float64
	}{
		{Pair("x", "y"), 2, 3},  // 2 × 1.5
		{Pair("a", "y"), 4, 6},  // 4 × 1.5 < 7
		{Pair("a", "y"), 6, 7},  // 9 capped by |R_S(a)| = 7
		{Single("y"), 4, 8},     // singles keep LocalRatio
		{Pair("a", "b"), 60, 7}, // cap applies below local too; GreedyProbes raises it to local
	} {
		if got := pc.ServerCount(tc.q, tc.local); got != tc.want {
			t.Errorf("%v local %d: %v, want %v", tc.q, tc.local, got, tc.want)
		}
	}
}

func TestLearnRatio(t *testing.T) {
	if got := LearnRatio(nil, 0, 0); got != DefaultLocalRatio {
		t.Errorf("no samples: %v, want the default prior %v", got, DefaultLocalRatio)
	}
	// One sample of ratio 1 against a prior of 10 with weight 1: √10.
	if got := LearnRatio([]RatioSample{{Server: 5, Local: 5}}, 10, 1); math.Abs(got-math.Sqrt(10)) > 1e-12 {
		t.Errorf("one sample: %v, want √10", got)
	}
	// Many samples leave the prior: the geometric mean of 2 and 8 is 4.
	var many []RatioSample
	for range 500 {
		many = append(many, RatioSample{Server: 2, Local: 1}, RatioSample{Server: 80, Local: 10})
	}
	if got := LearnRatio(many, 10, 1); math.Abs(got-4) > 0.01 {
		t.Errorf("1000 samples: %v, want ≈ 4", got)
	}
	// Invalid samples are ignored; a zero total counts as half a result.
	got := LearnRatio([]RatioSample{{Server: 3, Local: 0}, {Server: -1, Local: 2}, {Server: 0, Local: 1}}, 2, 1)
	if want := math.Sqrt(2 * 0.5); math.Abs(got-want) > 1e-12 {
		t.Errorf("zero total: %v, want %v", got, want)
	}
}

// The cause of the degenerate per-result plans: an author query with five
// local and five server results fills one page; five title-word pairs each
// have a single server result. Read literally, Eq. 2 rates each pair at
// w·F/1 and the author query at Σ w·F/5, so under a quota of one request it
// would refresh the stalest paper alone. Counting the page a result
// occupies, the author query removes more staleness per request and wins,
// and fetching the stalest paper by id is no better than its pair query.
func TestEq2CountsWholePages(t *testing.T) {
	var items []Item
	obs := map[Query]int{Single("author"): 5}
	for i := range 5 {
		word := fmt.Sprintf("w%d", i)
		items = append(items, Item{ID: fmt.Sprintf("p%d", i), Keywords: []string{"author", word, "common"}, Weight: 1, Rate: float64(i + 1)})
		obs[Pair("author", word)] = 1
		obs[Pair("common", word)] = 1
		obs[Single(word)] = 1
	}
	obs[Single("common")] = 5000
	obs[Pair("author", "common")] = 5
	for _, byID := range []bool{false, true} {
		for _, score := range []Score{ScorePerResult, ScorePerRequest} {
			p, err := GreedyProbes(items, 1, Options{K: 10, Quota: 1, Counts: Counts{Observed: obs}, Score: score, ByID: byID, MaxTerms: 1})
			if err != nil {
				t.Fatal(err)
			}
			if got := queries(p); !reflect.DeepEqual(got, []Query{Single("author")}) || len(p.ByID) != 0 {
				t.Errorf("score %d, by id %v: queries %v ids %v, want the author query", score, byID, got, p.ByID)
			}
		}
	}
	// Without the author query, the stalest paper's own query and its fetch
	// by id tie, and the query is preferred: its page shows a total.
	for i := range items {
		items[i].Keywords = items[i].Keywords[1:2]
	}
	p, err := GreedyProbes(items, 1, Options{K: 10, Quota: 1, Counts: Counts{Observed: obs}, ByID: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := queries(p); !reflect.DeepEqual(got, []Query{Single("w4")}) || len(p.ByID) != 0 {
		t.Errorf("queries %v ids %v, want w4 alone", got, p.ByID)
	}
	// With two requests, the second goes to the next stalest paper.
	p, _ = GreedyProbes(items, 1, Options{K: 10, Quota: 2, Counts: Counts{Observed: obs}, ByID: true})
	if got := queries(p); !reflect.DeepEqual(got, []Query{Single("w4"), Single("w3")}) {
		t.Errorf("quota 2: queries %v ids %v, want w4 then w3", got, p.ByID)
	}
}

// With fetches by id among the candidates the quota is shared: the ids
// chosen are the stalest items no chosen query reaches, in that order, and
// the fallback is what neither reaches.
func TestGreedyByIDSharesQuota(t *testing.T) {
	items, c := handItems()
	for quota := 1; quota <= 6; quota++ {
		p, err := GreedyProbes(items, 2, Options{K: 10, Quota: quota, Counts: c, ByID: true})
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Report.Requests + p.Report.ByIDRequests; got > quota || (got < quota && len(p.Fallback) > 0) {
			t.Errorf("quota %d: %d keyword + %d id requests with %v left over", quota, p.Report.Requests, p.Report.ByIDRequests, p.Fallback)
		}
		reached := map[string]bool{}
		for _, q := range p.Queries {
			for _, id := range q.Group {
				reached[id] = true
			}
		}
		prev := math.Inf(1)
		for _, id := range p.ByID {
			if reached[id] {
				t.Errorf("quota %d: %s fetched by id though a chosen query reaches it", quota, id)
			}
			reached[id] = true
			for _, it := range items {
				if it.ID == id {
					v := ItemFreshness(it, 2, ModelAccumulated)
					if v > prev {
						t.Errorf("quota %d: ids %v not stalest first", quota, p.ByID)
					}
					prev = v
				}
			}
		}
		var want []string
		for _, it := range items {
			if !reached[it.ID] {
				want = append(want, it.ID)
			}
		}
		if !reflect.DeepEqual(p.Fallback, want) {
			t.Errorf("quota %d: fallback %v, want %v", quota, p.Fallback, want)
		}
	}
	// delta costs five pages for one item: by id it is one request.
	p, _ := GreedyProbes(items, 2, Options{K: 10, Quota: 3, Counts: c, ByID: true})
	if !reflect.DeepEqual(p.ByID, []string{"i4"}) || p.Report.Requests != 2 || len(p.Fallback) != 0 {
		t.Errorf("quota 3: queries %v ids %v fallback %v, want two pairs and i4 by id", queries(p), p.ByID, p.Fallback)
	}
}

// RoundFreshness against a direct computation, and RoundLength against a
// brute-force scan of lengths, on random rounds.
func TestRoundLengthBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 21))
	for trial := range 100 {
		n := 1 + rng.IntN(12)
		items := make([]Item, n)
		for i := range items {
			items[i] = Item{ID: fmt.Sprintf("i%d", i), Weight: float64(rng.IntN(4)), Rate: 3 * rng.Float64(), LastSync: -5 * rng.Float64()}
		}
		// A random round: slots of 1–3 requests reaching a few items each,
		// some items in several slots, some in none.
		var slots []Slot
		for rng.IntN(5) > 0 {
			var ids []string
			for _, i := range rng.Perm(n)[:1+rng.IntN(min(3, n))] {
				ids = append(ids, items[i].ID)
			}
			slots = append(slots, Slot{Items: ids, Requests: 1 + rng.IntN(3)})
		}
		m := Model(trial % 2)
		mean := trial%4 >= 2
		// direct is F(L; u) at u within a round of the given length,
		// from first principles.
		direct := func(length, u float64) float64 {
			total := 0
			for _, s := range slots {
				total += s.Requests
			}
			var sum float64
			for _, it := range items {
				age := u - it.LastSync
				done := 0
				for _, s := range slots {
					done += s.Requests
					if x := length * float64(done-1) / float64(total); contains(s.Items, it.ID) && x <= u {
						age = u - x
					}
				}
				switch {
				case m == ModelCount:
					sum += it.Weight * it.Rate * age
				default:
					sum += it.Weight * it.Rate * age * age / 2
				}
			}
			return sum / float64(n)
		}
		for _, l := range []float64{0.5, 1, 3} {
			if got, want := RoundFreshness(items, slots, 0, l, m, false), direct(l, l); math.Abs(got-want) > 1e-9*max(1, want) {
				t.Fatalf("trial %d length %v: RoundFreshness at the end %v, direct %v", trial, l, got, want)
			}
			// The mean by the midpoint rule over 4 000 steps (the jumps at
			// the syncs cost it up to some 1e-3 relative).
			const steps = 4000
			var avg float64
			for k := range steps {
				avg += direct(l, l*(float64(k)+0.5)/steps) / steps
			}
			if got := RoundFreshness(items, slots, 0, l, m, true); math.Abs(got-avg) > 5e-3*max(1, avg) {
				t.Fatalf("trial %d length %v: RoundFreshness mean %v, midpoint rule %v", trial, l, got, avg)
			}
		}
		f := func(l float64) float64 { return RoundFreshness(items, slots, 0, l, m, mean) }
		alpha := 0.1 + 5*rng.Float64()
		const minL, maxL, step = 0.25, 10.0, 1e-3
		got, err := RoundLength(f, alpha, minL, maxL, 1e-9)
		if err != nil {
			t.Fatal(err)
		}
		// Brute force: the largest grid length within alpha.
		want := minL
		for l := minL; l <= maxL+step/2; l += step {
			if f(l) <= alpha {
				want = l
			}
		}
		if math.Abs(got-want) > 2*step {
			t.Errorf("trial %d alpha %v: RoundLength %v, brute force %v (f %v / %v)", trial, alpha, got, want, f(got), f(want))
		}
	}
	if _, err := RoundLength(nil, 1, 1, 2, 0); err == nil {
		t.Error("nil function: want an error")
	}
	if _, err := RoundLength(func(float64) float64 { return 0 }, 1, 2, 1, 0); err == nil {
		t.Error("maxLength below minLength: want an error")
	}
}
