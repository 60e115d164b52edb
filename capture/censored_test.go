package capture

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

// source is a simulated periodic source: every period, each phase fires
// once, displaced uniformly by up to ±jitter (with probability weight).
type source struct {
	T      float64
	phases []float64
	jitter float64
	weight float64 // 0 means 1
	days   []bool  // when set, period k fires only if days[k mod len]
}

func (s source) updates(rng *rand.Rand, periods int) []float64 {
	var out []float64
	for k := range periods {
		if s.days != nil && !s.days[k%len(s.days)] {
			continue
		}
		for _, ph := range s.phases {
			if s.weight > 0 && rng.Float64() >= s.weight {
				continue
			}
			out = append(out, float64(k)*s.T+ph+(2*rng.Float64()-1)*s.jitter)
		}
	}
	sort.Float64s(out)
	return out
}

func (s source) pattern() Pattern {
	p := Pattern{Period: s.T}
	w := s.weight
	if w == 0 {
		w = 1
	}
	for _, ph := range s.phases {
		p.Updates = append(p.Updates, Update{Phase: mod(ph, s.T), Jitter: s.jitter, Weight: w})
	}
	return p
}

// sweep polls n times a period at an offset drawn afresh every period, as
// the scheduler learns; it returns the poll history over the updates, with
// Last-Modified-like exact times (the last update of each interval) when
// exact is set.
func sweep(rng *rand.Rand, updates []float64, T float64, n, periods int, exact bool) (History, []float64) {
	var polls []float64
	for k := range periods {
		off := rng.Float64() * T / float64(n)
		for j := range n {
			polls = append(polls, float64(k)*T+off+float64(j)*T/float64(n))
		}
	}
	h := make(History, len(polls))
	var lms []float64
	u := 0
	for i, at := range polls {
		h[i].At = at
		first := u
		for u < len(updates) && updates[u] <= at {
			u++
		}
		if i > 0 && u > first {
			h[i].Changed = true
			if exact {
				h[i].Exact = []float64{updates[u-1]}
			}
			lms = append(lms, updates[u-1])
		}
	}
	return h, lms
}

// The censored learner finds the phases that the exact-time learner finds
// from Last-Modified, within a second, and its plan's recall is as good,
// on simulated histories of sources like the paper's (updates a few
// seconds apart in a minute, with jitter) polled while sweeping the period.
func TestCensoredMatchesExact(t *testing.T) {
	cases := []source{
		{T: 60, phases: []float64{5, 15}, jitter: 1},
		{T: 45, phases: []float64{10, 15}, jitter: 1},
		{T: 30, phases: []float64{3, 8}, jitter: 1},
		{T: 3600, phases: []float64{300, 900, 2400}, jitter: 30},
		{T: 60, phases: []float64{20}, jitter: 2, weight: 0.7},
	}
	for ci, src := range cases {
		rng := rand.New(rand.NewPCG(uint64(ci+1), 7))
		const periods = 10
		ups := src.updates(rng, periods)
		hc, lms := sweep(rng, ups, src.T, 8, periods, false)
		pc, _, err := LearnPolls(hc, src.T)
		if err != nil {
			t.Fatal(err)
		}
		pe, err := LearnPattern(lms, src.T, src.T/30)
		if err != nil {
			t.Fatal(err)
		}
		truth := src.pattern()
		n := len(src.phases)
		sc, err := PlanPattern(pc, n)
		if err != nil {
			t.Fatal(err)
		}
		se, err := PlanPattern(pe, n)
		if err != nil {
			t.Fatal(err)
		}
		rc, re := mustRecall(t, truth, sc.Polls), mustRecall(t, truth, se.Polls)
		t.Logf("T=%v updates %v±%v: censored polls %v recall %.3f; exact polls %v recall %.3f", src.T, src.phases, src.jitter, round1(sc.Polls), rc, round1(se.Polls), re)
		if rc < re-0.05 {
			t.Errorf("T=%v: censored recall %.3f, exact %.3f", src.T, rc, re)
		}
		// Every learnt update's window holds a true phase, and every true
		// phase lies in a learnt window (within a bin or two: T/60).
		in := func(x float64, u Update) bool {
			d := math.Abs(x - u.Phase)
			return math.Min(d, src.T-d) <= u.Jitter+src.T/60
		}
		for _, u := range pc.Updates {
			ok := false
			for _, ph := range src.phases {
				ok = ok || in(ph, u)
			}
			if !ok {
				t.Errorf("T=%v: learnt update %.2f±%.2f holds no true phase", src.T, u.Phase, u.Jitter)
			}
		}
		for _, ph := range src.phases {
			ok := false
			for _, u := range pc.Updates {
				ok = ok || in(ph, u)
			}
			if !ok {
				t.Errorf("T=%v: true phase %.2f in no learnt window %+v", src.T, ph, pc.Updates)
			}
		}
		if w := pc.ExpectedUpdates(); math.Abs(w-truth.ExpectedUpdates()) > 0.35*truth.ExpectedUpdates() {
			t.Errorf("T=%v: learnt %.2f updates a period, truth %.2f", src.T, w, truth.ExpectedUpdates())
		}
	}
}

// With exact times only EM is counting: Q[k] is updates in bin k over the
// periods observed.
func TestEstimatePhasesExactIsCounting(t *testing.T) {
	h := History{{At: 0}, {At: 10, Exact: []float64{2.5}}, {At: 20, Exact: []float64{12.5}}, {At: 30}, {At: 40, Exact: []float64{32.5}}}
	ph, err := EstimatePhases(h, 10, 4)
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{0, 0.75, 0, 0}
	for k := range want {
		near(t, "Q", ph.Q[k], want[k], 1e-9)
	}
}

// Brute force on a tiny case: EM reaches the maximum of the likelihood
// over a grid of Q.
func TestEstimatePhasesIsMaximumLikelihood(t *testing.T) {
	// period 4, 2 bins; polls at 0,1,...: intervals of 1 cover half a bin
	h := History{{At: 0}, {At: 1, Changed: true}, {At: 3}, {At: 4, Changed: true}, {At: 6, Changed: true}, {At: 8}, {At: 9, Changed: true}}
	ph, err := EstimatePhases(h, 4, 2)
	if err != nil {
		t.Fatal(err)
	}
	d := prepare(h, 4, 2)
	best := math.Inf(-1)
	for a := 0.0; a <= 1; a += 0.005 {
		for b := 0.0; b <= 1; b += 0.005 {
			best = math.Max(best, logLik(d, []float64{a, b}))
		}
	}
	if ph.LogLik < best-1e-3 {
		t.Errorf("EM log-likelihood %.5f below the grid's best %.5f (Q %v)", ph.LogLik, best, ph.Q)
	}
}

func round1(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = math.Round(x*10) / 10
	}
	return out
}

// CheckDriftPolls stays quiet while the polls see what the pattern
// predicts and reports drift once the updates have moved.
func TestCheckDriftPolls(t *testing.T) {
	src := source{T: 60, phases: []float64{10, 15}, jitter: 1}
	p := src.pattern()
	polls := []float64{12, 17} // just after each update
	run := func(phases []float64) History {
		rng := rand.New(rand.NewPCG(4, 4))
		ups := source{T: 60, phases: phases, jitter: 1}.updates(rng, 40)
		var h History
		u := 0
		for k := range 40 {
			for _, ph := range polls {
				at := float64(k)*60 + ph
				first := u
				for u < len(ups) && ups[u] <= at {
					u++
				}
				h = append(h, Poll{At: at, Changed: len(h) > 0 && u > first})
			}
		}
		return h
	}
	same, err := CheckDriftPolls(p, run(src.phases), DriftConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if same.Drifted {
		t.Errorf("no drift expected: %+v", same)
	}
	moved, err := CheckDriftPolls(p, run([]float64{30, 35}), DriftConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if !moved.Drifted {
		t.Errorf("updates moved to 30 s and 35 s, both now between the same two polls: no drift reported: %+v", moved)
	}
	t.Logf("same: %s %+v; moved: %s", same.Reason, same, moved.Reason)
}

// WithSlack keeps the model's recall and moves polls off the very end of
// the learnt windows, into the quiet stretch after them.
func TestWithSlack(t *testing.T) {
	p := Pattern{Period: 60, Updates: []Update{{Phase: 10, Jitter: 1, Weight: 1}, {Phase: 20, Jitter: 1, Weight: 1}}}
	s, err := PlanPattern(p, 2)
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.WithSlack(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("polls %v → %v, expected %.3f → %.3f", s.Polls, w.Polls, s.Expected, w.Expected)
	if w.Expected < s.Expected-1e-12 {
		t.Errorf("slack lowered the expected recall: %.4f → %.4f", s.Expected, w.Expected)
	}
	// after 11 (window 9..11) the quiet stretch runs to 19: half of it is
	// 4 s, capped at the widest window, 2 s; after 21 to 69 (9 next
	// period): 2 s as well
	want := []float64{13, 23}
	for i := range want {
		near(t, "poll", w.Polls[i], want[i], 1e-9)
	}
	// An update 0.5 s later than the learnt window is still caught.
	late := Pattern{Period: 60, Updates: []Update{{Phase: 10.5, Jitter: 1, Weight: 1}, {Phase: 20.5, Jitter: 1, Weight: 1}}}
	if r := mustRecall(t, late, w.Polls); r < 1-1e-12 {
		t.Errorf("recall %.3f of updates 0.5 s late with slack; want 1", r)
	}
	if r := mustRecall(t, late, s.Polls); r > 0.9 {
		t.Errorf("without slack the late updates are %.3f caught; the test needs them missed", r)
	}
}
