package schedule

import (
	"math"
	"testing"
	"time"
)

// TestModelFreshnessHonest: the model's freshness is the expected
// freshness of what is stored, under each URL's posterior: a URL never
// fetched counts as stale, and a URL seen changed at every fetch (its rate
// bounded from below only) is not shown near fresh however many such
// fetches it had; a URL seen unchanged for long is.
func TestModelFreshnessHonest(t *testing.T) {
	day := 24 * time.Hour
	est := NewEstimator(90*day, 0.25/86400)
	s := NewScheduler(SchedulerOptions{Budget: 10.0 / 86400, HostRate: 1, Priors: est.Priors, HalfLife: 90 * day})
	t0 := time.Unix(1_700_000_000, 0)
	for _, u := range []string{"http://a/fast", "http://a/slow", "http://b/never"} {
		s.Add(URLInfo{URL: u, Host: u[7:8], Weight: 1, Rate: 0.25 / 86400}, t0)
	}
	if m := s.ModelFreshness(t0); m != 0 {
		t.Errorf("nothing fetched yet: model freshness %v, want 0", m)
	}
	var fast, slow EstimateState
	var last time.Time
	for k := range 30 {
		at := t0.Add(time.Duration(k) * day)
		prev := last
		for _, c := range []struct {
			url     string
			st      *EstimateState
			changed bool
		}{{"http://a/fast", &fast, k > 0}, {"http://a/slow", &slow, false}} {
			fb := est.Learn(c.st, s.Rate(c.url), Observation{URL: c.url, Host: "a", Start: at, End: at.Add(time.Second), OK: true, First: k == 0, Prev: prev, Changed: c.changed})
			s.Done(c.url, fb)
		}
		last = at
	}
	now := last.Add(day / 2)
	j := s.Snapshot(now)
	if err := j.Solve(); err != nil {
		t.Fatal(err)
	}
	var fastP, slowP float64
	for i, e := range j.list {
		p := j.posts[i].ExpectFresh(now.Sub(fromNanos(j.lastOK[i])).Seconds())
		switch s.front.url(e) {
		case "http://a/fast":
			fastP = p
		case "http://a/slow":
			slowP = p
		}
	}
	if !(fastP < 0.5) {
		t.Errorf("URL changed at each of 30 daily fetches: expected freshness %.3f half a day later, want well below 1", fastP)
	}
	if !(slowP > 0.9) {
		t.Errorf("URL unchanged over 30 daily fetches: expected freshness %.3f, want near 1", slowP)
	}
	// The model is the weighted mean, the never-fetched URL counting 0.
	want := (fastP + slowP + 0) / 3
	if m := s.ModelFreshness(now); math.Abs(m-want) > 1e-6 {
		t.Errorf("model freshness %v, want (%.4f + %.4f + 0)/3 = %v", m, fastP, slowP, want)
	}
	if m := j.out.ModelFreshness; math.Abs(m-want) > 1e-6 {
		t.Errorf("plan's model freshness %v, want %v", m, want)
	}
	// Degenerate estimates never give NaN or a value outside [0, 1].
	for _, e := range s.list {
		s.rates[e.pos] = math.NaN()
		s.posts[e.pos].Mean, s.posts[e.pos].Harmonic = math.Inf(1), math.NaN()
		s.mirror(e)
	}
	if m := s.ModelFreshness(now); !(m >= 0 && m <= 1) {
		t.Errorf("degenerate estimates: model freshness %v", m)
	}
}
