package capture

import (
	"errors"
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

// polled polls every gap seconds (±10 %) from 0 to end over the update
// times; exact gives each change the time of its last update, as a
// trustworthy Last-Modified does.
func polled(rng *rand.Rand, updates []float64, gap, end float64, exact bool) History {
	var h History
	u := 0
	for at := 0.0; at <= end; at += gap * (0.9 + 0.2*rng.Float64()) {
		p := Poll{At: at}
		first := u
		for u < len(updates) && updates[u] <= at {
			u++
		}
		if len(h) > 0 && u > first {
			p.Changed = true
			if exact {
				p.Exact = []float64{updates[u-1]}
			}
		}
		h = append(h, p)
	}
	return h
}

// The period is found from exact and from censored changes anywhere in
// the range, with no candidate list: rhythms of 45 s, 90 s, 15 min, 6 h, a
// day, and a week of weekdays at 9:00 (daily structure, weekly period).
func TestDetectPeriodRange(t *testing.T) {
	weekdays := []bool{true, true, true, true, true, false, false}
	cases := []struct {
		name    string
		src     source
		periods int
		gap     float64
		exact   bool
	}{
		{"45s censored, two updates 5s apart", source{T: 45, phases: []float64{10, 15}, jitter: 1}, 12, 3, false},
		{"45s exact", source{T: 45, phases: []float64{10, 15}, jitter: 1}, 12, 5, true},
		{"90s censored", source{T: 90, phases: []float64{30}, jitter: 2}, 15, 10, false},
		{"15min censored", source{T: 900, phases: []float64{60, 300}, jitter: 10}, 12, 60, false},
		{"6h exact", source{T: 6 * hour, phases: []float64{600}, jitter: 120}, 12, 1200, true},
		{"daily censored", source{T: day, phases: []float64{9 * hour}, jitter: 300}, 14, 1800, false},
		{"weekdays at 9:00, exact", source{T: day, phases: []float64{9 * hour}, jitter: 300, days: weekdays}, 28, 3600, true},
		{"weekdays at 9:00, censored (8 weeks)", source{T: day, phases: []float64{9 * hour}, jitter: 300, days: weekdays}, 56, 1800, false},
	}
	for ci, c := range cases {
		rng := rand.New(rand.NewPCG(uint64(ci+3), 11))
		ups := c.src.updates(rng, c.periods)
		want := c.src.T
		if c.src.days != nil {
			want = c.src.T * float64(len(c.src.days))
		}
		h := polled(rng, ups, c.gap, float64(c.periods)*c.src.T, c.exact)
		fit, err := DetectPeriodRange(h, 0, 0)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		t.Logf("%s: found %.2fs (want %.0fs), strength %.2f, %d changes, %d polls", c.name, fit.Period, want, fit.Strength, fit.Changes, fit.Polls)
		if math.Abs(fit.Period-want) > 0.005*want {
			t.Errorf("%s: period %.2fs, want %.0fs", c.name, fit.Period, want)
		}
		if fit.Strength < 0.4 {
			t.Errorf("%s: strength %.2f for a clear rhythm", c.name, fit.Strength)
		}
	}
}

// Changes at random times have no period worth the name.
func TestDetectPeriodRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	var ups []float64
	for at := 0.0; at < 4*day; at += rng.ExpFloat64() * 2 * hour {
		ups = append(ups, at)
	}
	sort.Float64s(ups)
	for _, exact := range []bool{true, false} {
		h := polled(rng, ups, 600, 4*day, exact)
		fit, err := DetectPeriodRange(h, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("random changes (exact %v): %.0fs, strength %.2f over %d changes", exact, fit.Period, fit.Strength, fit.Changes)
		if fit.Strength > 0.25 {
			t.Errorf("random changes (exact %v) scored %.2f at %.0fs", exact, fit.Strength, fit.Period)
		}
	}
}

// The learners take any history without panicking: empty, one poll, equal
// times, huge times, out of order (an error), NaN (an error), exact times
// outside their interval (an error), and random ones.
func TestLearnersNoPanics(t *testing.T) {
	nan := math.NaN()
	hs := []History{
		nil, {{At: 1}}, {{At: 1}, {At: 1, Changed: true}}, {{At: 5}, {At: 1}},
		{{At: 0}, {At: nan}}, {{At: 0}, {At: 1, Exact: []float64{2}}},
		{{At: 0}, {At: 1e15, Changed: true}, {At: 2e15, Changed: true}},
	}
	rng := rand.New(rand.NewPCG(1, 1))
	for range 12 {
		var h History
		at := 0.0
		for range rng.IntN(60) {
			at += rng.ExpFloat64() * 10
			p := Poll{At: at, Changed: rng.IntN(2) == 0}
			if p.Changed && rng.IntN(3) == 0 && len(h) > 0 {
				p.Exact = []float64{h[len(h)-1].At + (at-h[len(h)-1].At)*rng.Float64()}
				if p.Exact[0] <= h[len(h)-1].At {
					p.Exact = nil
				}
			}
			h = append(h, p)
		}
		hs = append(hs, h)
	}
	for i, h := range hs {
		for _, T := range []float64{1, 45} {
			if _, err := EstimatePhases(h, T, 0); err != nil && !errors.Is(err, ErrInvalidArgument) {
				t.Errorf("history %d: EstimatePhases: %v", i, err)
			}
			if p, _, err := LearnPolls(h, T); err == nil {
				if err := p.Validate(); err != nil {
					t.Errorf("history %d: LearnPolls gave an invalid pattern: %v", i, err)
				}
			}
			_, _ = RefinePeriod(h, T, T/100, 3)
			_, _ = PeriodStrength(h, T)
			_, _ = CheckDriftPolls(Pattern{Period: T, Updates: []Update{{Phase: 0, Weight: 1}}}, h, DriftConfig{})
		}
		_, _ = DetectPeriodRange(h, 0, 0)
	}
}
