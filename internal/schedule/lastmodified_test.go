package schedule

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// server is how a simulated server fills Last-Modified (the behaviours of
// sim.LastModifiedMode).
type server int

const (
	lmTrue server = iota
	lmResponseTime
	lmConstant
	lmEveryRequest
)

func (s server) String() string {
	return [...]string{"true", "response time", "constant", "every request"}[s]
}

// header is the Last-Modified a server of kind s sends at `at` when the
// page last changed at last.
func (s server) header(rng *rand.Rand, at, last, epoch time.Time) time.Time {
	switch s {
	case lmResponseTime:
		return at.Truncate(time.Second)
	case lmConstant:
		return epoch.Add(-30 * 24 * time.Hour)
	case lmEveryRequest:
		return at.Add(-time.Duration((0.05 + 0.45*rng.Float64()) * float64(24*time.Hour))).Truncate(time.Second)
	}
	return last.Truncate(time.Second)
}

// TestLastModifiedServers: of the four server behaviours only a true
// Last-Modified earns trust and is used. The three liars fall back to the
// changed bit without harm: the estimator's state after a history of
// fetches is exactly the state the same history leaves with no
// Last-Modified at all. A page that changes at every fetch never shows
// whether its date stays put when it does not change, so there no date is
// trusted, not even a true one (a new date on every request would look
// the same), and every server falls back to the bit.
func TestLastModifiedServers(t *testing.T) {
	// A long memory, so that the estimates test trust, not fading.
	est := NewEstimator(100*365*24*time.Hour, 0.25/86400)
	epoch := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for ci, c := range []struct{ lambda, ivLo, ivHi float64 }{
		// Changes a day, and fetch intervals in mean change intervals:
		// what the plan and its probes use, and a daily page given up and
		// rechecked every few weeks, whose every fetch sees a change.
		{1.0 / 90, 0.5, 3}, {1.0 / 7, 0.5, 3}, {1, 0.5, 3}, {1, 20, 40},
	} {
		lambda := c.lambda
		allChanged := c.ivLo >= 10
		for _, srv := range []server{lmTrue, lmResponseTime, lmConstant, lmEveryRequest} {
			rng := rand.New(rand.NewPCG(uint64(srv)+1, uint64(ci)))
			var withLM, bitOnly EstimateState
			now := epoch
			last := epoch // the page's last change
			var prev time.Time
			for k := range 300 {
				// Intervals of 0.5 to 3 mean change intervals: what the
				// plan and its probes use.
				iv := time.Duration((c.ivLo + (c.ivHi-c.ivLo)*rng.Float64()) / lambda * float64(24*time.Hour))
				at := now.Add(iv)
				changed := false
				for t := now; ; {
					t = t.Add(time.Duration(rng.ExpFloat64() / lambda * float64(24*time.Hour)))
					if t.After(at) {
						break
					}
					last, changed = t, true
				}
				now = at
				f := fetchObs{At: at, Prev: prev, Changed: changed && k > 0, LastModified: srv.header(rng, at, last, epoch)}
				est.observe(&withLM, f)
				f.LastModified = time.Time{}
				est.observe(&bitOnly, f)
				prev = at
			}
			trusted := withLM.Trust.Trustworthy(est.Trust)
			truth := lambda / 86400
			switch {
			case srv == lmTrue && !allChanged:
				if !trusted {
					t.Errorf("λ = %.3g/day, true Last-Modified: not trusted (%+v)", lambda, withLM.Trust)
				}
				// The Last-Modified estimate is close to the truth.
				if r := withLM.State.Rate(est.Prior); math.Abs(math.Log(r/truth)) > 0.3 {
					t.Errorf("λ = %.3g/day, true Last-Modified: estimate %.3g/day", lambda, r*86400)
				}
			default:
				if trusted {
					t.Errorf("λ = %.3g/day, %v Last-Modified trusted (%+v)", lambda, srv, withLM.Trust)
				}
				if withLM.State != bitOnly.State {
					t.Errorf("λ = %.3g/day, %v Last-Modified: state differs from the bit-only one", lambda, srv)
				}
			}
		}
	}
}

// A server whose Last-Modified was trusted and starts to lie loses the
// trust within a few fetches.
func TestLastModifiedTrustLost(t *testing.T) {
	est := NewEstimator(90*24*time.Hour, 0.25/86400)
	var st EstimateState
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var prev time.Time
	for k := range 20 {
		at := t0.Add(time.Duration(k+1) * 24 * time.Hour)
		// A change every other day, dated truthfully.
		changed := k%2 == 0 && k > 0
		lm := t0.Add(time.Duration(k/2*2) * 24 * time.Hour).Add(time.Hour)
		est.observe(&st, fetchObs{At: at, Prev: prev, Changed: changed, LastModified: lm})
		prev = at
	}
	if !st.Trust.Trustworthy(est.Trust) {
		t.Fatalf("truthful history not trusted: %+v", st.Trust)
	}
	for k := 20; k < 24; k++ {
		at := t0.Add(time.Duration(k+1) * 24 * time.Hour)
		est.observe(&st, fetchObs{At: at, Prev: prev, Changed: false, LastModified: at}) // the response time
		prev = at
	}
	if st.Trust.Trustworthy(est.Trust) {
		t.Errorf("still trusted after four response-time stamps: %+v", st.Trust)
	}
}
