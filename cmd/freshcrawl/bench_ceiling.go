package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/freshcrawl/freshcrawl/lab/bench"
)

// benchCeilingCmd measures how fast the coordinator can go when fetches
// cost nothing, against the embedded JetStream work queue's own rate.
func benchCeilingCmd() *cobra.Command {
	var (
		o              bench.CeilingOptions
		responder      bool
		inProc, asJSON bool
		logLevel       string
		cpuProfile     string
		allocProfile   string
	)
	cmd := &cobra.Command{
		Use:   "ceiling",
		Short: "The coordinator's ceiling: dispatch + fold with no-op fetches, against the raw JetStream work-queue rate",
		Long: `Two measurements, one after the other, on this machine:

1. queue: the embedded NATS JetStream work queue alone — typical tasks
   published to the real task stream, taken from the real workers'
   consumer and acknowledged, as fast as they go (at most 20000 waiting).
2. pipeline: a coordinator (embedded NATS, bbolt in a temporary directory,
   no workers) on --hosts × --pages-per-host synthetic URLs, with a no-op
   responder that answers every task at once (a first version the first
   time, the same version after) the way a worker does: result published,
   then the task acknowledged. It reports the results folded per second and
   the CPU the coordinator process used; the responder runs in a child
   process so its CPU is counted apart. After shutdown every folded result
   must be in the store.

Every task takes two trips through JetStream (the task, then its result),
so the pipeline's ceiling is at most about half the queue's.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			var lvl slog.Level
			if err := lvl.UnmarshalText([]byte(logLevel)); err != nil {
				return fmt.Errorf("--log-level %q: %w", logLevel, err)
			}
			o.Log = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: lvl}))
			if responder {
				if len(args) != 1 {
					return errors.New("--noop-responder needs the NATS URL as its argument")
				}
				ctx, cancel := bench.UntilEOF(ctx, os.Stdin)
				defer cancel()
				return bench.RespondNoop(ctx, args[0], o.Responders, o.Log)
			}
			if len(args) > 0 {
				return fmt.Errorf("unexpected argument %q", args[0])
			}
			o.Progress = progressTo(cmd.ErrOrStderr())
			tmp, err := os.MkdirTemp("", "freshcrawl-bench-*")
			if err != nil {
				return fmt.Errorf("temporary directory: %w", err)
			}
			defer os.RemoveAll(tmp)
			o.TempDir = tmp
			if !inProc {
				self, err := os.Executable()
				if err != nil {
					return fmt.Errorf("find own binary for the responder: %w", err)
				}
				o.Responder = []string{self, "bench", "ceiling", "--noop-responder", "--responders", strconv.Itoa(o.Responders), "--log-level", logLevel}
			}
			closeProfiles, err := profileFiles(cpuProfile, allocProfile, &o.CPUProfile, &o.AllocProfile)
			if err != nil {
				return err
			}
			defer closeProfiles()
			res, err := bench.RunCeiling(ctx, o)
			if err != nil {
				return err
			}
			if asJSON {
				if err := printJSON(cmd.OutOrStdout(), res); err != nil {
					return err
				}
			} else {
				printCeiling(cmd.OutOrStdout(), res)
			}
			return res.Pipeline.Persisted.Check()
		},
	}
	f := cmd.Flags()
	f.DurationVar(&o.Warmup, "warmup", 5*time.Second, "time before each measurement")
	f.DurationVar(&o.Duration, "duration", 15*time.Second, "each measurement window")
	f.IntVar(&o.Hosts, "hosts", 2000, "synthetic hosts (the coordinator keeps one task in flight per host)")
	f.IntVar(&o.PagesPerHost, "pages-per-host", 5, "synthetic URLs per host")
	f.IntVar(&o.MaxInFlight, "max-in-flight", 4096, "tasks dispatched and not yet folded")
	f.IntVar(&o.Responders, "responders", 64, "tasks the no-op responder handles at once")
	f.BoolVar(&inProc, "in-process-responder", false, "run the no-op responder in this process (its CPU then counts as the coordinator's)")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the pipeline measurement window to this file")
	f.StringVar(&allocProfile, "allocprofile", "", "write this process's allocation profile (since start, the queue measurement included) to this file")
	f.StringVar(&logLevel, "log-level", "error", "freshcrawl's own log level during the run")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON")
	f.BoolVar(&responder, "noop-responder", false, "internal: answer tasks at the NATS URL argument until stdin closes")
	_ = f.MarkHidden("noop-responder")
	f.SortFlags = false
	return cmd
}

func printCeiling(w io.Writer, r bench.CeilingResult) {
	fmt.Fprintf(w, "%s %s/%s, %d CPUs, load %s, %s\n\n", r.Machine.GoVersion, r.Machine.OS, r.Machine.Arch, r.Machine.CPUs, r.Machine.LoadAvg, r.Machine.Date.Format(time.RFC3339))
	q := r.Queue
	fmt.Fprintf(w, "queue:    %8.0f tasks/s published + consumed + acked (%d in %.1fs, %d-byte tasks), %.2f cores\n", q.PerSecond, q.Messages, q.Seconds, q.PayloadBytes, q.CPUCores)
	p := r.Pipeline
	fmt.Fprintf(w, "pipeline: %8.0f results/s dispatched + folded (%d in %.1fs, %d URLs on %d hosts), coordinator %.2f cores", p.PerSecond, p.Folded, p.Seconds, p.URLs, p.Hosts, p.CoordinatorCores)
	if p.ResponderCores > 0 {
		fmt.Fprintf(w, ", responder %.2f cores", p.ResponderCores)
	}
	fmt.Fprintf(w, "\nCPU per 1000 results: coordinator %.3f s", p.CoordinatorCPUPer1000)
	if p.ResponderCPUPer1000 > 0 {
		fmt.Fprintf(w, ", responder %.3f s", p.ResponderCPUPer1000)
	}
	fmt.Fprintf(w, "\nallocations per result: coordinator %.0f (%.1f KiB)", p.AllocsPerResult, p.AllocBytesPerResult/1024)
	fmt.Fprintf(w, "\npipeline / queue: %.2f\n", p.PerSecond/max(q.PerSecond, 1e-9))
	fmt.Fprintf(w, "persisted: %d results folded, %d fetches in the store, store %.1f MiB\n", p.Persisted.Folded, p.Persisted.InStore, float64(p.Persisted.StoreBytes)/(1<<20))
}
