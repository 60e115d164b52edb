package schedule

import (
	"fmt"
	"testing"
	"time"
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
	const n, hosts = 2000, 40
	first := 1000 * time.Second // N/B
	budget := float64(n) / first.Seconds()
	halfLife := 20 * first
	est := NewEstimator(halfLife, 1e-3)
	start := time.Unix(1_700_000_000, 0)
	s := NewScheduler(SchedulerOptions{Budget: budget, HostRate: 1, Policy: slowFastPolicy{}, Replan: first / 10, HalfLife: halfLife, Priors: est.Priors})
	states := map[string]*EstimateState{}
	for i := range n {
		h := fmt.Sprintf("h%d", i%hosts)
		u := fmt.Sprintf("http://%s/p/%d", h, i)
		states[u] = &EstimateState{}
		s.Add(URLInfo{URL: u, Host: h, Weight: 1, Rate: 1e-3}, start)
	}
	perFetch := time.Duration(float64(time.Second) / budget)
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
		if len(fetched) == n && passEnd < 0 {
			passEnd = now.Sub(start)
		}
		windows[now.Sub(start)/first]++
		fb := est.Learn(states[d.URL], s.Rate(d.URL), Observation{
			URL: d.URL, Host: d.Host, Start: now, End: now, OK: true, First: !seen, Prev: prev, NotModified: seen,
		})
		s.Done(d.URL, fb)
		now = now.Add(perFetch)
	}
	t.Logf("first pass %v, fetches per N/B %v (budget %d)", passEnd, windows, n)
	if passEnd < 0 || passEnd > first*105/100 {
		t.Errorf("first pass took %v, want about N/B = %v", passEnd, first)
	}
	for k, got := range windows {
		if got < n*95/100 {
			t.Errorf("fetches in [%d, %d)·N/B = %d, want at least 95%% of the budget's %d", k, k+1, got, n)
		}
	}
}
