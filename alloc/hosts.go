package alloc

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
)

// solveHosts runs the per-host root searches in rfs (indexed by capped
// host k) that are not done: each finds the multiplier μ_h* at which the
// host's elements sum to its cap.
//
// A host's search may need many more rounds than the outer one: with few
// elements, one element crossing its give-up threshold moves the host's
// sum by a visible fraction of the cap. So the binding hosts' elements are
// first gathered into contiguous per-host arrays (one scan of all
// elements), each host is then iterated on its own data only, hosts spread
// over the workers, and the frequencies are scattered back at the end.
// Extra memory: 28 bytes per element of a binding host.
func (c *core) solveHosts(rfs []rootFinder) error {
	var hosts []int
	for k := range rfs {
		if !rfs[k].done {
			hosts = append(hosts, k)
		}
	}
	if len(hosts) == 0 {
		return nil
	}
	// Gather: offsets by counting, then fill.
	off := make([]int, len(rfs)+1)
	rates, weights, hostOf := c.cols.Rates, c.cols.Weights, c.cols.Hosts
	for i, rate := range rates {
		if rate == 0 || weights[i] == 0 || hostOf[i] < 0 {
			continue
		}
		if k := c.capOf[hostOf[i]]; k >= 0 && !rfs[k].done {
			off[k+1]++
		}
	}
	for k := range rfs {
		off[k+1] += off[k]
	}
	n := off[len(rfs)]
	idx := make([]int32, n)
	lam, w, f := make([]float64, n), make([]float64, n), make([]float64, n)
	fill := slices.Clone(off[:len(rfs)])
	for i, rate := range rates {
		if rate == 0 || weights[i] == 0 || hostOf[i] < 0 {
			continue
		}
		if k := c.capOf[hostOf[i]]; k >= 0 && !rfs[k].done {
			j := fill[k]
			fill[k]++
			idx[j], lam[j], w[j], f[j] = int32(i), rate, weights[i], c.freq[i]
		}
	}
	c.passes++

	// Largest hosts first so that the workers finish together.
	slices.SortFunc(hosts, func(a, b int) int { return cmp.Compare(off[b+1]-off[b], off[a+1]-off[a]) })
	var next atomic.Int64
	var failed atomic.Int64
	failed.Store(-1)
	work := func() {
		for {
			j := int(next.Add(1) - 1)
			if j >= len(hosts) {
				return
			}
			k := hosts[j]
			lo, hi := off[k], off[k+1]
			rf := &rfs[k]
			for !rf.done {
				if rf.n >= maxRounds {
					failed.Store(int64(k))
					break
				}
				S, D, up, down := evalGroup(c.obj, lam[lo:hi], w[lo:hi], f[lo:hi], math.Exp(rf.t), rf.acc)
				rf.observe(S, D, math.Log(up), math.Log(down))
			}
			if rf.fill {
				fillGroup(c.obj, lam[lo:hi], w[lo:hi], f[lo:hi], math.Exp(rf.t), math.Exp(rf.hi), rf.target)
			}
		}
	}
	var wg sync.WaitGroup
	for range min(c.workers, len(hosts)) - 1 {
		wg.Go(work)
	}
	work()
	wg.Wait()
	if k := failed.Load(); k >= 0 {
		return fmt.Errorf("%w (cap of host %d)", errNoConvergence, c.hosts[k])
	}
	for j, i := range idx {
		c.freq[i] = f[j]
	}
	return nil
}

// evalGroup evaluates a group of active elements at multiplier m, updating
// f in place, and returns Σf, Σ f·el and the nearest give-up thresholds
// w/λ above and below m (freshness only; +Inf and 0 when there are none).
func evalGroup(obj Objective, lam, w, f []float64, m, acc float64) (S, D, up, down float64) {
	up = math.Inf(1)
	tol := tolFor(acc)
	for i := range f {
		var el float64
		if obj == Freshness {
			f[i], el = freshFreq(lam[i], w[i], m, f[i], tol)
			if key := w[i] / lam[i]; f[i] > 0 {
				up = min(up, key)
			} else {
				down = max(down, key)
			}
		} else {
			f[i], el = ageFreq(lam[i], w[i], m, f[i], tol)
		}
		S += f[i]
		D += f[i] * el
	}
	return S, D, up, down
}

// fillGroup is fillBetween for a gathered group: it leaves f at the
// blend of the group's allocations at mLo and mHi that sums to target.
func fillGroup(obj Objective, lam, w, f []float64, mLo, mHi, target float64) {
	sHi, _, _, _ := evalGroup(obj, lam, w, f, mHi, fullAcc)
	fHi := slices.Clone(f)
	sLo, _, _, _ := evalGroup(obj, lam, w, f, mLo, fullAcc)
	if !(sLo > sHi) {
		return
	}
	theta := min(max((sLo-target)/(sLo-sHi), 0), 1)
	for i := range f {
		f[i] -= theta * (f[i] - fHi[i])
	}
}
