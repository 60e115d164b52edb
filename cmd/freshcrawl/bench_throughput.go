package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/freshcrawl/freshcrawl/config"
	"github.com/freshcrawl/freshcrawl/lab/bench"
)

// benchThroughputCmd measures the real pipeline end to end against local
// pages and compares it with Colly on the same pages.
func benchThroughputCmd() *cobra.Command {
	t := throughputFlags{budget: config.Rate(100000), hostRate: config.Rate(1000)}
	cmd := &cobra.Command{
		Use:   "throughput",
		Short: "Fetches per second of the whole pipeline (fetch → extract → diff → publish → bbolt), against Colly",
		Long:  benchThroughputLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return benchThroughput(cmd, &t)
		},
	}
	t.register(cmd.Flags())
	return cmd
}

const benchThroughputLong = `Runs the real pipeline in this process — embedded NATS, the coordinator, N
workers, bbolt in a temporary data directory — against a local site of
20–50 KiB HTML pages on --hosts loopback addresses (127.0.0.2, ...) whose
text changes now and then. After --warmup it measures over --duration the
results folded into the store per second, process CPU seconds per fetch
(getrusage), peak RSS and peak Go heap; then it checks every folded fetch
is in the store.

In the same run Colly (github.com/gocolly/colly/v2, built from the nested
module tools/collybench so it never enters this binary) fetches and parses
the same pages at the same concurrency (workers × concurrency), extracting
the visible text with goquery, and reports the same figures.

The site runs in a child process (this binary in a hidden mode) so that its
CPU is charged to neither crawler; it is reported separately. The
coordinator keeps one task in flight per host, so use at least as many
hosts as concurrent fetches.`

// throughputFlags holds the flags of bench throughput.
type throughputFlags struct {
	o                       bench.ThroughputOptions
	budget, hostRate        config.Rate
	hosts, pagesPerHost     int
	collyDir, collyBin      string
	noColly, asJSON, inProc bool
	servePages              bool
	cpuProfile, logLevel    string
	allocProfile            string
}

// register adds the flags to fs, in the order the help lists them.
func (t *throughputFlags) register(fs *pflag.FlagSet) {
	fs.IntVar(&t.o.Workers, "workers", 4, "in-process workers")
	fs.IntVar(&t.o.Concurrency, "concurrency", 8, "tasks each worker handles at once (Colly gets workers × concurrency)")
	fs.IntVar(&t.hosts, "hosts", 200, "distinct hosts, one loopback address each (127.0.0.2, ...)")
	fs.IntVar(&t.pagesPerHost, "pages-per-host", 5, "pages on each host")
	fs.DurationVar(&t.o.Warmup, "warmup", 5*time.Second, "time before measuring")
	fs.DurationVar(&t.o.Duration, "duration", 20*time.Second, "measurement window")
	fs.Var(&t.budget, "budget", "total fetches per unit time (high, so politeness is not the bottleneck)")
	fs.Var(&t.hostRate, "host-rate", "most fetches of any one host per unit time")
	fs.IntVar(&t.o.MaxInFlight, "max-in-flight", 0, "tasks dispatched and not yet folded (default workers × concurrency × 2)")
	fs.StringVar(&t.o.Policy, "policy", "uniform", "revisit policy: uniform, optimal or proportional")
	fs.StringVar(&t.collyDir, "colly", "", "directory of the collybench module (default: tools/collybench above the working directory)")
	fs.StringVar(&t.collyBin, "colly-bin", "", "prebuilt collybench binary (skips the build)")
	fs.BoolVar(&t.noColly, "no-colly", false, "measure freshcrawl only")
	fs.BoolVar(&t.inProc, "in-process-pages", false, "serve the pages from this process (their CPU then counts as freshcrawl's)")
	fs.StringVar(&t.cpuProfile, "cpuprofile", "", "write a CPU profile of freshcrawl's measurement window to this file")
	fs.StringVar(&t.allocProfile, "allocprofile", "", "write freshcrawl's allocation profile (since start, warm-up included) to this file")
	fs.StringVar(&t.logLevel, "log-level", "error", "freshcrawl's own log level during the run")
	fs.BoolVar(&t.asJSON, "json", false, "print the result as JSON")
	fs.BoolVar(&t.servePages, "serve-pages", false, "internal: serve the pages until stdin closes")
	_ = fs.MarkHidden("serve-pages")
	fs.SortFlags = false
}

// benchThroughput runs the measurement the flags describe and prints it,
// or serves the pages when this process is the page server.
func benchThroughput(cmd *cobra.Command, t *throughputFlags) error {
	ctx := cmd.Context()
	o := &t.o
	site := bench.PageOptions{Hosts: t.hosts, PagesPerHost: t.pagesPerHost, Seed: 1}
	if t.servePages {
		return bench.ServePages(ctx, site, os.Stdin, cmd.OutOrStdout())
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(t.logLevel)); err != nil {
		return fmt.Errorf("--log-level %q: %w", t.logLevel, err)
	}
	o.Log = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: lvl}))
	o.Budget, o.HostRate = t.budget.PerSecond(), t.hostRate.PerSecond()
	o.Site = site
	o.Progress = progressTo(cmd.ErrOrStderr())
	tmp, err := os.MkdirTemp("", "freshcrawl-bench-*")
	if err != nil {
		return fmt.Errorf("temporary directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	o.TempDir = tmp

	if !t.noColly {
		if err := t.colly(ctx, tmp); err != nil {
			return err
		}
	}
	if !t.inProc {
		self, err := os.Executable()
		if err != nil {
			return fmt.Errorf("find own binary for the page server: %w", err)
		}
		pp, err := bench.StartPageProcess(ctx, []string{self, "bench", "throughput", "--serve-pages",
			"--hosts", strconv.Itoa(t.hosts), "--pages-per-host", strconv.Itoa(t.pagesPerHost)})
		if err != nil {
			return err
		}
		defer pp.Close()
		o.Pages, o.ServerPID = pp.URLs, pp.PID
	}
	closeProfiles, err := profileFiles(t.cpuProfile, t.allocProfile, &o.CPUProfile, &o.AllocProfile)
	if err != nil {
		return err
	}
	defer closeProfiles()
	res, err := bench.RunThroughput(ctx, *o)
	if err != nil {
		return err
	}
	if t.asJSON {
		if err := printJSON(cmd.OutOrStdout(), res); err != nil {
			return err
		}
	} else {
		printThroughput(cmd.OutOrStdout(), res)
	}
	return res.Persisted.Check()
}

// colly sets the collybench binary to run: the one given, or one built
// into tmp from the collybench module.
func (t *throughputFlags) colly(ctx context.Context, tmp string) error {
	if t.collyBin == "" {
		dir := t.collyDir
		if dir == "" {
			var err error
			if dir, err = bench.FindCollyDir("."); err != nil {
				return fmt.Errorf("%w (or --no-colly)", err)
			}
		}
		t.o.Progress("building collybench in %s", dir)
		bin, err := bench.BuildColly(ctx, dir, tmp)
		if err != nil {
			return err
		}
		t.collyBin = bin
	}
	t.o.CollyBin = t.collyBin
	return nil
}

func printThroughput(w io.Writer, r bench.ThroughputResult) {
	fmt.Fprintf(w, "%s %s/%s, %d CPUs, load %s, %s\n", r.Machine.GoVersion, r.Machine.OS, r.Machine.Arch, r.Machine.CPUs, r.Machine.LoadAvg, r.Machine.Date.Format(time.RFC3339))
	fmt.Fprintf(w, "%d pages on %d hosts; freshcrawl %d workers × %d\n\n", r.URLs, r.Hosts, r.Workers, r.Concurrent)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "crawler\tconcurrency\tfetches\terrors\tfetches/s\tCPU ms/fetch\tserver CPU ms/fetch\tmax RSS MiB\tpeak heap MiB\t")
	row := func(s bench.RunStats) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.0f\t%.3f\t%.3f\t%.1f\t%.1f\t\n", s.Name, s.Concurrency, s.Fetches, s.Errors, s.PerSecond,
			s.CPUPerFetchMS, s.ServerCPUPerFetchMS, float64(s.MaxRSSBytes)/(1<<20), float64(s.PeakHeapBytes)/(1<<20))
	}
	row(r.Freshcrawl)
	if r.Colly != nil {
		row(*r.Colly)
	}
	tw.Flush()
	if r.Colly != nil {
		fmt.Fprintf(w, "\nfreshcrawl / Colly: %.2f× the rate, %.2f× the CPU per fetch\n", r.Ratio, r.Freshcrawl.CPUPerFetchMS/max(r.Colly.CPUPerFetchMS, 1e-9))
	}
	p := r.Persisted
	fmt.Fprintf(w, "persisted: %d results folded, %d fetches in the store, %d pages with text, %d changes logged, %d published (%d still queued at stop), store %.1f MiB\n",
		p.Folded, p.InStore, p.Contents, p.Changes, p.Processed, max(p.Processed-p.Folded, 0), float64(p.StoreBytes)/(1<<20))
}
