package alloc

import (
	"math"
	"math/rand/v2"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the process's user+system CPU time: the machine the benchmarks
// run on is shared, so wall time alone can mislead.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchProblem builds n elements with rates from the Table 6 mix jittered
// log-normally, log-normal weights, and ~1000 hosts of Zipf-like sizes of
// which every tenth is capped at a fraction of its uniform share, so that
// the caps bind. Budget: every page once a month on average (unit: days).
func benchProblem(n int, seed uint64) Problem {
	rng := rand.New(rand.NewPCG(seed, 7))
	const hosts = 1000
	periods := []float64{1, 7, 30, 90, 365}
	cum := []float64{0.23, 0.38, 0.54, 0.70, 1}
	p := Problem{Elements: make([]Element, n), HostCaps: make([]float64, hosts), Budget: float64(n) / 30}
	count := make([]int, hosts)
	for i := range p.Elements {
		u := rng.Float64()
		c := 0
		for u > cum[c] {
			c++
		}
		rate := math.Exp(rng.NormFloat64()*0.5) / periods[c]
		w := math.Exp(rng.NormFloat64())
		h := int32(float64(hosts) * math.Pow(rng.Float64(), 2)) // small hosts rarer
		p.Elements[i] = Element{Rate: rate, Weight: w, Host: h}
		count[h]++
	}
	for h := range hosts {
		if h%10 == 0 {
			p.HostCaps[h] = 0.3 * float64(count[h]) / 30 // a third of a uniform share
		}
	}
	return p
}

func benchSolve(b *testing.B, n int) {
	p := benchProblem(n, 1)
	b.ReportAllocs()
	var ms0, ms1 runtime.MemStats
	var sol Solution
	var err error
	runtime.ReadMemStats(&ms0)
	cpu0 := cpuTime()
	b.ResetTimer()
	for b.Loop() {
		sol, err = Solve(p)
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	runtime.ReadMemStats(&ms1)
	b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/float64(b.N)/float64(n), "bytes/elem")
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/1e6, "cpu-ms/op")
	b.ReportMetric(float64(sol.Iterations), "passes")
	b.ReportMetric(float64(sol.CappedHosts), "capped")
	b.ReportMetric(sol.Freshness, "freshness")
}

func BenchmarkSolve1M(b *testing.B)  { benchSolve(b, 1_000_000) }
func BenchmarkSolve10M(b *testing.B) { benchSolve(b, 10_000_000) }

// BenchmarkResolve1M measures a warm re-solve after 1% of the rates moved
// by up to ±20%, as after a round of change-rate estimation.
func BenchmarkResolve1M(b *testing.B) { benchResolve(b, benchProblem(1_000_000, 1)) }

// BenchmarkResolve1MHalfNew is BenchmarkResolve1M where half of the
// elements are alike, as URLs not fetched yet are (the prior's rate, weight
// 1): a restart's schedule after seeding.
func BenchmarkResolve1MHalfNew(b *testing.B) {
	p := benchProblem(1_000_000, 1)
	for i := range p.Elements {
		if i%2 == 0 {
			p.Elements[i].Rate, p.Elements[i].Weight = 0.25, 1
		}
	}
	benchResolve(b, p)
}

func benchResolve(b *testing.B, p Problem) {
	n := len(p.Elements)
	s := NewSolver(p)
	if _, err := s.Solve(); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	b.ReportAllocs()
	var ms0, ms1 runtime.MemStats
	var sol Solution
	var err error
	runtime.ReadMemStats(&ms0)
	var cpu time.Duration
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		for range n / 100 {
			i := rng.IntN(n)
			s.SetRate(i, p.Elements[i].Rate*(0.8+0.4*rng.Float64()))
		}
		b.StartTimer()
		cpu0 := cpuTime()
		sol, err = s.Solve()
		cpu += cpuTime() - cpu0
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	runtime.ReadMemStats(&ms1)
	b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/float64(b.N)/float64(n), "bytes/elem")
	b.ReportMetric(float64(cpu)/float64(b.N)/1e6, "cpu-ms/op")
	b.ReportMetric(float64(sol.Iterations), "passes")
}
