package probe

import (
	"math"
	"strings"
)

// Query is a keyword query: one keyword, or the conjunction of two (the
// paper §5.1 found subsets up to size two sufficient). B is empty for a
// single keyword. Build queries with [Single] and [Pair] so that equal
// queries compare equal (pairs are stored in sorted order).
type Query struct {
	A, B string
}

// Single returns the one-keyword query for k.
func Single(k string) Query { return Query{A: k} }

// Pair returns the conjunctive query "a AND b" in canonical (sorted) order.
// Pair(a, a) is Single(a).
func Pair(a, b string) Query {
	switch {
	case a == b || b == "":
		return Query{A: a}
	case a == "":
		return Query{A: b}
	case b < a:
		a, b = b, a
	}
	return Query{A: a, B: b}
}

// Keywords returns the query's keywords.
func (q Query) Keywords() []string {
	if q.B == "" {
		if q.A == "" {
			return nil
		}
		return []string{q.A}
	}
	return []string{q.A, q.B}
}

// String renders the query as the search box would receive it.
func (q Query) String() string { return strings.Join(q.Keywords(), " ") }

// Counter estimates the server coverage |R_S(q)|, the number of server
// tuples matching q (paper §4.1 "Estimating Server Coverage"). local is
// |R_L(q)|, the number of local items matching q, for estimators that
// scale it. Return values below local, NaN or negative are sanitised by
// GreedyProbes (see there).
type Counter interface {
	ServerCount(q Query, local int) float64
}

// CounterFunc adapts a function to [Counter].
type CounterFunc func(q Query, local int) float64

// ServerCount calls f.
func (f CounterFunc) ServerCount(q Query, local int) float64 { return f(q, local) }

// DefaultLocalRatio is the server/local coverage ratio [Counts] assumes
// for a query it has no evidence for: the local relation is taken to hold a
// tenth of the server's matches. It is deliberately pessimistic (such a
// query looks ten times less efficient than one whose server coverage is
// known to equal its local coverage) so that guessed queries lose to
// measured ones.
const DefaultLocalRatio = 10

// Counts is the standard [Counter], consulting in order:
//
//  1. Observed: totals read off earlier result pages ("about N results",
//     paper §4.1) — exact, used as is.
//  2. Reference: counts in a downloadable reference corpus, multiplied by
//     ReferenceScale (paper §4.1: |R_S(q)| ≈ c·|R_DBLP(q)| with c = 4.6 for
//     Google Scholar vs DBLP; 0.58·|R_IMDB(q)| for Amazon vs IMDB).
//  3. Fallback: local·LocalRatio (local·PairRatio for a pair), the local
//     count scaled by an estimated server/local ratio (DefaultLocalRatio
//     when the ratio is 0). [LearnRatio] estimates it from observed totals.
//
// A pair query's estimate from 2 or 3 is capped by the observed total of
// either of its keywords alone, since a conjunction matches no more than
// each of its terms. Map keys must be canonical ([Single], [Pair]);
// negative entries are ignored as invalid. The zero Counts is usable
// (fallback only).
type Counts struct {
	Observed       map[Query]int
	Reference      map[Query]int
	ReferenceScale float64 // c; 0 means 1
	LocalRatio     float64 // server/local ratio for unknown queries; 0 means DefaultLocalRatio
	PairRatio      float64 // the same for unknown pairs; 0 means LocalRatio
}

// ServerCount implements [Counter].
func (c Counts) ServerCount(q Query, local int) float64 {
	if n, ok := c.Observed[q]; ok && n >= 0 {
		return float64(n)
	}
	var est float64
	if n, ok := c.Reference[q]; ok && n >= 0 {
		s := c.ReferenceScale
		if !(s > 0) || math.IsInf(s, 0) {
			s = 1
		}
		est = math.Ceil(float64(n) * s)
	} else {
		r := c.LocalRatio
		if q.B != "" && c.PairRatio > 0 && !math.IsInf(c.PairRatio, 0) {
			r = c.PairRatio
		}
		if !(r > 0) || math.IsInf(r, 0) {
			r = DefaultLocalRatio
		}
		est = math.Ceil(float64(local) * r)
	}
	if q.B != "" {
		for _, k := range []string{q.A, q.B} {
			if n, ok := c.Observed[Single(k)]; ok && n >= 0 {
				est = min(est, float64(n))
			}
		}
	}
	return est
}

// RatioSample is one query whose total was read off a result page: its
// server count and its local count |R_L(q)| when it was planned.
type RatioSample struct {
	Server, Local int
}

// LearnRatio estimates the server/local coverage ratio of queries whose
// server count is unknown from queries whose total was observed, as the
// paper's §4.1 estimates its scale c "by comparing the results number of
// several queries": the geometric mean of the observed Server/Local,
// shrunk toward prior with the weight of priorWeight observations, so that
// one query cannot make every unknown query look cheap and many leave the
// prior behind. The geometric mean, because ratios spread over orders of
// magnitude (an author's name against a common title word) and one huge
// ratio should not swamp the rest. A total of zero counts as half a
// result. Samples with Local ≤ 0 or Server < 0 are ignored; prior ≤ 0 (or
// not finite) means DefaultLocalRatio, priorWeight ≤ 0 means 1.
//
// The planner observes the queries it chose, those it expected to be
// cheap, so the estimate leans optimistic; an optimistic guess costs one
// round at most, since the query's observed total replaces it.
func LearnRatio(samples []RatioSample, prior, priorWeight float64) float64 {
	if !(prior > 0) || math.IsInf(prior, 0) {
		prior = DefaultLocalRatio
	}
	if !(priorWeight > 0) || math.IsInf(priorWeight, 0) {
		priorWeight = 1
	}
	var sum float64
	n := 0
	for _, s := range samples {
		if s.Local <= 0 || s.Server < 0 {
			continue
		}
		sum += math.Log(max(float64(s.Server), 0.5) / float64(s.Local))
		n++
	}
	if n == 0 {
		return prior
	}
	return math.Exp((sum + priorWeight*math.Log(prior)) / (float64(n) + priorWeight))
}
