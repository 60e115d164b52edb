package schedule

import (
	"math"
	"time"

	"github.com/freshcrawl/freshcrawl/estimate"
)

// postSummary is an estimate.Summary held for every URL
// (Scheduler.posts) in 24 bytes instead of 48: its mean and harmonic mean
// as float32, and its quantiles (ln λ) as fixed-point offsets from the
// harmonic mean's logarithm, quantStep apart (quantCode). The plan's
// rates come from the estimates (Scheduler.rates); the summaries weigh
// exploration and the expected freshness, for which a quantile within
// quantStep/2 (0.037 % of the rate) is as good as exact
// (docs/benchmarks.md, "The schedule's memory per URL").
type postSummary struct {
	mean, harmonic float32
	q              [estimate.SummaryQuantiles]uint16
}

// quantSpan bounds, in ln λ, how far a quantile may lie from its
// summary's harmonic mean for its code to hold it to within quantStep/2:
// farther ones are held at the span's ends. A posterior's quantiles and
// harmonic mean lie on its rate grid (rateGridFor: 21 in ln λ from end to
// end, TestQuantileCodes), well within it.
const quantSpan = 24.0

// quantStep is the spacing of the quantiles' codes, 7.3e-4 in ln λ:
// quantSpan over 32 767 steps either way of the anchor, whose own code
// (quantZero) reads back as it, so that a point summary's quantiles
// (pointSummary) do.
const (
	quantZero = math.MaxInt16
	quantStep = quantSpan / quantZero
)

// quantAnchor is the ln λ the quantiles of a summary with harmonic mean
// h are coded from (a rate of 0, no posterior, as pointSummary's).
func quantAnchor(h float32) float64 { return math.Log(math.Max(float64(h), 1e-300)) }

// quantCode is the code of quantile u of a summary anchored at a.
func quantCode(u float32, a float64) uint16 {
	c := math.Round((float64(u)-a)/quantStep) + quantZero
	if !(c >= 0) { // below the span, or no number
		return 0
	}
	return uint16(math.Min(c, 2*quantZero))
}

// quantValue is the quantile of code c anchored at a.
func quantValue(c uint16, a float64) float32 {
	return float32(a + float64(int(c)-quantZero)*quantStep)
}

// compactSummary is s as a postSummary.
func compactSummary(s estimate.Summary) postSummary {
	p := postSummary{mean: float32(s.Mean), harmonic: float32(s.Harmonic)}
	a := quantAnchor(p.harmonic)
	for k, u := range s.Q {
		p.q[k] = quantCode(u, a)
	}
	return p
}

// summary is p as an estimate.Summary.
func (p postSummary) summary() estimate.Summary {
	s := estimate.Summary{Mean: float64(p.mean), Harmonic: float64(p.harmonic)}
	a := quantAnchor(p.harmonic)
	for k, c := range p.q {
		s.Q[k] = quantValue(c, a)
	}
	return s
}

// pointSummary is the summary of a rate known exactly: the stand-in until
// a URL's posterior is computed.
func pointSummary(rate float64) estimate.Summary {
	s := estimate.Summary{Mean: rate, Harmonic: rate}
	u := float32(math.Log(math.Max(rate, 1e-300)))
	for j := range s.Q {
		s.Q[j] = u
	}
	return s
}

// okGap is what Scheduler.prevGap holds for the successful fetches prev
// and last (Unix ns; prev 0: none): the seconds from prev to last as
// float32, which holds a gap of a year to within 2 s (2^-24 of it: the
// gap only sets how far back a URL's data reach, and a share of the
// collection's observed time), and a gap of 0 as the negative number
// nearest 0, so that 0 means "fewer than two fetches" only.
func okGap(prev, last int64) float32 {
	if prev == 0 {
		return 0
	}
	g := float32(time.Duration(last - prev).Seconds())
	if g == 0 {
		return -math.SmallestNonzeroFloat32
	}
	return g
}

// prevOK is the successful fetch before element i's last (Unix ns; 0:
// fewer than two), from its gap (okGap).
func (s *Scheduler) prevOK(i int32) int64 {
	g := s.prevGap[i]
	if g == 0 {
		return 0
	}
	return s.lastOK[i] - int64(math.Round(float64(g)*1e9))
}
