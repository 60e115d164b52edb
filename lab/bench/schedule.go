package bench

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"time"

	"github.com/freshcrawl/freshcrawl/alloc"
	"github.com/freshcrawl/freshcrawl/internal/schedule"
	"github.com/freshcrawl/freshcrawl/internal/seed"
	"github.com/freshcrawl/freshcrawl/store"
)

// ScheduleOptions configure RunSchedule.
type ScheduleOptions struct {
	// Sizes are the URL counts the allocation is solved for (default 1M
	// and 10M).
	Sizes []int
	// Hosts is the number of hosts (default 1000); every CapEvery-th is
	// capped below its uniform share so that politeness binds.
	Hosts, CapEvery int
	// Resolve also times a warm re-solve after 1% of the rates moved.
	Resolve bool
	// BboltN URL records are written to a temporary store (default 100k;
	// negative skips).
	BboltN int
	// SchedulerN URLs are added to a coordinator Scheduler (default 1M;
	// negative skips), which is then re-planned once with the optimal
	// policy.
	SchedulerN int
	// Seed makes the problems deterministic.
	Seed uint64
	// TempDir holds the store (default os.TempDir()).
	TempDir  string
	Progress func(format string, args ...any)
}

func (o ScheduleOptions) withDefaults() ScheduleOptions {
	if len(o.Sizes) == 0 {
		o.Sizes = []int{1_000_000, 10_000_000}
	}
	if o.Hosts <= 0 {
		o.Hosts = 1000
	}
	if o.CapEvery <= 0 {
		o.CapEvery = 10
	}
	if o.BboltN == 0 {
		o.BboltN = 100_000
	}
	if o.SchedulerN == 0 {
		o.SchedulerN = 1_000_000
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Progress == nil {
		o.Progress = func(string, ...any) {}
	}
	return o
}

// SolveResult is one size's allocation solve.
type SolveResult struct {
	URLs        int     `json:"urls"`
	Hosts       int     `json:"hosts"`
	CappedHosts int     `json:"capped_hosts"` // hosts whose cap binds
	Seconds     float64 `json:"seconds"`
	CPUSeconds  float64 `json:"cpu_s"`
	// TargetSeconds is the goal: one second per million URLs.
	TargetSeconds float64 `json:"target_s"`
	Passes        int     `json:"passes"`
	Freshness     float64 `json:"freshness"`
	// ProblemBytesPerURL is the input (alloc.Element); AllocBytesPerURL
	// what Solve allocated; RetainedBytesPerURL the live heap the solution
	// keeps after a collection.
	ProblemBytesPerURL  float64 `json:"problem_bytes_per_url"`
	AllocBytesPerURL    float64 `json:"alloc_bytes_per_url"`
	RetainedBytesPerURL float64 `json:"retained_bytes_per_url"`
	// ResolveSeconds is a warm re-solve (alloc.Solver) after 1% of the
	// rates moved by up to ±20%, ResolvePasses its passes; ColdSolver the
	// same Solver's first, cold solve for comparison.
	ColdSolverSeconds float64 `json:"cold_solver_s,omitempty"`
	ResolveSeconds    float64 `json:"resolve_s,omitempty"`
	ResolvePasses     int     `json:"resolve_passes,omitempty"`
}

// BboltResult is the store's cost per URL record.
type BboltResult struct {
	URLs          int     `json:"urls"`
	Seconds       float64 `json:"seconds"`
	FileBytes     int64   `json:"file_bytes"`
	BytesPerURL   float64 `json:"bytes_per_url"`
	RecordBytes   float64 `json:"record_bytes_per_url"` // mean JSON value plus key
	RecordsPerSec float64 `json:"records_per_s"`
	CPUSeconds    float64 `json:"cpu_s"`
}

// SchedulerResult is the coordinator's in-memory cost per URL.
type SchedulerResult struct {
	URLs             int     `json:"urls"`
	Hosts            int     `json:"hosts"`
	AddSeconds       float64 `json:"add_s"`
	AddCPUSeconds    float64 `json:"add_cpu_s"`
	BytesPerURL      float64 `json:"bytes_per_url"` // live heap after a collection, URL string included
	URLLen           float64 `json:"mean_url_len"`
	ReplanSeconds    float64 `json:"replan_s"`
	ReplanCPUSeconds float64 `json:"replan_cpu_s"`
	// ReplanAllocBytesPerURL is what one re-plan allocates (it is garbage
	// afterwards).
	ReplanAllocBytesPerURL float64 `json:"replan_alloc_bytes_per_url"`
}

// ScheduleResult is what RunSchedule measured.
type ScheduleResult struct {
	Machine   Machine          `json:"machine"`
	Solves    []SolveResult    `json:"solves"`
	Bbolt     *BboltResult     `json:"bbolt,omitempty"`
	Scheduler *SchedulerResult `json:"scheduler,omitempty"`
	MaxRSS    int64            `json:"max_rss_bytes"`
}

// RunSchedule times the allocation solve at each size and measures the
// per-URL cost of the store and of the coordinator's in-memory schedule.
func RunSchedule(ctx context.Context, o ScheduleOptions) (ScheduleResult, error) {
	o = o.withDefaults()
	res := ScheduleResult{Machine: thisMachine()}
	for _, n := range o.Sizes {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		o.Progress("solve: %d URLs on %d hosts", n, o.Hosts)
		sr, err := benchSolveAt(n, o)
		if err != nil {
			return res, err
		}
		res.Solves = append(res.Solves, sr)
	}
	if o.BboltN > 0 {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		o.Progress("bbolt: writing %d URL records", o.BboltN)
		br, err := benchBbolt(o.BboltN, o)
		if err != nil {
			return res, err
		}
		res.Bbolt = &br
	}
	if o.SchedulerN > 0 {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		o.Progress("scheduler: adding %d URLs", o.SchedulerN)
		sr, err := benchScheduler(o.SchedulerN, o)
		if err != nil {
			return res, err
		}
		res.Scheduler = &sr
	}
	res.MaxRSS = selfUsage().MaxRSS
	return res, nil
}

// scheduleProblem builds an allocation problem of n URLs like the ones the
// coordinator solves: change rates from the paper's Table 6 mix (23% daily,
// 15% weekly, 16% monthly, 16% quarterly, 30% yearly) jittered
// log-normally, log-normal weights, hosts of Zipf-like sizes of which every
// capEvery-th is capped at a third of its uniform share so the caps bind,
// and a budget of every page once a month on average. Time unit: days.
func scheduleProblem(n, hosts, capEvery int, seed uint64) alloc.Problem {
	rng := rand.New(rand.NewPCG(seed, 7))
	periods := [...]float64{1, 7, 30, 90, 365}
	cum := [...]float64{0.23, 0.38, 0.54, 0.70, 1}
	p := alloc.Problem{Elements: make([]alloc.Element, n), HostCaps: make([]float64, hosts), Budget: float64(n) / 30}
	count := make([]int, hosts)
	for i := range p.Elements {
		u, c := rng.Float64(), 0
		for u > cum[c] {
			c++
		}
		h := int32(float64(hosts) * math.Pow(rng.Float64(), 2)) // many small hosts, a few big ones
		p.Elements[i] = alloc.Element{Rate: math.Exp(rng.NormFloat64()*0.5) / periods[c], Weight: math.Exp(rng.NormFloat64()), Host: h}
		count[h]++
	}
	for h := range hosts {
		if h%capEvery == 0 {
			p.HostCaps[h] = 0.3 * float64(count[h]) / 30
		}
	}
	return p
}

// heapNow is the live heap after a full collection. Two collections: what
// sync.Pools hold (bbolt's page buffers, encoders) survives the first in
// their victim caches and would be freed in the middle of a measurement.
func heapNow() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

func totalAlloc() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

func benchSolveAt(n int, o ScheduleOptions) (SolveResult, error) {
	r := SolveResult{URLs: n, Hosts: o.Hosts, TargetSeconds: float64(n) / 1e6}
	h0 := heapNow()
	p := scheduleProblem(n, o.Hosts, o.CapEvery, o.Seed)
	h1 := heapNow()
	r.ProblemBytesPerURL = float64(h1-h0) / float64(n)

	a0, c0, t0 := totalAlloc(), selfUsage().CPU, time.Now()
	sol, err := alloc.Solve(p)
	t1, c1, a1 := time.Now(), selfUsage().CPU, totalAlloc()
	if err != nil {
		return r, fmt.Errorf("solve %d URLs: %w", n, err)
	}
	r.Seconds, r.CPUSeconds = t1.Sub(t0).Seconds(), (c1 - c0).Seconds()
	r.AllocBytesPerURL = float64(a1-a0) / float64(n)
	r.RetainedBytesPerURL = float64(int64(heapNow())-int64(h1)) / float64(n)
	runtime.KeepAlive(sol.Freq)
	runtime.KeepAlive(p.Elements)
	r.Passes, r.Freshness, r.CappedHosts = sol.Iterations, sol.Freshness, sol.CappedHosts

	if o.Resolve {
		s := alloc.NewSolver(p)
		t0 := time.Now()
		if _, err := s.Solve(); err != nil {
			return r, fmt.Errorf("solver %d URLs: %w", n, err)
		}
		r.ColdSolverSeconds = time.Since(t0).Seconds()
		rng := rand.New(rand.NewPCG(o.Seed, 99))
		for range n / 100 {
			i := rng.IntN(n)
			s.SetRate(i, p.Elements[i].Rate*(0.8+0.4*rng.Float64()))
		}
		t0 = time.Now()
		sol, err := s.Solve()
		r.ResolveSeconds = time.Since(t0).Seconds()
		if err != nil {
			return r, fmt.Errorf("re-solve %d URLs: %w", n, err)
		}
		r.ResolvePasses = sol.Iterations
	}
	return r, nil
}

// benchURL is a realistic URL of host h: scheme, a host name, a path of a
// few segments and a query, about 70 bytes.
func benchURL(h, i int) (url, host string) {
	host = fmt.Sprintf("www.shop-%04d.example.com", h)
	return fmt.Sprintf("https://%s/catalog/category-%d/item-%08d?ref=list", host, i%97, i), host
}

// benchRecord is a URL record as it looks after months of crawling: seed
// fields, counters, the last fetch's validators and hash, the estimator's
// state, the rate and the schedule.
func benchRecord(rng *rand.Rand, h, i int, now time.Time) store.URL {
	url, host := benchURL(h, i)
	hash := make([]byte, 32)
	est := make([]byte, 65)
	for k := range hash {
		hash[k] = byte(rng.Uint32())
	}
	for k := range est {
		est[k] = byte(rng.Uint32())
	}
	last := now.Add(-time.Duration(rng.Int64N(int64(30 * 24 * time.Hour))))
	iv := time.Duration(1+rng.Int64N(30*24)) * time.Hour
	return store.URL{
		URL: url, Host: host, Weight: math.Exp(rng.NormFloat64()), Mode: string(seed.ModeFreshness), AddedAt: now.Add(-90 * 24 * time.Hour),
		Fetches: 1 + rng.Int64N(500), Changes: rng.Int64N(100), NotModified: rng.Int64N(200),
		LastFetch: last, LastOK: last, LastChange: last.Add(-72 * time.Hour), LastStatus: 200,
		ETag: fmt.Sprintf(`"%x-%x"`, rng.Uint32(), rng.Uint32()), LastMod: last.Add(-time.Hour).UTC().Format(time.RFC1123),
		Hash: hex.EncodeToString(hash), Estimate: est, Rate: 1 / (86400 * (1 + 30*rng.Float64())),
		Interval: iv, NextDue: last.Add(iv),
	}
}

func benchBbolt(n int, o ScheduleOptions) (BboltResult, error) {
	r := BboltResult{URLs: n}
	dir, err := os.MkdirTemp(o.TempDir, "freshcrawl-schedule-*")
	if err != nil {
		return r, fmt.Errorf("bbolt: temporary directory: %w", err)
	}
	defer os.RemoveAll(dir)
	db, err := store.OpenDir(dir, store.Options{})
	if err != nil {
		return r, err
	}
	defer db.Close()
	rng := rand.New(rand.NewPCG(o.Seed, 11))
	now := time.Now()
	const batch = 1000 // as seed ingestion does
	recs := make([]store.URL, 0, batch)
	var recBytes int64
	t0, c0 := time.Now(), selfUsage().CPU
	for i := range n {
		u := benchRecord(rng, int(float64(o.Hosts)*math.Pow(rng.Float64(), 2)), i, now)
		if i%100 == 0 { // sample the record size
			b, err := json.Marshal(u)
			if err != nil {
				return r, fmt.Errorf("bbolt: encode: %w", err)
			}
			recBytes += int64(len(b) + len(u.URL))
		}
		recs = append(recs, u)
		if len(recs) == batch || i == n-1 {
			if _, err := db.Upsert(recs); err != nil {
				return r, fmt.Errorf("bbolt: %w", err)
			}
			recs = recs[:0]
		}
	}
	r.Seconds, r.CPUSeconds = time.Since(t0).Seconds(), (selfUsage().CPU - c0).Seconds()
	if err := db.Close(); err != nil {
		return r, fmt.Errorf("bbolt: close: %w", err)
	}
	fi, err := os.Stat(db.Path())
	if err != nil {
		return r, fmt.Errorf("bbolt: %w", err)
	}
	r.FileBytes = fi.Size()
	r.BytesPerURL = float64(r.FileBytes) / float64(n)
	r.RecordBytes = float64(recBytes) / float64((n+99)/100)
	r.RecordsPerSec = float64(n) / r.Seconds
	return r, nil
}

func benchScheduler(n int, o ScheduleOptions) (SchedulerResult, error) {
	r := SchedulerResult{URLs: n}
	policy, err := schedule.PolicyByName("optimal", "freshness")
	if err != nil {
		return r, err
	}
	rng := rand.New(rand.NewPCG(o.Seed, 13))
	now := time.Now()
	h0 := heapNow()
	so := schedule.DefaultSchedulerOptions()
	so.Budget, so.HostRate, so.Policy = float64(n)/(30*86400), 1, policy
	s, err := schedule.NewScheduler(so)
	if err != nil {
		return r, err
	}
	var urlBytes int64
	t0, c0 := time.Now(), selfUsage().CPU
	for i := range n {
		h := int(float64(o.Hosts) * math.Pow(rng.Float64(), 2))
		url, host := benchURL(h, i)
		urlBytes += int64(len(url))
		// As the coordinator loads a stored URL: a known rate, interval
		// and next due time.
		iv := time.Duration(1+rng.Int64N(30*24)) * time.Hour
		s.Add(schedule.URLInfo{URL: url, Host: host, Weight: math.Exp(rng.NormFloat64()), Rate: 1 / (86400 * (1 + 30*rng.Float64())),
			Interval: iv, NextDue: now.Add(time.Duration(rng.Int64N(int64(iv))))}, now)
	}
	r.AddSeconds, r.AddCPUSeconds = time.Since(t0).Seconds(), (selfUsage().CPU - c0).Seconds()
	h1 := heapNow()
	r.BytesPerURL = float64(int64(h1)-int64(h0)) / float64(n)
	r.URLLen = float64(urlBytes) / float64(n)
	r.Hosts = s.Hosts()

	a0, t1, c1 := totalAlloc(), time.Now(), selfUsage().CPU
	if _, err := s.Replan(now); err != nil {
		return r, fmt.Errorf("scheduler: replan %d URLs: %w", n, err)
	}
	r.ReplanSeconds, r.ReplanCPUSeconds = time.Since(t1).Seconds(), (selfUsage().CPU - c1).Seconds()
	r.ReplanAllocBytesPerURL = float64(totalAlloc()-a0) / float64(n)
	runtime.KeepAlive(s)
	return r, nil
}
