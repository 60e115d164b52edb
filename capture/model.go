package capture

import (
	"errors"
	"fmt"
	"math"
	"sort"
)

// ErrInvalidArgument is wrapped by every error this package returns for bad
// input, so callers can test with errors.Is while the message names the
// offending argument.
var ErrInvalidArgument = errors.New("invalid argument")

func invalid(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, ErrInvalidArgument)...)
}

// Update is one recurring update within each period: the paper's tagged
// message (A, B, C in §3.1.2). In each period it happens with probability
// Weight at a phase drawn uniformly from [Phase−Jitter, Phase+Jitter]
// (taken cyclically modulo the period), independently of the other updates.
// Jitter 0 is an exact phase. The uniform density mirrors the §3.1.2
// assumption that update densities are uniform in small intervals.
type Update struct {
	Phase  float64 // centre, in [0, Period)
	Jitter float64 // half-width, in [0, Period/2)
	Weight float64 // probability of occurring in a period, in (0, 1]
}

// Pattern is the learned update behaviour of a source: the recurring
// updates within one period of length Period.
type Pattern struct {
	Period  float64
	Updates []Update
}

// Points returns the pattern in which every phase is an exact update that
// happens every period: the simplest reading of an update log such as the
// paper's Table 1.
func Points(phases []float64, period float64) (Pattern, error) {
	p := Pattern{Period: period, Updates: make([]Update, len(phases))}
	for i, ph := range phases {
		p.Updates[i] = Update{Phase: ph, Weight: 1}
	}
	if err := p.Validate(); err != nil {
		return Pattern{}, err
	}
	return p, nil
}

// Validate reports whether the pattern is usable, naming the first bad field.
func (p Pattern) Validate() error {
	if err := checkPeriod(p.Period); err != nil {
		return err
	}
	for i, u := range p.Updates {
		if !finite(u.Phase) || u.Phase < 0 || u.Phase >= p.Period {
			return invalid("update %d: phase %v outside [0, %v)", i, u.Phase, p.Period)
		}
		if !finite(u.Jitter) || u.Jitter < 0 || 2*u.Jitter >= p.Period {
			return invalid("update %d: jitter %v outside [0, %v)", i, u.Jitter, p.Period/2)
		}
		if !finite(u.Weight) || u.Weight <= 0 || u.Weight > 1 {
			return invalid("update %d: weight %v outside (0, 1]", i, u.Weight)
		}
	}
	return nil
}

// ExpectedUpdates is the expected number of updates per period, the
// denominator of change recall.
func (p Pattern) ExpectedUpdates() float64 {
	var s float64
	for _, u := range p.Updates {
		s += u.Weight
	}
	return s
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

func checkPeriod(T float64) error {
	if !finite(T) || T <= 0 {
		return invalid("period T = %v, must be finite and > 0", T)
	}
	return nil
}

// MaxPolls bounds n, the polls per period a caller may ask for, so that a
// corrupt budget cannot exhaust memory.
const MaxPolls = 1 << 20

func checkN(n int) error {
	if n <= 0 || n > MaxPolls {
		return invalid("n = %d polls per period, must be in [1, %d]", n, MaxPolls)
	}
	return nil
}

// checkPolls validates poll phases and returns them sorted (a copy).
func checkPolls(polls []float64, T float64) ([]float64, error) {
	out := make([]float64, len(polls))
	for i, p := range polls {
		if !finite(p) || p < 0 || p >= T {
			return nil, invalid("poll %d: phase %v outside [0, %v)", i, p, T)
		}
		out[i] = p
	}
	sort.Float64s(out)
	return out, nil
}

// mod maps x into [0, T).
func mod(x, T float64) float64 {
	r := math.Mod(x, T)
	if r < 0 {
		r += T
	}
	if r >= T { // rounding of a tiny negative r
		r = 0
	}
	return r
}

// event is an Update normalised for evaluation: support [lo, lo+width]
// with lo in [0, T).
type event struct {
	lo, width, w float64
}

// model evaluates expected misses of a validated Pattern.
type model struct {
	T     float64
	ev    []event // sorted by lo
	los   []float64
	maxW  float64
	total float64
}

func newModel(p Pattern) *model {
	m := &model{T: p.Period, ev: make([]event, len(p.Updates))}
	for i, u := range p.Updates {
		m.ev[i] = event{lo: mod(u.Phase-u.Jitter, p.Period), width: 2 * u.Jitter, w: u.Weight}
		m.total += u.Weight
	}
	sort.Slice(m.ev, func(i, j int) bool { return m.ev[i].lo < m.ev[j].lo })
	m.los = make([]float64, len(m.ev))
	for i, e := range m.ev {
		m.los[i] = e.lo
		m.maxW = math.Max(m.maxW, e.width)
	}
	return m
}

// mass is the probability mass of e's phase distribution in the cyclic arc
// (a, b], a in [0, T), a < b ≤ a+T.
func (m *model) mass(e event, a, b float64) float64 {
	T := m.T
	if e.width == 0 {
		x := e.lo
		if (x > a && x <= b) || (x+T > a && x+T <= b) {
			return 1
		}
		return 0
	}
	var ov float64
	for k := -1.0; k <= 1; k++ {
		lo, hi := e.lo+k*T, e.lo+e.width+k*T
		ov += math.Max(0, math.Min(hi, b)-math.Max(lo, a))
	}
	return math.Min(1, ov/e.width)
}

// near returns up to two index ranges [r[0], r[1]) and [r[2], r[3]) of
// m.ev holding every event whose support may intersect (a, b], each once.
func (m *model) near(a, b float64) [4]int {
	L, R := a-m.maxW, b
	if R-L >= m.T {
		return [4]int{0, len(m.ev), 0, 0}
	}
	span := func(lo, hi float64) (int, int) { // events with lo in [lo, hi]
		i := sort.SearchFloat64s(m.los, lo)
		j := sort.Search(len(m.los), func(k int) bool { return m.los[k] > hi })
		return i, max(i, j)
	}
	var r [4]int
	switch {
	case L < 0:
		r[0], r[1] = span(L+m.T, m.T)
		r[2], r[3] = span(0, R)
	case R >= m.T:
		r[0], r[1] = span(L, m.T)
		r[2], r[3] = span(0, R-m.T)
	default:
		r[0], r[1] = span(L, R)
	}
	return r
}

// arc normalises the window after a poll at a up to the next poll at b to
// (a, b] with a in [0, T) and a < b ≤ a+T; b ≤ a is read cyclically and
// a == b means a single poll per period.
func (m *model) arc(a, b float64) (float64, float64) {
	a = mod(a, m.T)
	L := mod(b-a, m.T)
	if L == 0 {
		L = m.T
	}
	return a, a + L
}

// misses is the expected number of updates lost in the window between
// consecutive polls at a and b (the paper's NumMisses(T_i, k, 0)):
// E[max(0, N−1)] = E[N] − P(N ≥ 1) with N the number of updates in (a, b].
func (m *model) misses(a, b float64) float64 {
	c, _ := m.window(a, b, false)
	return c
}

// window returns misses(a, b) and, when withWait is set, the expected
// total time the updates in (a, b] wait for the poll at b:
// Σ_e w_e ∫_(a,b] (b−x) f_e(x) dx. The wait is the paper's Age metric
// (§2.1) summed over a window; it only breaks ties between strategies with
// equal expected misses, preferring polls just after updates.
func (m *model) window(a, b float64, withWait bool) (miss, wait float64) {
	a, b = m.arc(a, b)
	sum, none := 0.0, 1.0
	r := m.near(a, b)
	for _, span := range [][2]int{{r[0], r[1]}, {r[2], r[3]}} {
		for _, e := range m.ev[span[0]:span[1]] {
			q := e.w * m.mass(e, a, b)
			sum += q
			none *= 1 - q
			if withWait && q > 0 {
				wait += m.waitOf(e, a, b)
			}
		}
	}
	return math.Max(0, sum-1+none), wait
}

func (m *model) waitOf(e event, a, b float64) float64 {
	var s float64
	for k := -1.0; k <= 1; k++ {
		lo, hi := e.lo+k*m.T, e.lo+e.width+k*m.T
		if e.width == 0 {
			if lo > a && lo <= b {
				s += e.w * (b - lo)
			}
			continue
		}
		lo, hi = math.Max(lo, a), math.Min(hi, b)
		if hi > lo {
			s += e.w * ((b-lo)*(b-lo) - (b-hi)*(b-hi)) / (2 * e.width)
		}
	}
	return s
}

// totalMisses sums misses over the windows of sorted poll phases.
func (m *model) totalMisses(polls []float64) float64 {
	if len(polls) == 0 {
		return m.total
	}
	var s float64
	for i := range polls {
		s += m.misses(polls[i], polls[(i+1)%len(polls)])
	}
	return s
}

func (m *model) recall(polls []float64) float64 {
	if m.total == 0 {
		return 1
	}
	return clamp01(1 - m.totalMisses(polls)/m.total)
}

func clamp01(x float64) float64 { return math.Max(0, math.Min(1, x)) }

// Recall is the expected change recall of polling at the given phases every
// period when an update happens at each of the given phases every period
// (§2.1 Change Recall, evaluated on the periodic model). With no updates
// recall is 1 (nothing can be missed); with no polls it is 0.
func Recall(polls, updates []float64, T float64) (float64, error) {
	p, err := Points(updates, T)
	if err != nil {
		return 0, fmt.Errorf("capture: recall: %w", err)
	}
	return p.Recall(polls)
}

// Recall is the expected change recall of polling at the given phases
// every period: 1 − E[misses]/E[updates] (a ratio of expectations per
// period), exact for the Pattern's independent-update model.
func (p Pattern) Recall(polls []float64) (float64, error) {
	if err := p.Validate(); err != nil {
		return 0, fmt.Errorf("capture: recall: %w", err)
	}
	sorted, err := checkPolls(polls, p.Period)
	if err != nil {
		return 0, fmt.Errorf("capture: recall: %w", err)
	}
	return newModel(p).recall(sorted), nil
}

// UniformPolls is the paper's naive baseline (§3.1.3 strategy (i)): n polls
// evenly spaced over the period starting at offset, returned as sorted
// phases in [0, T).
func UniformPolls(n int, T, offset float64) ([]float64, error) {
	if err := checkN(n); err != nil {
		return nil, fmt.Errorf("capture: uniform polls: %w", err)
	}
	if err := checkPeriod(T); err != nil {
		return nil, fmt.Errorf("capture: uniform polls: %w", err)
	}
	if !finite(offset) {
		return nil, invalid("capture: uniform polls: offset %v is not finite", offset)
	}
	out := make([]float64, n)
	base := mod(offset, T)
	for i := range out {
		// (base + i·T/n) mod T without forming a sum above T, which
		// overflows for periods near the float64 limit.
		rest := T - float64(i)*(T/float64(n))
		switch x := base + (T - rest); {
		case base >= rest:
			out[i] = base - rest
		case x < T:
			out[i] = x
		default: // rounded up to T: the phase wraps to 0
			out[i] = 0
		}
	}
	sort.Float64s(out)
	return out, nil
}

// ReplayRecall replays an actual update history (absolute times, any
// order) against polls at the given phases repeated every period, as the
// paper's experiments do (§3.1.3): an update is captured when some poll
// falls at or after it and before the next update. The last update is
// counted as captured once a poll follows it, which every non-empty
// schedule guarantees. It returns the recall and the number of updates.
func ReplayRecall(polls []float64, T float64, times []float64) (float64, int, error) {
	if err := checkPeriod(T); err != nil {
		return 0, 0, fmt.Errorf("capture: replay: %w", err)
	}
	sp, err := checkPolls(polls, T)
	if err != nil {
		return 0, 0, fmt.Errorf("capture: replay: %w", err)
	}
	ts := make([]float64, len(times))
	for i, t := range times {
		if !finite(t) {
			return 0, 0, invalid("capture: replay: update time %d = %v is not finite", i, t)
		}
		ts[i] = t
	}
	sort.Float64s(ts)
	if len(ts) == 0 {
		return 1, 0, nil
	}
	if len(sp) == 0 {
		return 0, len(ts), nil
	}
	captured := 0
	for i, t := range ts {
		if i == len(ts)-1 {
			captured++
			break
		}
		if nextPoll(sp, T, t) < ts[i+1] {
			captured++
		}
	}
	return float64(captured) / float64(len(ts)), len(ts), nil
}

// nextPoll is the first absolute poll time ≥ t.
func nextPoll(sorted []float64, T, t float64) float64 {
	base := t - mod(t, T)
	ph := t - base
	i := sort.SearchFloat64s(sorted, ph)
	if i < len(sorted) {
		return base + sorted[i]
	}
	return base + T + sorted[0]
}
