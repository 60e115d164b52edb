package schedule

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

// exactTestChange is testChange as it was before the bound: the exact
// evidence at every observation.
func (e Estimator) exactTestChange(st *EstimateState, o Observation) bool {
	prior := e.Priors.load().For(o.Host, PathTemplate(o.URL))
	ev := prior.ChangeEvidence(&st.State)
	found := ev.Test(e.Hazard)
	ct := found
	if h := e.Priors.hazard(); h > e.Hazard {
		ct = ev.Test(h)
	}
	if ct.Held > changeProb {
		st.State.Restart(ct.HeldNewest, 1-ct.Prob, e.Config)
	}
	return found.Held > changeProb
}

// TestChangeBoundKeepsDecisions: on random histories (pages whose rate
// switches among the Table-6 classes, fetched at drawn intervals, some
// with Last-Modified times, at the prior hazard and at a collection
// hazard 30 times it) testChange, which settles most observations on the
// bound, finds and restarts exactly as the exact test does and leaves the
// same State.
func TestChangeBoundKeepsDecisions(t *testing.T) {
	day := 24 * time.Hour
	rng := rand.New(rand.NewPCG(51, 52))
	rates := []float64{1, 1.0 / 7, 1.0 / 30, 1.0 / 90, 1.0 / 365}
	found, steps := 0, 0
	for trial := range 40 {
		est := NewEstimator(90*day, 0.25/86400)
		if trial%2 == 1 {
			est.Priors.setHazard(30 * est.Hazard)
		}
		o := Observation{URL: "http://h/p/1", Host: "h", OK: true}
		var st EstimateState
		at := time.Unix(1_700_000_000, 0)
		lastChange := at
		lam := rates[rng.IntN(len(rates))]
		iv := []float64{0.5, 1, 7, 30}[rng.IntN(4)]
		lm := trial%4 == 2
		for range 80 {
			if rng.IntN(25) == 0 {
				lam = rates[rng.IntN(len(rates))]
			}
			d := iv * (0.8 + 0.4*rng.Float64())
			prev := at
			at = at.Add(time.Duration(d * float64(day)))
			f := fetchObs{At: at, Prev: prev, Changed: rng.Float64() < -math.Expm1(-lam*d)}
			if f.Changed {
				lastChange = prev.Add(time.Duration(rng.Float64() * d * float64(day)))
			}
			if lm {
				f.LastModified = lastChange.Truncate(time.Second)
			}
			_ = est.observe(&st, f)
			exact := st
			o.Start, o.Prev = at, prev
			got := est.testChange(&st, o)
			want := est.exactTestChange(&exact, o)
			steps++
			if got != want || st.State != exact.State {
				t.Fatalf("trial %d at %v: found %v, exact %v; state %+v, exact %+v", trial, at, got, want, st.State, exact.State)
			}
			if got {
				found++
			}
		}
	}
	t.Logf("%d steps, %d change points found", steps, found)
	if found == 0 {
		t.Error("no change point found: the histories do not exercise the exact path")
	}
}

// BenchmarkLearn is the fold's estimator step on steady pages: 64 URLs of
// the Table-6 classes fetched daily, one Learn per op.
func BenchmarkLearn(b *testing.B) {
	day := 24 * time.Hour
	est := NewEstimator(90*day, 0.25/86400)
	rng := rand.New(rand.NewPCG(53, 54))
	rates := []float64{1, 1.0 / 7, 1.0 / 30, 1.0 / 90, 1.0 / 365}
	sts := make([]EstimateState, 64)
	t0 := time.Unix(1_700_000_000, 0)
	obs := func(i, k int) Observation {
		at := t0.Add(time.Duration(k) * day)
		return Observation{URL: "http://h/p/" + strconv.Itoa(i), Host: "h", Start: at, End: at.Add(time.Second), OK: true, First: k == 0, Prev: at.Add(-day),
			Changed: rng.Float64() < -math.Expm1(-rates[i%len(rates)])}
	}
	for k := range 30 {
		for i := range sts {
			est.Learn(&sts[i], 0, obs(i, k))
		}
	}
	b.ReportAllocs()
	for n := 0; b.Loop(); n++ {
		i := n % len(sts)
		est.Learn(&sts[i], 0, obs(i, 30+n/len(sts)))
	}
}
