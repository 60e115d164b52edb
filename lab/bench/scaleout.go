package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/freshcrawl/freshcrawl/config"
	"github.com/freshcrawl/freshcrawl/internal/node"
)

// ScaleOutOptions configure RunScaleOut.
type ScaleOutOptions struct {
	// WorkerCounts are the numbers of worker processes measured in turn
	// (default 1, 2, 4); each runs with Concurrency tasks at once.
	WorkerCounts []int
	Concurrency  int
	// Warmup runs before each measurement window of Duration.
	Warmup, Duration time.Duration
	// Pages are the URLs, served by another process (ServerPID, whose CPU
	// is reported per fetch).
	Pages     []string
	ServerPID int
	// Worker is the command of one worker process; "--nats URL
	// --concurrency N --worker-id ID" are appended.
	Worker []string
	// TempDir holds the data directory (default os.TempDir()).
	TempDir  string
	Log      *slog.Logger
	Progress func(format string, args ...any)
}

// ScaleOutRun is one worker count's measurement window.
type ScaleOutRun struct {
	Workers   int     `json:"workers"`
	Fetches   int64   `json:"fetches"` // folded in the window
	Errors    int64   `json:"errors"`
	Seconds   float64 `json:"seconds"`
	PerSecond float64 `json:"fetches_per_s"`
	// Speedup is PerSecond over the first run's.
	Speedup float64 `json:"speedup"`
	// CPU per second of wall time (cores): the coordinator process
	// (with the embedded NATS server), all worker processes together, and
	// the page server.
	CoordinatorCores float64 `json:"coordinator_cores"`
	WorkerCores      float64 `json:"worker_cores"`
	ServerCores      float64 `json:"server_cores,omitempty"`
	// WorkerCPUPerFetchMS is the workers' CPU per fetch.
	WorkerCPUPerFetchMS float64 `json:"worker_cpu_ms_per_fetch"`
}

// ScaleOutResult is RunScaleOut's measurement.
type ScaleOutResult struct {
	Machine     Machine       `json:"machine"`
	URLs        int           `json:"urls"`
	Hosts       int           `json:"hosts"`
	Concurrency int           `json:"concurrency_per_worker"`
	Runs        []ScaleOutRun `json:"runs"`
	Persisted   Persistence   `json:"persisted"`
}

// RunScaleOut runs one coordinator (with its embedded NATS) in this
// process and, in turn, 1, 2, 4 ... worker processes against it on the
// same pages, and measures the fetches folded per second and the CPU each
// side used.
func RunScaleOut(ctx context.Context, o ScaleOutOptions) (ScaleOutResult, error) {
	if len(o.WorkerCounts) == 0 {
		o.WorkerCounts = []int{1, 2, 4}
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 8
	}
	if o.Duration <= 0 {
		o.Duration = 15 * time.Second
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Progress == nil {
		o.Progress = func(string, ...any) {}
	}
	res := ScaleOutResult{Machine: thisMachine(), URLs: len(o.Pages), Hosts: countHosts(o.Pages), Concurrency: o.Concurrency}
	if len(o.Pages) == 0 || len(o.Worker) == 0 {
		return res, errors.New("scale-out: no pages or no worker command")
	}
	most := 0
	for _, k := range o.WorkerCounts {
		if k <= 0 {
			return res, fmt.Errorf("scale-out: %d workers", k)
		}
		most = max(most, k)
	}
	dir, err := os.MkdirTemp(o.TempDir, "freshcrawl-scaleout-*")
	if err != nil {
		return res, fmt.Errorf("scale-out: data directory: %w", err)
	}
	defer os.RemoveAll(dir)

	cfg := config.Default()
	cfg.Data = dir
	cfg.Budget = config.Rate(100000)
	cfg.HostRate = config.Rate(1000)
	cfg.MaxInFlight = most * o.Concurrency * 2
	cfg.Policy = "uniform"
	cfg.Workers = 0
	n, err := startBenchNode(ctx, cfg, node.Roles{Coordinator: true}, o.Log)
	if err != nil {
		return res, fmt.Errorf("scale-out: %w", err)
	}
	stopped := false
	defer func() {
		if !stopped {
			n.Stop()
		}
	}()
	if sum, err := n.Coordinator.AddSeeds(strings.NewReader(strings.Join(o.Pages, "\n")), "bench"); err != nil || sum.Bad > 0 {
		return res, fmt.Errorf("scale-out: seed %d pages: %d bad (%v): %w", len(o.Pages), sum.Bad, sum.Errors, err)
	}
	for _, k := range o.WorkerCounts {
		run, err := scaleOutRun(ctx, o, n, k)
		if err != nil {
			return res, err
		}
		if len(res.Runs) > 0 && res.Runs[0].PerSecond > 0 {
			run.Speedup = run.PerSecond / res.Runs[0].PerSecond
		} else {
			run.Speedup = 1
		}
		res.Runs = append(res.Runs, run)
		o.Progress("scale-out: %d workers: %.0f fetches/s (×%.2f), coordinator %.2f cores, workers %.2f cores",
			k, run.PerSecond, run.Speedup, run.CoordinatorCores, run.WorkerCores)
	}
	n.Stop()
	stopped = true
	if err := readStoreBack(dir, &res.Persisted); err != nil {
		return res, err
	}
	return res, nil
}

func scaleOutRun(ctx context.Context, o ScaleOutOptions, n *node.Node, k int) (ScaleOutRun, error) {
	run := ScaleOutRun{Workers: k}
	children := make([]*helperProcess, 0, k)
	defer func() {
		for _, c := range children {
			if err := c.Close(); err != nil {
				o.Log.Warn("scale-out: worker exit", "err", err)
			}
		}
	}()
	for i := range k {
		argv := append(append([]string(nil), o.Worker...), "--nats", n.NATSURL,
			"--concurrency", strconv.Itoa(o.Concurrency), "--worker-id", fmt.Sprintf("scaleout-%d-%d", k, i))
		c, err := startHelper(ctx, argv)
		if err != nil {
			return run, fmt.Errorf("scale-out: worker %d: %w", i, err)
		}
		children = append(children, c)
	}
	o.Progress("scale-out: %d worker processes × %d; warming up %s", k, o.Concurrency, o.Warmup)
	if !sleepOrDone(ctx, o.Warmup) {
		return run, ctx.Err()
	}
	workersCPU := func() time.Duration {
		var sum time.Duration
		for _, c := range children {
			if d, ok := procCPU(c.PID); ok {
				sum += d
			}
		}
		return sum
	}
	s0, u0, w0, t0 := n.Coordinator.Status(), selfUsage(), workersCPU(), time.Now()
	srv0, srvOK := procCPU(o.ServerPID)
	if !sleepOrDone(ctx, o.Duration) {
		return run, ctx.Err()
	}
	s1, u1, w1, t1 := n.Coordinator.Status(), selfUsage(), workersCPU(), time.Now()
	srv1, _ := procCPU(o.ServerPID)
	run.Fetches = s1.Fetches - s0.Fetches
	run.Errors = sumErrors(s1.Errors) - sumErrors(s0.Errors)
	run.Seconds = t1.Sub(t0).Seconds()
	run.PerSecond = float64(run.Fetches) / run.Seconds
	run.CoordinatorCores = (u1.CPU - u0.CPU).Seconds() / run.Seconds
	run.WorkerCores = (w1 - w0).Seconds() / run.Seconds
	if srvOK && o.ServerPID > 0 {
		run.ServerCores = (srv1 - srv0).Seconds() / run.Seconds
	}
	if run.Fetches > 0 {
		run.WorkerCPUPerFetchMS = (w1 - w0).Seconds() * 1000 / float64(run.Fetches)
	}
	return run, nil
}
