package schedule

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/freshcrawl/freshcrawl/internal/source"
)

const probeSourceYAML = `sources:
  - name: papers
    search_url: "http://127.0.0.2:8080/search?q={query}&page={page}"
    item_url: "http://127.0.0.2:8080/item/{id}"
    page_size: 10
    time_unit: 1s
    item: "li.result"
    id: {attr: data-id}
    total: {selector: "p.total", regexp: "([0-9,]+) results?"}
    fields:
      title: "a.title"
      citations: {selector: ".citations", numeric: true}
    item_page:
      fields:
        title: "h1.title"
        citations: {selector: "#citations", numeric: true}
    keywords:
      - {field: title, split: words}
    value_field: citations
    weight: {attribute: weight}
    method: 1
    quota: QUOTA
    interval: 1
    alpha: ALPHA
`

func probeSource(t *testing.T, quota int, alpha float64) source.Source {
	t.Helper()
	y := strings.NewReplacer("QUOTA", fmt.Sprint(quota), "ALPHA", fmt.Sprint(alpha)).Replace(probeSourceYAML)
	srcs, err := source.Parse([]byte(y), "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	return srcs[0]
}

// lastPage is the last page of the query of reqs[j] among the consecutive
// requests of that query.
func lastPage(reqs []ProbeRequest, j int) int {
	k := j
	for k+1 < len(reqs) && reqs[k+1].Item == "" && slices.Equal(reqs[k+1].Query, reqs[j].Query) {
		k++
	}
	return reqs[k].Page
}

func tracked(id, title string, weight, ratePerSec float64, lastSync time.Time) TrackedItem {
	return TrackedItem{ID: id, Attrs: map[string]string{"title": title, "weight": fmt.Sprint(weight), "citations": "1"},
		Rate: ratePerSec, LastSync: lastSync}
}

// The round length the interval search reports is the longest one over
// which the expected content freshness, averaged over the round with its
// requests as they are sent, stays within alpha: checked against a
// brute-force scan of lengths that recomputes that freshness from the
// planned requests alone.
func TestProberIntervalBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	base := time.Unix(1_700_000_000, 0)
	words := []string{"alpha", "beta", "gamma", "delta", "eps", "zeta"}
	for trial := range 25 {
		alpha := 0.5 + 6*rng.Float64()
		src := probeSource(t, 1+rng.IntN(6), alpha)
		p, err := NewProber(src, ProbeGreedy, 0.25)
		if err != nil {
			t.Fatal(err)
		}
		var items []TrackedItem
		kw := map[string][]string{}
		for i := range 3 + rng.IntN(15) {
			a, b := words[rng.IntN(len(words))], words[rng.IntN(len(words))]
			id := fmt.Sprintf("i%d", i)
			items = append(items, tracked(id, a+" "+b, float64(1+rng.IntN(5)), rng.Float64(),
				base.Add(-time.Duration(rng.Float64()*3*float64(time.Second)))))
			kw[id] = src.Keywords(items[i].Attrs)
		}
		// A few totals seen, so queries have different page counts.
		for _, w := range words {
			if rng.IntN(2) == 0 {
				p.observeTotal([]string{w}, rng.IntN(40))
			}
		}
		// Rounds at most twice as long as the one before (the first at
		// most twice the interval), each refreshing what it reaches.
		now, longest := base, 2.0
		for round := range 8 {
			reqs, length, rep, err := p.Round(items, now)
			if err != nil {
				t.Fatal(err)
			}
			synced := checkRoundLength(t, fmt.Sprintf("trial %d round %d alpha %.3g", trial, round, alpha), src, items, kw, now, reqs, length, rep, alpha, longest)
			// The round refreshes what it reached.
			for i, it := range items {
				if xs := synced[it.ID]; len(xs) > 0 {
					items[i].LastSync = now.Add(time.Duration(xs[len(xs)-1] * float64(length)))
				}
			}
			longest = min(maxRoundFactor, 2*rep.Interval)
			now = now.Add(length)
		}
	}
}

// checkRoundLength checks a round's length against the brute-force scan
// and returns when each item is synchronised, as fractions of the round.
func checkRoundLength(t *testing.T, name string, src source.Source, items []TrackedItem, kw map[string][]string, now time.Time,
	reqs []ProbeRequest, length time.Duration, rep RoundReport, alpha, longest float64) map[string][]float64 {
	t.Helper()
	if got := length.Seconds(); math.Abs(got-rep.Interval) > 1e-6 {
		t.Fatalf("%s: round length %v, report %v units", name, got, rep.Interval)
	}
	// When each item is synchronised, as fractions of the round.
	syncAt := map[string][]float64{}
	n := float64(len(reqs))
	for j, r := range reqs {
		x := float64(j) / n
		if r.Item != "" {
			syncAt[r.Item] = append(syncAt[r.Item], x)
			continue
		}
		if r.Page != lastPage(reqs, j) {
			continue // a query's items count as read with its last page
		}
		for id, k := range kw {
			match := true
			for _, term := range r.Query {
				if !slices.Contains(k, term) {
					match = false
				}
			}
			if match {
				syncAt[id] = append(syncAt[id], x)
			}
		}
	}
	// F(L; u) within a round of length l (syncs at u counted when right is
	// set), and its mean: F is linear between syncs, so the trapezoid rule
	// over the syncs is exact.
	at := func(l, u float64, right bool) float64 {
		var s float64
		for _, it := range items {
			age := u + now.Sub(it.LastSync).Seconds()
			for _, x := range syncAt[it.ID] {
				if x*l < u || (right && x*l == u) {
					age = u - x*l
				}
			}
			s += src.Weight(it.Attrs) * it.Rate * age
		}
		return s / float64(len(items))
	}
	fresh := func(l float64) float64 {
		pts := []float64{0, l}
		for _, xs := range syncAt {
			for _, x := range xs {
				pts = append(pts, x*l)
			}
		}
		slices.Sort(pts)
		var area float64
		for k := 1; k < len(pts); k++ {
			a, b := pts[k-1], pts[k]
			area += (at(l, a, true) + at(l, b, false)) / 2 * (b - a)
		}
		return area / l
	}
	// Every length on a grid of 0.02 from 1 to the longest allowed, then
	// every 0.0005 within the last grid cell that keeps alpha.
	const coarse, fine = 0.02, 5e-4
	want := 1.0
	for l := 1.0; l <= longest+1e-9; l += coarse {
		if fresh(l) <= alpha {
			want = l
		}
	}
	for l := want; l < min(want+coarse, longest+1e-9); l += fine {
		if fresh(l) <= alpha {
			want = l
		}
	}
	if math.Abs(rep.Interval-want) > 2*fine {
		t.Errorf("%s: interval %.4f, brute force %.4f (F %.4g / %.4g, longest %v)", name, rep.Interval, want, fresh(rep.Interval), fresh(want), longest)
	}
	if math.Abs(rep.ExpectedMean-fresh(rep.Interval)) > 1e-6*max(1, rep.ExpectedMean) {
		t.Errorf("%s: expected mean %v, recomputed %v", name, rep.ExpectedMean, fresh(rep.Interval))
	}
	return syncAt
}

// What a complete read of a query shows: an item that matches it locally
// but is not listed is unreached (renamed, or gone) and is fetched by id
// until a refresh gives it the site's attributes; an item page that is not
// found takes the item out of planning until a result page lists it again.
func TestProberUnreachedAndGone(t *testing.T) {
	src := probeSource(t, 10, 0)
	p, err := NewProber(src, ProbeGreedy, 0.25)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1_700_000_000, 0)
	items := []TrackedItem{
		tracked("a", "solar wind", 1, 1, t0.Add(-10*time.Second)),
		tracked("b", "solar wind", 1, 1, t0.Add(-10*time.Second)),
		tracked("c", "solar wind", 1, 1, t0.Add(-10*time.Second)),
	}
	reqs, _, _, err := p.Round(items, t0)
	if err != nil {
		t.Fatal(err)
	}
	var q []string
	for _, r := range reqs {
		if r.Item == "" {
			q = r.Query
			break
		}
	}
	if q == nil {
		t.Fatalf("no keyword query in %+v", reqs)
	}
	// The site lists a and b only, on one page of two results.
	p.ObserveResults(q, 1, 2, []string{"a", "b"}, t0.Add(time.Second))
	items[0].LastSync, items[1].LastSync = t0.Add(time.Second), t0.Add(time.Second)
	t1 := t0.Add(2 * time.Second)
	reqs, _, rep, err := p.Round(items, t1)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Unreached != 1 || !slices.ContainsFunc(reqs, func(r ProbeRequest) bool { return r.Item == "c" }) {
		t.Fatalf("after a read without c: unreached %d, requests %+v; want c fetched by id", rep.Unreached, reqs)
	}
	// c's item page is missing: c is gone, and planning leaves it out.
	p.ObserveGone("c")
	reqs, _, rep, _ = p.Round(items, t1.Add(time.Second))
	for _, r := range reqs {
		if r.Item == "c" {
			t.Fatalf("gone item c still planned: %+v", reqs)
		}
	}
	if rep.Gone != 1 {
		t.Errorf("gone = %d, want 1", rep.Gone)
	}
	// A result page lists c again: it is back, and refreshed (LastSync
	// after the mark) it is reachable by its keywords again.
	p.ObserveResults([]string{"wind"}, 1, 3, []string{"a", "b", "c"}, t1.Add(2*time.Second))
	items[2].LastSync = t1.Add(2 * time.Second)
	_, _, rep, _ = p.Round(items, t1.Add(3*time.Second))
	if rep.Gone != 0 || rep.Unreached != 0 {
		t.Errorf("after c was listed and refreshed: gone %d unreached %d, want 0 and 0", rep.Gone, rep.Unreached)
	}
	// A partial read marks nothing: page 2 of a 15-result query unseen.
	p.reads[queryOf([]string{"solar"})] = &queryRead{local: []string{"a", "b", "c"}, pages: map[int]bool{}, seen: map[string]bool{}}
	p.ObserveResults([]string{"solar"}, 1, 15, []string{"a"}, t1.Add(4*time.Second))
	if len(p.unreached) != 0 {
		t.Errorf("partial read marked %v unreached", p.unreached)
	}
}

// Fetches by id share the quota with keyword queries: with items that
// only an id reaches, a round fetches the stalest ones (largest w·λ·t²)
// within the quota.
func TestProberFallbackStalestFirst(t *testing.T) {
	src := probeSource(t, 3, 0)
	p, err := NewProber(src, ProbeGreedy, 0.25)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1_700_000_000, 0)
	var items []TrackedItem
	for i, age := range []float64{1, 9, 4, 7, 2} {
		it := tracked(fmt.Sprintf("i%d", i), "", 1, 1, t0.Add(-time.Duration(age*float64(time.Second))))
		items = append(items, it)
	}
	reqs, _, rep, err := p.Round(items, t0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range reqs {
		got = append(got, r.Item)
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{"i1", "i2", "i3"}) || rep.ByID != 3 || rep.Requests != 3 {
		t.Errorf("requests %v (by id %d of %d), want the three stalest i1, i3, i2", got, rep.ByID, rep.Requests)
	}
}

// With a numeric dissimilarity a refresh counts the updates since the last
// one: the rate follows the Gamma posterior of the counts, where the
// change bit would saturate. A 0/1 dissimilarity uses the bit.
func TestProberObserveRefresh(t *testing.T) {
	src := probeSource(t, 10, 0)
	p, err := NewProber(src, ProbeGreedy, 0.25)
	if err != nil {
		t.Fatal(err)
	}
	e := NewEstimator(90*24*time.Hour, 0.25)
	var st EstimateState
	t0 := time.Unix(1_700_000_000, 0)
	old := map[string]string{"citations": "100"}
	var rate float64
	for k := 1; k <= 20; k++ {
		fresh := map[string]string{"citations": fmt.Sprint(100 + 30*k)}
		rate = p.ObserveRefresh(e, &st, t0.Add(time.Duration(k-1)*time.Second), t0.Add(time.Duration(k)*time.Second), old, fresh)
		old = fresh
	}
	// Prior Gamma(0.5, 2 s); 600 citations in 20 s.
	if want := (0.5 + 600) / (2 + 20); math.Abs(rate-want) > 1e-3*want {
		t.Errorf("rate from counts %v, want %v", rate, want)
	}
	src.Dissims = map[string]source.Dissim{"citations": source.DissimChanged}
	if err := src.Validate(); err != nil {
		t.Fatal(err)
	}
	pb, err := NewProber(src, ProbeGreedy, 0.25)
	if err != nil {
		t.Fatal(err)
	}
	var sb EstimateState
	old = map[string]string{"citations": "100"}
	for k := 1; k <= 20; k++ {
		fresh := map[string]string{"citations": fmt.Sprint(100 + 30*k)}
		rate = pb.ObserveRefresh(e, &sb, t0.Add(time.Duration(k-1)*time.Second), t0.Add(time.Duration(k)*time.Second), old, fresh)
		old = fresh
	}
	if rate >= 10 {
		t.Errorf("rate from change bits %v: bits cannot tell 30 changes a second from a few", rate)
	}
	if r := p.ObserveRefresh(e, &st, time.Time{}, t0, old, old); math.Abs(r-(0.5+600)/(2+20)) > 1e-3 {
		t.Errorf("first refresh changed the estimate to %v", r)
	}
}

// The server/local ratio for queries never seen is learnt from the totals
// result pages show, starting from the source's prior.
func TestProberLearnsRatio(t *testing.T) {
	src := probeSource(t, 4, 0)
	p, err := NewProber(src, ProbeGreedy, 0.25)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1_700_000_000, 0)
	var items []TrackedItem
	for i := range 20 {
		items = append(items, tracked(fmt.Sprintf("i%02d", i), fmt.Sprintf("w%d shared%d", i, i%4), 1, 1, t0.Add(-time.Second)))
	}
	now := t0
	var rep RoundReport
	for range 5 {
		reqs, length, r, err := p.Round(items, now)
		if err != nil {
			t.Fatal(err)
		}
		rep = r
		for _, q := range reqs {
			if q.Item == "" && q.Page == 1 {
				// The site has three times the local matches.
				local := len(matching(p.items(items), q.Query))
				p.ObserveResults(q.Query, 1, 3*local, nil, now)
			}
		}
		now = now.Add(length)
	}
	if rep.LocalRatio >= 10 && rep.PairRatio >= 10 {
		t.Fatalf("ratios %v / %v: still the prior after 5 rounds of totals", rep.LocalRatio, rep.PairRatio)
	}
	for _, r := range []float64{rep.LocalRatio, rep.PairRatio} {
		if r < 3 || r > 10 {
			t.Errorf("learnt ratio %v, want between the truth 3 and the prior 10", r)
		}
	}
}
