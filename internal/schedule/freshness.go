package schedule

import (
	"math"
	"runtime"
	"sync"
	"time"

	"github.com/freshcrawl/freshcrawl/alloc"
	"github.com/freshcrawl/freshcrawl/estimate"
)

type freshnessBand struct{ mid, lo, hi float64 }

// bandZ is the normal quantile of a two-sided 90% interval.
const bandZ = 1.6448536269514722

// FreshnessBand returns the model's weighted freshness of the last plan
// (the plan's own figure) and its value if every rate estimate sat at the
// upper (lo) or lower (hi) end of its 90% interval rate·exp(±z·se/rate):
// the uncertainty the estimates carry, taken as fully correlated (a prior
// that is wrong for every new URL errs the same way for all). It is
// computed with the plan (PlanJob.Solve), over the plan's input, so it
// costs the caller's lock nothing and moves only with the plan.
func (s *Scheduler) FreshnessBand() (mid, lo, hi float64) {
	b := s.life.band
	if s.planAt.IsZero() {
		return 1, 1, 1
	}
	return b.mid, b.lo, b.hi
}

// bandOf is the freshness band of a plan's frequencies freq over its input
// in, whose rates have standard errors se. Paused and disallowed URLs have
// weight 0 in the input and count for nothing, as in the plan.
func bandOf(in PlanInput, se []float32, freq []float64) freshnessBand {
	var num, numLo, numHi, den float64
	for i, f := range freq {
		w, rate := in.Weights[i], in.Rates[i]
		if !(w > 0) || math.IsInf(w, 1) || !(rate >= 0) || !(f >= 0) {
			continue
		}
		rLo, rHi := rate, rate
		if se[i] > 0 {
			rLo, rHi = estimate.RateInterval(rate, float64(se[i]), bandZ)
		}
		num += w * alloc.FixedOrder.Freshness(rate, f)
		numLo += w * alloc.FixedOrder.Freshness(rHi, f)
		numHi += w * alloc.FixedOrder.Freshness(rLo, f)
		den += w
	}
	b := freshnessBand{mid: 1, lo: 1, hi: 1}
	if den > 0 {
		b.mid, b.lo, b.hi = num/den, numLo/den, numHi/den
	}
	return b
}

// modelNow is the model's expected freshness of the copies now
// (docs/design.md §3.7, "An honest model"): Σ w·P(copy current) / Σ w
// over the URLs that count (weight > 0, not disallowed), the copy of a
// URL never fetched counting as stale, the probability over each URL's
// posterior under the model's priors (models) and a switch of its rate
// since the fetch (sw). It is always a number in [0, 1].
func modelNow(weights []float64, blocked bitset, models []estimate.Sketch, sw *estimate.RateSwitch, lastOK []int64, now int64) float64 {
	var num, den float64
	for i, w := range weights {
		if !(w > 0) || math.IsInf(w, 1) || blocked.has(i) {
			continue
		}
		den += w
		if lastOK[i] == 0 || !models[i].Valid() {
			continue
		}
		age := float64(now-lastOK[i]) / 1e9
		if p := sw.ExpectFresh(models[i], math.Max(age, 0)); p >= 0 && p <= 1 {
			num += w * p
		}
	}
	if !(den > 0) {
		return 0
	}
	return num / den
}

// expectedFreshness is the plan's steady-state freshness under the
// posteriors: Σ w·E[F(λ, f)] / Σ w, the fixed-order freshness averaged
// over each URL's posterior rather than at one rate (which, for a URL
// seen changed at every fetch, could be far too kind).
//
// The expectations, the costly part, are taken on every core into one
// array; the sum then runs in element order, so the figure does not
// depend on the number of cores.
func expectedFreshness(weights []float64, posts []estimate.Summary, freq []float64) float64 {
	vs := make([]float64, len(weights))
	var wg sync.WaitGroup
	parts := max(1, min(runtime.GOMAXPROCS(0), len(weights)/4096))
	for k := range parts {
		lo, hi := k*len(weights)/parts, (k+1)*len(weights)/parts
		wg.Go(func() {
			for i := lo; i < hi; i++ {
				if w := weights[i]; w > 0 && !math.IsInf(w, 1) && posts[i].Valid() {
					f := freq[i]
					vs[i] = posts[i].Expect(func(l float64) float64 { return alloc.FixedOrder.Freshness(l, f) })
				}
			}
		})
	}
	wg.Wait()
	var num, den float64
	for i, w := range weights {
		if !(w > 0) || math.IsInf(w, 1) {
			continue
		}
		den += w
		if !posts[i].Valid() {
			continue
		}
		if v := vs[i]; v >= 0 && v <= 1 {
			num += w * v
		}
	}
	if !(den > 0) {
		return 1
	}
	return num / den
}

// ModelFreshness is the model's expected freshness of the copies at now
// (modelNow over every URL): O(n), for a caller that owns the Scheduler
// (the virtual benchmark); the coordinator reports the value each plan
// computes (PlanOutput.ModelFreshness).
func (s *Scheduler) ModelFreshness(now time.Time) float64 {
	pr := s.priors.load()
	return modelNow(s.weights, s.blocked, s.models, pr.RateSwitch(s.priors.hazard()), s.lastOK, now.UnixNano())
}
