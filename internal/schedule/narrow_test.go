package schedule

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/freshcrawl/freshcrawl/estimate"
)

// TestQuantileCodes: a posterior summary held as a postSummary reads back
// with its mean and harmonic mean as float32 and every quantile within
// quantStep/2 (plus float32's rounding) of the original, for the
// posteriors of learnt histories at every step and for point summaries
// (whose quantiles are their harmonic mean's logarithm) over the rates a
// collection may hold; a rate grid's quantiles and harmonic mean are never
// farther apart than quantSpan, for prior rates from once a year to once
// a second; and codes past the span are held at its ends.
func TestQuantileCodes(t *testing.T) {
	check := func(what string, s estimate.Summary) {
		t.Helper()
		got := compactSummary(s).summary()
		if got.Mean != float64(float32(s.Mean)) || got.Harmonic != float64(float32(s.Harmonic)) {
			t.Fatalf("%s: means %v, %v read back as %v, %v", what, s.Mean, s.Harmonic, got.Mean, got.Harmonic)
		}
		for k, u := range s.Q {
			// float32 rounds a quantile of ln λ (|u| < 100) to within
			// 4e-6.
			if d := math.Abs(float64(got.Q[k]) - float64(u)); d > quantStep/2+4e-6 {
				t.Fatalf("%s: quantile %d is %v, read back as %v (off by %.3g, bound %.3g)", what, k, u, got.Q[k], d, quantStep/2)
			}
		}
	}
	for _, rate := range []float64{1e-12, 1.0 / (365 * 86400), 1.0 / 86400, 1, 2e3} {
		check("point", pointSummary(rate))
		got, want := compactSummary(pointSummary(rate)).summary(), pointSummary(rate)
		if got.Valid() != want.Valid() {
			t.Fatalf("point summary of %v: valid %v read back as %v", rate, want.Valid(), got.Valid())
		}
	}
	if got := compactSummary(pointSummary(0)).summary(); got.Valid() {
		t.Fatalf("the summary of rate 0 (no posterior) read back valid: %+v", got)
	}
	for _, prior := range []float64{1.0 / (365 * 86400), 1.0 / 86400, 1.0 / 3600, 1} {
		g := rateGridFor(prior)
		if width := float64(g.N) * g.Step; width >= quantSpan {
			t.Fatalf("prior rate %v: its grid spans %.2f in ln λ, the quantiles' codes %v", prior, width, quantSpan)
		}
	}
	rng := rand.New(rand.NewPCG(16, 24))
	now := time.Unix(1_800_000_000, 0)
	for _, prior := range []float64{1.0 / 86400, 1.0 / 3600} {
		est := NewEstimator(DefaultSchedulerOptions().HalfLife, prior)
		for range 40 {
			var st EstimateState
			iv := time.Duration(1+rng.Int64N(30*24)) * time.Hour
			at, rate := now, prior
			var prev time.Time
			for range 2 + rng.IntN(30) {
				fb := est.Learn(&st, rate, Observation{URL: "http://h.example/p", Host: "h.example", Start: at, End: at.Add(time.Second), OK: true, First: prev.IsZero(), Prev: prev, Changed: rng.IntN(3) == 0})
				if fb.Posterior.Valid() {
					check("posterior", fb.Posterior)
				}
				rate, prev = fb.Rate, at
				at = at.Add(iv)
			}
		}
	}
	a := quantAnchor(1)
	if c := quantCode(float32(a-2*quantSpan), a); c != 0 {
		t.Fatalf("a quantile below the span coded %d, want 0", c)
	}
	if c := quantCode(float32(a+2*quantSpan), a); c != 2*quantZero {
		t.Fatalf("a quantile above the span coded %d, want %d", c, 2*quantZero)
	}
	if c := quantCode(float32(math.NaN()), a); c != 0 {
		t.Fatalf("NaN coded %d, want 0", c)
	}
}

// TestRateSERoundTrips: a rate's standard error, held as float32, reads
// back (View) within float32's relative rounding (2^-24) of what Add and
// Done were told, over the errors a posterior gives.
func TestRateSERoundTrips(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	s := newTestScheduler(t, func(o *SchedulerOptions) { o.Budget, o.HostRate = 1, 1 })
	rng := rand.New(rand.NewPCG(16, 25))
	near := func(got, want float64) bool { return math.Abs(got-want) <= want*0x1p-24 }
	for i := range 200 {
		url := fmt.Sprintf("http://h.example/p%d", i)
		se := math.Exp(rng.Float64()*40 - 30) // 1e-13 to 2e4 changes a second
		s.Add(URLInfo{URL: url, Host: "h.example", Weight: 1, Rate: 1.0 / 86400, RateSE: se}, now)
		if v, _ := s.View(url, now); !near(v.RateSE, se) {
			t.Fatalf("%s: rate SE %v added, %v read back", url, se, v.RateSE)
		}
		se2 := se * (1 + rng.Float64())
		s.Done(url, Feedback{Start: now, End: now, OK: true, Rate: 2.0 / 86400, RateSE: se2})
		if v, _ := s.View(url, now); !near(v.RateSE, se2) {
			t.Fatalf("%s: rate SE %v after a fetch, %v read back", url, se2, v.RateSE)
		}
	}
}

// TestPrevGapRoundTrips: the fetch before a URL's last one, held as a
// float32 gap before it, reads back within 2^-24 of the gap (and a
// nanosecond of rounding) through a URL's successful fetches in order,
// at the same instant and out of order, and reads as none (0) exactly
// while the URL has had fewer than two.
func TestPrevGapRoundTrips(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	s := newTestScheduler(t, func(o *SchedulerOptions) { o.Budget, o.HostRate = 1, 1 })
	rng := rand.New(rand.NewPCG(16, 26))
	for i := range 100 {
		url := fmt.Sprintf("http://h.example/p%d", i)
		s.Add(URLInfo{URL: url, Host: "h.example", Weight: 1, Rate: 1.0 / 86400}, now)
		e, _ := s.front.urls.get(url)
		var prev, last int64
		at := now
		for k := range 12 {
			switch rng.IntN(4) {
			case 0: // the same instant as the last
			case 1: // out of order
				at = at.Add(-time.Duration(rng.Int64N(int64(time.Hour))))
			default:
				at = at.Add(time.Duration(math.Exp(rng.Float64() * 40))) // 1 ns to 7 years
			}
			s.Done(url, Feedback{Start: at, End: at, OK: true})
			prev, last = last, at.UnixNano()
			if s.lastOK[e.pos] != last {
				t.Fatalf("%s: last fetch %d, want %d", url, s.lastOK[e.pos], last)
			}
			got := s.prevOK(e.pos)
			if k == 0 {
				if got != 0 {
					t.Fatalf("%s: a fetch before the first read back as %d", url, got)
				}
				continue
			}
			if d := math.Abs(float64(got - prev)); got == 0 || d > math.Abs(float64(last-prev))*0x1p-24+1 {
				t.Fatalf("%s: fetch %d: the one before read back as %d, was %d (off by %v ns)", url, k, got, prev, d)
			}
		}
	}
}
