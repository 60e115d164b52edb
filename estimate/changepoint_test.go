package estimate

import (
	"math"
	"math/rand/v2"
	"testing"
)

// cpConfig is DefaultConfig without fading, so that only the change-point
// test forgets.
var cpConfig = Config{HalfLife: math.Inf(1), MergeRatio: 1.25, ChangeThreshold: DefaultConfig().ChangeThreshold}

// TestChangePointFalseAlarms: on steady pages the test fires rarely: at
// most one observation in a thousand, bit-only or Last-Modified (whose
// every observation is informative, so its likelihood ratio fluctuates
// more).
func TestChangePointFalseAlarms(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	total, obs := 0, 0
	for _, lambda := range []float64{1, 1.0 / 7, 1.0 / 30} {
		for _, iv := range []float64{0.3 / lambda, 1 / lambda, 3 / lambda} {
			var s State
			now := 0.0
			for range 2000 {
				now += iv
				_ = s.Observe(now, iv, changedBit(rng, lambda, iv), cpConfig)
				obs++
			}
			total += int(s.ChangePoints())
		}
	}
	if rate := float64(total) / float64(obs); rate > 1e-3 {
		t.Errorf("%d change points in %d steady observations (%.2g each)", total, obs, rate)
	}
	t.Logf("%d false change points in %d observations", total, obs)
	// Last-Modified observations: the age of the last change at each
	// fetch, Exp(λ) censored at the interval.
	total, obs = 0, 0
	for _, lambda := range []float64{1, 1.0 / 7, 1.0 / 30} {
		for _, iv := range []float64{0.3 / lambda, 1 / lambda, 3 / lambda} {
			var s State
			now := 0.0
			for range 2000 {
				now += iv
				lm := now - iv
				if age := rng.ExpFloat64() / lambda; age < iv {
					lm = now - age
				}
				_ = s.ObserveLastModified(now, iv, lm, cpConfig)
				obs++
			}
			total += int(s.ChangePoints())
		}
	}
	if rate := float64(total) / float64(obs); rate > 1e-3 {
		t.Errorf("Last-Modified: %d change points in %d steady observations (%.2g each)", total, obs, rate)
	}
	t.Logf("Last-Modified: %d false change points in %d observations", total, obs)
}

// TestChangePointDetectsSwitch: when a page's rate switches the test
// fires within a few fetches, and the estimate then follows the new rate
// instead of averaging the old one in.
func TestChangePointDetectsSwitch(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 34))
	for _, c := range []struct {
		before, after, interval float64
		within, minHits         int // detected within this many fetches in at least minHits of 50 runs
	}{
		{1, 1.0 / 365, 3, 3, 30},          // daily turns yearly: its first unchanged fetches
		{1.0 / 365, 1, 3, 3, 40},          // yearly turns daily
		{1.0 / 7, 1.0 / 90, 7, 8, 15},     // weekly turns quarterly
		{1.0 / 90, 1.0 / 7, 7, 8, 25},     // quarterly turns weekly
		{1, 1.0 / 365, 30, 3, 45},         // daily turns yearly, fetched monthly: censored before
		{1.0 / 30, 1.0 / 365, 30, 40, 15}, // a factor 12 the bit hardly sees at this interval
	} {
		delays := 0
		hits := 0
		var errs []float64
		for range 50 {
			var s State
			now := 0.0
			for range 60 {
				now += c.interval
				_ = s.Observe(now, c.interval, changedBit(rng, c.before, c.interval), cpConfig)
			}
			base := s.ChangePoints()
			for k := 1; k <= 40; k++ {
				now += c.interval
				_ = s.Observe(now, c.interval, changedBit(rng, c.after, c.interval), cpConfig)
				if s.ChangePoints() > base {
					if k <= c.within {
						hits++
					}
					delays += k
					base = math.MaxUint32
				}
			}
			// A weak prior keeps the estimate finite when the window saw
			// no change.
			errs = append(errs, math.Log(s.Rate(NewPrior(0.05, 0.5))/c.after))
		}
		if hits < c.minHits {
			t.Errorf("%.4g → %.4g a day at %v days: detected within %d fetches in %d of 50 runs", c.before, c.after, c.interval, c.within, hits)
		}
		// Forty fetches after the switch the estimate is the new rate's,
		// not a blend with 60 fetches of the old one (which would be off
		// by a factor of 5 or more, a log error above 1.6).
		m, _ := meanSD(errs)
		if math.Abs(m) > 1 {
			t.Errorf("%.4g → %.4g: mean log error of the estimate after the switch %.2f", c.before, c.after, m)
		}
		t.Logf("%.4g → %.4g at %v days: %d/50 detected within %d fetches, mean log error %.2f", c.before, c.after, c.interval, hits, c.within, m)
	}
}

// TestChangePointOff: with ChangeThreshold 0 nothing is forgotten.
func TestChangePointOff(t *testing.T) {
	var s State
	for i := range 20 {
		_ = s.Observe(float64(i+1), 1, true, noFade)
	}
	for i := range 20 {
		_ = s.Observe(float64(21+i)*100, 100, false, noFade)
	}
	if s.ChangePoints() != 0 {
		t.Errorf("%d change points with detection off", s.ChangePoints())
	}
}

// TestStateDecodesVersion1: a State stored before change points were kept
// still reads, with an empty window.
func TestStateDecodesVersion1(t *testing.T) {
	var s State
	for i := range 30 {
		_ = s.Observe(float64(i+1)*10, 10, i%3 == 0, noFade)
	}
	b, _ := s.MarshalBinary()
	v1 := append([]byte{1}, b[1:encodedSizeV1]...)
	var u State
	if err := u.UnmarshalBinary(v1); err != nil {
		t.Fatal(err)
	}
	want := s
	want.recentT, want.recentK, want.nRecent, want.cps = [recentSize]float32{}, [recentSize]uint8{}, 0, 0
	if u != want {
		t.Errorf("v1 decode:\n got %+v\nwant %+v", u, want)
	}
	if EncodedLen(v1) != encodedSizeV1 || EncodedLen(b) != EncodedSize || EncodedLen(b[:5]) != 0 {
		t.Errorf("EncodedLen: %d %d %d", EncodedLen(v1), EncodedLen(b), EncodedLen(b[:5]))
	}
}
