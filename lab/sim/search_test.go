package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/freshcrawl/freshcrawl/worker/probeparse"
)

func newSearchSim(t testing.TB, clk *fakeClock, sc SearchConfig) *Sim {
	t.Helper()
	return mustNew(t, Config{Hosts: 2, Pages: 4, Now: clk.Now, Search: &sc})
}

// The §5.2 power law N_C(x) = 2/x³ is a Pareto tail P(X ≥ k) = 1/k², so
// ⌊X⌋ ≥ k for a share 1/k² of the papers and the mean count is π²/6.
func TestSearchCitationPowerLaw(t *testing.T) {
	const n = 20000
	s := newSearchSim(t, newFakeClock(), SearchConfig{Papers: n, Seed: 7, MaxCitations: 1 << 30})
	atLeast := map[int]int{}
	sum := 0.0
	for _, p := range s.search.papers {
		if p.initial < 1 {
			t.Fatalf("paper %s has %d citations, want ≥ 1", p.id, p.initial)
		}
		for _, k := range []int{2, 3, 4, 10} {
			if p.initial >= k {
				atLeast[k]++
			}
		}
		sum += float64(p.initial)
		if p.rate != float64(p.initial)/4 {
			t.Fatalf("paper %s: rate %v, want a quarter of %d", p.id, p.rate, p.initial)
		}
	}
	for _, k := range []int{2, 3, 4, 10} {
		want := 1 / float64(k*k)
		got := float64(atLeast[k]) / n
		sd := math.Sqrt(want * (1 - want) / n)
		if math.Abs(got-want) > 4*sd {
			t.Errorf("share with ≥ %d citations = %.4f, want %.4f ± %.4f", k, got, want, 4*sd)
		}
	}
	// The mean has infinite variance (tail index 2), so only a loose check.
	if m := sum / n; m < 1.5 || m > 2.0 {
		t.Errorf("mean citations %.3f, want about π²/6 = 1.645", m)
	}
}

func TestSearchAuthorGroups(t *testing.T) {
	s := newSearchSim(t, newFakeClock(), SearchConfig{Seed: 3})
	site := s.search
	if len(site.papers) != 1000 {
		t.Fatalf("papers = %d, want the default 1000", len(site.papers))
	}
	size := map[int]int{}
	for _, p := range site.papers {
		size[p.group]++
	}
	if g := len(size); g < 170 || g > 230 {
		t.Errorf("%d author groups, want about 200", g)
	}
	for g, n := range size {
		if n > 10 {
			t.Errorf("group %d covers %d papers, want ≤ 10", g, n)
		}
	}
	if mean := 1000 / float64(len(size)); mean < 4.3 || mean > 5.7 {
		t.Errorf("mean group size %.2f, want about 5", mean)
	}
	// A lead author's query returns exactly its group, on one page.
	for _, p := range site.papers[:50] {
		got := site.match(searchTerms(p.authors[0]))
		if len(got) != size[p.group] {
			t.Fatalf("author %q matches %d papers, group has %d", p.authors[0], len(got), size[p.group])
		}
		for _, i := range got {
			if site.papers[i].group != p.group {
				t.Fatalf("author %q matches paper %s of another group", p.authors[0], site.papers[i].id)
			}
		}
	}
}

func TestSearchDeterministic(t *testing.T) {
	a := newSearchSim(t, newFakeClock(), SearchConfig{Papers: 50, Seed: 11}).SearchItems()
	b := newSearchSim(t, newFakeClock(), SearchConfig{Papers: 50, Seed: 11}).SearchItems()
	c := newSearchSim(t, newFakeClock(), SearchConfig{Papers: 50, Seed: 12}).SearchItems()
	if !slices.Equal(a, b) {
		t.Fatal("same seed, different corpus")
	}
	if slices.Equal(a, c) {
		t.Fatal("different seeds, same corpus")
	}
}

var (
	reTotal  = regexp.MustCompile(`<p class="total">([0-9,]+) results?</p>`)
	reResult = regexp.MustCompile(`data-id="(p[0-9]+)"`)
	reCited  = regexp.MustCompile(`Cited by ([0-9,]+)`)
)

func searchPage(t *testing.T, s *Sim, q string, page int) (ids []string, total int) {
	t.Helper()
	r := get(t, s, 0, "/search?q="+url.QueryEscape(q)+"&page="+strconv.Itoa(page), nil)
	if r.Code != 200 {
		t.Fatalf("search %q page %d: status %d", q, page, r.Code)
	}
	m := reTotal.FindStringSubmatch(r.Body.String())
	if m == nil {
		t.Fatalf("search %q: no total in\n%s", q, r.Body)
	}
	total, _ = strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
	for _, m := range reResult.FindAllStringSubmatch(r.Body.String(), -1) {
		ids = append(ids, m[1])
	}
	return ids, total
}

// A query matches the papers having every keyword among their title words
// and author names, case-insensitively; pages hold K results sorted by id
// and show the total.
func TestSearchMatchesAllKeywordsAndPaginates(t *testing.T) {
	s := newSearchSim(t, newFakeClock(), SearchConfig{Papers: 600, K: 7, Seed: 5})
	site := s.search
	// A frequent title word and a pair.
	freq := map[string]int{}
	for _, p := range site.papers {
		for _, w := range searchTerms(p.title) {
			freq[w]++
		}
	}
	var top string
	for w, n := range freq {
		if len(w) > 3 && (top == "" || n > freq[top] || n == freq[top] && w < top) {
			top = w
		}
	}
	p0 := site.papers[site.index[top][0]]
	other := searchTerms(p0.title)[0]
	if other == top {
		other = searchTerms(p0.title)[1]
	}
	for _, q := range []string{strings.ToUpper(top), top + " " + other, `"` + p0.authors[0] + `"`, strings.ToLower(p0.authors[0]) + " " + top} {
		terms := searchTerms(q)
		var want []string
		for _, p := range site.papers {
			kw := append(searchTerms(p.title), lowerAll(p.authors)...)
			all := true
			for _, term := range terms {
				all = all && slices.Contains(kw, term)
			}
			if all {
				want = append(want, p.id)
			}
		}
		var got []string
		for page := 1; ; page++ {
			ids, total := searchPage(t, s, q, page)
			if total != len(want) {
				t.Fatalf("query %q: total %d, want %d", q, total, len(want))
			}
			if len(ids) > 7 {
				t.Fatalf("query %q page %d: %d results, K = 7", q, page, len(ids))
			}
			if len(ids) == 0 {
				break
			}
			got = append(got, ids...)
		}
		if !slices.Equal(got, want) || !slices.IsSorted(got) {
			t.Fatalf("query %q: got %v, want %v (sorted by id)", q, got, want)
		}
		if len(want) == 0 {
			t.Fatalf("query %q matched nothing; the test needs matches", q)
		}
	}
	if ids, total := searchPage(t, s, "zzzznotaword", 1); total != 0 || len(ids) != 0 {
		t.Fatalf("unknown word: %d results, total %d", len(ids), total)
	}
	for _, bad := range []string{"/search?q=", "/search?q=a&page=0", "/search?q=a&page=x", "/search?q=a&page=99999999999"} {
		if r := get(t, s, 0, bad, nil); r.Code != http.StatusBadRequest {
			t.Errorf("GET %s: status %d, want 400", bad, r.Code)
		}
	}
	// Only the designated host serves the search.
	if r := get(t, s, 1, "/search?q="+top, nil); r.Code != http.StatusNotFound {
		t.Errorf("search on host 1: status %d, want 404", r.Code)
	}
	if r := get(t, s, 0, "/item/nope", nil); r.Code != http.StatusNotFound {
		t.Errorf("unknown item: status %d, want 404", r.Code)
	}
}

// scriptPaper replaces paper i's generated process by a hand-written one.
func scriptPaper(s *Sim, i, initial int, weight float64, jumps ...float64) {
	p := s.search.papers[i]
	p.initial, p.weight = initial, weight
	sc := &schedule{done: true}
	for _, j := range jumps {
		sc.times = append(sc.times, secs(j))
	}
	p.sched = sc
}

// The worked example: paper 0 starts at 4 citations (weight 4) and is cited
// at t = 1, 3, 5; the crawler sees it in a search result at t = 2 and on its
// item page at t = 4. Paper 1 never changes. Window [0, 6):
//
//	server: 4 on [0,1), 5 on [1,3), 6 on [3,5), 7 on [5,6)
//	copy:   4 on [0,2) (seed), 5 on [2,4), 6 on [4,6)
//	|S−C|:  0,1 on [1,2), 0, 1 on [3,4), 0, 1 on [5,6): ∫ = 3
//
// F = (1/|L|)·w·∫/6 = (1/2)·4·3/6 = 1; unweighted 0.25; final (1/2)·4·1 = 2.
func TestContentFreshnessScriptedByHand(t *testing.T) {
	clk := newFakeClock()
	s := newSearchSim(t, clk, SearchConfig{Papers: 2, Seed: 1})
	scriptPaper(s, 0, 4, 4, 1, 3, 5)
	scriptPaper(s, 1, 2, 2)
	p0 := s.search.papers[0]

	clk.At(secs(2))
	r := get(t, s, 0, "/search?q="+url.QueryEscape(strings.ToLower(p0.authors[0])), nil)
	if m := reCited.FindStringSubmatch(r.Body.String()); r.Code != 200 || m == nil || m[1] != "5" {
		t.Fatalf("search at t=2: status %d, citations %v, want 5", r.Code, m)
	}
	clk.At(secs(3.5))
	if r := do(t, s, 0, http.MethodHead, "/item/"+p0.id, nil); r.Code != 200 {
		t.Fatalf("HEAD: %d", r.Code) // a HEAD delivers no value: no sync
	}
	clk.At(secs(4))
	r = get(t, s, 0, "/item/"+p0.id, nil)
	if m := reCited.FindStringSubmatch(r.Body.String()); r.Code != 200 || m == nil || m[1] != "6" {
		t.Fatalf("item at t=4: status %d, citations %v, want 6", r.Code, m)
	}

	rep, err := s.ContentFreshness(t0, t0.Add(6*time.Second), WithStep(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if !near(rep.ContentFreshness, 1, 1e-12) || !near(rep.MeanDissimilarity, 0.25, 1e-12) || !near(rep.Final, 2, 1e-12) {
		t.Fatalf("freshness %v, unweighted %v, final %v; want 1, 0.25, 2", rep.ContentFreshness, rep.MeanDissimilarity, rep.Final)
	}
	// Both papers may share the lead author (one group): the search then
	// served paper 1 as well.
	matched := len(s.search.match(searchTerms(p0.authors[0])))
	if rep.Requests != 3 || rep.SearchRequests != 1 || rep.ItemRequests != 2 || rep.Served != matched+1 || rep.Synced != matched || rep.Updates != 3 {
		t.Fatalf("counts %+v", rep)
	}
	// Steps [0,2), [2,4), [4,6): ∫ = 1, 1, 1 → (1/2)·4·1/2 = 1 each.
	if len(rep.Series) != 3 {
		t.Fatalf("series %+v", rep.Series)
	}
	for k, p := range rep.Series {
		if !near(p.ContentFreshness, 1, 1e-12) {
			t.Errorf("series[%d] = %v, want 1", k, p.ContentFreshness)
		}
	}
	// A window starting later carries the copy over: on [4,6) copy 6,
	// server 6 then 7 from 5: ∫ = 1 → (1/2)·4·1/2 = 1.
	rep, _ = s.ContentFreshness(t0.Add(4*time.Second), t0.Add(6*time.Second))
	if !near(rep.ContentFreshness, 1, 1e-12) || rep.Served != 1 || rep.Requests != 1 {
		t.Fatalf("window [4,6): %+v", rep)
	}
	// The requests also went through the request log (politeness stats).
	tr := s.Truth(t0, t0.Add(6*time.Second))
	if tr.Requests != 3 || tr.Hosts[0].Requests != 3 || tr.PageRequests != 0 || tr.MinGap != 500*time.Millisecond {
		t.Fatalf("truth counts: requests %d host0 %d pages %d min gap %v", tr.Requests, tr.Hosts[0].Requests, tr.PageRequests, tr.MinGap)
	}
	paths := []string{}
	for _, r := range s.Requests() {
		paths = append(paths, r.Method+" "+r.Path)
	}
	if want := []string{"GET /search", "HEAD /item/" + p0.id, "GET /item/" + p0.id}; !slices.Equal(paths, want) {
		t.Fatalf("request log %v, want %v", paths, want)
	}
}

// Citations grow as Poisson processes at a quarter of the initial count per
// time unit, with TimeUnit scaling real time.
func TestSearchCitationGrowth(t *testing.T) {
	clk := newFakeClock()
	s := newSearchSim(t, clk, SearchConfig{Papers: 500, Seed: 9, TimeUnit: 100 * time.Millisecond})
	const units = 200
	end := t0.Add(units * 100 * time.Millisecond)
	rep, err := s.ContentFreshness(t0, end)
	if err != nil {
		t.Fatal(err)
	}
	want := 0.0
	for _, p := range s.search.papers {
		want += p.rate * units
	}
	if got := float64(rep.Updates); math.Abs(got-want) > 5*math.Sqrt(want) {
		t.Fatalf("%v updates in %d units, want %v ± %v", got, units, want, 5*math.Sqrt(want))
	}
	// Never synced: the copy stays at the seed, so F grows; the mean of
	// |S − C| over [0, T] is ½λT per paper in expectation.
	if rep.Final <= rep.ContentFreshness || rep.Synced != 0 || rep.Requests != 0 {
		t.Fatalf("unsynced report %+v", rep)
	}
}

func TestSearchSourceParsesServedPages(t *testing.T) {
	clk := newFakeClock()
	s := newSearchSim(t, clk, SearchConfig{Papers: 300, Seed: 4, K: 5})
	src, err := s.SearchSource()
	if err != nil {
		t.Fatalf("SearchSource: %v\n%s", err, s.searchSourceYAML())
	}
	it := s.SearchItems()[17]
	kw := src.Keywords(map[string]string{"title": it.Title, "authors": it.Authors})
	if !slices.Contains(kw, strings.ToLower(strings.Split(it.Authors, ", ")[0])) {
		t.Fatalf("keywords %v lack the lead author of %q", kw, it.Authors)
	}
	u, err := url.Parse(src.SearchURL(kw[:1], 2))
	if err != nil || u.Path != "/search" || u.Query().Get("page") != "2" {
		t.Fatalf("SearchURL = %v (%v)", u, err)
	}
	clk.At(secs(30))
	r := get(t, s, 0, u.RequestURI(), nil)
	items, total, err := probeparse.ParseResults(&src, r.Body.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	ids, wantTotal := searchPage(t, s, u.Query().Get("q"), 2)
	if total != wantTotal || len(items) != len(ids) {
		t.Fatalf("parsed %d items, total %d; page has %d, total %d", len(items), total, len(ids), wantTotal)
	}
	s.search.mu.Lock()
	for _, item := range items {
		i := s.search.byID[item.ID]
		want := strconv.FormatInt(s.search.valueAt(i, secs(30)), 10)
		if item.Fields["citations"] != want || item.Fields["authors"] != strings.Join(s.search.papers[i].authors, ", ") {
			t.Errorf("item %+v, want citations %s", item, want)
		}
	}
	s.search.mu.Unlock()

	iu, _ := url.Parse(src.ItemURL(it.ID))
	r = get(t, s, 0, iu.RequestURI(), nil)
	item, err := probeparse.ParseItem(&src, it.ID, r.Body.Bytes())
	if err != nil || item.Fields["title"] != it.Title {
		t.Fatalf("ParseItem = %+v, %v", item, err)
	}

	var buf bytes.Buffer
	if err := s.WriteSearchItems(&buf); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	var first SearchItem
	if len(lines) != 300 || json.Unmarshal([]byte(lines[0]), &first) != nil || first != s.SearchItems()[0] {
		t.Fatalf("seed file: %d lines, first %q", len(lines), lines[0])
	}
}

func TestSearchConfigValidation(t *testing.T) {
	for _, tc := range []struct {
		sc   SearchConfig
		want string
	}{
		{SearchConfig{Papers: -1}, "Config.Search.Papers"},
		{SearchConfig{K: -1}, "Config.Search.K"},
		{SearchConfig{TimeUnit: -time.Second}, "Config.Search.TimeUnit"},
		{SearchConfig{Host: 2}, "Config.Search.Host"},
		{SearchConfig{Weight: 7}, "Config.Search.Weight"},
	} {
		_, err := New(Config{Hosts: 2, Search: &tc.sc})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want it to name %s", tc.sc, err, tc.want)
		}
	}
	s := mustNew(t, Config{})
	if _, err := s.ContentFreshness(t0, t0.Add(time.Second)); err == nil {
		t.Error("ContentFreshness without a search source: no error")
	}
}

// Over the network: the source definition points at the running search
// host, and every page of a Method 1 scan parses.
func TestSearchOverNetwork(t *testing.T) {
	s := mustNew(t, Config{Hosts: 2, Pages: 4, Search: &SearchConfig{Papers: 200, K: 4, Seed: 2, Host: 1}})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	startOrFail(t, ctx, s)
	src, err := s.SearchSource()
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	fetch := func(u string) []byte {
		t.Helper()
		resp, err := client.Get(u)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %v", u, resp.StatusCode, err)
		}
		return b
	}
	it := s.SearchItems()[0]
	kw := src.Keywords(map[string]string{"title": it.Title, "authors": it.Authors})
	q := kw[:1]
	seen := 0
	total := -1
	for page := 1; total < 0 || (page-1)*src.PageSize < total; page++ {
		items, tot, err := probeparse.ParseResults(&src, fetch(src.SearchURL(q, page)))
		if err != nil {
			t.Fatal(err)
		}
		total = tot
		seen += len(items)
	}
	if seen != total || total != len(s.search.match(q)) {
		t.Fatalf("scanned %d items, total %d, matches %d", seen, total, len(s.search.match(q)))
	}
	if _, err := probeparse.ParseItem(&src, it.ID, fetch(src.ItemURL(it.ID))); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(src.SearchURL(q, 1), "http://127.0.0.3:") {
		t.Fatalf("search host: %s", src.SearchURL(q, 1))
	}
	rep, err := s.ContentFreshness(s.Epoch(), s.Epoch().Add(time.Hour))
	if err != nil || rep.Requests != (total+src.PageSize-1)/src.PageSize+1 || rep.Synced != total {
		t.Fatalf("report %+v, %v", rep, err)
	}
}

// The list of tracked papers differs from the site as configured: absent
// papers are listed but never served (404, in no result), renamed papers
// are listed under a title whose words find nothing of theirs while their
// lead author still does, untracked papers are served but not listed. The
// truth counts the listed papers the site has.
func TestSearchListDiffersFromSite(t *testing.T) {
	clk := newFakeClock()
	s := newSearchSim(t, clk, SearchConfig{Papers: 400, Seed: 13, Absent: 0.05, Renamed: 0.1, Untracked: 0.25})
	site := s.search
	var absent, renamed, untracked int
	for _, p := range site.papers {
		switch {
		case p.absent:
			absent++
		case p.listed != "":
			renamed++
		case p.untracked:
			untracked++
		}
	}
	if absent != 20 || renamed != 40 || untracked != 100 {
		t.Fatalf("absent %d renamed %d untracked %d, want 20, 40, 100", absent, renamed, untracked)
	}
	listed := map[string]SearchItem{}
	for _, it := range s.SearchItems() {
		listed[it.ID] = it
	}
	if len(listed) != 300 {
		t.Fatalf("%d listed papers, want 400 − 100 untracked", len(listed))
	}
	for _, p := range site.papers {
		it, ok := listed[p.id]
		switch {
		case p.untracked:
			if ok {
				t.Fatalf("untracked %s is listed", p.id)
			}
			if ids, _ := searchPage(t, s, strings.ToLower(p.authors[0]), 1); !slices.Contains(ids, p.id) && len(ids) < 10 {
				t.Fatalf("untracked %s not served for its author: %v", p.id, ids)
			}
		case p.absent:
			if r := get(t, s, 0, "/item/"+p.id, nil); r.Code != http.StatusNotFound {
				t.Fatalf("absent %s: item page status %d, want 404", p.id, r.Code)
			}
			if ids, _ := searchPage(t, s, strings.ToLower(p.authors[0]), 1); slices.Contains(ids, p.id) {
				t.Fatalf("absent %s served in a result", p.id)
			}
		case p.listed != "":
			if it.Title == p.title {
				t.Fatalf("renamed %s listed under the site's title", p.id)
			}
			for _, w := range searchTerms(it.Title) {
				for _, i := range site.match([]string{w}) {
					if site.papers[i] == p {
						t.Fatalf("renamed %s found by its old title word %q", p.id, w)
					}
				}
			}
			if ids, _ := searchPage(t, s, strings.ToLower(p.authors[0]), 1); !slices.Contains(ids, p.id) {
				t.Fatalf("renamed %s not found by its lead author", p.id)
			}
		default:
			if it.Title != p.title || it.Weight != float64(p.initial) {
				t.Fatalf("listed %s: %+v, want title %q weight %d", p.id, it, p.title, p.initial)
			}
		}
	}
	rep, err := s.ContentFreshness(t0, t0.Add(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Papers != 280 || rep.Absent != 20 {
		t.Errorf("truth over %d papers, %d absent; want 280 and 20", rep.Papers, rep.Absent)
	}
	if err := (SearchConfig{Absent: 0.5, Renamed: 0.3, Untracked: 0.3}).validate(1); err == nil {
		t.Error("shares summing over 1: want an error")
	}
}

// ContentFreshnessAt is F(L; t−), the state just before t: it agrees with
// the scripted example by hand and with ContentReport.Final.
func TestContentFreshnessAt(t *testing.T) {
	clk := newFakeClock()
	s := newSearchSim(t, clk, SearchConfig{Papers: 2, Seed: 1})
	scriptPaper(s, 0, 4, 4, 1, 3, 5)
	scriptPaper(s, 1, 2, 2)
	clk.At(secs(4))
	if r := get(t, s, 0, "/item/"+s.search.papers[0].id, nil); r.Code != 200 {
		t.Fatalf("item: %d", r.Code)
	}
	// |S−C| of paper 0: 0 before 1; 1 on [1,3); 2 on [3,4); 0 on [4,5); 1 after.
	at := []time.Time{t0.Add(secs(0.5)), t0.Add(secs(1)), t0.Add(secs(2)), t0.Add(secs(4)), t0.Add(secs(4.5)), t0.Add(secs(6))}
	want := []float64{0, 0, 4 * 1.0 / 2, 4 * 2.0 / 2, 0, 4 * 1.0 / 2}
	got, err := s.ContentFreshnessAt(at)
	if err != nil {
		t.Fatal(err)
	}
	for k := range at {
		if !near(got[k], want[k], 1e-12) {
			t.Errorf("F(%v−) = %v, want %v", at[k].Sub(t0), got[k], want[k])
		}
	}
	rep, _ := s.ContentFreshness(t0, t0.Add(secs(6)))
	if !near(rep.Final, got[5], 1e-12) {
		t.Errorf("Final %v, ContentFreshnessAt %v", rep.Final, got[5])
	}
}

// SearchHandler serves the search host in process: what it serves is
// recorded and measured like a network request.
func TestSearchHandlerInProcess(t *testing.T) {
	clk := newFakeClock()
	s := newSearchSim(t, clk, SearchConfig{Papers: 20, Seed: 2})
	h := s.SearchHandler()
	id := s.search.papers[3].id
	clk.At(secs(1))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.2/item/"+id, nil))
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), id) {
		t.Fatalf("item %s: %d\n%s", id, rec.Code, rec.Body)
	}
	rep, err := s.ContentFreshness(t0, t0.Add(secs(2)))
	if err != nil {
		t.Fatal(err)
	}
	if rep.ItemRequests != 1 || rep.Served != 1 || rep.Synced != 1 {
		t.Errorf("report %+v: want the in-process request counted and served", rep)
	}
	if mustNew(t, Config{Hosts: 1, Pages: 1}).SearchHandler() != nil {
		t.Error("no search config: want a nil handler")
	}
}
