package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/freshcrawl/freshcrawl/config"
	"github.com/freshcrawl/freshcrawl/internal/node"
	"github.com/freshcrawl/freshcrawl/lab/sim"
)

// LiveOptions are what the live mode adds to Options.
type LiveOptions struct {
	// Day is the real duration of a simulated day (the sim's --sim-day).
	Day time.Duration
	// Workers and Concurrency shape the in-process workers.
	Workers, Concurrency int
	// Log receives the node's logs (nil: discarded).
	Log *slog.Logger
}

// RunLive runs one policy on one workload with the real system: an
// in-process sim (HTTP on 127.0.0.2...), an embedded NATS, a coordinator
// and workers in a fresh data directory, for o.Days simulated days. The
// truth comes from the sim's own log (sim.Report). Workloads whose rates
// drift are not expressible by the sim and are refused.
func RunLive(ctx context.Context, w Workload, policy string, o Options, lo LiveOptions) (Result, error) {
	o, err := w.options(o).withDefaults()
	if err != nil {
		return Result{}, err
	}
	if w.After != nil {
		return Result{}, fmt.Errorf("bench: workload %s: the sim cannot change rates mid-run; use --mode virtual", w.Name)
	}
	if w.VirtualOnly {
		return Result{}, fmt.Errorf("bench: workload %s runs in virtual mode only", w.Name)
	}
	if lo.Day <= 0 {
		lo.Day = time.Second
	}
	if lo.Workers <= 0 {
		lo.Workers = 2
	}
	if lo.Concurrency <= 0 {
		lo.Concurrency = 8
	}
	log := lo.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	daySec := lo.Day.Seconds()
	robots := map[int]string{}
	for h := range o.Hosts {
		if d := w.crawlDelayDays(h, o.Hosts, o.Budget); d > 0 {
			robots[h] = sim.DefaultRobots + fmt.Sprintf("Crawl-delay: %g\n", d*daySec)
		}
	}
	s, err := sim.New(sim.Config{Hosts: o.Hosts, Pages: o.Pages, Mix: w.Mix, Day: lo.Day, Seed: o.Seed, Robots: robots, LastModified: w.LastModified})
	if err != nil {
		return Result{}, fmt.Errorf("bench: workload %s: %w", w.Name, err)
	}
	if err := s.Start(ctx); err != nil {
		return Result{}, fmt.Errorf("bench: start sim: %w", err)
	}
	defer s.Close()

	cfg, cleanup, err := crawlerConfig("freshcrawl-bench-")
	if err != nil {
		return Result{}, err
	}
	defer cleanup()
	cfg.Budget = config.Rate(o.Budget / daySec)
	cfg.HostRate = config.Rate(o.HostRate / daySec)
	cfg.PriorRate = config.Rate(o.PriorRate / daySec)
	cfg.HalfLife = time.Duration(o.HalfLifeDays * float64(lo.Day))
	cfg.Replan = max(time.Duration(o.ReplanDays*float64(lo.Day)), time.Second)
	cfg.Explore = o.Explore
	// Time runs a simulated day per lo.Day: the trust check's tolerance
	// for clock skew scales with it, down to the one-second resolution of
	// HTTP dates.
	cfg.LMSkew = max(time.Second, time.Duration(60*float64(lo.Day)/86400))
	cfg.Workers, cfg.Concurrency = lo.Workers, lo.Concurrency
	if err := cfg.Validate(); err != nil {
		return Result{}, fmt.Errorf("bench: config: %w", err)
	}
	pol, err := newPolicy(policy, lo.Day)
	if err != nil {
		return Result{}, err
	}
	n, err := node.Start(ctx, node.Options{Config: cfg, Roles: node.Roles{Coordinator: true, Workers: cfg.Workers}, Policy: pol, Log: log})
	if err != nil {
		return Result{}, fmt.Errorf("bench: start node: %w", err)
	}
	stopped := false
	defer func() {
		if !stopped {
			n.Stop()
		}
	}()
	var seeds strings.Builder
	for i, u := range s.URLs() {
		b, err := json.Marshal(struct {
			URL    string  `json:"url"`
			Weight float64 `json:"weight"`
		}{u, w.weight(i)})
		if err != nil {
			return Result{}, fmt.Errorf("bench: seed: %w", err)
		}
		seeds.Write(b)
		seeds.WriteByte('\n')
	}
	start := time.Now()
	if _, err := n.Coordinator.AddSeeds(strings.NewReader(seeds.String()), "bench"); err != nil {
		return Result{}, fmt.Errorf("bench: seed: %w", err)
	}
	runFor := time.Duration(o.Days * float64(lo.Day))
	timer := time.NewTimer(runFor)
	defer timer.Stop()
	// The model's freshness as status shows it, sampled every simulated
	// day after warm-up and averaged like the truth.
	tick := time.NewTicker(lo.Day)
	defer tick.Stop()
	warmEnd := start.Add(time.Duration(o.Warmup * float64(lo.Day)))
	var modelSum float64
	var modelN int
wait:
	for {
		select {
		case <-ctx.Done():
			return Result{}, ctx.Err()
		case now := <-tick.C:
			if !now.Before(warmEnd) {
				modelSum += n.Coordinator.Status().ModelFreshness
				modelN++
			}
		case <-timer.C:
			break wait
		}
	}
	end := time.Now()
	n.Stop()
	stopped = true

	from := start.Add(time.Duration(o.Warmup * float64(lo.Day)))
	tr := s.Truth(from, end)
	full := s.Truth(start, end, sim.WithStep(max(end.Sub(start)/time.Duration(o.Steps), time.Millisecond)))
	res := Result{Mode: "live", Workload: w.Name, Policy: policy, Pages: o.Pages, Hosts: o.Hosts, Fetches: tr.Fetches, NotModified: tr.NotModified, Bytes: tr.Bytes, Wall: end.Sub(start)}
	if modelN > 0 {
		res.ModelFreshness = modelSum / float64(modelN)
	}
	res.FirstPassDays, res.ModelAfterFirstPass = -1, -1
	var fresh, age, wsum float64
	for i, pt := range tr.PerPage {
		wt := w.weight(i)
		fresh += wt * pt.Freshness
		age += wt * pt.AgeDays
		wsum += wt
	}
	res.Freshness, res.AgeDays = fresh/wsum, age/wsum
	for _, p := range full.Series {
		res.Series = append(res.Series, Point{Day: p.Time.Sub(start).Seconds() / daySec, Freshness: p.Freshness})
	}
	windowDays := end.Sub(from).Seconds() / daySec
	res.FetchesPerDay = float64(tr.Fetches) / windowDays
	in := SimOracleInput(s.Pages(), lo.Day)
	in.Weights, in.HostCaps, in.Fetches = w.Weights, hostCapsPerDay(w, o), res.FetchesPerDay
	orc, err := SolveOracle(in)
	if err != nil {
		return res, fmt.Errorf("bench: workload %s: %w", w.Name, err)
	}
	res.Oracle, res.OracleAgeDays = orc.Freshness, orc.Age
	if res.Oracle > 0 {
		res.Ratio = res.Freshness / res.Oracle
	}
	in.Fetches = o.Budget
	fullOrc, err := SolveOracle(in)
	if err != nil {
		return res, fmt.Errorf("bench: workload %s: full-budget oracle: %w", w.Name, err)
	}
	res.FullOracle = fullOrc.Freshness
	if res.FullOracle > 0 {
		res.FullRatio = res.Freshness / res.FullOracle
	}
	if tr.Disallowed > 0 {
		return res, errors.New("bench: the crawler requested pages robots.txt disallows")
	}
	return res, nil
}
