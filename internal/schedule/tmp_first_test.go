package schedule

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime/pprof"
	"testing"
	"time"
)

func TestTmpFirstPlan(t *testing.T) {
	n := *planURLs
	halfLife := DefaultHalfLife
	est := NewEstimator(halfLife, DefaultPriorRate)
	s := NewScheduler(SchedulerOptions{Budget: float64(n) / (30 * 86400), HostRate: 1, Priors: est.Priors, HalfLife: halfLife})
	rng := rand.New(rand.NewPCG(1, 19))
	now := time.Unix(1_790_000_000, 0)
	pool := learntHistories(&est, rng, 1024, now, DefaultPriorRate, "http://h.example/p", "h.example")
	s.Grow(n)
	c0, t0 := cpuTime(), time.Now()
	for i := range n {
		h := int(float64(10000) * rng.Float64() * rng.Float64())
		host := fmt.Sprintf("www.site-%d.example.com", h)
		u := URLInfo{Weight: 1, Rate: DefaultPriorRate}
		if rng.IntN(2) == 0 {
			u = pool[rng.IntN(len(pool))]
		}
		u.URL, u.Host = fmt.Sprintf("https://%s/news/2026/05/%d-market-update-review-guide", host, i), host
		s.Add(u, now)
	}
	t.Logf("add: %.2f s %.2f CPU-s", time.Since(t0).Seconds(), (cpuTime() - c0).Seconds())
	policy := &countingPolicy{Policy: s.o.Policy}
	s.o.Policy = policy
	for k, name := range []string{"first", "second", "third"} {
		at := now.Add(time.Duration(k) * time.Minute)
		pprof.Do(context.Background(), pprof.Labels("plan", name), func(context.Context) {
			policy.solves = 0
			c0, t0 := cpuTime(), time.Now()
			j := s.Snapshot(at)
			c1 := cpuTime()
			if err := j.Solve(); err != nil {
				t.Fatal(err)
			}
			c2 := cpuTime()
			for !s.Apply(j, at, 4096) {
			}
			c3 := cpuTime()
			t.Logf("%s: %.2f s %.2f CPU-s (snapshot %.2f solve %.2f apply %.2f) solves %d lift %.3f", name, time.Since(t0).Seconds(), (c3 - c0).Seconds(), (c1 - c0).Seconds(), (c2 - c1).Seconds(), (c3 - c2).Seconds(), policy.solves, j.lift)
		})
	}
}
