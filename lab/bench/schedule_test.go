package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/freshcrawl/freshcrawl/internal/schedule"
)

func TestScheduleSmall(t *testing.T) {
	res, err := RunSchedule(context.Background(), ScheduleOptions{
		Sizes: []int{20000}, Hosts: 50, Resolve: true, BboltN: 2000, SchedulerN: 20000, TempDir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	s := res.Solves[0]
	if s.Seconds <= 0 || s.Passes == 0 || s.CappedHosts == 0 || s.ResolvePasses == 0 {
		t.Errorf("solve: %+v", s)
	}
	// Table 6 rates, jittered: the optimum is near the paper's 0.62.
	if s.Freshness < 0.5 || s.Freshness > 0.8 {
		t.Errorf("freshness %.3f, want within [0.5, 0.8], around the Table 6 optimum 0.62", s.Freshness)
	}
	// The input is one 24-byte alloc.Element per URL and the solution
	// keeps one 8-byte frequency; the figures are heap measurements, so
	// allow for what the collector frees meanwhile.
	if s.ProblemBytesPerURL < 20 || s.RetainedBytesPerURL < 4 {
		t.Errorf("memory per URL: input %.1f B, kept %.1f B; want ≥ 20 (a 24-byte element) and ≥ 4 (an 8-byte frequency)", s.ProblemBytesPerURL, s.RetainedBytesPerURL)
	}
	if b := res.Bbolt; b == nil || b.BytesPerURL < b.RecordBytes/2 || b.RecordBytes < 300 {
		t.Errorf("bbolt: %+v", b)
	}
	if c := res.Scheduler; c == nil || c.BytesPerURL < c.URLLen || c.Hosts == 0 || c.ReplanSeconds <= 0 {
		t.Errorf("scheduler: %+v", c)
	}
}

// BenchmarkScheduleSchedulerAdd is the cost of adding one stored URL to the
// coordinator's in-memory schedule (what a restart pays per URL).
func BenchmarkScheduleSchedulerAdd(b *testing.B) {
	o := schedule.DefaultSchedulerOptions()
	o.Budget, o.HostRate = 1000, 1
	s, err := schedule.NewScheduler(o)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	now := time.Now()
	urls := make([]string, b.N)
	hosts := make([]string, b.N)
	for i := range urls {
		urls[i], hosts[i] = benchURL(rng.IntN(1000), i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.Add(schedule.URLInfo{URL: urls[i], Host: hosts[i], Weight: 1, Rate: 1e-5, Interval: time.Hour, NextDue: now.Add(time.Duration(i))}, now)
	}
}

// BenchmarkScheduleReplan is one re-plan of the coordinator's schedule with
// the optimal policy: collect, sort, solve, reschedule.
func BenchmarkScheduleReplan(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			policy, err := schedule.PolicyByName("optimal", "freshness")
			if err != nil {
				b.Fatal(err)
			}
			o := schedule.DefaultSchedulerOptions()
			o.Budget, o.HostRate, o.Policy = float64(n)/(30*86400), 1, policy
			s, err := schedule.NewScheduler(o)
			if err != nil {
				b.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			now := time.Now()
			for i := range n {
				url, host := benchURL(rng.IntN(1000), i)
				s.Add(schedule.URLInfo{URL: url, Host: host, Weight: 1, Rate: 1 / (86400 * (1 + 30*rng.Float64())), Interval: time.Hour, NextDue: now}, now)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := s.Replan(now); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
