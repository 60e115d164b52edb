package sim

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"
)

// bruteTruth is the definition of Report taken literally, one time step at
// a time: at each midpoint x of a step of dt, the copy is the Version of
// the latest fetch at or before x (none: stale since from), the current
// version counts the changes at or before x, and a stale copy of version v
// is x − changes[v] old. With every event on a multiple of dt the state is
// constant over each step and age is linear in it, so the midpoint sum is
// exact: any difference from IntegratePage is a bug, not discretisation.
func bruteTruth(changes []time.Duration, fetches []Fetch, from, to, dt time.Duration, steps int) (fresh, age float64, seriesFresh, seriesAge []float64) {
	stepLen := (to - from) / time.Duration(steps)
	seriesFresh, seriesAge = make([]float64, steps), make([]float64, steps)
	for a := from; a < to; a += dt {
		x := a + dt/2
		cur := sort.Search(len(changes), func(k int) bool { return changes[k] > x })
		cp := -1
		for _, f := range fetches {
			if f.At <= x {
				cp = f.Version
			}
		}
		k := int((a - from) / stepLen)
		if cp == cur {
			fresh += dt.Seconds()
			seriesFresh[k] += dt.Seconds()
			continue
		}
		since := from
		if cp >= 0 {
			since = changes[cp]
		}
		v := dt.Seconds() * (x - since).Seconds()
		age += v
		seriesAge[k] += v
	}
	return fresh, age, seriesFresh, seriesAge
}

// TestIntegratePageAgainstBruteForce compares IntegratePage and its series
// with bruteTruth on random histories: change and fetch times on a grid of
// whole seconds, windows that start before, at and after fetches, fetches
// before the window (a copy carried over) and after it (ignored).
func TestIntegratePageAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const dt = time.Second
	for trial := range 300 {
		horizon := 20 + rng.IntN(60)
		var changes []time.Duration
		for s := 1; s < horizon; s++ {
			if rng.Float64() < 0.15 {
				changes = append(changes, time.Duration(s)*dt)
			}
		}
		var fetches []Fetch
		for s := 0; s < horizon; s++ {
			if rng.Float64() < 0.1 {
				at := time.Duration(s) * dt
				v := sort.Search(len(changes), func(k int) bool { return changes[k] > at })
				fetches = append(fetches, Fetch{At: at, Version: v})
			}
		}
		steps := 1 + rng.IntN(5)
		from := time.Duration(rng.IntN(horizon/2)) * dt
		// A window that the steps divide into whole seconds.
		n := max((horizon-int(from/dt))/steps, 1)
		to := from + time.Duration(n*steps)*dt
		changes = append(changes, to+3*dt) // a change after the window is ignored

		ser := NewSeriesSum((to-from)/time.Duration(steps), to-from)
		pt := IntegratePage(changes, fetches, from, to, ser)
		wantF, wantA, wantSF, wantSA := bruteTruth(changes, fetches, from, to, dt, steps)
		if !near(pt.Freshness, wantF, 1e-9) || !near(pt.AgeSeconds, wantA, 1e-6*max(1, wantA)) {
			t.Fatalf("trial %d: fresh %v age %v, brute force %v and %v (changes %v fetches %v window [%v, %v))",
				trial, pt.Freshness, pt.AgeSeconds, wantF, wantA, changes, fetches, from, to)
		}
		inWindow := 0
		for _, f := range fetches {
			if f.At >= from && f.At < to {
				inWindow++
			}
		}
		if pt.Fetches != inWindow {
			t.Fatalf("trial %d: %d fetches in the window, want %d", trial, pt.Fetches, inWindow)
		}
		pts := ser.Points(time.Time{}.Add(from), 1)
		if len(pts) != steps {
			t.Fatalf("trial %d: %d series points, want %d", trial, len(pts), steps)
		}
		stepSec := ((to - from) / time.Duration(steps)).Seconds()
		for k, p := range pts {
			if !near(p.Freshness, wantSF[k]/stepSec, 1e-9) || !near(p.AgeSeconds, wantSA[k]/stepSec, 1e-6*max(1, wantSA[k])) {
				t.Fatalf("trial %d: step %d: %+v, brute force freshness %v age %v", trial, k, p, wantSF[k]/stepSec, wantSA[k]/stepSec)
			}
		}
	}
}

// Inputs that do not describe a real history (versions the change times
// cannot explain, no changes, an empty window, a bad step) give finite
// figures and never panic.
func TestIntegratePageOddInput(t *testing.T) {
	cases := []struct {
		name    string
		changes []time.Duration
		fetches []Fetch
		from    time.Duration
		to      time.Duration
	}{
		{"version without changes", nil, []Fetch{{At: secs(1), Version: 3}}, 0, secs(5)},
		{"version ahead of the changes", []time.Duration{secs(2)}, []Fetch{{At: secs(1), Version: 5}}, 0, secs(5)},
		{"empty window", []time.Duration{secs(1)}, []Fetch{{At: secs(1), Version: 1}}, secs(3), secs(3)},
		{"window backwards", nil, nil, secs(3), secs(1)},
		{"never fetched", []time.Duration{secs(1), secs(2)}, nil, 0, secs(4)},
	}
	for _, c := range cases {
		ser := NewSeriesSum(0, c.to-c.from)
		pt := IntegratePage(c.changes, c.fetches, c.from, c.to, ser)
		for _, v := range []float64{pt.Freshness, pt.AgeSeconds} {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				t.Errorf("%s: %+v", c.name, pt)
			}
		}
		for _, p := range ser.Points(t0, 1) {
			if math.IsNaN(p.Freshness) || math.IsNaN(p.AgeSeconds) || math.IsInf(p.AgeSeconds, 0) {
				t.Errorf("%s: series point %+v", c.name, p)
			}
		}
	}
	// Never fetched over [0, 4): stale since 0, age ∫₀⁴ x dx = 8.
	if pt := IntegratePage([]time.Duration{secs(1)}, nil, 0, secs(4), nil); pt.Freshness != 0 || !near(pt.AgeSeconds, 8, 1e-12) {
		t.Errorf("never fetched: %+v, want freshness 0 and age 8", pt)
	}
}

// NewSeriesSum widens a step that would make too many points.
func TestSeriesSumWidensStep(t *testing.T) {
	s := NewSeriesSum(time.Nanosecond, time.Hour)
	if n := len(s.Points(t0, 1)); n > maxSeriesPoints || s.stepDuration() <= time.Nanosecond {
		t.Fatalf("%d points of %v", n, s.stepDuration())
	}
}
