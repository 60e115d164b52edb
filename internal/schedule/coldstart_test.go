package schedule

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/freshcrawl/freshcrawl/internal/testutil"
)

// slowFastPolicy gives 90 % of the URLs 0.5 B/N (an interval of 2 N/B,
// longer than the first pass) and the rest what is left of the budget:
// the plan spends exactly the budget.
type slowFastPolicy struct{}

func (slowFastPolicy) Name() string { return "slow-fast" }

func (slowFastPolicy) Plan(in PlanInput) (PlanOutput, error) {
	n := float64(len(in.Rates))
	out := PlanOutput{Freq: make([]float64, len(in.Rates))}
	for i := range out.Freq {
		out.Freq[i] = 0.5 * in.Budget / n
		if i%10 == 0 {
			out.Freq[i] = 5.5 * in.Budget / n
		}
	}
	return out, nil
}

// TestColdStartSpendsBudgetAfterFirstPass runs a cold start of N URLs at a
// budget B, dispatching as the coordinator does (at most one fetch per 1/B,
// only what is due) and folding each fetch through the Estimator, and
// checks that the first pass takes N/B and that over each of the two N/B
// after it the fetches reach the budget within 5 %: a URL's first fetch
// must not leave the URLs whose interval exceeds N/B all due one interval
// after the seeding, with the budget idle until then.
func TestColdStartSpendsBudgetAfterFirstPass(t *testing.T) {
	testutil.Slow(t)
	const n, hosts = 2000, 40
	first := 1000 * time.Second // N/B
	budget := float64(n) / first.Seconds()
	halfLife := 20 * first
	est := NewEstimator(halfLife, 1e-3)
	s := NewScheduler(SchedulerOptions{Budget: budget, HostRate: 1, Policy: slowFastPolicy{}, Replan: first / 10, HalfLife: halfLife, Priors: est.Priors})
	urls := make([]URLInfo, n)
	for i := range urls {
		h := fmt.Sprintf("h%d", i%hosts)
		urls[i] = URLInfo{URL: fmt.Sprintf("http://%s/p/%d", h, i), Host: h, Weight: 1, Rate: 1e-3}
	}
	passEnd, windows := coldStart(t, s, est, urls, first, nil)
	if passEnd < 0 || passEnd > first*105/100 {
		t.Errorf("first pass took %v, want about N/B = %v", passEnd, first)
	}
	for k, got := range windows {
		if got < n*95/100 {
			t.Errorf("fetches in [%d, %d)·N/B = %d, want at least 95%% of the budget's %d", k, k+1, got, n)
		}
	}
}

// TestColdStartWeightedFirstPass seeds a collection like the bench's
// weighted workload at once (Table 6 change rates, importance weights
// log-normal with σ 1 independent of the rates, 10 hosts, N/B = 30 days,
// true Last-Modified) under the optimal policy, and checks that every URL
// is fetched once within 1.1 N/B and that the budget is spent after that.
// The plan soon gives the heavy, fast-changing URLs fetched once far
// shorter intervals than their first; moving their next fetches earlier
// by the change, into the first pass, took slots from URLs not fetched
// yet and stretched the pass by about a quarter (1.24 N/B here).
func TestColdStartWeightedFirstPass(t *testing.T) {
	testutil.Slow(t)
	const n, hosts = 1000, 10
	day := 100 * time.Second
	first := 30 * day // N/B
	budget := float64(n) / first.Seconds()
	halfLife := 90 * day
	est := NewEstimator(halfLife, 0.25/day.Seconds())
	pol, err := PolicyByName("optimal", "freshness")
	if err != nil {
		t.Fatal(err)
	}
	s := NewScheduler(SchedulerOptions{Budget: budget, HostRate: 10 * budget / hosts, Policy: pol, Replan: day, HalfLife: halfLife, Priors: est.Priors})
	rng := rand.New(rand.NewPCG(1, 11))
	mix := []struct{ share, perDay float64 }{{0.23, 1}, {0.15, 1.0 / 7}, {0.16, 1.0 / 30}, {0.16, 1.0 / 90}, {0.30, 1.0 / 365}}
	urls := make([]URLInfo, n)
	pages := make([]changingPage, n)
	for i := range urls {
		h := fmt.Sprintf("h%d", i%hosts)
		urls[i] = URLInfo{URL: fmt.Sprintf("http://%s/p/%d", h, i), Host: h, Weight: math.Exp(rng.NormFloat64()), Rate: 0.25 / day.Seconds()}
		u, c := rng.Float64(), 0
		for c < len(mix)-1 && u >= mix[c].share {
			u -= mix[c].share
			c++
		}
		pages[i] = changingPage{rate: mix[c].perDay / day.Seconds(), rng: rand.New(rand.NewPCG(2, uint64(i)))}
	}
	passEnd, windows := coldStart(t, s, est, urls, first, pages)
	if passEnd < 0 || passEnd > first*110/100 {
		t.Errorf("first pass took %v, want at most 1.1 N/B = %v", passEnd, first*110/100)
	}
	// The two N/B after the pass (main spent 880 and 992 there, its
	// pass running into the first of them).
	for k, got := range windows[1:] {
		if got < n*95/100 {
			t.Errorf("fetches in [%d, %d)·N/B = %d, want at least 95%% of the budget's %d", k+1, k+2, got, n)
		}
	}
}

// changingPage is a page whose content changes as a Poisson process.
type changingPage struct {
	rate       float64 // changes a second
	rng        *rand.Rand
	next, last time.Time // the next change and the last one so far (zero: none yet)
	version    int
}

// at advances the page to now and returns its version and its last change.
func (p *changingPage) at(start, now time.Time) (int, time.Time) {
	if p.next.IsZero() {
		p.next = start.Add(time.Duration(p.rng.ExpFloat64() / p.rate * float64(time.Second)))
	}
	for !p.next.After(now) {
		p.last, p.version = p.next, p.version+1
		p.next = p.next.Add(time.Duration(p.rng.ExpFloat64() / p.rate * float64(time.Second)))
	}
	return p.version, p.last
}

// coldStart seeds urls at once into s and runs three N/B (first) of
// dispatch as the coordinator does it (at most one fetch per 1/B, only what
// is due), folding each fetch through est. With pages (one per URL), the
// content changes and the server sends a true Last-Modified; without, it
// never changes. It returns when the last URL was first fetched (−1: not
// within the run) and the fetches in each N/B from the start.
func coldStart(t *testing.T, s *Scheduler, est Estimator, urls []URLInfo, first time.Duration, pages []changingPage) (time.Duration, [3]int) {
	t.Helper()
	start := time.Unix(1_700_000_000, 0)
	index := map[string]int{}
	for i, u := range urls {
		index[u.URL] = i
		s.Add(u, start)
	}
	states := make([]EstimateState, len(urls))
	versions := make([]int, len(urls))
	perFetch := time.Duration(float64(first) / float64(len(urls)))
	fetched := map[string]time.Time{}
	var windows [3]int
	passEnd := time.Duration(-1)
	end := start.Add(3 * first)
	now := start
	for now.Before(end) {
		if s.ReplanDue(now) {
			if _, err := s.Replan(now); err != nil {
				t.Fatal(err)
			}
		}
		d, ok, next := s.Next(now)
		if !ok {
			if next.IsZero() || next.After(end) {
				break
			}
			now = next
			continue
		}
		prev, seen := fetched[d.URL]
		fetched[d.URL] = now
		if len(fetched) == len(urls) && passEnd < 0 {
			passEnd = now.Sub(start)
		}
		windows[now.Sub(start)/first]++
		i := index[d.URL]
		o := Observation{URL: d.URL, Host: d.Host, Start: now, End: now, OK: true, First: !seen, Prev: prev, NotModified: seen}
		if pages != nil {
			v, last := pages[i].at(start, now)
			o.Changed, o.NotModified = seen && v != versions[i], seen && v == versions[i]
			o.LastModified = start.Add(-time.Hour) // before the seeding while it has not changed
			if !last.IsZero() {
				o.LastModified = last
			}
			versions[i] = v
		}
		s.Done(d.URL, est.Learn(&states[i], s.Rate(d.URL), o))
		now = now.Add(perFetch)
	}
	t.Logf("first pass %v, fetches per N/B %v (budget %d)", passEnd, windows, len(urls))
	return passEnd, windows
}

// TestNeverFetchedGoFirst: a free host whose next URL has never been
// fetched is served before a host whose next URL is a refetch, even one
// due earlier; the refetch goes once no such host is free.
func TestNeverFetchedGoFirst(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	s := NewScheduler(SchedulerOptions{Budget: 1, HostRate: 1})
	s.Add(URLInfo{URL: "http://a/old", Host: "a", Weight: 1, Rate: 1e-5, Interval: time.Hour, NextDue: now.Add(-2 * time.Hour), LastOK: now.Add(-3 * time.Hour)}, now)
	s.Add(URLInfo{URL: "http://b/new", Host: "b", Weight: 1, Rate: 1e-5, Interval: time.Hour, NextDue: now.Add(-time.Hour)}, now)
	var got []string
	for range 2 {
		d, ok, _ := s.Next(now)
		if !ok {
			t.Fatalf("nothing due after %v", got)
		}
		got = append(got, d.URL)
	}
	checkInvariants(t, s)
	if want := []string{"http://b/new", "http://a/old"}; !slices.Equal(got, want) {
		t.Errorf("dispatched %v, want %v", got, want)
	}
}
