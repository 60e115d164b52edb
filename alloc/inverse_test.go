package alloc

import (
	"math"
	"math/rand/v2"
	"testing"
)

// bisectRoot finds r with fn(r) = y by bisection in log r (reference).
func bisectRoot(fn func(r float64) float64, y float64) float64 {
	lo, hi := 1e-300, 1e300
	for i := 0; i < 4000 && hi/lo > 1+1e-15; i++ {
		mid := math.Sqrt(lo) * math.Sqrt(hi)
		if fn(mid) < y {
			lo = mid
		} else {
			hi = mid
		}
	}
	return math.Sqrt(lo) * math.Sqrt(hi)
}

// gRef and aRef evaluate g and a with big-series accuracy via math/big-free
// compensated forms: the series below 1 and the closed form above.
func gRef(r float64) float64 { return gFunc(r, math.Exp(-r)) }
func aRef(r float64) float64 { return aFunc(r, math.Exp(-r)) }

func TestSeriesMatchClosedForm(t *testing.T) {
	// At r = 1 both branches of gFunc/aFunc must agree.
	for _, r := range []float64{0.1, 0.2, 0.2499} {
		e := math.Exp(-r)
		if got, want := r*r*gSmall(r), 1-(1+r)*e; math.Abs(got-want) > 4e-16 {
			t.Errorf("g(%v): series %v closed %v", r, got, want)
		}
		if got, want := r*r*r*aSmall(r), r*r/2-1+(1+r)*e; math.Abs(got-want) > 4e-16 {
			t.Errorf("a(%v): series %v closed %v", r, got, want)
		}
	}
	// Tiny r: the series, not the closed form, must give r²/2 and r³/3.
	if got := gRef(1e-9); math.Abs(got/(0.5e-18)-1) > 1e-8 {
		t.Errorf("g(1e-9) = %v", got)
	}
	if got := aRef(1e-6); math.Abs(got/(1e-18/3)-1) > 1e-5 {
		t.Errorf("a(1e-6) = %v", got)
	}
}

func TestInnerSolvesMatchBisection(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20000; i++ {
		lam := math.Exp(rng.Float64()*40 - 20)
		w := math.Exp(rng.Float64()*10 - 5)
		m := math.Exp(rng.Float64()*60 - 30)
		var prev float64
		switch i % 3 {
		case 1:
			prev = math.Exp(rng.Float64()*40 - 20)
		case 2:
			prev = lam
		}
		// freshness
		y := m * lam / w
		f, el := freshFreq(lam, w, m, prev, tolFor(fullAcc))
		if 1-y <= rampWidth {
			if want := lam / rampR * (1 - y) / rampWidth; f != want && !(y >= 1 && f == 0) {
				t.Fatalf("fresh y=%v in the give-up ramp: f=%v, want %v", y, f, want)
			}
		} else if y >= 1 {
			if f != 0 {
				t.Fatalf("fresh y=%v: f=%v, want 0", y, f)
			}
		} else {
			r := bisectRoot(gRef, y)
			want := lam / r
			tol := 1e-12
			if y > 0.9 {
				tol = 1e-12 / (1 - y) // conditioning of the tail
			}
			if math.Abs(f/want-1) > tol || !(el > 0) || math.IsInf(el, 0) {
				t.Fatalf("fresh lam=%v w=%v m=%v prev=%v y=%v: f=%v want %v (rel %v) el=%v",
					lam, w, m, prev, y, f, want, f/want-1, el)
			}
		}
		// age
		ya := m * lam * lam / w
		fa, ela := ageFreq(lam, w, m, prev, tolFor(fullAcc))
		ra := bisectRoot(aRef, ya)
		if want := lam / ra; math.Abs(fa/want-1) > 1e-12 || !(ela >= 1.0/3-1e-5 && ela <= 0.5+1e-5) {
			t.Fatalf("age lam=%v w=%v m=%v prev=%v y=%v: f=%v want %v (rel %v) el=%v",
				lam, w, m, prev, ya, fa, want, fa/want-1, ela)
		}
	}
}

func TestElasticityMatchesFiniteDifference(t *testing.T) {
	for _, tc := range []struct{ lam, w, m float64 }{{1, 1, 0.1}, {3, 2, 0.5}, {0.01, 1, 30}, {1, 1, 0.95}, {5, 1, 1e-4}} {
		h := 1e-6
		f0, el := freshFreq(tc.lam, tc.w, tc.m, 0, tolFor(fullAcc))
		f1, _ := freshFreq(tc.lam, tc.w, tc.m*math.Exp(h), 0, tolFor(fullAcc))
		f2, _ := freshFreq(tc.lam, tc.w, tc.m*math.Exp(-h), 0, tolFor(fullAcc))
		if fd := -(math.Log(f1) - math.Log(f2)) / (2 * h); math.Abs(fd/el-1) > 1e-5 {
			t.Errorf("fresh %+v: el %v, finite difference %v (f=%v)", tc, el, fd, f0)
		}
		f0, el = ageFreq(tc.lam, tc.w, tc.m, 0, tolFor(fullAcc))
		f1, _ = ageFreq(tc.lam, tc.w, tc.m*math.Exp(h), 0, tolFor(fullAcc))
		f2, _ = ageFreq(tc.lam, tc.w, tc.m*math.Exp(-h), 0, tolFor(fullAcc))
		if fd := -(math.Log(f1) - math.Log(f2)) / (2 * h); math.Abs(fd/el-1) > 1e-5 {
			t.Errorf("age %+v: el %v, finite difference %v (f=%v)", tc, el, fd, f0)
		}
	}
}

func TestGiveUpRamp(t *testing.T) {
	if got := (1 + rampR) * math.Exp(-rampR); math.Abs(got/rampWidth-1) > 1e-12 {
		t.Fatalf("(1+rampR)e^-rampR = %v, want %v", got, rampWidth)
	}
	// Continuous at the ramp's start, 0 at its end, monotone in between.
	y0 := 1 - rampWidth
	lam, w := 2.0, 1.0
	inside, _ := freshFreq(lam, w, y0*w/lam*(1+1e-15), 0, tolFor(fullAcc))
	outside, _ := freshFreq(lam, w, y0*w/lam*(1-1e-15), 0, tolFor(fullAcc))
	if math.Abs(inside/outside-1) > 1e-5 {
		t.Errorf("ramp start: %v inside, %v outside", inside, outside)
	}
	if f, _ := freshFreq(lam, w, w/lam, 0, tolFor(fullAcc)); f != 0 {
		t.Errorf("at threshold f = %v", f)
	}
}
