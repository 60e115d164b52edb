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

	"github.com/freshcrawl/freshcrawl/config"
	"github.com/freshcrawl/freshcrawl/lab/bench"
)

// benchSoakCmd crawls the simulated web for a long time at a steady rate
// and reports whether memory, goroutines, open files, fold latency and the
// store stay flat.
func benchSoakCmd() *cobra.Command {
	var (
		o                         bench.SoakOptions
		budget, hostRate          = config.Rate(200), config.Rate(0)
		asJSON, serveSim          bool
		inProcess                 bool
		logLevel                  string
		keepVersionsFor           time.Duration
		keepChangesFor            time.Duration
		keepFoldMarks             time.Duration
		keepVersions, keepChanges int
	)
	cmd := &cobra.Command{
		Use:   "soak",
		Short: "A long crawl of the simulated web at a steady rate: do memory, goroutines, open files, fold latency and the store stay flat?",
		Long: `Runs the real crawler in this process — embedded NATS, the coordinator, workers,
bbolt in a temporary data directory — against the simulated web (served by a
child process, so that its memory and files are not counted) at --budget
fetches per second for --duration, with the history retention given by the
--keep-* flags. Every --sample it records the process's resident memory,
heap, goroutines and open files, the latency of the changes announced since
the previous sample (from the start of a fetch to its change event, which the
coordinator publishes once the fold has committed), the size of the store and
of the NATS files, and the versions, change-log entries and fold marks in the
store. At the end it prints the slope per hour of each series after --warmup,
and the latency percentiles over every change after it.

A --capture-share of the pages update twice every --capture-period and are
seeded in capture mode, so that versions accrue and --keep-versions has work.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			o.Budget, o.HostRate = budget.PerSecond(), hostRate.PerSecond()
			o.Retention.Versions, o.Retention.VersionsAge = keepVersions, keepVersionsFor
			o.Retention.Changes, o.Retention.ChangesAge = keepChanges, keepChangesFor
			o.Retention.FoldMarksAge = keepFoldMarks
			if serveSim {
				return bench.ServeSoakSim(ctx, o, os.Stdin, cmd.OutOrStdout())
			}
			var lvl slog.Level
			if err := lvl.UnmarshalText([]byte(logLevel)); err != nil {
				return fmt.Errorf("--log-level %q: %w", logLevel, err)
			}
			o.Log = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: lvl}))
			if !inProcess {
				self, err := os.Executable()
				if err != nil {
					return fmt.Errorf("find own binary for the simulated web: %w", err)
				}
				p, site, err := bench.StartSoakSimProcess(ctx, []string{self, "bench", "soak", "--serve-sim",
					"--urls", strconv.Itoa(o.URLs), "--hosts", strconv.Itoa(o.Hosts), "--sim-day", o.Day.String(),
					"--sim-seed", strconv.FormatUint(o.Seed, 10), "--capture-share", strconv.FormatFloat(o.CaptureShare, 'g', -1, 64),
					"--capture-period", o.CapturePeriod.String()})
				if err != nil {
					return err
				}
				defer p.Close()
				o.Site = &site
			}
			out := cmd.ErrOrStderr()
			fmt.Fprintf(out, "%s  soak: %d URLs on %d hosts at %s for %s (warm-up %s), a sample every %s\n",
				time.Now().Format("15:04:05"), o.URLs, o.Hosts, budget, o.Duration, o.Warmup, o.Sample)
			o.OnSample = func(s bench.SoakSample) {
				fmt.Fprintf(out, "%s  %8s  %7.0f fetch/s  rss %6.1f MiB  heap %6.1f MiB  goroutines %5d  files %4d  p99 %7.1f ms (%d)  store %6.1f MiB  nats %5.1f MiB  versions %6d  changes %7d  marks %8d\n",
					time.Now().Format("15:04:05"), s.Elapsed.Round(time.Second), s.FetchRate, mib(s.RSSBytes), mib(int64(s.HeapBytes)),
					s.Goroutines, s.OpenFiles, s.LatencyP99, s.LatencyN, mib(s.StoreBytes), mib(s.NATSBytes), s.Versions, s.ChangeLog, s.FoldMarks)
			}
			tmp, err := os.MkdirTemp("", "freshcrawl-bench-*")
			if err != nil {
				return fmt.Errorf("temporary directory: %w", err)
			}
			defer os.RemoveAll(tmp)
			o.TempDir = tmp
			res, err := bench.RunSoak(ctx, o)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), res)
			}
			printSoak(cmd.OutOrStdout(), res)
			return nil
		},
	}
	f := cmd.Flags()
	f.DurationVar(&o.Duration, "duration", time.Hour, "length of the run")
	f.DurationVar(&o.Warmup, "warmup", 10*time.Minute, "start of the run left out of the slopes and percentiles")
	f.DurationVar(&o.Sample, "sample", time.Minute, "time between samples")
	f.IntVar(&o.URLs, "urls", 10000, "simulated pages")
	f.IntVar(&o.Hosts, "hosts", 100, "simulated hosts (127.0.0.2, ...; at most 250)")
	f.Var(&budget, "budget", "fetches per unit time")
	f.Var(&hostRate, "host-rate", "most fetches of one host per unit time (default 5 × budget / hosts)")
	f.DurationVar(&o.Day, "sim-day", time.Minute, "real length of a simulated day (pages change at Table 6 rates per simulated day)")
	f.Uint64Var(&o.Seed, "sim-seed", 1, "random seed of the simulated web")
	f.Float64Var(&o.CaptureShare, "capture-share", 0.05, "share of the pages that update at fixed phases and are seeded in capture mode")
	f.DurationVar(&o.CapturePeriod, "capture-period", 2*time.Minute, "period of the capture pages (two updates a period)")
	f.IntVar(&o.CapturePolls, "capture-polls", 4, "polls a period of each capture page")
	f.IntVar(&keepVersions, "keep-versions", 10, "most versions kept per capture URL (0: all)")
	f.DurationVar(&keepVersionsFor, "keep-versions-for", 0, "versions older than this are deleted, but each URL's newest (0: kept forever)")
	f.IntVar(&keepChanges, "keep-changes", 0, "most change-log entries kept (0: all)")
	f.DurationVar(&keepChangesFor, "keep-changes-for", 10*time.Minute, "change-log entries older than this are deleted (0: kept forever)")
	f.DurationVar(&keepFoldMarks, "keep-fold-marks-for", 10*time.Minute, "how long fold marks are kept (at least 5m)")
	f.IntVar(&o.Workers, "workers", 2, "in-process workers")
	f.IntVar(&o.Concurrency, "concurrency", 8, "tasks each worker handles at once")
	f.BoolVar(&inProcess, "in-process-sim", false, "serve the simulated web from this process (its memory and files then count as the crawler's)")
	f.StringVar(&logLevel, "log-level", "error", "the crawler's own log level during the run")
	f.BoolVar(&asJSON, "json", false, "print the result, every sample included, as JSON")
	f.BoolVar(&serveSim, "serve-sim", false, "internal: serve the simulated web until stdin closes")
	_ = f.MarkHidden("serve-sim")
	f.SortFlags = false
	return cmd
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

func printSoak(w io.Writer, r bench.SoakResult) {
	fmt.Fprintf(w, "%s %s/%s, %d CPUs, load %s at the start and %s at the end, %s\n", r.Machine.GoVersion, r.Machine.OS, r.Machine.Arch, r.Machine.CPUs, r.Machine.LoadAvg, r.LoadEnd, r.Machine.Date.Format(time.RFC3339))
	fmt.Fprintf(w, "%d URLs (%d capture) on %d hosts, budget %.0f/s, a simulated day every %s; retention: versions %d / %s, changes %d / %s (0: none), fold marks %s\n",
		r.URLs, r.CaptureURLs, r.Hosts, r.Budget, r.Day, r.Retention.Versions, r.Retention.VersionsAge, r.Retention.Changes, r.Retention.ChangesAge, r.Retention.FoldMarks)
	last := bench.SoakSample{}
	if len(r.Samples) > 0 {
		last = r.Samples[len(r.Samples)-1]
	}
	fmt.Fprintf(w, "%s run: %d fetches folded, %d changes, %d errors; after the %s warm-up %.1f fetches/s\n\n", last.Elapsed.Round(time.Second), last.Fetches, last.Changes, last.Errors, r.Warmup, r.FetchRate)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "after the warm-up\tslope per hour\tmin\tmax\t")
	row := func(name string, t bench.SoakTrend, unit string) {
		fmt.Fprintf(tw, "%s\t%+.2f %s\t%.1f\t%.1f\t\n", name, t.PerHour, unit, t.Min, t.Max)
	}
	row("resident memory (MiB)", r.RSS, "MiB")
	row("heap (MiB)", r.Heap, "MiB")
	row("goroutines", r.Goroutines, "")
	row("open files", r.OpenFiles, "")
	row("latency p99 per sample (ms)", r.P99, "ms")
	row("store file (MiB)", r.Store, "MiB")
	row("NATS files (MiB)", r.NATS, "MiB")
	row("versions stored", r.Versions, "")
	row("change-log entries", r.ChangeLog, "")
	row("fold marks", r.FoldMarks, "")
	tw.Flush()
	fmt.Fprintf(w, "\nchange latency after the warm-up (fetch start → change event after the fold's commit), %d changes: p50 %.1f ms, p99 %.1f ms, max %.1f ms\n", r.LatencyN, r.LatencyP50, r.LatencyP99, r.LatencyMax)
	fmt.Fprintf(w, "history: %d versions captured and %d changes logged over the run; retention deleted %d versions and %d changes\n",
		r.ProducedVersions, r.ProducedChanges, r.Pruned.Versions, r.Pruned.Changes)
}
