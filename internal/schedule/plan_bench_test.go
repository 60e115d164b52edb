package schedule

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"
)

var planURLs = flag.Int("plan-urls", 100_000, "URLs in BenchmarkPlanJob")

// cpuTime is the process's user+system CPU time: the machine the
// benchmarks run on is shared, so wall time alone can mislead.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// scaleSchedule is the schedule `freshcrawl bench scale` restarts with,
// without the store: n URLs on 10 000 hosts of Zipf-like sizes at a host
// rate of 1/s and a budget of every URL once in 30 days, half of them
// fetched 2 to 21 times at one interval of 1 to 336 hours (a third of
// the fetches saw a change) through the coordinator's estimator, the rest
// never fetched (the prior's rate). Unlike bench scale, fetched URLs
// share their histories: historyPool of them. With source, the scheduler
// is the coordinator's: it spells the URLs and reads their estimator
// states through a URL source (SchedulerOptions.URLs), here the
// benchmark's own URLInfos by id.
func scaleSchedule(tb testing.TB, n int, source bool) (*Scheduler, time.Time) {
	tb.Helper()
	const hosts = 10_000
	d := DefaultSchedulerOptions()
	est := NewEstimator(d.HalfLife, d.PriorRate)
	var infos sliceSource
	if source {
		infos = make(sliceSource, n)
	}
	s := newTestScheduler(tb, func(o *SchedulerOptions) {
		o.Budget, o.HostRate, o.Priors = float64(n)/(30*86400), 1, est.Priors
		if source {
			o.URLs = infos
		}
	})
	rng := rand.New(rand.NewPCG(1, 19))
	now := time.Unix(1_790_000_000, 0)
	// Learning costs about a millisecond a history, so the fetched URLs
	// draw from a pool of histories, each learnt once.
	pool := learntHistories(&est, rng, min(n/2+1, historyPool), now, d.PriorRate, "http://h.example/p", "h.example")
	for i := range n {
		// Host h with probability falling with h (Zipf-like sizes).
		h := min(int(float64(hosts)*rng.Float64()*rng.Float64()*rng.Float64()), hosts-1)
		host := fmt.Sprintf("h%d.example", h)
		u := URLInfo{Weight: 1, Rate: d.PriorRate}
		if rng.IntN(2) == 0 {
			u = pool[rng.IntN(len(pool))]
		}
		u.URL, u.Host = fmt.Sprintf("http://%s/p/%d", host, i), host
		if source {
			u.ID = uint64(i + 1)
			infos[i] = u
		}
		s.Add(u, now)
	}
	return s, now
}

// historyPool is the number of distinct histories of scaleSchedule.
const historyPool = 20_000

// learntHistories is k fetch histories learnt through est, drawn from
// rng: each is 2 to 21 successful fetches at one interval of 1 to 336
// hours, the last one interval before now, a third of them seeing a
// change, learnt from the rate rate0 with the observations naming url on
// host (the population prior they are learnt under). Each comes back as
// the URLInfo of a restart (weight 1 and the rate, its standard error,
// the estimator state, the interval, the last fetch and the next due time
// a fold leaves), without URL and host.
func learntHistories(est *Estimator, rng *rand.Rand, k int, now time.Time, rate0 float64, url, host string) []URLInfo {
	pool := make([]URLInfo, k)
	for h := range pool {
		var st EstimateState
		iv := time.Duration(1+rng.Int64N(14*24)) * time.Hour
		fetches := 2 + rng.IntN(20)
		at := now.Add(-time.Duration(fetches) * iv)
		var prev time.Time
		rate := rate0
		var fb Feedback
		for range fetches {
			fb = est.Learn(&st, rate, Observation{URL: url, Host: host, Start: at, End: at.Add(300 * time.Millisecond), OK: true, First: prev.IsZero(), Prev: prev, Changed: rng.IntN(3) == 0})
			rate = fb.Rate
			prev = at
			at = at.Add(iv)
		}
		pool[h] = URLInfo{Weight: 1, Rate: rate, RateSE: fb.RateSE, LastOK: prev, Interval: iv, NextDue: prev.Add(iv)}
		pool[h].Estimate, _ = st.MarshalBinary()
	}
	return pool
}

// countingPolicy counts the allocations a plan solves.
type countingPolicy struct {
	Policy
	solves int
}

func (p *countingPolicy) Plan(in PlanInput) (PlanOutput, error) {
	p.solves++
	return p.Policy.Plan(in)
}

// BenchmarkPlanJob is one re-plan of a loaded schedule as the coordinator
// makes it (Snapshot, Solve, Apply in chunks), after a first plan. Run
// with -plan-urls 1000000 for the issue-16 figure; cpu-s/op is the
// process's CPU per plan (the solve's passes run on every core), solves/op
// the allocations a plan solves (exploration's multiplier search).
func BenchmarkPlanJob(b *testing.B) { benchmarkPlanJob(b, false) }

// BenchmarkPlanJobSource is BenchmarkPlanJob for the coordinator's
// scheduler, which reads its estimator states through its URL source (an
// in-memory one: the store's read is BenchmarkEstimatesByID's).
func BenchmarkPlanJobSource(b *testing.B) { benchmarkPlanJob(b, true) }

func benchmarkPlanJob(b *testing.B, source bool) {
	s, now := scaleSchedule(b, *planURLs, source)
	policy := &countingPolicy{Policy: s.o.Policy}
	s.o.Policy = policy
	if _, err := s.Replan(now); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	c0 := cpuTime()
	policy.solves = 0
	for b.Loop() {
		now = now.Add(time.Minute)
		j := s.Snapshot(now)
		if err := j.Solve(); err != nil {
			b.Fatal(err)
		}
		for !s.Apply(j, now, 4096) {
		}
	}
	b.ReportMetric((cpuTime()-c0).Seconds()/float64(b.N), "cpu-s/op")
	b.ReportMetric(float64(policy.solves)/float64(b.N), "solves/op")
}

// BenchmarkHostViews is the console's hosts page at -plan-urls URLs on
// 10 000 hosts: whole, the walk of every URL under one hold of the
// scheduler's lock (the dispatcher waits meanwhile); chunk, the longest
// hold of the console's walk, one chunk of hostsChunk URLs.
func BenchmarkHostViews(b *testing.B) {
	s, now := scaleSchedule(b, *planURLs, true)
	if _, err := s.Replan(now); err != nil {
		b.Fatal(err)
	}
	b.Run("whole", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if v := s.HostViews(nil); len(v) == 0 {
				b.Fatal("no hosts")
			}
		}
	})
	b.Run("chunk", func(b *testing.B) {
		const chunk = 50_000 // the console's hostsChunk
		b.ReportAllocs()
		for b.Loop() {
			var t HostTally
			s.TallyHosts(&t, chunk)
		}
	})
}
