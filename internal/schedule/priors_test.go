package schedule

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/freshcrawl/freshcrawl/estimate"
)

func TestPathTemplate(t *testing.T) {
	for _, c := range []struct{ url, want string }{
		{"http://h/news/2024/05/story", "/news/"},
		{"http://h/archive/17", "/archive/"},
		{"http://h/item123/x", "/item#/"},
		{"http://h/p42", "/p#"},
		{"http://h/", "/"},
		{"http://h", "/"},
		{"http://h/a?q=1", "/a"},
	} {
		if got := PathTemplate(c.url); got != c.want {
			t.Errorf("PathTemplate(%q) = %q, want %q", c.url, got, c.want)
		}
	}
}

// observedStates are n estimator states of pages changing at rate lam
// (Poisson), each fetched every iv for k fetches, seeing only the bit.
func observedStates(rng *rand.Rand, n int, lam float64, iv time.Duration, k int) []estimate.State {
	est := NewEstimator(365*24*time.Hour, 0.25/86400)
	out := make([]estimate.State, n)
	t0 := time.Unix(1_700_000_000, 0)
	for i := range out {
		var st EstimateState
		prev := time.Time{}
		for j := range k {
			at := t0.Add(time.Duration(j) * iv)
			changed := j > 0 && rng.Float64() < -math.Expm1(-lam*iv.Seconds())
			est.observe(&st, fetchObs{At: at, Prev: prev, Changed: changed})
			prev = at
		}
		out[i] = st.State
	}
	return out
}

// TestPriorsFromTheCollection: the priors are fitted to what the
// collection showed (empirical Bayes), refined per host and per path
// template: a new URL under /news/ of a host whose news pages change
// daily starts from a prior far faster than a new URL under /archive/ of
// the same host, whose pages change yearly; a host with no template of
// its own falls back to the host's or the population's prior.
func TestPriorsFromTheCollection(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	day := 24 * time.Hour
	var urls, hosts []string
	var states []estimate.State
	add := func(host, dir string, lam float64, n int) {
		for i, st := range observedStates(rng, n, lam, 5*day, 30) {
			urls = append(urls, fmt.Sprintf("http://%s/%s/%d", host, dir, i))
			hosts = append(hosts, host)
			states = append(states, st)
		}
	}
	add("a", "news", 1.0/86400, 60)
	add("a", "archive", 1.0/(365*86400), 60)
	add("b", "page", 1.0/(30*86400), 60)
	p := FitPriors(0.25/86400, urls, hosts, states)
	if p.revision() == 0 {
		t.Fatal("fitted priors have version 0")
	}
	news := p.For("a", "/news/").Posterior(estimate.State{})
	archive := p.For("a", "/archive/").Posterior(estimate.State{})
	other := p.For("b", "/page/").Posterior(estimate.State{})
	medNews, medArch, medOther := news.Quantile(0.5), archive.Quantile(0.5), other.Quantile(0.5)
	if !(medNews > 20*medArch) {
		t.Errorf("new /news/ URL's prior median %g/day, /archive/ %g/day: want news far faster", medNews*86400, medArch*86400)
	}
	// News pages change daily and are fetched every 5 days: the bit only
	// bounds their rate from below, so the prior's median must lie above
	// what 5-day fetches can resolve, not at the configured prior rate.
	if !(medNews > 0.5/86400) {
		t.Errorf("/news/ prior median %g/day, want above 0.5/day", medNews*86400)
	}
	if !(medArch < 0.05/86400) {
		t.Errorf("/archive/ prior median %g/day, want below 0.05/day", medArch*86400)
	}
	if !(medOther > medArch && medOther < medNews) {
		t.Errorf("host b (monthly) prior median %g/day, want between %g and %g", medOther*86400, medArch*86400, medNews*86400)
	}
	// An unknown host and template get the population's prior.
	pop := p.population().Posterior(estimate.State{})
	unknown := p.For("zzz", "/x/").Posterior(estimate.State{})
	if unknown.Quantile(0.5) != pop.Quantile(0.5) {
		t.Errorf("unknown host: median %g, population's %g", unknown.Quantile(0.5), pop.Quantile(0.5))
	}
}

// TestSchedulerRefitsPriors: once URLs have been learnt, a plan refits
// the priors on a snapshot (Solve) and Apply installs them, and a URL
// never fetched is then planned at its template's prior rather than at the
// rate it was added with.
func TestSchedulerRefitsPriors(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	day := 24 * time.Hour
	est := NewEstimator(365*day, 0.25/86400)
	s := newTestScheduler(t, func(o *SchedulerOptions) {
		o.Budget, o.HostRate, o.Priors, o.HalfLife = 100.0/86400, 1, est.Priors, 365*day
	})
	now := time.Unix(1_700_000_000, 0).Add(400 * day)
	for i, st := range observedStates(rng, 80, 1.0/86400, 5*day, 30) {
		b, err := (&EstimateState{State: st}).MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		s.Add(URLInfo{URL: fmt.Sprintf("http://a/news/%d", i), Host: "a", Weight: 1, Rate: 0.25 / 86400, LastOK: now.Add(-day), Estimate: b, NextDue: now.Add(day)}, now)
	}
	s.Add(URLInfo{URL: "http://a/news/new", Host: "a", Weight: 1, Rate: 0.25 / 86400}, now)
	if v := est.Priors.load().revision(); v != 0 {
		t.Fatalf("priors version %d before any plan", v)
	}
	for k := range 3 {
		if _, err := s.Replan(now.Add(time.Duration(k) * time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	if v := est.Priors.load().revision(); v == 0 {
		t.Fatal("no refit after plans over 80 learnt URLs")
	}
	if r := s.Rate("http://a/news/new"); !(r > 0.5/86400) {
		t.Errorf("new /news/ URL planned at %g/day, want its template's prior (daily pages)", r*86400)
	}
}
