package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/freshcrawl/freshcrawl/lab/bench"
)

// benchScaleOutCmd measures fetches per second with 1, 2, 4 ... worker
// processes against one coordinator.
func benchScaleOutCmd() *cobra.Command {
	var (
		o                   bench.ScaleOutOptions
		hosts, pagesPerHost int
		asJSON              bool
		logLevel            string
	)
	cmd := &cobra.Command{
		Use:   "scaleout",
		Short: "Worker scale-out: fetches per second with 1, 2, 4 worker processes against one coordinator",
		Long: `Runs one coordinator (embedded NATS, bbolt in a temporary directory) in this
process, the site of 'bench throughput' (20–50 KiB pages that change now and
then, on --hosts loopback addresses) in a child process, and then, in turn,
each --workers count of worker processes ('freshcrawl worker', each with
--concurrency). For each count it measures, after --warmup, over --duration:
the results folded per second, the speed-up over the first count, and the
CPU (in cores) of the coordinator process, of all workers together and of the
site. After shutdown every folded result must be in the store.

On a machine with few cores the workers compete with the coordinator and the
site for them, so the figures say where the machine, not the design,
saturates: compare the cores used with the cores there are.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			var lvl slog.Level
			if err := lvl.UnmarshalText([]byte(logLevel)); err != nil {
				return fmt.Errorf("--log-level %q: %w", logLevel, err)
			}
			o.Log = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: lvl}))
			o.Progress = progressTo(cmd.ErrOrStderr())
			tmp, err := os.MkdirTemp("", "freshcrawl-bench-*")
			if err != nil {
				return fmt.Errorf("temporary directory: %w", err)
			}
			defer os.RemoveAll(tmp)
			o.TempDir = tmp
			self, err := os.Executable()
			if err != nil {
				return fmt.Errorf("find own binary: %w", err)
			}
			pp, err := bench.StartPageProcess(ctx, []string{self, "bench", "throughput", "--serve-pages",
				"--hosts", strconv.Itoa(hosts), "--pages-per-host", strconv.Itoa(pagesPerHost)})
			if err != nil {
				return err
			}
			defer pp.Close()
			o.Pages, o.ServerPID = pp.URLs, pp.PID
			o.Worker = []string{self, "worker", "--allow-private", "--user-agent", "freshcrawl-bench/1.0", "--log-level", logLevel}
			res, err := bench.RunScaleOut(ctx, o)
			if err != nil {
				return err
			}
			if asJSON {
				if err := printJSON(cmd.OutOrStdout(), res); err != nil {
					return err
				}
			} else {
				printScaleOut(cmd.OutOrStdout(), res)
			}
			return res.Persisted.Check()
		},
	}
	f := cmd.Flags()
	f.IntSliceVar(&o.WorkerCounts, "workers", []int{1, 2, 4}, "worker process counts to measure, in turn")
	f.IntVar(&o.Concurrency, "concurrency", 8, "tasks each worker process handles at once")
	f.IntVar(&hosts, "hosts", 200, "distinct hosts, one loopback address each (127.0.0.2, ...)")
	f.IntVar(&pagesPerHost, "pages-per-host", 5, "pages on each host")
	f.DurationVar(&o.Warmup, "warmup", 5*time.Second, "time before each measurement")
	f.DurationVar(&o.Duration, "duration", 15*time.Second, "each measurement window")
	f.StringVar(&logLevel, "log-level", "error", "log level of the coordinator and the workers")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON")
	f.SortFlags = false
	return cmd
}

func printScaleOut(w io.Writer, r bench.ScaleOutResult) {
	fmt.Fprintf(w, "%s %s/%s, %d CPUs, load %s, %s\n", r.Machine.GoVersion, r.Machine.OS, r.Machine.Arch, r.Machine.CPUs, r.Machine.LoadAvg, r.Machine.Date.Format(time.RFC3339))
	fmt.Fprintf(w, "%d pages on %d hosts; each worker process × %d\n\n", r.URLs, r.Hosts, r.Concurrency)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workers\tfetches\terrors\tfetches/s\tspeed-up\tcoordinator cores\tworker cores\tsite cores\tworker CPU ms/fetch\t")
	for _, run := range r.Runs {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%.0f\t%.2f\t%.2f\t%.2f\t%.2f\t%.3f\t\n", run.Workers, run.Fetches, run.Errors, run.PerSecond, run.Speedup,
			run.CoordinatorCores, run.WorkerCores, run.ServerCores, run.WorkerCPUPerFetchMS)
	}
	tw.Flush()
	p := r.Persisted
	fmt.Fprintf(w, "persisted: %d results folded, %d fetches in the store, %d pages with text, %d changes logged\n", p.Folded, p.InStore, p.Contents, p.Changes)
}
