package schedule

import (
	"math"

	"github.com/freshcrawl/freshcrawl/alloc"
	"github.com/freshcrawl/freshcrawl/estimate"
)

// This file is the exploration rule of docs/design.md §3.7: which URLs
// whose rate is not resolved are probed, at what interval, and how often
// a URL given up is checked again, all weighed against the multiplier μ
// of the plan (the weighted freshness a fetch per unit time buys at the
// margin, so that μ is also what one fetch costs).

// beliefAtoms is the size of a belief: a posterior's eight rates and the
// prior's eight.
const beliefAtoms = 2 * estimate.SummaryQuantiles

// belief is a distribution of λ on the equally likely rates of a
// posterior summary, mixed with those of the prior (the chance that the
// rate was redrawn since the data were seen), reweighted by probes.
type belief struct {
	rate [beliefAtoms]float64
	p    [beliefAtoms]float64
}

// beliefOf is the posterior s mixed with the prior: weight 1 − rho on
// the posterior's rates, rho on the prior's.
func beliefOf(s, prior *estimate.Summary, rho float64) belief {
	var b belief
	const k = estimate.SummaryQuantiles
	for j := range k {
		b.rate[j], b.p[j] = s.Rate(j), (1-rho)/k
		b.rate[k+j], b.p[k+j] = prior.Rate(j), rho/k
	}
	return b
}

// value is the best net value per unit time of one URL of weight w under
// belief b at multiplier mu, max_f E[w·F(λ, f)] − μ·f, with the f that
// achieves it (0: give it up). The expected marginal gain
// E[(w/λ)·g(λ/f)] falls from E[w/λ] at f → 0 to 0, so the optimum is
// where it equals μ, found by Newton's method in ln f, guarded by
// bisection (the gain is monotone in f).
func (b *belief) value(w, mu float64) (f, v float64) {
	m0, mean := 0.0, 0.0
	for j, lam := range b.rate {
		m0 += b.p[j] * w / lam
		mean += b.p[j] * lam
	}
	if m0 <= mu {
		return 0, 0
	}
	// Start where g(r) ≈ r²/2 would put it: f = √(w·λ̄/(2μ)).
	x := 0.5 * math.Log(w*mean/(2*mu))
	lo, hi := math.Inf(-1), math.Inf(1)
	for range 50 {
		f := math.Exp(x)
		m, dm := 0.0, 0.0
		for j, lam := range b.rate {
			if b.p[j] == 0 {
				continue
			}
			r := lam / f
			e := math.Exp(-r)
			c := b.p[j] * w / lam
			m += c * gain(r, e)
			// d/d ln f of (w/λ)·g(λ/f) = −(w/λ)·r·g'(r), g'(r) = r·e^{−r}.
			dm -= c * r * r * e
		}
		d := m - mu
		if d > 0 {
			lo = x
		} else {
			hi = x
		}
		if math.Abs(d) <= 1e-9*mu {
			break
		}
		nx := x - d/dm
		if !(dm < 0) || !(nx > lo && nx < hi) {
			switch {
			case math.IsInf(hi, 1):
				nx = x + 1
			case math.IsInf(lo, -1):
				nx = x - 1
			default:
				nx = (lo + hi) / 2
			}
		}
		if math.Abs(nx-x) < 1e-10 {
			x = nx
			break
		}
		x = nx
	}
	f = math.Exp(x)
	for j, lam := range b.rate {
		if b.p[j] > 0 {
			v += b.p[j] * w * alloc.FixedOrder.Freshness(lam, f)
		}
	}
	v -= mu * f
	if v <= 0 {
		return 0, 0
	}
	return f, v
}

// gain is g(r) = 1 − (1+r)·e^{−r} (e = e^{−r}), the marginal freshness
// λ·∂F/∂f of Cho & Garcia-Molina §5.3, by its series where the closed
// form cancels.
func gain(r, e float64) float64 {
	if r < 1e-3 {
		return r * r * (0.5 - r*(1.0/3-r/8))
	}
	return 1 - (1+r)*e
}

// probeRounds are the numbers of probes the exploration rule looks ahead.
var probeRounds = [...]int{1, 2, 4}

// probeValue is the value of information of probing a URL at interval tau
// (docs/design.md §3.7): for m probes, the expected gain in the best net
// value per unit time once their outcomes are known, E_k[value(b | k of m
// changed)] − value(b), times the horizon over which that knowledge is
// used, per probe; the best over m ∈ {1, 2, 4} (looking several probes
// ahead, because one probe alone may be unable to flip a decision that a
// few would: the knowledge-gradient policy's known blind spot). The gain
// is never negative (the best decision's value is convex in the belief).
func probeValue(b belief, w, mu, tau, horizon float64) float64 {
	_, v0 := b.value(w, mu)
	var q [beliefAtoms]float64
	for j, lam := range b.rate {
		q[j] = -math.Expm1(-lam * tau)
	}
	best := 0.0
	for _, m := range probeRounds {
		gain := 0.0
		for k := 0; k <= m; k++ {
			var post belief
			post.rate = b.rate
			pk := 0.0
			for j := range b.rate {
				lk := b.p[j]
				for range k {
					lk *= q[j]
				}
				for range m - k {
					lk *= 1 - q[j]
				}
				post.p[j] = lk
				pk += lk
			}
			if !(pk > 0) {
				continue
			}
			for j := range post.p {
				post.p[j] /= pk
			}
			_, v := post.value(w, mu)
			// pk omits the binomial coefficient, which multiplies both
			// the probability of k and nothing else.
			gain += binom(m, k) * pk * v
		}
		best = math.Max(best, (gain-v0)*horizon/float64(m))
	}
	return best
}

func binom(n, k int) float64 {
	c := 1.0
	for i := range k {
		c = c * float64(n-i) / float64(i+1)
	}
	return c
}

// keepProbability is P(λ < w/μ): how likely the URL is worth fetching at
// all at this multiplier, under its posterior s mixed with the prior by
// rho (the chance its rate was redrawn since its data were seen; beliefOf).
func keepProbability(s, prior *estimate.Summary, rho, w, mu float64) float64 {
	return (1-rho)*s.CDF(w/mu) + rho*prior.CDF(w/mu)
}

// recheckInterval is how long a URL given up waits before it is checked
// again to see whether its rate fell (docs/design.md §3.7). A check is
// fetches fetches (checkFetches), so it costs fetches·μ. If rates change
// at hazard h (a new rate drawn from the collection's prior), a check
// every T finds a URL that became worth keeping T/2 late on average,
// losing h·P_keep·V̄·T/2 of value per unit time, where P_keep is the
// prior's share of rates below the give-up threshold and V̄ their mean
// net value; the checks cost fetches·μ/T. The sum is least at
//
//	T* = √(2·fetches·μ / (h·P_keep·V̄)).
func recheckInterval(mu, fetches, hazard, pKeep, vBar float64) float64 {
	d := hazard * pKeep * vBar
	if !(d > 0) || !(mu > 0) {
		return math.Inf(1)
	}
	return math.Sqrt(2 * fetches * mu / d)
}

// checkFetches is how many fetches one recheck of a URL given up takes.
// Without a trusted Last-Modified it is a pair, the second one probe
// interval after the first: a fetch long after the last says nothing
// about a fast page, which has changed either way, and only the second
// tests the rate. With a trusted Last-Modified (dated) one fetch is
// enough: it dates the last change, and a page whose rate fell shows a
// last change long before the fetch (the time since it is a draw of
// 1/λ), which the change-point test of docs/design.md §3.3 weighs as the
// pair's probe would be weighed; a second fetch would cost μ and teach
// less than the first.
func checkFetches(dated bool) float64 {
	if dated {
		return 1
	}
	return 2
}

// keptValue is P_keep and V̄ of recheckInterval for a URL of weight w at
// multiplier mu under the prior summary prior: the prior's mass below the
// threshold w/μ, and the mean over it of the best net value per unit
// time, max_f w·F(λ, f) − μ·f.
func keptValue(prior *estimate.Summary, w, mu float64) (pKeep, vBar float64) {
	lamStar := w / mu
	n := 0
	for j := range estimate.SummaryQuantiles {
		lam := prior.Rate(j)
		if lam >= lamStar {
			continue
		}
		f := alloc.FreshnessFrequency(lam, w, mu)
		vBar += w*alloc.FixedOrder.Freshness(lam, f) - mu*f
		n++
	}
	if n == 0 {
		return 0, 0
	}
	return float64(n) / estimate.SummaryQuantiles, vBar / float64(n)
}
