package capture

import (
	"fmt"
	"math"
	"sort"
)

// Strategy names how a Schedule was produced.
type Strategy string

// Strategies.
const (
	StrategyExhaustive  Strategy = "exhaustive"  // §3.1.1 dynamic programme
	StrategyTheoretical Strategy = "theoretical" // §3.1.2 interval model
	StrategyUniform     Strategy = "uniform"     // no updates known: §3.1.3 (i)
)

// ExhaustiveLimit is the largest candidate count s for which Plan runs the
// O(s³N) exhaustive programme; the paper notes it "is likely to be
// practical for small values of s" (§3.1.1) and proposes §3.1.2 otherwise.
const ExhaustiveLimit = 200

// Schedule is a polling strategy ⟨T, S⟩ (§2.2) with its expected recall.
type Schedule struct {
	Period     float64   // T
	Polls      []float64 // S: sorted poll phases in [0, T)
	Expected   float64   // expected change recall under the pattern
	Strategy   Strategy
	Candidates int // s, the candidate poll times considered
}

func newSchedule(m *model, polls []float64, st Strategy, s int) Schedule {
	return Schedule{Period: m.T, Polls: polls, Expected: m.recall(polls), Strategy: st, Candidates: s}
}

// Plan chooses n poll phases per period T for updates recurring at the
// given phases (each once per period); see PlanPattern.
func Plan(updatePhases []float64, n int, T float64) (Schedule, error) {
	p, err := Points(updatePhases, T)
	if err != nil {
		return Schedule{}, fmt.Errorf("capture: plan: %w", err)
	}
	return PlanPattern(p, n)
}

// PlanPattern chooses up to n poll phases per period maximising expected
// change recall. It runs the exhaustive programme (§3.1.1) when the
// candidate count s is at most ExhaustiveLimit and the theoretical strategy
// (§3.1.2) otherwise; since the exhaustive programme is exact only over its
// candidate grid, it also keeps the theoretical plan when that scores
// higher (possible only with overlapping jitter). For jittered patterns the subdivision of overlaps is
// raised (while s stays within the limit) so that the candidates can hold n
// polls. With no updates it returns uniform polls and recall 1. Fewer than
// n polls are returned when more cannot raise expected recall.
func PlanPattern(p Pattern, n int) (Schedule, error) {
	if err := p.Validate(); err != nil {
		return Schedule{}, fmt.Errorf("capture: plan: %w", err)
	}
	if err := checkN(n); err != nil {
		return Schedule{}, fmt.Errorf("capture: plan: %w", err)
	}
	m := newModel(p)
	if len(m.ev) == 0 {
		polls, err := UniformPolls(n, p.Period, 0)
		if err != nil {
			return Schedule{}, fmt.Errorf("capture: plan: %w", err)
		}
		return Schedule{Period: p.Period, Polls: polls, Expected: 1, Strategy: StrategyUniform}, nil
	}
	cand := candidates(m, DefaultSubdivisions)
	for sub := 2 * DefaultSubdivisions; len(cand) < n && m.maxW > 0 && sub <= 4*n; sub *= 2 {
		c := candidates(m, sub)
		if len(c) > ExhaustiveLimit {
			break
		}
		cand = c
	}
	th, _ := theoretical(m, n)
	thSched := newSchedule(m, th, StrategyTheoretical, len(cand))
	if len(cand) > ExhaustiveLimit {
		return thSched, nil
	}
	ex := newSchedule(m, exhaustive(m, cand, n), StrategyExhaustive, len(cand))
	if thSched.Expected > ex.Expected+tieTol {
		// jittered overlaps: §3.1.2's equal sub-intervals fell off the grid
		return thSched, nil
	}
	return ex, nil
}

// LearnPattern turns a history of update times (absolute seconds) into a
// Pattern for period T, following §3.1.2's tagging of recurring messages:
// phases are sorted around the circle and split into clusters wherever two
// neighbours are more than tolerance apart (a cluster is also closed once
// it spans T/4, so dense random histories still yield narrow windows). Each
// cluster becomes ⌈c/h⌉ updates uniform over the cluster's range, each of
// weight (c/h)/⌈c/h⌉, where c is the cluster's size and h the number of
// periods the history spans: a cluster hit once per period is one certain
// update, a cluster hit twice per period is two overlapping ones.
func LearnPattern(times []float64, T, tolerance float64) (Pattern, error) {
	if err := checkPeriod(T); err != nil {
		return Pattern{}, fmt.Errorf("capture: learn: %w", err)
	}
	if !finite(tolerance) || tolerance < 0 {
		return Pattern{}, invalid("capture: learn: tolerance %v, must be finite and ≥ 0", tolerance)
	}
	if len(times) == 0 {
		return Pattern{Period: T}, nil
	}
	ph := make([]float64, len(times))
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, t := range times {
		if !finite(t) {
			return Pattern{}, invalid("capture: learn: update time %d = %v is not finite", i, t)
		}
		ph[i] = mod(t, T)
		lo, hi = math.Min(lo, t), math.Max(hi, t)
	}
	h := math.Floor(hi/T) - math.Floor(lo/T) + 1
	sort.Float64s(ph)
	// start right after the widest gap so no cluster straddles it
	start, widest := 0, -1.0
	for i := range ph {
		g := ph[i] - ph[(i+len(ph)-1)%len(ph)]
		if i == 0 {
			g += T
		}
		if g > widest {
			start, widest = i, g
		}
	}
	unwrapped := make([]float64, len(ph))
	for k := range ph {
		x := ph[(start+k)%len(ph)]
		if start+k >= len(ph) {
			x += T
		}
		unwrapped[k] = x
	}
	p := Pattern{Period: T}
	flush := func(a, b float64, c int) {
		total := float64(c) / h
		k := math.Ceil(total - 1e-9)
		half := (b - a) / 2
		for range int(k) {
			p.Updates = append(p.Updates, Update{Phase: mod(a+half, T), Jitter: half, Weight: math.Min(1, total/k)})
		}
	}
	a, c := unwrapped[0], 1
	for k := 1; k < len(unwrapped); k++ {
		x := unwrapped[k]
		if x-unwrapped[k-1] > tolerance || x-a > T/4 {
			flush(a, unwrapped[k-1], c)
			a, c = x, 0
		}
		c++
	}
	flush(a, unwrapped[len(unwrapped)-1], c)
	return p, nil
}

// WithSlack moves each poll of s later into the stretch after it where no
// update of p can happen, by half that stretch but no more than the widest
// update window: the model's recall is unchanged (no update window is
// crossed), and an update a little later than any learnt so far (windows
// learnt from a few observations are narrower than the truth) is still
// caught. The planners otherwise poll right at a window's end, where the
// age of a capture is least.
func (s Schedule) WithSlack(p Pattern) (Schedule, error) {
	if err := p.Validate(); err != nil {
		return s, fmt.Errorf("capture: slack: %w", err)
	}
	if s.Period != p.Period || len(s.Polls) == 0 || len(p.Updates) == 0 {
		return s, nil
	}
	T := p.Period
	widest := 0.0
	for _, u := range p.Updates {
		widest = math.Max(widest, 2*u.Jitter)
	}
	polls := append([]float64(nil), s.Polls...)
	for i, q := range polls {
		// the nearest start of an update window after q, and the next poll
		room := T
		for _, u := range p.Updates {
			if d := mod(u.Phase-u.Jitter-q, T); d > 0 {
				room = math.Min(room, d)
			}
			// a window that holds q: q is inside it, no room to move
			if d := mod(q-(u.Phase-u.Jitter), T); d < 2*u.Jitter {
				room = 0
			}
		}
		next := polls[(i+1)%len(polls)]
		if gap := mod(next-q, T); gap > 0 {
			room = math.Min(room, gap)
		}
		polls[i] = mod(q+math.Min(room/2, widest), T)
	}
	sort.Float64s(polls)
	m := newModel(p)
	out := s
	out.Polls, out.Expected = polls, m.recall(polls)
	if out.Expected < s.Expected-1e-9 {
		return s, nil // never worse under the model
	}
	return out, nil
}
