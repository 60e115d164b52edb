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
//  3. Fallback: local·LocalRatio, the local count scaled by an estimated
//     server/local ratio (DefaultLocalRatio when LocalRatio is 0).
//
// Map keys must be canonical ([Single], [Pair]); negative entries are
// ignored as invalid. The zero Counts is usable (fallback only).
type Counts struct {
	Observed       map[Query]int
	Reference      map[Query]int
	ReferenceScale float64 // c; 0 means 1
	LocalRatio     float64 // server/local ratio for unknown queries; 0 means DefaultLocalRatio
}

// ServerCount implements [Counter].
func (c Counts) ServerCount(q Query, local int) float64 {
	if n, ok := c.Observed[q]; ok && n >= 0 {
		return float64(n)
	}
	if n, ok := c.Reference[q]; ok && n >= 0 {
		s := c.ReferenceScale
		if !(s > 0) || math.IsInf(s, 0) {
			s = 1
		}
		return math.Ceil(float64(n) * s)
	}
	r := c.LocalRatio
	if !(r > 0) || math.IsInf(r, 0) {
		r = DefaultLocalRatio
	}
	return math.Ceil(float64(local) * r)
}
