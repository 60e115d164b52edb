package schedule

import (
	"cmp"
	"math"
	"slices"

	"github.com/freshcrawl/freshcrawl/estimate"
)

// exploreItem is one URL exploration wants: at frequency f, with its value
// per fetch over the cost of a fetch (score; 1 for a recheck).
type exploreItem struct {
	i      int
	f      float64
	score  float64
	sticky bool    // probed by the previous plan: kept until resolved
	tau    float64 // a recheck's probe interval, seconds (0: a probe)
	// fallback is the recheck of a probe whose URL the plan gives up, for
	// when the probe finds no room: without it the URL would wait for the
	// longest recheck (f 0: none).
	fallback exploreItem0
	// rank and key order the items (exploreItems).
	rank int
	key  float64
}

// exploreItem0 is a recheck: frequency and probe interval.
type exploreItem0 struct{ f, tau float64 }

// isRecheck reports whether it is a recheck (not a probe).
func (it exploreItem) isRecheck() bool { return it.score == 1 && !it.sticky }

// exploreItems lists the URLs exploration wants at the multipliers of
// mult (exploreByValue).
func (j *PlanJob) exploreItems(in PlanInput, mult PlanOutput, pop *estimate.Summary) []exploreItem {
	vals := &itemValues{j: j, pop: pop, kept: map[keepKey][2]float64{}, voi: map[voiKey]float64{}}
	// Sized from the previous evaluation: a plan evaluates several
	// multipliers, each listing about as many items (hundreds of
	// thousands at scale), and growing the list by doubling copied it
	// several times.
	items := make([]exploreItem, 0, j.itemsHint+j.itemsHint/8)
	for i := range in.Rates {
		w := in.Weights[i]
		if j.blocked.has(i) || !(w > 0) || j.lastOK[i] == 0 || !j.posts[i].Valid() {
			continue
		}
		mu := multiplier(mult, in.Hosts[i])
		if !(mu > 0) || math.IsInf(mu, 1) {
			continue
		}
		planned := i < len(mult.Freq) && mult.Freq[i] > 0
		if it, ok := j.itemOf(vals, i, w, mu, planned); ok {
			items = append(items, it)
		}
	}
	sortItems(items)
	j.itemsHint = len(items)
	return items
}

// multiplier is the plan's multiplier of a URL of host h: the budget's,
// plus the host's where its cap binds.
func multiplier(mult PlanOutput, h int32) float64 {
	if int(h) < len(mult.HostNu) {
		return mult.Mu + mult.HostNu[h]
	}
	return mult.Mu
}

// itemOf is what exploration wants of element i, of weight w at the
// multiplier mu, which the plan keeps (planned) or gives up: a probe or
// a recheck; false if none (the plan's frequency is all it gets). It ends the probe session of a URL now
// resolved (sessionsOver).
func (j *PlanJob) itemOf(vals *itemValues, i int, w, mu float64, planned bool) (exploreItem, bool) {
	post := &j.posts[i]
	// The data behind the posterior span about the estimator's memory
	// (at least eight of the URL's intervals); at hazard ĥ the rate
	// was redrawn since with probability 1 − e^{−ĥ·span}, and is then
	// a draw from the prior (docs/design.md §3.7). The intervals are
	// those the URL was last fetched at, not the plan's: a URL just
	// probed and given up has fresh data, though its plan now waits
	// a year (counting that year would unresolve it at once, and it
	// would be probed again and again).
	span := j.halfLife / math.Ln2
	if j.lastIv != nil && j.lastIv[i] > 0 {
		span = math.Max(j.halfLife, minMemory*j.lastIv[i]) / math.Ln2
	}
	rho := -math.Expm1(-j.hazard * span)
	pKeep := keepProbability(post, vals.pop, rho, w, mu)
	lamStar := w / mu
	tau := math.Ln2 / lamStar
	if j.probes[i] > 0 && (pKeep >= 1-resolved || pKeep <= resolved) {
		j.sessionsOver = append(j.sessionsOver, i)
	}
	// A URL the plan gives up on is rechecked unless it is probed: a
	// recheck is two fetches a period, the check and its probe, or
	// one where the URL's Last-Modified is trusted (checkFetches).
	dated := j.dated.has(i)
	recheckItem := exploreItem{i: i, f: 2 / vals.recheck(w, mu, tau, dated), score: 1, tau: tau}
	if dated {
		recheckItem.f, recheckItem.tau = 1/vals.recheck(w, mu, tau, dated), 0
	}
	switch {
	case pKeep >= 1-resolved:
		// Worth fetching: the plan's frequency, or a recheck if the
		// plan gives it up.
		return recheckItem, !planned
	case pKeep > resolved && j.probes[i] >= maxProbes:
		// As resolved as probes make it: the plan's frequency, or a
		// recheck if the plan gives it up.
		return recheckItem, !planned
	case pKeep <= resolved:
		return recheckItem, true
	}
	v := vals.probeWorth(post, w, mu, tau, rho, dated)
	switch {
	case v > mu:
		it := exploreItem{i: i, f: 1 / tau, score: v / mu, sticky: j.probing.has(i)}
		if !planned {
			it.fallback = exploreItem0{recheckItem.f, recheckItem.tau}
		}
		return it, true
	}
	return recheckItem, !planned
}

// itemValues memoises, for one list of items, the values exploreItems
// weighs: many URLs share a weight and a multiplier, and many a
// posterior (the same history).
type itemValues struct {
	j    *PlanJob
	pop  *estimate.Summary // the collection's prior, for the value of rechecks
	kept map[keepKey][2]float64
	voi  map[voiKey]float64
}

type keepKey struct{ w, mu float64 }

type voiKey struct {
	q               [estimate.SummaryQuantiles]float32
	w, mu, tau, rho float64
	dated           bool
}

// recheck is the recheck interval of a URL given up (recheckInterval),
// never shorter than its probe interval nor longer than maxRecheck.
// A check is one fetch where the URL's Last-Modified is trusted, two
// otherwise (checkFetches).
func (v *itemValues) recheck(w, mu, tau float64, dated bool) float64 {
	k := keepKey{w, mu}
	kv, ok := v.kept[k]
	if !ok {
		a, b := keptValue(v.pop, w, mu)
		kv = [2]float64{a, b}
		v.kept[k] = kv
	}
	t := math.Max(recheckInterval(mu, checkFetches(dated), v.j.hazard, kv[0], kv[1]), tau)
	if longest := maxRecheck * v.j.halfLife; math.IsInf(t, 1) || t > longest {
		t = longest
	}
	return t
}

// probeWorth is the value of probing a URL of posterior post
// (probeValue).
func (v *itemValues) probeWorth(post *estimate.Summary, w, mu, tau, rho float64, dated bool) float64 {
	k := voiKey{post.Q, w, mu, tau, rho, dated}
	val, ok := v.voi[k]
	if !ok {
		// What probes teach is used for as long as the estimator
		// keeps it: its mean memory, which for a URL given up is
		// at least eight of its recheck intervals (the fading
		// floor of Estimator.Observe); and no longer than the rate
		// is expected to last.
		mem := math.Max(v.j.halfLife, minMemory*v.recheck(w, mu, tau, dated)) / math.Ln2
		val = probeValue(beliefOf(post, v.pop, rho), w, mu, tau, math.Min(v.j.horizon, mem))
		v.voi[k] = val
	}
	return val
}

// sortItems orders the items: rechecks first (they are few and cheap),
// then the probes under way, which run until their URL is resolved (a
// probe dropped half way has cost its fetches for nothing, and its URL
// would wait a whole plan interval before the next), then the most
// valuable.
func sortItems(items []exploreItem) {
	rank := func(it exploreItem) int {
		switch {
		case it.isRecheck():
			return 0
		case it.sticky:
			return 1
		}
		return 2
	}
	// The sort keys are computed once: a re-plan of a large collection
	// sorts hundreds of thousands of items several times (the
	// multiplier's bisection), and a logarithm per comparison showed in
	// the cold start's profile.
	for k := range items {
		items[k].rank = rank(items[k])
		items[k].key = scoreKey(items[k].score)
	}
	slices.SortStableFunc(items, func(a, b exploreItem) int {
		if a.rank != b.rank {
			return cmp.Compare(a.rank, b.rank)
		}
		return cmp.Compare(b.key, a.key)
	})
}

// scoreKey is an exploration score rounded to six significant digits in
// its logarithm: URLs with the same history score the same up to the
// rounding of the value-of-information search, which depends on the unit
// of time, and a tie must fall to the URLs' order, not to that rounding,
// or a run would depend on the unit of time (TestVirtualUnitFree).
func scoreKey(score float64) float64 { return math.Round(math.Log(score) * 1e6) }

// maxProbes ends a probe session that has not resolved its URL: after
// this many probes at the threshold's interval the rate is known to within
// about a third, and a rate that close to the threshold λ* = w/μ is worth
// little either way (the best net value of a URL at rate λ, w·e^{−r} with
// g(r) = μλ/w, vanishes at the threshold), so the URL is planned at its
// estimate until a change point (or a plan whose threshold moved past its
// posterior) starts a new session.
const maxProbes = 8

// resolved is how sure the posterior must be that a URL is (or is not)
// worth fetching at the plan's multiplier for it to count as resolved.
const resolved = 0.05

// maxRecheck bounds the time a given-up URL waits for a recheck, in
// half-lives: 4 × 90 days, about a year, and as many simulated days when a
// benchmark scales the half-life to its simulated day.
const maxRecheck = 4.0
