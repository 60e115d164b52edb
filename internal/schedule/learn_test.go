package schedule

import (
	"bytes"
	"testing"
	"time"
)

// Learn is Observe plus the Feedback: a successful fetch moves the state
// exactly as Observe does, and the Feedback carries the fetch, the state,
// the posterior under the priors of the URL's host and path template, and
// its harmonic mean as the rate; a first fetch has no previous one; a
// failed fetch or a one-off request learns nothing and keeps the rate it
// is given.
func TestLearn(t *testing.T) {
	est := NewEstimator(90*24*time.Hour, 0.25/86400)
	t0 := time.Unix(1_700_000_000, 0)
	obs := Observation{
		URL: "http://example.com/news/1", Host: "example.com",
		Start: t0.Add(48 * time.Hour), End: t0.Add(48*time.Hour + time.Second), OK: true, Prev: t0, Changed: true,
		LastModified: t0.Add(30 * time.Hour), HostGap: 3 * time.Second, HostNotBefore: t0.Add(49 * time.Hour),
	}
	var st, direct EstimateState
	// Some history first, the same on both.
	for k := range 5 {
		f := fetchObs{At: t0.Add(-time.Duration(5-k) * 24 * time.Hour), Prev: t0.Add(-time.Duration(6-k) * 24 * time.Hour), Changed: k%2 == 0}
		est.observe(&st, f)
		est.observe(&direct, f)
	}
	fb := est.Learn(&st, 1e-6, obs)
	est.observe(&direct, fetchObs{At: obs.Start, Prev: obs.Prev, Changed: true, LastModified: obs.LastModified})
	post := est.Priors.load().For("example.com", "/news/").Posterior(direct.State)
	want := post.Summary()
	if !fb.Learnt || fb.Rate != want.Harmonic || fb.Posterior != want || fb.State != direct.State {
		t.Errorf("rate %v posterior %+v, want the harmonic mean %v of %+v", fb.Rate, fb.Posterior, want.Harmonic, want)
	}
	a, _ := st.MarshalBinary()
	b, _ := direct.MarshalBinary()
	if !bytes.Equal(a, b) {
		t.Error("Learn left another state than Observe")
	}
	if !fb.Start.Equal(obs.Start) || !fb.End.Equal(obs.End) || !fb.OK || !fb.Changed || fb.NotModified || fb.Disallowed ||
		!fb.LastModified.Equal(obs.LastModified) || fb.HostGap != obs.HostGap || !fb.HostNotBefore.Equal(obs.HostNotBefore) {
		t.Errorf("feedback %+v does not carry observation %+v", fb, obs)
	}

	// First content: the previous fetch does not count.
	first := obs
	first.First = true
	var s1, s2 EstimateState
	f1 := est.Learn(&s1, 0, first)
	est.observe(&s2, fetchObs{At: first.Start, Changed: true, LastModified: first.LastModified})
	if s1 != s2 || !f1.First {
		t.Errorf("first fetch: state %+v, want %+v as with no previous fetch", s1, s2)
	}

	// A failed fetch, and a one-off request, learn nothing.
	failed := obs
	failed.OK = false
	before, _ := st.MarshalBinary()
	if fb := est.Learn(&st, 1e-6, failed); fb.Rate != 1e-6 || fb.OK {
		t.Errorf("failed fetch: %+v, want the given rate 1e-6 and OK false", fb)
	}
	if after, _ := st.MarshalBinary(); !bytes.Equal(before, after) {
		t.Error("a failed fetch moved the estimator state")
	}
	if fb := est.Learn(nil, 0, obs); fb.Rate != 0 {
		t.Errorf("one-off request: rate %v, want 0 (unchanged)", fb.Rate)
	}
}
