package alloc

import (
	"math"
	"slices"
)

// Uniform is the paper's uniform allocation (§3 item 2a, §5.1): every
// element gets the same frequency B/N, whatever its rate or weight. With
// host caps, a host whose share would exceed its cap gets exactly its cap,
// spread evenly over its elements, and the excess is shared evenly among
// the remaining elements (water-filling); budget that no element can take
// is reported in Unabsorbed. Mu and HostNu are left zero.
func Uniform(p Problem) (Solution, error) {
	return baseline(p, func(Element) float64 { return 1 })
}

// Proportional is the paper's proportional allocation (§5.1): f_i ∝ λ_i,
// which the paper shows to be worse than uniform for both metrics
// (Table 6). Caps are handled as in Uniform, in proportion to λ_i.
func Proportional(p Problem) (Solution, error) {
	return baseline(p, func(e Element) float64 { return e.Rate })
}

// baseline allocates f_i = α·s_i with s_i = shape(e_i), except that a capped
// host h whose α·Σ_{i∈h} s_i would exceed c_h is scaled down to exactly c_h.
// α solves Σ_h min(α T_h, c_h) + α T_0 = B, a piecewise-linear equation
// whose kinks are the host thresholds c_h/T_h, taken in increasing order.
func baseline(p Problem, shape func(Element) float64) (Solution, error) {
	if err := validate(p); err != nil {
		return Solution{}, err
	}
	T := make([]float64, len(p.HostCaps)) // Σ s_i per host
	var T0 float64                        // Σ s_i on uncapped hosts
	capped := func(h int32) bool {
		return h >= 0 && p.HostCaps[h] > 0 && !math.IsInf(p.HostCaps[h], 1)
	}
	for _, e := range p.Elements {
		s := shape(e)
		if capped(e.Host) {
			T[e.Host] += s
		} else {
			T0 += s
		}
	}
	var hs []int // capped hosts that can take something, by threshold
	for h := range p.HostCaps {
		if capped(int32(h)) && T[h] > 0 {
			hs = append(hs, h)
		}
	}
	thr := func(h int) float64 { return p.HostCaps[h] / T[h] }
	slices.SortFunc(hs, func(a, b int) int {
		ta, tb := thr(a), thr(b)
		switch {
		case ta < tb:
			return -1
		case ta > tb:
			return 1
		}
		return 0
	})
	// Walk the kinks: while α < thr(hs[j]) hosts hs[j:] are unsaturated
	// and the total grows with slope suf[j] = T_0 + Σ_{i≥j} T_{hs[i]}.
	suf := make([]float64, len(hs)+1)
	suf[len(hs)] = T0
	for j := len(hs) - 1; j >= 0; j-- {
		suf[j] = suf[j+1] + T[hs[j]]
	}
	B := p.Budget
	filled := 0.0 // Σ c_h of the saturated hosts
	alpha, unabsorbed := math.Inf(1), 0.0
	for j := 0; ; j++ {
		if suf[j] > 0 {
			if a := (B - filled) / suf[j]; j == len(hs) || a <= thr(hs[j]) {
				alpha = a
				break
			}
		}
		if j == len(hs) {
			// Nothing left that can take budget: T_0 = 0, all hosts full.
			unabsorbed = max(B-filled, 0)
			break
		}
		filled += p.HostCaps[hs[j]]
	}
	freq := make([]float64, len(p.Elements))
	nCapped := 0
	for _, h := range hs {
		if alpha*T[h] > p.HostCaps[h] {
			nCapped++
		}
	}
	for i, e := range p.Elements {
		a := alpha
		if capped(e.Host) {
			a = min(a, thr(int(e.Host)))
		}
		if s := shape(e); s > 0 {
			freq[i] = a * s
		}
	}
	sol := Solution{Freq: freq, CappedHosts: nCapped, Unabsorbed: unabsorbed}
	sol.Freshness = CollectionFreshness(FixedOrder, p.Elements, freq)
	sol.Age = CollectionAge(FixedOrder, p.Elements, freq)
	for i, e := range p.Elements {
		if e.Rate > 0 && e.Weight > 0 && freq[i] == 0 {
			sol.GivenUp++
		}
	}
	return sol, nil
}
