package schedule

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestRateSERoundTrips: a rate's standard error, held as float32, reads
// back (View) within float32's relative rounding (2^-24) of what Add and
// Done were told, over the errors a posterior gives.
func TestRateSERoundTrips(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	s := NewScheduler(SchedulerOptions{Budget: 1, HostRate: 1})
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
	s := NewScheduler(SchedulerOptions{Budget: 1, HostRate: 1})
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
