package alloc

import (
	"math"
	"runtime"
	"slices"
	"sync"
)

// core is one solve's working state over a validated Problem.
type core struct {
	cols Columns // the elements, read in place
	obj  Objective
	freq []float64 // warm start in, result out

	// Capped hosts get dense indices k so that per-pass accumulators scale
	// with the number of capped hosts only.
	capOf []int32   // host → k, or −1 when the host has no cap
	caps  []float64 // k → c_h
	hosts []int32   // k → host

	nUncapped  int       // active elements (λ > 0, w > 0) on no capped host
	hostActive []int     // k → active elements on the host
	hostKeyMax []float64 // k → max w/λ over the host's active elements
	keyMax     float64   // max w/λ over all active elements

	// countOnly leaves Solution.Freshness and Age 0: the metrics pass
	// then only counts the elements given up, without the two
	// exponentials per element that the collection's freshness and age
	// cost (SolveColumns, whose callers compute their own figures).
	countOnly bool
	// plainSearch leaves out the crowd model of the multiplier search
	// (rootFinder.crowdStep), for tests that compare the two.
	plainSearch bool

	workers int
	passes  int     // full evaluation passes so far (Solution.Iterations)
	acc     []accum // one per worker
	tot     accum   // acc summed in worker order after each pass
}

// accum holds one worker's sums for a pass.
type accum struct {
	s, d, fw   float64   // uncapped elements: Σf, Σ f·el, Σ w·F
	hs, hd, hf []float64 // the same per capped host
	// Freshness only: the nearest give-up thresholds w/λ on either side of
	// the multiplier, the smallest among elements still fetched and the
	// largest among those given up (see rootFinder).
	up, down float64
	// upLam and downLam are Σλ over the elements whose w/λ is exactly up
	// (resp. down): a crowd at one threshold, such as the URLs not
	// fetched yet, all at the prior's rate (rootFinder.crowd).
	upLam, downLam   float64
	hup, hdown       []float64
	hupLam, hdownLam []float64
	aw, w            float64 // metrics pass: Σ w·A, Σ w
	given            int     // metrics pass: active elements with f = 0
}

func newAccum(nCap int) accum {
	return accum{
		hs: make([]float64, nCap), hd: make([]float64, nCap), hf: make([]float64, nCap),
		hup: make([]float64, nCap), hdown: make([]float64, nCap),
		hupLam: make([]float64, nCap), hdownLam: make([]float64, nCap),
	}
}

func (a *accum) reset() {
	a.s, a.d, a.fw, a.aw, a.w, a.given = 0, 0, 0, 0, 0, 0
	a.up, a.down = math.Inf(1), 0
	a.upLam, a.downLam = 0, 0
	clear(a.hs)
	clear(a.hd)
	clear(a.hf)
	for k := range a.hup {
		a.hup[k], a.hdown[k] = math.Inf(1), 0
	}
	clear(a.hupLam)
	clear(a.hdownLam)
}

// newCore validates the problem and scans it once for the per-host
// structure. The elements are read in place, not copied.
func newCore(cols Columns, hostCaps []float64, budget float64, obj Objective, freq []float64) (*core, error) {
	if err := validateColumns(cols, hostCaps, budget, obj); err != nil {
		return nil, err
	}
	c := &core{cols: cols, obj: obj, freq: freq, capOf: make([]int32, len(hostCaps))}
	for h, cp := range hostCaps {
		c.capOf[h] = -1
		if cp > 0 && !math.IsInf(cp, 1) {
			c.capOf[h] = int32(len(c.caps))
			c.caps = append(c.caps, cp)
			c.hosts = append(c.hosts, int32(h))
		}
	}
	nCap := len(c.caps)
	c.hostActive = make([]int, nCap)
	c.hostKeyMax = make([]float64, nCap)
	weights, hosts := cols.Weights, cols.Hosts
	for i, rate := range cols.Rates {
		w := weights[i]
		if rate == 0 || w == 0 {
			continue
		}
		key := w / rate
		c.keyMax = max(c.keyMax, key)
		if h := hosts[i]; h >= 0 {
			if k := c.capOf[h]; k >= 0 {
				c.hostActive[k]++
				c.hostKeyMax[k] = max(c.hostKeyMax[k], key)
				continue
			}
		}
		c.nUncapped++
	}
	n := len(cols.Rates)
	c.workers = max(1, min(runtime.GOMAXPROCS(0), (n+chunk-1)/chunk))
	c.acc = make([]accum, c.workers)
	for w := range c.acc {
		c.acc[w] = newAccum(nCap)
	}
	c.tot = newAccum(nCap)
	return c, nil
}

// size is the number of elements.
func (c *core) size() int { return len(c.cols.Rates) }

// chunk is the unit of work handed to a worker; partial sums are kept per
// chunk so that rounding error grows with chunk + n/chunk, not n.
const chunk = 1 << 14

// parallel runs body over [0, n) in chunks, chunk j on worker j mod W, and
// returns when every worker has finished.
func (c *core) parallel(body func(w, lo, hi int)) {
	n := c.size()
	nchunks := (n + chunk - 1) / chunk
	W := c.workers
	run := func(w int) {
		for j := w; j < nchunks; j += W {
			body(w, j*chunk, min(n, (j+1)*chunk))
		}
	}
	if W <= 1 {
		run(0)
		return
	}
	var wg sync.WaitGroup
	for w := 1; w < W; w++ {
		wg.Go(func() { run(w) })
	}
	run(0)
	wg.Wait()
}

// pass evaluates the elements at their multipliers and writes c.freq and
// c.tot. Uncapped elements use mu and are skipped unless uncapped is set;
// elements on capped host k use hostMul[k] and are skipped when it is
// negative. wantF adds the weighted freshness sums. acc is the relative
// accuracy asked of each element's inner solve.
func (c *core) pass(mu float64, hostMul []float64, uncapped, wantF bool, acc float64) {
	c.passes++
	tol := tolFor(acc)
	for w := range c.acc {
		c.acc[w].reset()
	}
	c.parallel(func(w, lo, hi int) {
		a := &c.acc[w]
		var s, d, fw float64
		up, down := math.Inf(1), 0.0
		var upLam, downLam float64
		rates, freq := c.cols.Rates[lo:hi], c.freq[lo:hi]
		weights, hosts := c.cols.Weights[lo:hi], c.cols.Hosts[lo:hi]
		var same alike
		for i, rate := range rates {
			weight := weights[i]
			if rate == 0 || weight == 0 {
				freq[i] = 0
				continue
			}
			k := int32(-1)
			if h := hosts[i]; h >= 0 {
				k = c.capOf[h]
			}
			m := mu
			if k >= 0 {
				m = hostMul[k]
				if m < 0 {
					continue
				}
			} else if !uncapped {
				continue
			}
			f, el := same.solve(c.obj, rate, weight, m, freq[i], tol)
			if c.obj == Freshness {
				// Compare w/λ with the running extremes by multiplying,
				// dividing only near the extreme (where a crowd sits, once per
				// element: lowerKey sums its rates).
				if k >= 0 {
					if f > 0 {
						if weight <= a.hup[k]*rate*(1+1e-12) {
							a.hup[k], a.hupLam[k] = lowerKey(a.hup[k], a.hupLam[k], weight/rate, rate)
						}
					} else if weight >= a.hdown[k]*rate*(1-1e-12) {
						a.hdown[k], a.hdownLam[k] = upperKey(a.hdown[k], a.hdownLam[k], weight/rate, rate)
					}
				} else if f > 0 {
					// The slack lets an element whose w/λ rounds to
					// up itself reach the exact comparison.
					if weight <= up*rate*(1+1e-12) {
						up, upLam = lowerKey(up, upLam, weight/rate, rate)
					}
				} else if weight >= down*rate*(1-1e-12) {
					down, downLam = upperKey(down, downLam, weight/rate, rate)
				}
			}
			freq[i] = f
			var fr float64
			if wantF && f > 0 {
				fr = weight * fixedFreshness(rate/f)
			}
			if k >= 0 {
				a.hs[k] += f
				a.hd[k] += f * el
				a.hf[k] += fr
			} else {
				s += f
				d += f * el
				fw += fr
			}
		}
		a.s += s
		a.d += d
		a.fw += fw
		a.up, a.upLam = lowerKey(a.up, a.upLam, up, upLam)
		a.down, a.downLam = upperKey(a.down, a.downLam, down, downLam)
	})
	c.reduce()
}

// alike remembers a chunk's last inner solves by their inputs. Many
// elements are alike: every URL not fetched yet has the prior's rate and
// the same weight, and so the same multiplier and the same frequency from
// the last pass. The inner solve is a function of its inputs, so an
// element alike in all of them is looked up, not solved again, with the
// same result bit for bit. A chunk whose first elements are nearly all
// different stops looking.
type alike struct {
	slot        [1 << alikeBits]alikeSolve
	tried, hits int
}

// alikeSolve is one inner solve: its inputs and its result.
type alikeSolve struct{ rate, weight, m, prev, f, el float64 }

const (
	alikeBits  = 6    // log2 of the slots
	alikeProbe = 1024 // elements after which a chunk with few hits stops looking
)

// solve is freshFreq (or ageFreq under obj Age) of its arguments.
func (a *alike) solve(obj Objective, rate, weight, m, prev float64, tol innerTol) (f, el float64) {
	if a.tried >= alikeProbe && a.hits*16 < a.tried {
		return innerSolve(obj, rate, weight, m, prev, tol)
	}
	a.tried++
	h := (math.Float64bits(rate)*0x9e3779b97f4a7c15 ^ math.Float64bits(prev)) * 0xbf58476d1ce4e5b9
	e := &a.slot[h>>(64-alikeBits)]
	if e.rate == rate && e.weight == weight && e.m == m && e.prev == prev {
		a.hits++
		return e.f, e.el
	}
	f, el = innerSolve(obj, rate, weight, m, prev, tol)
	*e = alikeSolve{rate, weight, m, prev, f, el}
	return f, el
}

// innerSolve is one element's frequency at multiplier m (freshFreq or
// ageFreq).
func innerSolve(obj Objective, rate, weight, m, prev float64, tol innerTol) (f, el float64) {
	if obj == Freshness {
		return freshFreq(rate, weight, m, prev, tol)
	}
	return ageFreq(rate, weight, m, prev, tol)
}

// lowerKey merges a threshold key with the Σλ of its elements into the
// running smallest key (and its Σλ).
func lowerKey(key, lam, k, l float64) (float64, float64) {
	switch {
	case k < key:
		return k, l
	case k == key:
		return key, lam + l
	}
	return key, lam
}

// upperKey is lowerKey for the running largest key.
func upperKey(key, lam, k, l float64) (float64, float64) {
	switch {
	case k > key:
		return k, l
	case k == key:
		return key, lam + l
	}
	return key, lam
}

func (c *core) reduce() {
	c.tot.reset()
	for w := range c.acc {
		a := &c.acc[w]
		c.tot.s += a.s
		c.tot.d += a.d
		c.tot.fw += a.fw
		c.tot.aw += a.aw
		c.tot.w += a.w
		c.tot.given += a.given
		c.tot.up, c.tot.upLam = lowerKey(c.tot.up, c.tot.upLam, a.up, a.upLam)
		c.tot.down, c.tot.downLam = upperKey(c.tot.down, c.tot.downLam, a.down, a.downLam)
		for k := range a.hs {
			c.tot.hs[k] += a.hs[k]
			c.tot.hd[k] += a.hd[k]
			c.tot.hf[k] += a.hf[k]
			c.tot.hup[k], c.tot.hupLam[k] = lowerKey(c.tot.hup[k], c.tot.hupLam[k], a.hup[k], a.hupLam[k])
			c.tot.hdown[k], c.tot.hdownLam[k] = upperKey(c.tot.hdown[k], c.tot.hdownLam[k], a.hdown[k], a.hdownLam[k])
		}
	}
}

// metrics fills sol.Freshness, sol.Age, sol.GivenUp and sol.Iterations from
// c.freq (sol.GivenUp and sol.Iterations only, when c.countOnly).
func (c *core) metrics(sol *Solution) {
	for w := range c.acc {
		c.acc[w].reset()
	}
	if c.countOnly {
		c.parallel(func(w, lo, hi int) {
			rates, weights := c.cols.Rates[lo:hi], c.cols.Weights[lo:hi]
			given := 0
			for i, f := range c.freq[lo:hi] {
				if f == 0 && rates[i] != 0 && weights[i] != 0 {
					given++
				}
			}
			c.acc[w].given += given
		})
		c.reduce()
		sol.GivenUp = c.tot.given
		sol.Iterations = c.passes
		return
	}
	c.parallel(func(w, lo, hi int) {
		a := &c.acc[w]
		var fw, aw, tw float64
		given := 0
		rates, freq := c.cols.Rates[lo:hi], c.freq[lo:hi]
		for i, weight := range c.cols.Weights[lo:hi] {
			if weight == 0 {
				continue
			}
			rate, f := rates[i], freq[i]
			tw += weight
			if rate == 0 {
				fw += weight
				continue
			}
			if f == 0 {
				given++
				aw = math.Inf(1)
				continue
			}
			fw += weight * FixedOrder.Freshness(rate, f)
			aw += weight * FixedOrder.Age(rate, f)
		}
		a.fw += fw
		a.aw += aw
		a.w += tw
		a.given += given
	})
	c.reduce()
	sol.GivenUp = c.tot.given
	sol.Iterations = c.passes
	sol.Freshness, sol.Age = 1, 0
	if c.tot.w > 0 {
		sol.Freshness = c.tot.fw / c.tot.w
		sol.Age = c.tot.aw / c.tot.w
	}
}

// fillCrowd is fillBetween when the steep fall of S across the bracket is
// the crowd's at the threshold just above muLo (rootFinder.crowd), as it
// is where many elements share one threshold: every element keeps
// f(muLo) but the crowd's, which are blended as fillBetween blends, f =
// f(muLo) − θ·(f(muLo) − f(muHi)) with the θ that spends the budget.
// That is an allocation between the two ends, as fillBetween's, and
// identical elements stay identical; it costs one pass at muLo (none
// when haveLo says the last pass was made there at full accuracy, so
// that c.freq and c.tot hold it already) and two loops over the crowd
// (one inner solve per run of identical elements), where fillBetween
// takes two passes and a third of inner solves. It reports false, having
// changed nothing but c.freq and c.tot (which fillBetween recomputes),
// when the crowd cannot take the difference.
func (c *core) fillCrowd(muLo, muHi float64, hostMul []float64, budget float64, haveLo bool) bool {
	for k := range hostMul {
		hostMul[k] = muLo
	}
	if !haveLo {
		c.pass(muLo, hostMul, true, false, fullAcc)
	}
	sLo, target := c.tot.s, budget
	up := c.tot.up
	for k := range c.caps {
		if c.tot.hs[k] > c.caps[k] {
			hostMul[k] = -1 // binding: its elements are redone by solveHosts
			target -= c.caps[k]
			continue
		}
		sLo += c.tot.hs[k]
		up = min(up, c.tot.hup[k])
	}
	cr := c.crowdAt(up, 0)
	if !(cr.upLam > 0) {
		return false
	}
	key, tol := cr.upKey, tolFor(fullAcc)
	// Each crowd element's own f(muHi): on the ramp f is proportional
	// to 1 − μλ/w, which rounds differently for each λ, so the crowd's
	// drop is summed element by element, with one inner solve per chunk
	// for a run of identical elements.
	crowdHi := func(lo, hi int, each func(i int, fHi float64)) {
		weights, hosts := c.cols.Weights[lo:hi], c.cols.Hosts[lo:hi]
		var lastRate, lastWeight, lastHi float64
		for i, rate := range c.cols.Rates[lo:hi] {
			f, weight := c.freq[lo+i], weights[i]
			if f == 0 || weight/rate != key {
				continue
			}
			if h := hosts[i]; h >= 0 {
				if k := c.capOf[h]; k >= 0 && hostMul[k] < 0 {
					continue
				}
			}
			if rate != lastRate || weight != lastWeight {
				lastRate, lastWeight = rate, weight
				lastHi, _ = freshFreq(rate, weight, muHi, f, tol)
			}
			each(lo+i, lastHi)
		}
	}
	drops := make([]float64, c.workers)
	c.parallel(func(w, lo, hi int) {
		var d float64
		crowdHi(lo, hi, func(i int, fHi float64) { d += c.freq[i] - fHi })
		drops[w] += d
	})
	drop := 0.0
	for _, d := range drops {
		drop += d
	}
	need := sLo - target
	if !(drop > 0) || !(need >= 0) || need > drop {
		return false
	}
	theta := need / drop
	c.parallel(func(_, lo, hi int) {
		crowdHi(lo, hi, func(i int, fHi float64) { c.freq[i] -= theta * (c.freq[i] - fHi) })
	})
	return true
}

// fillBetween settles a bracket [muLo, muHi] of the multiplier that
// float64 cannot narrow (rootFinder's fill): S(muLo) > budget > S(muHi)
// while the two are a few ulps apart, because many elements sit so near
// their give-up threshold (identical elements, such as URLs that all
// have the prior's rate) that their frequencies fall steeply there. Every
// μ in the bracket is the multiplier to float64 precision, so any
// allocation between the two ends is optimal to that precision; the one
// that spends the budget exactly is f = f(muLo) − θ·(f(muLo) − f(muHi)) for
// a single θ, which keeps identical elements identical (a mix of
// elements fetched and given up would be as good, but arbitrary).
//
// Hosts whose cap binds at muLo are left to the per-host searches that
// follow (hostMul[k] = −1); θ is taken over the other elements, against
// what the binding hosts' caps leave of the budget. On return c.freq and
// c.tot hold the pass at muLo except for the blend of the free elements,
// as the host searches expect.
func (c *core) fillBetween(muLo, muHi float64, hostMul []float64, budget float64, haveLo bool) {
	if c.obj == Freshness && !c.plainSearch && c.fillCrowd(muLo, muHi, hostMul, budget, haveLo) {
		return
	}
	nCap := len(c.caps)
	for k := range hostMul {
		hostMul[k] = muHi
	}
	c.pass(muHi, hostMul, true, false, fullAcc)
	sHi := c.tot.s
	hsHi := slices.Clone(c.tot.hs)
	for k := range hostMul {
		hostMul[k] = muLo
	}
	c.pass(muLo, hostMul, true, false, fullAcc)
	sLo, target := c.tot.s, budget
	for k := range nCap {
		if c.tot.hs[k] > c.caps[k] {
			hostMul[k] = -1 // binding: its elements are redone by solveHosts
			target -= c.caps[k]
			continue
		}
		sLo += c.tot.hs[k]
		sHi += hsHi[k]
	}
	if !(sLo > sHi) {
		return
	}
	theta := min(max((sLo-target)/(sLo-sHi), 0), 1)
	tol := tolFor(fullAcc)
	c.parallel(func(_, lo, hi int) {
		weights, hosts := c.cols.Weights[lo:hi], c.cols.Hosts[lo:hi]
		for i, rate := range c.cols.Rates[lo:hi] {
			f, weight := &c.freq[lo+i], weights[i]
			if rate == 0 || weight == 0 || *f == 0 {
				continue // f(muHi) ≤ f(muLo) = 0
			}
			if h := hosts[i]; h >= 0 {
				if k := c.capOf[h]; k >= 0 && hostMul[k] < 0 {
					continue
				}
			}
			var fHi float64
			if c.obj == Freshness {
				fHi, _ = freshFreq(rate, weight, muHi, *f, tol)
			} else {
				fHi, _ = ageFreq(rate, weight, muHi, *f, tol)
			}
			*f -= theta * (*f - fHi)
		}
	})
}
