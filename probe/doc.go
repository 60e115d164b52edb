// Package probe plans keyword-search probes that refresh a local relation
// of tracked items (papers with citation counts, products with prices)
// whose source exposes them only through a keyword search returning at most
// K results per page, plus an expensive fetch-by-id.
//
// It implements docs/design.md §3.6, which follows the content-freshness
// paper on keyword-search probes (greedyProbes):
//
//   - Content freshness (paper §3.1 Definition 1, §4.2 Eq. 3): F(L;t) =
//     (1/|L|) Σ w(r)·F(r;t). Under Poisson updates with rate λ the expected
//     per-item dissimilarity t time units after the last sync is ½λt²
//     ([ModelAccumulated], the paper's §4.2 definition F(e;t) = Σ_{updates}
//     (t − t_i)) or λt ([ModelCount], the §3.1 numeric difference
//     |citations_S − citations_L|, whose expectation is the mean Poisson
//     count). See [Model].
//   - GreedyProbes (paper Algorithm 2, §4.1 Eq. 2): greedily choose
//     single-keyword and keyword-pair queries, and optionally fetches by
//     id, that maximise weighted uncovered staleness per server result
//     (counted in whole result pages, see [ScorePerResult]), until a
//     request quota is spent or every item is covered; uncovered items fall
//     back to fetch by id.
//   - Server counts (§4.1): observed totals, reference counts times a
//     scale, or the local count times a server/local ratio that
//     [LearnRatio] estimates from observed totals.
//   - Query order (§4.3): send queries in ascending order of
//     a_i = (1/|L|) Σ_{e∈g_i} ½ w_e λ_e I².
//   - Query interval (§4.4): doubling then bisection for the largest
//     interval I that keeps expected freshness under a threshold α, over
//     the paper's loop ([Plan.FindInterval]) or over a round that reaches
//     part of the relation ([RoundFreshness], [RoundLength]).
//   - Coverage ratio and speedup ratio (§5.1).
//
// The package is pure planning mathematics: no I/O, no package-level
// mutable state, and every exported function is safe on any input
// (invalid input yields an error naming the offending field).
package probe
