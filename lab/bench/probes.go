package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/freshcrawl/freshcrawl/config"
	"github.com/freshcrawl/freshcrawl/coordinator"
	"github.com/freshcrawl/freshcrawl/internal/node"
	"github.com/freshcrawl/freshcrawl/internal/source"
	"github.com/freshcrawl/freshcrawl/lab/sim"
)

// ProbesOptions configure the keyword-probe benchmark (the content-freshness paper §5.2).
type ProbesOptions struct {
	Papers   int
	K        int
	TimeUnit time.Duration // real duration of one time unit
	Seed     uint64
	Policies []string // greedy, naive1, naive2
	// Absent, Renamed and Untracked are the sim's shares of papers listed
	// but not on the site, listed under an older title, and on the site
	// but not listed (sim.SearchConfig).
	Absent, Renamed, Untracked float64
	// Score, when set, overrides the source's score ("per_result" or
	// "per_request").
	Score string

	// Live mode: the length of each run and the part left out.
	Duration time.Duration
	Warmup   time.Duration
	Log      *slog.Logger

	// Virtual mode: the length of each run and the part left out, in time
	// units; Steps points of the series; Alpha > 0 adds a greedy run with
	// the §4.4 interval search at that threshold.
	Units, WarmupUnits float64
	Steps              int
	Alpha              float64
}

// ProbesResult is one policy's truth-measured content freshness.
type ProbesResult struct {
	Policy           string
	Mode             string  // "live" or "virtual"
	Alpha            float64 // the interval search's threshold; 0 for fixed rounds
	ContentFreshness float64 // time-averaged weighted dissimilarity (lower is fresher)
	Final            float64
	Requests         int
	SearchRequests   int
	ItemRequests     int
	RequestsPerUnit  float64
	Synced           int
	Papers, Absent   int

	// Virtual mode only.
	Series                                   []SeriesPoint
	Rounds                                   []RoundLog
	RoundsMeasured                           int
	ModelMean, TruthAtRounds, ModelRatio     float64 // model vs truth over the measured rounds
	ExpectedMean                             float64 // the rounds' expected mean content freshness, weighted by length
	IntervalMin, IntervalMedian, IntervalMax float64
	LocalRatio, PairRatio                    float64 // learnt, at the last round
	Unreached, Gone                          int     // at the last round
}

// Probes runs the real system once per policy, side by side, each against
// its own copy of the simulated citation search site with the same seed,
// at the same request budget (the source's quota per time unit), and
// reports the content freshness the sim measured from the values it
// served.
func Probes(ctx context.Context, o ProbesOptions, out io.Writer) ([]ProbesResult, error) {
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	results := make([]ProbesResult, len(o.Policies))
	errs := make([]error, len(o.Policies))
	var wg sync.WaitGroup
	for i, p := range o.Policies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = probesRun(ctx, o, p)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(out, "content freshness on the simulated citation search (the content-freshness paper §5.2): %d papers, K=%d, 10 requests per time unit (%s), %s measured after %s\n\n",
		o.Papers, o.K, o.TimeUnit, o.Duration, o.Warmup)
	fmt.Fprintf(out, "%-8s %18s %10s %9s %8s %6s %9s %7s\n", "policy", "content-freshness", "final", "requests", "search", "by-id", "req/unit", "synced")
	for _, r := range results {
		fmt.Fprintf(out, "%-8s %18.1f %10.1f %9d %8d %6d %9.2f %7d\n", r.Policy, r.ContentFreshness, r.Final, r.Requests, r.SearchRequests, r.ItemRequests, r.RequestsPerUnit, r.Synced)
	}
	fmt.Fprintln(out, "\n(content freshness is the time-averaged weighted dissimilarity of the crawler's copy: lower is fresher)")
	return results, nil
}

func probesRun(ctx context.Context, o ProbesOptions, policy string) (ProbesResult, error) {
	s, err := sim.New(sim.Config{Hosts: 1, Pages: 1, Seed: o.Seed, Day: time.Hour,
		Search: &sim.SearchConfig{Papers: o.Papers, K: o.K, TimeUnit: o.TimeUnit, Seed: o.Seed, Absent: o.Absent, Renamed: o.Renamed, Untracked: o.Untracked}})
	if err != nil {
		return ProbesResult{}, err
	}
	if err := s.Start(ctx); err != nil {
		return ProbesResult{}, err
	}
	defer s.Close()
	src, err := s.SearchSource()
	if err != nil {
		return ProbesResult{}, err
	}
	cfg, cleanup, err := crawlerConfig("freshcrawl-probes-")
	if err != nil {
		return ProbesResult{}, err
	}
	defer cleanup()
	cfg.Budget = 100
	cfg.HostRate = config.Rate(40 / o.TimeUnit.Seconds()) // politeness well above the 10/unit quota
	cfg.MaxInFlight = 16
	cfg.Workers, cfg.Concurrency = 1, 4
	cfg.ProbePolicy = policy
	cfg.PriorRate = config.Rate(0.25 / o.TimeUnit.Seconds()) // one citation's rate
	var items bytes.Buffer
	if err := s.WriteSearchItems(&items); err != nil {
		return ProbesResult{}, err
	}
	n, err := node.Start(ctx, node.Options{Config: cfg, Roles: node.Roles{Coordinator: true, Workers: 1}, Log: o.Log, Sources: []source.Source{src}})
	if err != nil {
		return ProbesResult{}, err
	}
	defer n.Stop()
	if _, err := coordinator.IngestItems(n.DB, &items, "sim items", src.Name); err != nil {
		return ProbesResult{}, err
	}
	start := time.Now()
	t := time.NewTimer(o.Duration)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ProbesResult{}, ctx.Err()
	case <-t.C:
	}
	end := time.Now()
	rep, err := s.ContentFreshness(start.Add(o.Warmup), end)
	if err != nil {
		return ProbesResult{}, err
	}
	units := end.Sub(start.Add(o.Warmup)).Seconds() / o.TimeUnit.Seconds()
	return ProbesResult{Policy: policy, Mode: "live", ContentFreshness: rep.ContentFreshness, Final: rep.Final, Requests: rep.Requests,
		SearchRequests: rep.SearchRequests, ItemRequests: rep.ItemRequests, RequestsPerUnit: float64(rep.Requests) / units, Synced: rep.Synced}, nil
}
