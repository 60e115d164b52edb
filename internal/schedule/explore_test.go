package schedule

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/freshcrawl/freshcrawl/alloc"
	"github.com/freshcrawl/freshcrawl/estimate"
)

// randomBelief is a belief of a few atoms at random rates (per second,
// spread over four decades) with random masses; the other atoms are 0.
func randomBelief(rng *rand.Rand, atoms int) belief {
	var b belief
	sum := 0.0
	for j := range atoms {
		b.rate[j] = math.Pow(10, -6+4*rng.Float64())
		b.p[j] = rng.Float64()
		sum += b.p[j]
	}
	for j := range atoms {
		b.p[j] /= sum
	}
	for j := atoms; j < beliefAtoms; j++ {
		b.rate[j] = 1 // any rate: its mass is 0
	}
	return b
}

// netValue is E[w·F(λ, f)] − μ·f under b, the quantity belief.value
// maximises.
func netValue(b belief, w, mu, f float64) float64 {
	v := 0.0
	for j, lam := range b.rate {
		if b.p[j] > 0 {
			v += b.p[j] * w * alloc.FixedOrder.Freshness(lam, f)
		}
	}
	return v - mu*f
}

// TestBeliefValueBruteForce: the best net value of a URL under a belief
// is the maximum over frequencies found by a fine scan of ln f (0 when no
// frequency has a positive value: given up).
func TestBeliefValueBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for c := range 200 {
		b := randomBelief(rng, 1+rng.IntN(4))
		w := 0.2 + 2*rng.Float64()
		mu := w * math.Pow(10, -6+4*rng.Float64()) // threshold w/μ within the rates' range
		f, v := b.value(w, mu)
		best, bestF := 0.0, 0.0
		for x := -20.0; x <= 5; x += 0.002 {
			if nv := netValue(b, w, mu, math.Exp(x)); nv > best {
				best, bestF = nv, math.Exp(x)
			}
		}
		if math.Abs(v-best) > 1e-6*w+1e-4*best {
			t.Errorf("case %d: value %g at f=%g, brute force %g at f=%g", c, v, f, best, bestF)
		}
		if v > 0 && math.Abs(netValue(b, w, mu, f)-v) > 1e-12*w {
			t.Errorf("case %d: value %g is not the net value %g at its own f", c, v, netValue(b, w, mu, f))
		}
	}
}

// TestProbeValueBruteForce: the value of m probes is the gain of the best
// decision once their outcomes are known, averaged over every sequence of
// outcomes (2^m of them, enumerated one by one here, where probeValue
// groups them by their count of changes), times horizon/m; probeValue is
// the best over its look-aheads and never negative.
func TestProbeValueBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for c := range 100 {
		b := randomBelief(rng, 2+rng.IntN(3))
		w := 1.0
		mu := math.Pow(10, -6+4*rng.Float64())
		tau := math.Ln2 * mu / w
		horizon := 1e3 / mu
		_, v0 := b.value(w, mu)
		want := 0.0
		for _, m := range probeRounds {
			total := 0.0
			for seq := range 1 << m {
				var post belief
				post.rate = b.rate
				ps := 0.0
				for j, lam := range b.rate {
					q := -math.Expm1(-lam * tau)
					l := b.p[j]
					for k := range m {
						if seq>>k&1 == 1 {
							l *= q
						} else {
							l *= 1 - q
						}
					}
					post.p[j] = l
					ps += l
				}
				if ps <= 0 {
					continue
				}
				for j := range post.p {
					post.p[j] /= ps
				}
				_, v := post.value(w, mu)
				total += ps * v
			}
			want = math.Max(want, (total-v0)*horizon/float64(m))
		}
		got := probeValue(b, w, mu, tau, horizon)
		// The gain is a small difference of values of order v0, scaled
		// by the horizon: equal to within that difference's rounding.
		tol := 1e-9*math.Abs(want) + 1e-12*horizon*math.Abs(v0)
		if got < 0 || math.Abs(got-want) > tol {
			t.Errorf("case %d: probe value %g, enumeration %g", c, got, want)
		}
	}
}

// TestRecheckIntervalMinimises: the recheck interval minimises the cost
// of checks (n fetches each, n·μ/T: two without a trusted Last-Modified,
// one with it) plus the value lost while a rate that fell goes unnoticed
// (h·P·V̄·T/2), checked by a scan of T; a check of one fetch is due √2
// times as often as a pair.
func TestRecheckIntervalMinimises(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 50 {
		mu, h, p, v := math.Pow(10, -6+3*rng.Float64()), math.Pow(10, -10+3*rng.Float64()), rng.Float64(), rng.Float64()
		for _, dated := range []bool{false, true} {
			n := checkFetches(dated)
			cost := func(T float64) float64 { return n*mu/T + h*p*v*T/2 }
			got := recheckInterval(mu, n, h, p, v)
			for _, k := range []float64{0.5, 0.9, 0.99, 1.01, 1.1, 2} {
				if cost(got*k) < cost(got)*(1-1e-12) {
					t.Fatalf("dated %v: T*=%g costs %g, %g·T* costs less (%g)", dated, got, cost(got), k, cost(got*k))
				}
			}
		}
		pair, single := recheckInterval(mu, checkFetches(false), h, p, v), recheckInterval(mu, checkFetches(true), h, p, v)
		if r := pair / single; math.Abs(r-math.Sqrt2) > 1e-12 {
			t.Fatalf("a pair's interval / a single fetch's = %g, want √2", r)
		}
	}
	if !math.IsInf(recheckInterval(1, 2, 0, 0.5, 1), 1) {
		t.Error("no hazard: a URL given up should never need a recheck")
	}
}

// learnAllChanged feeds st n fetches every iv, each of which saw a change
// and no Last-Modified: a run that only bounds the rate from below.
func learnAllChanged(est Estimator, url, host string, st *EstimateState, t0 time.Time, iv time.Duration, n int) Feedback {
	var fb Feedback
	prev := time.Time{}
	for k := range n {
		at := t0.Add(time.Duration(k) * iv)
		fb = est.Learn(st, 0, Observation{URL: url, Host: host, Start: at, End: at.Add(time.Second), OK: true, First: k == 0, Prev: prev, Changed: k > 0})
		prev = at
	}
	return fb
}

// TestExplorationWithinShareAndCaps: URLs seen changed at every fetch are
// not resolved, so the optimal plan probes some of them; what exploration
// takes stays within ExploreShare of the budget and of every host's cap,
// and the plan's frequencies stay within the budget and the caps.
func TestExplorationWithinShareAndCaps(t *testing.T) {
	const share = 0.2
	day := 24 * time.Hour
	est, s := exploreScheduler(t, share)
	t0 := time.Unix(1_700_000_000, 0)
	now := t0.Add(200 * day)
	n := 0
	for h := range 4 {
		host := fmt.Sprintf("h%d", h)
		for i := range 30 {
			url := fmt.Sprintf("http://%s/p%d", host, i)
			var st EstimateState
			iv := 30 * day
			changed := i%3 != 0 // a third never changed: slow, resolved
			var fb Feedback
			if changed {
				fb = learnAllChanged(est, url, host, &st, now.Add(-5*iv), iv, 6)
			} else {
				prev := time.Time{}
				for k := range 6 {
					at := now.Add(-5 * iv).Add(time.Duration(k) * iv)
					fb = est.Learn(&st, 0, Observation{URL: url, Host: host, Start: at, End: at.Add(time.Second), OK: true, First: k == 0, Prev: prev})
					prev = at
				}
			}
			addLearnt(t, s, url, host, &st, fb, now, now.Add(day))
			n++
		}
	}
	// Two plans: the first fits the priors, the second plans under them.
	j := planTwice(t, s, now, n)
	if j.probe == nil {
		t.Fatalf("no exploration decided: plan μ %g, freq %v", j.out.Mu, j.freq)
	}
	budget := s.o.Budget
	explored, total := 0.0, 0.0
	perHost := make([]float64, len(j.in.HostCaps))
	explHost := make([]float64, len(j.in.HostCaps))
	probes := 0
	for i, f := range j.freq {
		total += f
		perHost[j.in.Hosts[i]] += f
		if j.probe[i] || j.recheckTau[i] > 0 {
			explored += f
			explHost[j.in.Hosts[i]] += f
			probes++
		}
	}
	if probes == 0 {
		t.Fatal("no URL explored although two thirds were seen changed at every fetch")
	}
	if explored > share*budget*(1+1e-9) {
		t.Errorf("exploration takes %g/s, more than %g of the budget %g/s", explored, share, budget)
	}
	if total > budget*(1+1e-6) {
		t.Errorf("plan uses %g/s, budget %g/s", total, budget)
	}
	for h, c := range j.in.HostCaps {
		if explHost[h] > share*c*(1+1e-9) {
			t.Errorf("host %d: exploration %g/s over %g of its cap %g/s", h, explHost[h], share, c)
		}
		if perHost[h] > c*(1+1e-6) {
			t.Errorf("host %d: plan %g/s over its cap %g/s", h, perHost[h], c)
		}
	}
	// A probe tests the give-up threshold: its interval is ln2/λ*, shorter
	// than the monthly interval that could not resolve the rate.
	for i, p := range j.probe {
		if p && j.freq[i] > 0 && 1/j.freq[i] >= (30*day).Seconds() {
			t.Errorf("URL %d probed every %s, not shorter than the interval that saw only changes", i, time.Duration(float64(time.Second)/j.freq[i]))
		}
	}
}

// TestGivenUpAfterProbesStaysResolved: a URL whose probes just showed it
// far above the give-up threshold is given up and rechecked, not probed
// again, however long its recheck interval: the chance that its rate was
// redrawn is counted over the intervals its data were taken at, not the
// plan's. Counted over the plan's (eight years of rechecks at this
// hazard), the prior's share below the threshold made it unresolved at
// once, and it was probed again at every plan.
func TestGivenUpAfterProbesStaysResolved(t *testing.T) {
	day := 86400.0
	prior := 0.25 / day
	popPost := newPriors(prior).population().Posterior(estimate.State{})
	pop := popPost.Summary()
	w, mu := 1.0, 5*day // give-up threshold λ* = w/μ = 0.2 a day
	fast := estimate.Summary{Mean: 2 / day, Harmonic: 1.5 / day}
	for k := range fast.Q {
		fast.Q[k] = float32(math.Log((1 + 0.25*float64(k)) / day))
	}
	tau := math.Ln2 * mu / w
	for _, tc := range []struct {
		name   string
		lastIv float64
		probe  bool
	}{
		{"last fetched at its probe interval", tau, false},
		{"no interval seen yet", 0, false},
	} {
		j := &PlanJob{
			in:       PlanInput{Budget: 1, Rates: []float64{fast.Harmonic}, Weights: []float64{w}, Hosts: []int32{0}, HostCaps: []float64{1}},
			blocked:  bitset{0},
			posts:    []estimate.Summary{fast},
			lastOK:   []int64{1},
			lastIv:   []float64{tc.lastIv},
			probing:  bitset{0},
			probes:   []uint8{0},
			halfLife: 90 * day,
			hazard:   1 / (20 * 365 * day), // a rate change every twenty years
		}
		j.horizon = 1 / j.hazard
		items := j.exploreItems(j.in, PlanOutput{Mu: mu}, &pop)
		if len(items) != 1 {
			t.Fatalf("%s: %d exploration items, want the recheck", tc.name, len(items))
		}
		if it := items[0]; it.score != 1 || it.tau != tau {
			t.Errorf("%s: item %+v, want a recheck (score 1) with its probe %gs after", tc.name, it, tau)
		}
	}
	// The rule that counted the plan's interval: with a year's recheck
	// as the last interval, the redraw chance alone unresolves the URL.
	j := &PlanJob{halfLife: 90 * day, hazard: 1 / (20 * 365 * day)}
	span := math.Max(j.halfLife, minMemory*365*day) / math.Ln2
	rho := -math.Expm1(-j.hazard * span)
	if p := keepProbability(&fast, &pop, rho, w, mu); !(p > resolved) {
		t.Fatalf("with eight years of memory P(keep) = %.3f: the case no longer tells the rules apart", p)
	}
}

// TestFloorForKeptURLs: a policy with no multiplier (proportional) keeps
// every URL, the slow ones at their posterior's rate; none of them is
// fetched more rarely than a URL given up would be rechecked, the floor
// of ExploreShare times its uniform share, and the plan stays within the
// budget and the host caps. Without the floor, proportional planned the
// pages never seen changed years apart.
func TestFloorForKeptURLs(t *testing.T) {
	const share = 0.1
	day := 24 * time.Hour
	prop, err := PolicyByName("proportional", "freshness")
	if err != nil {
		t.Fatal(err)
	}
	est, s := exploreScheduler(t, share, prop)
	t0 := time.Unix(1_700_000_000, 0)
	now := t0.Add(400 * day)
	n := 0
	for h := range 4 {
		host := fmt.Sprintf("h%d", h)
		for i := range 30 {
			url := fmt.Sprintf("http://%s/p%d", host, i)
			var st EstimateState
			var fb Feedback
			if i%2 == 0 {
				fb = learnAllChanged(est, url, host, &st, now.Add(-12*day), 2*day, 6) // about daily
			} else {
				// Never seen changed over a year: the posterior's rate
				// is far below its uniform share.
				prev := time.Time{}
				for k := range 6 {
					at := now.Add(-360 * day).Add(time.Duration(k) * 72 * day)
					fb = est.Learn(&st, 0, Observation{URL: url, Host: host, Start: at, End: at.Add(time.Second), OK: true, First: k == 0, Prev: prev})
					prev = at
				}
			}
			addLearnt(t, s, url, host, &st, fb, now, now.Add(day))
			n++
		}
	}
	j := planTwice(t, s, now, n)
	budget := s.o.Budget
	floor := share * math.Min(budget/float64(n), s.o.HostRate/30)
	below, total := 0, 0.0
	perHost := make([]float64, len(j.in.HostCaps))
	for i, f := range j.freq {
		total += f
		perHost[j.in.Hosts[i]] += f
		if f < floor*(1-1e-9) {
			t.Errorf("URL %d fetched at %g/s, below the floor %g/s", i, f, floor)
		}
		// What proportional would give URL i with the whole budget: its
		// share of the rates.
		if budget*j.in.Rates[i]/sum(j.in.Rates) < floor {
			below++
		}
	}
	if below == 0 {
		t.Fatalf("no URL below the floor under plain proportional: the test tests nothing (rates %v)", j.in.Rates)
	}
	if total > budget*(1+1e-6) {
		t.Errorf("plan uses %g/s, budget %g/s", total, budget)
	}
	for h, c := range j.in.HostCaps {
		if perHost[h] > c*(1+1e-6) {
			t.Errorf("host %d: plan %g/s over its cap %g/s", h, perHost[h], c)
		}
	}
}
