package capture

import (
	"fmt"
	"math"
	"sort"
)

// Period search bounds (seconds): 20 s (so that rhythms of under a minute
// are found too) to eight days by default; the
// search also stays above three median poll gaps (a rhythm polled fewer
// than three times a period cannot be seen in censored changes) and below
// a sixth of the history (six periods at least: fewer fit too many
// periods by chance), a third when most changes are exactly timed.
const (
	MinPeriod = 20.0
	MaxPeriod = 8 * 86400.0
)

// PeriodFit is the period DetectPeriodRange found.
type PeriodFit struct {
	Period float64
	// Strength in [0, 1] is how much of the most a period could explain
	// this one does: (LL − LL₀ − penalty)/(LL* − LL₀), with LL the
	// log-likelihood of the changes under the period's phase histogram,
	// LL₀ under a constant rate, LL* if every change were certain in its
	// bin. 1 for updates at the same phases every period, about 0 for
	// changes at random times.
	Strength float64
	// Changes is the number of changes the fit rests on, Polls the polls.
	Changes, Polls int
	// Resolution is the histogram bin width used, seconds.
	Resolution float64
}

// harmonicNats is how much better (in log-likelihood) a multiple of a
// period must explain the changes to be preferred to it: ln 20.
const harmonicNats = 3.0

// change is an observed update for the period search: exactly at a
// (a == b) or somewhere in (a, b].
type change struct{ a, b float64 }

// DetectPeriodRange finds the period of a history's changes in [lo, hi]
// (MinPeriod and MaxPeriod when 0) with no list of candidates. Every
// period T is scored by a penalised likelihood: the changes (exact times,
// or censored intervals spread over the phases they cover) fill a phase
// histogram of bins of one width for every T (a fraction of the shortest
// period and about half the changes' censoring), each bin an event that
// happens in a period with probability q and then anywhere in the bin;
// the score is that log-likelihood, each period predicted from the
// others (leave one period out), less a constant rate's. The search walks a grid fine
// enough that no phase moves by more than half a bin over the history,
// then refines the best few locally.
//
// Predicting each period from the others is the guard against harmonics:
// twice the period fits the changes as well but predicts each period from
// half as many, half the period predicts updates in periods that have
// none; and against short histories, where a long period fits anything. Bernoulli bins, unlike
// a phase concentration, tell a weekly rhythm with daily structure
// (weekdays at 9:00) from a daily one: the weekly histogram is certain on
// five days and empty on two, the daily one uncertain every day.
func DetectPeriodRange(h History, lo, hi float64) (PeriodFit, error) {
	if err := h.Validate(); err != nil {
		return PeriodFit{}, fmt.Errorf("capture: detect period: %w", err)
	}
	if lo == 0 {
		lo = MinPeriod
	}
	if hi == 0 {
		hi = MaxPeriod
	}
	if !finite(lo) || !finite(hi) || lo <= 0 || hi < lo {
		return PeriodFit{}, invalid("capture: detect period: range [%v, %v] is not a range of periods", lo, hi)
	}
	ch, gaps, widths := historyChanges(h)
	fit := PeriodFit{Changes: len(ch), Polls: len(h)}
	if len(ch) < 4 {
		return fit, invalid("capture: detect period: %d changes, need ≥ 4", len(ch))
	}
	ch, span := watched(ch, gaps)
	fit.Changes = len(ch)
	if len(ch) < 4 {
		return fit, invalid("capture: detect period: %d changes, need ≥ 4", len(ch))
	}
	lo = math.Max(lo, 3*median(gaps))
	hi = math.Min(hi, span/periodsToTrust(ch))
	if hi < lo {
		return fit, invalid("capture: detect period: a history of %.0fs polled every %.0fs cannot show a period in the range", span, median(gaps))
	}
	w := math.Max(lo/8, median(widths))
	sc := &scorer{ch: ch, span: span, w: w}
	best := sc.preferDivisor(sc.search(lo, hi), lo, hi)
	fit.Period, fit.Resolution = best.T, w
	fit.Strength = clamp01(best.s / sc.most())
	return fit, nil
}

// historyChanges lists the changes of h, exactly timed or censored between
// two polls, the gaps between polls and the widths of the censored
// changes.
func historyChanges(h History) (ch []change, gaps, widths []float64) {
	for i := 1; i < len(h); i++ {
		gaps = append(gaps, h[i].At-h[i-1].At)
		switch {
		case len(h[i].Exact) > 0:
			for _, x := range h[i].Exact {
				ch = append(ch, change{x, x})
			}
		case h[i].Changed:
			ch = append(ch, change{h[i-1].At, h[i].At})
			widths = append(widths, h[i].At-h[i-1].At)
		}
	}
	return ch, gaps, widths
}

// watched returns the changes of ch the polls watched, in place, and the
// time they watched: gaps far longer than usual (polling paused, or the
// history skips a stretch) watched nothing, and changes seen across them
// say nothing of the phase.
func watched(ch []change, gaps []float64) ([]change, float64) {
	maxGap := 4 * median(gaps)
	span := 0.0
	for _, g := range gaps {
		if g <= maxGap {
			span += g
		}
	}
	kept := ch[:0]
	for _, c := range ch {
		if c.b-c.a <= maxGap {
			kept = append(kept, c)
		}
	}
	return kept, span
}

// periodsToTrust is how many periods the history must hold: exact times
// are trusted over three periods; censored changes, which fit many
// periods loosely, over six.
func periodsToTrust(ch []change) float64 {
	exact := 0
	for _, c := range ch {
		if c.a == c.b {
			exact++
		}
	}
	periods := 6.0
	if 2*exact >= len(ch) {
		periods = 3
	}
	return periods
}

// periodCand is a candidate period T and its score s.
type periodCand struct{ T, s float64 }

// step is the grid's step at period T: no phase moves by more than half a
// bin over the history.
func (sc *scorer) step(T float64) float64 { return math.Max(sc.w/2*T/sc.span, T*1e-7) }

// search walks the grid over [lo, hi], keeps the best few periods and
// refines each locally; it returns the best, the shorter on a tie.
func (sc *scorer) search(lo, hi float64) periodCand {
	var top []periodCand // best few, by score
	keep := func(T, s float64) {
		if len(top) < 8 || s > top[len(top)-1].s {
			top = append(top, periodCand{T, s})
			sort.Slice(top, func(i, j int) bool { return top[i].s > top[j].s })
			if len(top) > 8 {
				top = top[:8]
			}
		}
	}
	for T := lo; T <= hi; T += sc.step(T) {
		keep(T, sc.score(T))
	}
	keep(hi, sc.score(hi))
	best := top[0]
	for _, c := range top {
		st := sc.step(c.T)
		for k := -10; k <= 10; k++ {
			T := c.T + float64(k)*st/10
			if T < lo || T > hi {
				continue
			}
			if s := sc.score(T); s > best.s || (s == best.s && T < best.T) {
				best = periodCand{T, s}
			}
		}
	}
	return best
}

// preferDivisor returns the shortest divisor of best's period that
// explains the changes nearly as well, searching around each. A multiple
// of the period explains the changes nearly as well as the period itself:
// the longer one is kept only when it is ahead by harmonicNats (a
// likelihood ratio of 20, strong evidence).
func (sc *scorer) preferDivisor(best periodCand, lo, hi float64) periodCand {
	local := func(T float64) periodCand {
		b := periodCand{T, math.Inf(-1)}
		st := sc.step(T)
		for k := -20; k <= 20; k++ {
			x := T + float64(k)*st/4
			if x < lo || x > hi {
				continue
			}
			if s := sc.score(x); s > b.s {
				b = periodCand{x, s}
			}
		}
		return b
	}
	for d := 20; d >= 2; d-- {
		if best.T/float64(d) < lo {
			continue
		}
		if c := local(best.T / float64(d)); c.s >= best.s-harmonicNats {
			return c
		}
	}
	return best
}

// scorer scores candidate periods for a fixed set of changes.
type scorer struct {
	ch      []change
	span, w float64
	counts  []float64
	touched []int
}

// gain is the log-likelihood of the changes under a constant rate, LL₀,
// subtracted from the periodic models': n·ln(n/span) − n.
func (s *scorer) ll0() float64 {
	n := float64(len(s.ch))
	return n*math.Log(n/s.span) - n
}

// most is LL* − LL₀: every change certain in a bin of width w.
func (s *scorer) most() float64 {
	return float64(len(s.ch))*math.Log(1/s.w) - s.ll0()
}

// score is the log-likelihood gain of period T over a constant rate (see
// DetectPeriodRange), the better of two histograms half a bin apart, so
// that updates that straddle a bin edge in one are whole in the other.
func (s *scorer) score(T float64) float64 {
	B := max(1, int(math.Round(T/s.w)))
	w := T / float64(B)
	return math.Max(s.scoreAt(T, B, 0), s.scoreAt(T, B, w/2))
}

// scoreAt scores period T with B bins whose edges are shifted by off.
func (s *scorer) scoreAt(T float64, B int, off float64) float64 {
	w := T / float64(B)
	for _, k := range s.touched {
		s.counts[k] = 0
	}
	s.touched = s.touched[:0]
	if len(s.counts) < B {
		s.counts = make([]float64, B)
	}
	c := s.counts[:B]
	add := func(k int, x float64) {
		if c[k] == 0 {
			s.touched = append(s.touched, k)
		}
		c[k] += x
	}
	for _, x := range s.ch {
		L := x.b - x.a
		switch {
		case L < w: // exact, or narrower than a bin: its midpoint
			add(min(B-1, int(mod((x.a+x.b)/2+off, T)/w)), 1)
		case L >= T:
			for k := range B {
				add(k, 1/float64(B))
			}
		default:
			start := mod(x.a+off, T)
			k := min(B-1, int(start/w))
			for at, i := start, 0; at < start+L && i <= B+1; i++ {
				if next := math.Min(float64(k+1)*w, start+L); next > at {
					add(k%B, (next-at)/L)
					at = next
				}
				k++
			}
		}
	}
	// Leave one period out: each period's changes (and quiet bins) are
	// predicted from the others', with a prior of strength 1 at the
	// overall rate, so a histogram that fits noise (a multiple of the
	// period, few periods) predicts badly and pays for it.
	E := s.span / T // periods observed, each bin once per period
	n := float64(len(s.ch))
	q0 := n / (float64(B) * E)
	den := math.Max(E-1, 0) + 1
	pred := func(c float64) float64 { return math.Min(c+q0, den*(1-1e-9)) / den }
	ll := 0.0
	// quiet bin-periods: every bin, E − c of them, predicted from c
	quietAll := float64(B-len(s.touched)) * E * math.Log1p(-pred(0))
	ll += quietAll
	for _, k := range s.touched {
		ll += math.Max(0, E-c[k]) * math.Log1p(-pred(c[k]))
	}
	// changes: each piece f of a change in bin k, predicted from c − f
	for _, x := range s.ch {
		L := x.b - x.a
		switch {
		case L < w:
			k := min(B-1, int(mod((x.a+x.b)/2+off, T)/w))
			ll += math.Log(pred(c[k]-1) / w)
		case L >= T:
			for k := range B {
				f := 1 / float64(B)
				ll += f * math.Log(pred(c[k]-f)/w)
			}
		default:
			start := mod(x.a+off, T)
			k := min(B-1, int(start/w))
			for at, i := start, 0; at < start+L && i <= B+1; i++ {
				if next := math.Min(float64(k+1)*w, start+L); next > at {
					f := (next - at) / L
					ll += f * math.Log(pred(c[k%B]-f)/w)
					at = next
				}
				k++
			}
		}
	}
	return ll - s.ll0()
}

// PeriodStrength scores a given period (a configured one) on a history:
// the strength DetectPeriodRange would report for it.
func PeriodStrength(h History, T float64) (PeriodFit, error) {
	if err := checkPeriod(T); err != nil {
		return PeriodFit{}, fmt.Errorf("capture: period strength: %w", err)
	}
	if err := h.Validate(); err != nil {
		return PeriodFit{}, fmt.Errorf("capture: period strength: %w", err)
	}
	var ch []change
	var widths []float64
	for i := 1; i < len(h); i++ {
		switch {
		case len(h[i].Exact) > 0:
			for _, x := range h[i].Exact {
				ch = append(ch, change{x, x})
			}
		case h[i].Changed:
			ch = append(ch, change{h[i-1].At, h[i].At})
			widths = append(widths, h[i].At-h[i-1].At)
		}
	}
	fit := PeriodFit{Period: T, Changes: len(ch), Polls: len(h)}
	if len(ch) < 2 || h.Span() <= 0 {
		return fit, nil
	}
	w := math.Max(T/64, median(widths))
	w = math.Min(w, T/8)
	sc := &scorer{ch: ch, span: math.Max(h.Span(), T), w: w}
	fit.Resolution = w
	fit.Strength = clamp01(sc.score(T) / sc.most())
	return fit, nil
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}
