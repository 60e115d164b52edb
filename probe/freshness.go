package probe

import "math"

// Item is one tuple r of the local relation L.
type Item struct {
	// ID is the source's unique id, used for the fetch-by-id fallback
	// (paper §1.3).
	ID string
	// Keywords are the searchable words of the item (title words, author
	// names, ...). A query matches an item when every query keyword is
	// among them (paper §3: rows are bags of words, queries are AND).
	// Matching is exact: normalise case and stemming before planning.
	Keywords []string
	// Weight is the importance w(r) (paper §3.1); must be finite and ≥ 0.
	Weight float64
	// Rate is the Poisson update rate λ in updates per time unit (paper
	// §4.2); must be finite and ≥ 0.
	Rate float64
	// LastSync is the time of the last synchronisation, in the same time
	// units as Rate and the planning time. A LastSync after the planning
	// time counts as "just synced" (zero staleness).
	LastSync float64
}

// Model selects the expected dissimilarity E[F(r;t)] of an item t time
// units after its last sync under Poisson(λ) updates.
type Model int

const (
	// ModelAccumulated is the paper's §4.2 definition F(e;t) = Σ_{t_i∈U}
	// (t − t_i): every update since the last sync contributes the time it
	// has been missed. Its expectation is ½λt². The paper derives this as
	// an approximation bracketed by bounds; it is in fact exact (Campbell's
	// theorem: E Σ g(τ_k) = ∫_0^t λ g(x) dx with g(x) = t − x). This is the
	// model behind the paper's §4.3 a_i and §4.4 g(x, I), and the default.
	ModelAccumulated Model = iota
	// ModelCount is the §3.1 numeric-difference dissimilarity
	// |r_S.citations − r_L.citations|. Under Poisson updates each update
	// adds one citation, so its expectation is the mean count λt. The
	// ordering of §4.3 is unchanged under this model (the rearrangement
	// argument only needs a_i ≥ 0 and an increasing cost of delay).
	ModelCount
)

func (m Model) valid() bool { return m == ModelAccumulated || m == ModelCount }

// String names the model.
func (m Model) String() string {
	switch m {
	case ModelAccumulated:
		return "accumulated(½λt²)"
	case ModelCount:
		return "count(λt)"
	}
	return "Model(invalid)"
}

// delay returns c(t) such that E[F(r;t)] = λ·c(t): ½t² or t. Negative
// elapsed time is clamped to zero (an item synced "in the future" is
// fresh).
func (m Model) delay(t float64) float64 {
	if !(t > 0) { // also catches NaN
		return 0
	}
	if m == ModelCount {
		return t
	}
	return 0.5 * t * t
}

// delayIntegral returns ∫_a^b c(t) dt for the model's c (see delay), with
// negative times clamped to zero.
func (m Model) delayIntegral(a, b float64) float64 {
	a, b = max(a, 0), max(b, 0)
	if !(b > a) {
		return 0
	}
	if m == ModelCount {
		return (b*b - a*a) / 2
	}
	return (b*b*b - a*a*a) / 6
}

// Expected returns E[F(r;t)] for an item with update rate λ that was
// synced elapsed time units ago: ½λt² or λt (see [Model]). Negative or NaN
// elapsed time and negative or NaN rates give 0.
func (m Model) Expected(rate, elapsed float64) float64 {
	if !(rate > 0) {
		return 0
	}
	return rate * m.delay(elapsed)
}

// ItemFreshness returns the weighted expected dissimilarity
// w(r)·E[F(r; now)] of one item (a term of Eq. 1/Eq. 3). Invalid
// (negative or NaN) weights count as zero.
func ItemFreshness(it Item, now float64, m Model) float64 {
	if !(it.Weight > 0) {
		return 0
	}
	v := it.Weight * m.Expected(it.Rate, now-it.LastSync)
	if math.IsNaN(v) {
		return 0
	}
	return v
}

// ContentFreshness returns the expected content freshness of the local
// relation at time now, F(L; now) = (1/|L|) Σ w(r)·E[F(r; now)]
// (paper §3.1 Eq. 1, §4.2 Eq. 3). Zero means perfectly in sync; larger is
// staler. An empty relation has freshness 0.
func ContentFreshness(items []Item, now float64, m Model) float64 {
	if len(items) == 0 {
		return 0
	}
	var s float64
	for _, it := range items {
		s += ItemFreshness(it, now, m)
	}
	return s / float64(len(items))
}
