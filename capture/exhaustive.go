package capture

import (
	"fmt"
	"math"
	"sort"
)

// DefaultSubdivisions is how many equal parts each jittered elementary
// interval is cut into when building exhaustive candidates. The paper's
// §3.1.1 leaves the candidate set {T_1, …, T_s} to the user (its example is
// every minute of the hour); for jittered updates the best poll inside an
// overlap can be interior, so we add a few evenly spaced interior points.
const DefaultSubdivisions = 4

// MaxSubdivisions bounds the subdivisions argument.
const MaxSubdivisions = 1024

// MaxExhaustive is the largest candidate count Exhaustive accepts: its
// s×s window tables and O(s³N) time are impractical beyond it.
const MaxExhaustive = 4 * ExhaustiveLimit

func checkSubdivisions(sub int) error {
	if sub < 1 || sub > MaxSubdivisions {
		return invalid("subdivisions = %d, must be in [1, %d]", sub, MaxSubdivisions)
	}
	return nil
}

// Candidates returns the sorted candidate poll phases {T_1, …, T_s} of
// §3.1.1 for the pattern: every distinct update phase, the start and end of
// every jitter window, and subdivisions−1 evenly spaced points inside each
// elementary interval that holds jittered mass. For a pattern without
// jitter the update phases suffice: moving a poll back to the latest update
// phase at or before it changes no window's contents, so some optimal
// strategy polls only at update phases.
func Candidates(p Pattern, subdivisions int) ([]float64, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("capture: candidates: %w", err)
	}
	if err := checkSubdivisions(subdivisions); err != nil {
		return nil, fmt.Errorf("capture: candidates: %w", err)
	}
	return candidates(newModel(p), subdivisions), nil
}

// boundaries are the distinct sorted phases where the set of possible
// updates changes: the elementary interval ends of §3.1.2.
func (m *model) boundaries() []float64 {
	b := make([]float64, 0, 2*len(m.ev))
	for _, e := range m.ev {
		b = append(b, e.lo)
		if e.width > 0 {
			b = append(b, mod(e.lo+e.width, m.T))
		}
	}
	return dedupSorted(b)
}

func dedupSorted(b []float64) []float64 {
	sort.Float64s(b)
	out := b[:0]
	for i, x := range b {
		if i == 0 || x != out[len(out)-1] {
			out = append(out, x)
		}
	}
	return out
}

// jitteredIn reports whether a jittered event has positive mass in (a, b].
func (m *model) jitteredIn(a, b float64) bool {
	r := m.near(a, b)
	for _, span := range [][2]int{{r[0], r[1]}, {r[2], r[3]}} {
		for _, e := range m.ev[span[0]:span[1]] {
			if e.width > 0 && m.mass(e, a, b) > 0 {
				return true
			}
		}
	}
	return false
}

func candidates(m *model, subdivisions int) []float64 {
	bs := m.boundaries()
	if subdivisions <= 1 || m.maxW == 0 {
		return bs
	}
	out := append([]float64(nil), bs...)
	for i, a := range bs {
		b := bs[(i+1)%len(bs)]
		if b <= a {
			b += m.T
		}
		if !m.jitteredIn(a, b) {
			continue
		}
		for k := 1; k < subdivisions; k++ {
			out = append(out, mod(a+(b-a)*float64(k)/float64(subdivisions), m.T))
		}
	}
	return dedupSorted(out)
}

// Exhaustive is the empirical strategy of §3.1.1: a dynamic programme over
// the s candidate phases choosing the n polls that minimise expected missed
// updates. The paper's recurrence NumMisses(T_i, k, l) = min_j
// NumMisses(T_i, j, l) + NumMisses(T_{i+j}, k−j, l−1) is realised here as a
// shortest path with exactly n polls: fix the earliest poll f, then
// D[l][j] = min_{i<j} D[l−1][i] + misses(T_i, T_j), closing the cycle with
// misses(T_j, T_f + T). Ties in expected misses go to the strategy whose
// updates wait least for their capturing poll (model.window). This is O(s³N) as in the paper and exact over the
// candidate set, because expected misses decompose over the windows between
// consecutive polls. When n ≥ s it polls every candidate (extra polls cannot
// lower expected misses) and so may return fewer than n polls.
func Exhaustive(p Pattern, n, subdivisions int) (Schedule, error) {
	if err := p.Validate(); err != nil {
		return Schedule{}, fmt.Errorf("capture: exhaustive: %w", err)
	}
	if err := checkN(n); err != nil {
		return Schedule{}, fmt.Errorf("capture: exhaustive: %w", err)
	}
	if err := checkSubdivisions(subdivisions); err != nil {
		return Schedule{}, fmt.Errorf("capture: exhaustive: %w", err)
	}
	m := newModel(p)
	if b := len(m.boundaries()); b > MaxExhaustive {
		return Schedule{}, invalid("capture: exhaustive: %d candidates exceed MaxExhaustive = %d; use Theoretical", b, MaxExhaustive)
	}
	cand := candidates(m, subdivisions)
	if len(cand) > MaxExhaustive {
		return Schedule{}, invalid("capture: exhaustive: %d candidates exceed MaxExhaustive = %d; use Theoretical", len(cand), MaxExhaustive)
	}
	polls := exhaustive(m, cand, n)
	return newSchedule(m, polls, StrategyExhaustive, len(cand)), nil
}

// tieTol is the difference in expected misses below which two strategies
// count as equally good and the one with less waiting wins.
const tieTol = 1e-12

// better orders (misses, wait) pairs lexicographically with tolerance.
func better(c, w, bc, bw float64) bool {
	return c < bc-tieTol || (c <= bc+tieTol && w < bw)
}

func exhaustive(m *model, cand []float64, n int) []float64 {
	s := len(cand)
	if s <= n {
		return append([]float64(nil), cand...)
	}
	cost := make([]float64, s*s)
	wait := make([]float64, s*s)
	for i := range s {
		for j := range s {
			cost[i*s+j], wait[i*s+j] = m.window(cand[i], cand[j], true)
		}
	}
	inf := math.Inf(1)
	dp := make([]float64, n*s)
	dw := make([]float64, n*s)
	parent := make([]int, n*s)
	best, bestW := inf, inf
	var bestPolls []float64
	for f := 0; f <= s-n; f++ {
		for k := range dp {
			dp[k], dw[k] = inf, inf
		}
		dp[f], dw[f] = 0, 0 // row 0: one poll, at f
		for l := 1; l < n; l++ {
			row, prev := dp[l*s:(l+1)*s], dp[(l-1)*s:l*s]
			roww, prevw := dw[l*s:(l+1)*s], dw[(l-1)*s:l*s]
			// the l-th extra poll leaves room for n−1−l more after it
			for j := f + l; j <= s-n+l; j++ {
				bj, bw, bi := inf, inf, -1
				for i := f + l - 1; i < j; i++ {
					if prev[i] == inf {
						continue
					}
					c, w := prev[i]+cost[i*s+j], prevw[i]+wait[i*s+j]
					if better(c, w, bj, bw) {
						bj, bw, bi = c, w, i
					}
				}
				row[j], roww[j], parent[l*s+j] = bj, bw, bi
			}
		}
		last, lastw := dp[(n-1)*s:n*s], dw[(n-1)*s:n*s]
		for j := f + n - 1; j < s; j++ {
			if last[j] == inf {
				continue
			}
			c, w := last[j]+cost[j*s+f], lastw[j]+wait[j*s+f]
			if better(c, w, best, bestW) {
				best, bestW = c, w
				bestPolls = bestPolls[:0]
				for l, k := n-1, j; l >= 0; l-- {
					bestPolls = append(bestPolls, cand[k])
					k = parent[l*s+k]
				}
			}
		}
	}
	sort.Float64s(bestPolls)
	return bestPolls
}
