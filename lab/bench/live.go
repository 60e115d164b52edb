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
	lo = lo.withDefaults()
	s, err := startLiveSim(ctx, w, o, lo.Day)
	if err != nil {
		return Result{}, err
	}
	defer s.Close()

	cfg, cleanup, err := liveConfig(o, lo)
	if err != nil {
		return Result{}, err
	}
	defer cleanup()
	pol, err := newPolicy(policy, lo.Day)
	if err != nil {
		return Result{}, err
	}
	n, err := node.Start(ctx, node.Options{Config: cfg, Roles: node.Roles{Coordinator: true, Workers: cfg.Workers}, Policy: pol, Log: lo.Log})
	if err != nil {
		return Result{}, fmt.Errorf("bench: start node: %w", err)
	}
	stopped := false
	defer func() {
		if !stopped {
			n.Stop()
		}
	}()
	seeds, err := liveSeeds(s, w)
	if err != nil {
		return Result{}, err
	}
	start := time.Now()
	if _, err := n.Coordinator.AddSeeds(strings.NewReader(seeds), "bench"); err != nil {
		return Result{}, fmt.Errorf("bench: seed: %w", err)
	}
	model, err := waitLive(ctx, n, start, o, lo.Day)
	if err != nil {
		return Result{}, err
	}
	end := time.Now()
	n.Stop()
	stopped = true
	return liveResult(s, w, policy, o, lo.Day, start, end, model)
}

// withDefaults fills in what lo leaves zero: a simulated day a second,
// two workers of eight fetches at once, logs discarded.
func (lo LiveOptions) withDefaults() LiveOptions {
	if lo.Day <= 0 {
		lo.Day = time.Second
	}
	if lo.Workers <= 0 {
		lo.Workers = 2
	}
	if lo.Concurrency <= 0 {
		lo.Concurrency = 8
	}
	if lo.Log == nil {
		lo.Log = slog.New(slog.DiscardHandler)
	}
	return lo
}

// startLiveSim starts the sim of workload w, a simulated day lasting day,
// its hosts' robots.txt asking the workload's Crawl-delay.
func startLiveSim(ctx context.Context, w Workload, o Options, day time.Duration) (*sim.Sim, error) {
	daySec := day.Seconds()
	robots := map[int]string{}
	for h := range o.Hosts {
		if d := w.crawlDelayDays(h, o.Hosts, o.Budget); d > 0 {
			robots[h] = sim.DefaultRobots + fmt.Sprintf("Crawl-delay: %g\n", d*daySec)
		}
	}
	cfg := w.simConfig(o, day)
	cfg.Robots = robots
	s, err := sim.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("bench: workload %s: %w", w.Name, err)
	}
	if err := s.Start(ctx); err != nil {
		return nil, fmt.Errorf("bench: start sim: %w", err)
	}
	return s, nil
}

// liveConfig is the crawler's configuration for a live run, in a fresh
// data directory that cleanup removes: o's rates and durations, in
// simulated days, on a clock whose day lasts lo.Day.
func liveConfig(o Options, lo LiveOptions) (config.Config, func(), error) {
	daySec := lo.Day.Seconds()
	cfg, cleanup, err := crawlerConfig("freshcrawl-bench-")
	if err != nil {
		return config.Config{}, nil, err
	}
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
		cleanup()
		return config.Config{}, nil, fmt.Errorf("bench: config: %w", err)
	}
	return cfg, cleanup, nil
}

// liveSeeds is the seed file of the sim's pages, one JSON object a line,
// each with the workload's weight.
func liveSeeds(s *sim.Sim, w Workload) (string, error) {
	var seeds strings.Builder
	for i, u := range s.URLs() {
		b, err := json.Marshal(struct {
			URL    string  `json:"url"`
			Weight float64 `json:"weight"`
		}{u, w.weight(i)})
		if err != nil {
			return "", fmt.Errorf("bench: seed: %w", err)
		}
		seeds.Write(b)
		seeds.WriteByte('\n')
	}
	return seeds.String(), nil
}

// modelMean accumulates samples of the model's freshness.
type modelMean struct {
	sum float64
	n   int
}

// waitLive lets the node crawl for o.Days simulated days from start,
// sampling the model's freshness as status shows it every simulated day
// after warm-up, to be averaged like the truth.
func waitLive(ctx context.Context, n *node.Node, start time.Time, o Options, day time.Duration) (modelMean, error) {
	runFor := time.Duration(o.Days * float64(day))
	timer := time.NewTimer(runFor)
	defer timer.Stop()
	tick := time.NewTicker(day)
	defer tick.Stop()
	warmEnd := start.Add(time.Duration(o.Warmup * float64(day)))
	var m modelMean
	for {
		select {
		case <-ctx.Done():
			return modelMean{}, ctx.Err()
		case now := <-tick.C:
			if !now.Before(warmEnd) {
				m.sum += n.Coordinator.Status().ModelFreshness
				m.n++
			}
		case <-timer.C:
			return m, nil
		}
	}
}

// liveChanges are the change offsets of every page of s from its epoch
// up to end.
func liveChanges(s *sim.Sim, end time.Time) [][]time.Duration {
	ep := s.Epoch()
	out := make([][]time.Duration, len(s.Pages()))
	for i := range out {
		for _, t := range s.ChangeTimes(i, ep, end) {
			out[i] = append(out[i], t.Sub(ep))
		}
	}
	return out
}

// liveResult measures a live run that crawled from start to end against
// the sim's truth and the oracle.
func liveResult(s *sim.Sim, w Workload, policy string, o Options, day time.Duration, start, end time.Time, model modelMean) (Result, error) {
	daySec := day.Seconds()
	from := start.Add(time.Duration(o.Warmup * float64(day)))
	tr := s.Truth(from, end)
	full := s.Truth(start, end, sim.WithStep(max(end.Sub(start)/time.Duration(o.Steps), time.Millisecond)))
	res := Result{Mode: "live", Workload: w.Name, Policy: policy, Pages: o.Pages, Hosts: o.Hosts, Fetches: tr.Fetches, NotModified: tr.NotModified, Bytes: tr.Bytes, Wall: end.Sub(start)}
	if model.n > 0 {
		res.ModelFreshness = model.sum / float64(model.n)
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
	in := SimOracleInput(s.Pages(), day)
	in.Weights, in.HostCaps, in.Fetches = w.Weights, hostCapsPerDay(w, o), res.FetchesPerDay
	changes := liveChanges(s, end)
	if w.hist != nil {
		// No single true rate: each page's mean rate over the window.
		lo, hi := from.Sub(s.Epoch()), end.Sub(s.Epoch())
		for i, ch := range changes {
			in.Segments[0].Rates[i] = float64(len(window(ch, lo, hi))) / windowDays
		}
	}
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
	res.Budget, res.EveryDays = o.Budget, float64(o.Pages)/o.Budget
	keys := signalKeys{key: make([]float64, o.Pages)}
	hosts := make([]int, o.Pages)
	for i, p := range s.Pages() {
		keys.key[i], hosts[i] = in.Segments[0].Rates[i]/w.weight(i), p.HostIndex
	}
	ep := s.Epoch()
	if res.Signal, err = runSignalOracle(w, o, day, changes, hosts, []signalKeys{keys}, start.Sub(ep), from.Sub(ep), end.Sub(ep)); err != nil {
		return res, fmt.Errorf("bench: workload %s: %w", w.Name, err)
	}
	if res.Signal.Freshness > 0 {
		res.SignalRatio = res.Freshness / res.Signal.Freshness
	}
	if tr.Disallowed > 0 {
		return res, errors.New("bench: the crawler requested pages robots.txt disallows")
	}
	return res, nil
}
