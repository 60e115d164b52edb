package capture

import (
	"container/heap"
	"fmt"
	"math"
	"sort"
)

// segment is an elementary interval (a, b] of §3.1.2 between consecutive
// boundaries, with the collision weight W of its updates.
type segment struct {
	a, b    float64 // b > a, b may exceed T
	updates int     // updates with positive mass in (a, b]
	w       float64 // W = Σ_{x<y, not both exact} P_x·P_y
}

// Theoretical is the theoretical-modelling strategy of §3.1.2 (the paper
// calls it linear in the candidate points; ours is O(s log s) with the
// elimination step below):
//
//  1. The elementary intervals are cut at every start and end of an update
//     window. An interval in which at most one update can occur is a
//     "single update interval"; one in which two or more can occur is a
//     "multiple update interval".
//  2. Poll once at the end of every interval that can hold an update (the
//     Fig. 3 example: polls at 10, 20, 30, 35 and 40). The paper's step 2a
//     also polls at the beginning of each single-update interval; that
//     point is the end of the previous interval, already polled when the
//     previous interval can hold an update and useless otherwise, so no
//     extra poll is spent on it.
//  3. Split the remaining polls across multiple-update intervals by
//     condition I. With K_i polls at the ends of K_i equal sub-intervals,
//     the paper gives the miss probability C_i t²/K_i with C_i = Pr_A·Pr_B
//     the product of the densities. We use the pair mass
//     W_i = Σ_{x<y} P_x P_y (P = probability mass in the interval), which is
//     C_i t_i² for two updates, extends the paper's remark to three or more
//     updates, and absorbs unequal lengths t_i exactly as the paper's
//     subdivision into common-length pieces does. Minimising Σ W_i/K_i with
//     Σ K_i fixed gives W_1/K_1² = … (condition I), K_i ∝ √W_i; we reach
//     its integer optimum by greedy marginal allocation, which is exact for
//     this convex separable objective. Pairs of exact updates at the same
//     instant cannot be separated by any poll and are left out of W_i.
//
// The paper assumes enough polls for step 2. When n is smaller than the
// number of step-2 polls (common for large s) we extend it: repeatedly drop
// the step-2 poll whose removal raises expected misses least, scored with
// the exact window model. Returned polls may be fewer than n when no
// multiple-update interval can use more.
func Theoretical(p Pattern, n int) (Schedule, error) {
	if err := p.Validate(); err != nil {
		return Schedule{}, fmt.Errorf("capture: theoretical: %w", err)
	}
	if err := checkN(n); err != nil {
		return Schedule{}, fmt.Errorf("capture: theoretical: %w", err)
	}
	m := newModel(p)
	polls, s := theoretical(m, n)
	return newSchedule(m, polls, StrategyTheoretical, s), nil
}

func (m *model) segments() []segment {
	bs := m.boundaries()
	segs := make([]segment, 0, len(bs))
	for i, a := range bs {
		b := bs[(i+1)%len(bs)]
		if b <= a {
			b += m.T
		}
		sg := segment{a: a, b: b}
		var sc, qc, sp float64
		r := m.near(a, b)
		for _, span := range [][2]int{{r[0], r[1]}, {r[2], r[3]}} {
			for _, e := range m.ev[span[0]:span[1]] {
				P := e.w * m.mass(e, a, b)
				if P <= 0 {
					continue
				}
				sg.updates++
				if e.width > 0 {
					sc += P
					qc += P * P
				} else {
					sp += P
				}
			}
		}
		sg.w = math.Max(0, (sc*sc-qc)/2+sc*sp)
		segs = append(segs, sg)
	}
	return segs
}

// theoretical returns the polls and the number of candidate points
// (boundaries) it considered.
func theoretical(m *model, n int) ([]float64, int) {
	segs := m.segments()
	var base []float64
	var multi []int
	for i, sg := range segs {
		if sg.updates == 0 {
			continue
		}
		base = append(base, mod(sg.b, m.T))
		if sg.updates > 1 && sg.w > 0 && sg.b > sg.a {
			multi = append(multi, i)
		}
	}
	if len(base) >= n {
		sort.Float64s(base)
		return eliminate(m, base, n), len(segs)
	}
	k := allocate(segs, multi, n-len(base))
	polls := base
	for _, i := range multi {
		sg := segs[i]
		for j := 1; j < k[i]; j++ { // the K-th poll is the base poll at sg.b
			polls = append(polls, mod(sg.a+(sg.b-sg.a)*float64(j)/float64(k[i]), m.T))
		}
	}
	return dedupSorted(polls), len(segs)
}

// allocate realises condition I in integers: each eligible interval starts
// with its base poll (K_i = 1) and every extra poll goes to the interval
// with the largest marginal gain W_i/K_i − W_i/(K_i+1).
func allocate(segs []segment, multi []int, extra int) map[int]int {
	k := make(map[int]int, len(multi))
	if len(multi) == 0 {
		return k
	}
	h := make(gainHeap, 0, len(multi))
	for _, i := range multi {
		k[i] = 1
		h = append(h, gainItem{idx: i, gain: segs[i].w / 2})
	}
	heap.Init(&h)
	for ; extra > 0; extra-- {
		top := &h[0]
		k[top.idx]++
		K := float64(k[top.idx])
		top.gain = segs[top.idx].w / (K * (K + 1))
		heap.Fix(&h, 0)
	}
	return k
}

type gainItem struct {
	idx  int
	gain float64
}

type gainHeap []gainItem

func (h gainHeap) Len() int { return len(h) }
func (h gainHeap) Less(i, j int) bool {
	if h[i].gain != h[j].gain {
		return h[i].gain > h[j].gain
	}
	return h[i].idx < h[j].idx
}
func (h gainHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *gainHeap) Push(x any)   { *h = append(*h, x.(gainItem)) }
func (h *gainHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// eliminate drops polls from the sorted cyclic list until n remain, each
// time removing the one whose removal adds the least expected misses:
// misses(prev, next) − misses(prev, p) − misses(p, next). Window costs are
// cached, so each step evaluates two merged windows.
func eliminate(m *model, polls []float64, n int) []float64 {
	cnt := len(polls)
	if cnt <= n {
		return polls
	}
	prev := make([]int, cnt)
	next := make([]int, cnt)
	ver := make([]int, cnt)
	win := make([]float64, cnt) // misses(polls[i], polls[next[i]])
	for i := range cnt {
		prev[i], next[i] = (i+cnt-1)%cnt, (i+1)%cnt
		win[i] = m.misses(polls[i], polls[next[i]])
	}
	item := func(i int) delItem {
		merged := m.misses(polls[prev[i]], polls[next[i]])
		return delItem{idx: i, ver: ver[i], merged: merged, delta: merged - win[prev[i]] - win[i]}
	}
	h := make(delHeap, cnt)
	for i := range cnt {
		h[i] = item(i)
	}
	heap.Init(&h)
	alive := make([]bool, cnt)
	for i := range alive {
		alive[i] = true
	}
	for cnt > n && h.Len() > 0 {
		it := heap.Pop(&h).(delItem)
		i := it.idx
		if !alive[i] || it.ver != ver[i] {
			continue
		}
		alive[i] = false
		p, q := prev[i], next[i]
		next[p], prev[q] = q, p
		win[p] = it.merged
		cnt--
		for _, j := range []int{p, q} {
			ver[j]++
			heap.Push(&h, item(j))
		}
	}
	out := make([]float64, 0, n)
	for i, ok := range alive {
		if ok {
			out = append(out, polls[i])
		}
	}
	return out
}

type delItem struct {
	idx           int
	ver           int
	delta, merged float64
}

type delHeap []delItem

func (h delHeap) Len() int { return len(h) }
func (h delHeap) Less(i, j int) bool {
	if h[i].delta != h[j].delta {
		return h[i].delta < h[j].delta
	}
	return h[i].idx < h[j].idx
}
func (h delHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *delHeap) Push(x any)   { *h = append(*h, x.(delItem)) }
func (h *delHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
