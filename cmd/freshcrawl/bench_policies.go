package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"runtime/pprof"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/freshcrawl/freshcrawl/lab/bench"
	"github.com/freshcrawl/freshcrawl/lab/sim"
)

// benchPoliciesCmd is `freshcrawl bench policies`: freshcrawl's revisit
// policy against uniform, proportional, Nutch, StormCrawler and the
// LambdaCrawl family, measured from the truth of the simulated web and
// compared with the oracle at the same number of fetches (docs/design.md §4).
func benchPoliciesCmd() *cobra.Command {
	b := benchPoliciesFlags{o: bench.DefaultOptions()}
	cmd := &cobra.Command{
		Use:   "policies",
		Short: "Compare revisit policies on simulated webs, against the truth and the oracle",
		Long:  benchPoliciesLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return benchPolicies(cmd, &b)
		},
	}
	b.register(cmd.Flags())
	return cmd
}

const benchPoliciesLong = `Runs every policy on every workload and reports the true time-averaged
freshness and age after warm-up, fetches, bytes, the 304 share and the ratio to
the oracle (the optimal allocation with the true rates at the same fetch rate).

--mode virtual drives the coordinator's real Scheduler, estimator and policies
on a virtual clock (a simulated day is a day unless --sim-day says otherwise,
and the figures must not depend on it; no HTTP, no NATS), so thousands
of simulated days take seconds. --mode live runs the whole system (embedded
NATS, coordinator, workers, HTTP) against an in-process sim, one policy after
another with the same seed, budget and duration, for --days × --sim-day of
real time each.

Each table also gives the signal oracle: a crawler told of every change as it
happens, refetching the changed pages as the budget allows, the slowest-changing
first. For the workloads whose pages' rates change (bursty, webhist, ...), the
oracle's true rate of a page is its mean rate over the measured window.

--every 30,140,500 runs every workload and policy at each budget given as
"every page once in D simulated days on average" (budget = pages / D).

Rates and durations are in simulated days. Writes results.csv, series.csv and
one SVG plot of freshness over time per workload and budget into --out.`

// benchPoliciesFlags holds the flags of bench policies.
type benchPoliciesFlags struct {
	o                                                   bench.Options
	lo                                                  bench.LiveOptions
	mode, workloads, policies, out, cpuProfile, sitemap string
	every                                               []float64
}

// register adds the flags to fs, with b.o's values as the defaults.
func (b *benchPoliciesFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&b.mode, "mode", "virtual", "virtual (discrete-event, virtual clock) or live (the real system against the sim)")
	fs.StringVar(&b.workloads, "workload", "all", "comma-separated workloads: table6, heavytail, weighted, drift, hostbound, nolm, lm-mixed, coldstart (virtual only), bursty, clustered, groups, webhist, mixed-hist")
	fs.StringVar(&b.policies, "policy", "all", "comma-separated policies: optimal, uniform, proportional, nutch, stormcrawler, binarylambdacrawl, lambdacrawl")
	fs.StringVar(&b.out, "out", "bench-out", "directory for results.csv, series.csv and the SVG plots")
	fs.IntVar(&b.o.Pages, "pages", b.o.Pages, "simulated pages")
	fs.IntVar(&b.o.Hosts, "hosts", b.o.Hosts, "simulated hosts (127.0.0.2, ... in live mode)")
	fs.Uint64Var(&b.o.Seed, "seed", b.o.Seed, "seed of the change processes and workloads")
	fs.Float64Var(&b.o.Days, "days", b.o.Days, "length of each run in simulated days")
	fs.Float64Var(&b.o.Warmup, "warmup", b.o.Warmup, "simulated days left out of the figures")
	fs.Float64Var(&b.o.Budget, "budget", b.o.Budget, "fetches per simulated day (0: pages/30, every page once a month as in Cho & Garcia-Molina Table 6)")
	fs.Float64SliceVar(&b.every, "every", nil, "comma-separated budgets as every page once in D simulated days (budget = pages/D), one run each; instead of --budget")
	fs.Float64Var(&b.o.HostRate, "host-rate", b.o.HostRate, "most fetches per simulated day of one host (0: 10x a host's uniform share)")
	fs.Float64Var(&b.o.PriorRate, "prior-rate", b.o.PriorRate, "coordinator option: changes per simulated day assumed for a URL never observed")
	fs.Float64Var(&b.o.HalfLifeDays, "half-life", b.o.HalfLifeDays, "coordinator option: estimator half-life in simulated days")
	fs.StringVar(&b.sitemap, "sitemap", "absent", "virtual mode: what every host's sitemap says of its pages, fetched as the coordinator fetches sitemaps: absent, accurate, late, partial, lying-now or stale")
	fs.BoolVar(&b.o.NoCoChange, "no-co-change", false, "diagnostic (virtual mode): turn off the scheduler's ties between pages that change together")
	fs.BoolVar(&b.o.TrueRates, "true-rates", false, "diagnostic (virtual mode): feed the scheduler the true rates instead of its estimates")
	fs.BoolVar(&b.o.Deciles, "deciles", false, "diagnostic (virtual mode): print each policy's fetches and freshness by decile of the true rate against the full-budget oracle's")
	fs.Float64Var(&b.o.Explore, "explore", b.o.Explore, "coordinator option: exploration share for URLs the optimum gives up on")
	fs.Float64Var(&b.o.ReplanDays, "replan", b.o.ReplanDays, "coordinator option: longest time between plans, in simulated days")
	fs.DurationVar(&b.o.Latency, "latency", b.o.Latency, "virtual mode: duration of one fetch (0: 200ms for a 24h day, scaled with --sim-day)")
	fs.IntVar(&b.o.ColdStartPages, "coldstart-pages", b.o.ColdStartPages, "virtual mode: URLs seeded at once in the coldstart workload")
	fs.DurationVar(&b.o.Day, "sim-day", 0, "duration of one simulated day: real time in live mode (0: 1s), virtual time in virtual mode (0: 24h)")
	fs.IntVar(&b.lo.Workers, "workers", 2, "live mode: in-process workers")
	fs.IntVar(&b.lo.Concurrency, "concurrency", 8, "live mode: fetches at once per worker")
	fs.StringVar(&b.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
}

// benchPolicies runs every policy the flags name on every workload they
// name, printing each workload's table and writing the figures as it goes.
func benchPolicies(cmd *cobra.Command, b *benchPoliciesFlags) error {
	sm, err := sim.ParseSitemapMode(b.sitemap)
	if err != nil {
		return fmt.Errorf("--sitemap: %w", err)
	}
	b.o.Sitemap = sm
	wls, err := bench.ParseWorkloads(b.workloads)
	if err != nil {
		return err
	}
	pols, err := bench.ParsePolicies(b.policies)
	if err != nil {
		return err
	}
	if b.mode != "virtual" && b.mode != "live" {
		return fmt.Errorf("--mode %q: want virtual or live", b.mode)
	}
	if b.mode == "live" {
		b.lo.Log = slog.New(slog.DiscardHandler)
		b.lo.Day = b.o.Day
		if b.lo.Day <= 0 {
			b.lo.Day = time.Second
		}
	}
	if b.cpuProfile != "" {
		f, err := createProfile("cpuprofile", b.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	w := cmd.OutOrStdout()
	var all []bench.Result
	for _, name := range wls {
		wl, err := bench.NewWorkload(name, b.o.Pages, b.o.Hosts, b.o.Seed)
		if err != nil {
			return err
		}
		if b.mode == "live" && b.workloads == "all" && (wl.After != nil || wl.VirtualOnly) {
			fmt.Fprintf(w, "\n== %s: virtual mode only, skipped\n", name)
			continue
		}
		if st, ok, err := bench.WorkloadHistory(wl, b.o); err != nil {
			return err
		} else if ok {
			fmt.Fprintf(w, "\n%s ", name)
			if err := bench.WriteHistoryStats(w, st); err != nil {
				return err
			}
		}
		for _, every := range b.budgets() {
			o := b.o
			o.Every = every
			rs, err := b.workload(cmd.Context(), w, name, wl, pols, o)
			if err != nil {
				return err
			}
			all = append(all, rs...)
			// Write as we go, so a long live run leaves its figures.
			if err := bench.WriteCSV(b.out, all); err != nil {
				return err
			}
		}
	}
	fmt.Fprintf(w, "\nwrote %s\n", filepath.Join(b.out, "results.csv"))
	return nil
}

// budgets are the --every values, or one run at --budget.
func (b *benchPoliciesFlags) budgets() []float64 {
	if len(b.every) == 0 {
		return []float64{0}
	}
	return b.every
}

// workload runs every policy of pols on the workload wl, named name, with
// the options o, prints its table and deciles to w and writes its plot.
func (b *benchPoliciesFlags) workload(ctx context.Context, w io.Writer, name string, wl bench.Workload, pols []string, o bench.Options) ([]bench.Result, error) {
	at := ""
	if o.Every > 0 {
		at = fmt.Sprintf(", every page once in %g days", o.Every)
	}
	fmt.Fprintf(w, "\n== %s (%s mode%s): %s\n", name, b.mode, at, wl.Description)
	var rs []bench.Result
	for _, p := range pols {
		var r bench.Result
		var err error
		if b.mode == "virtual" {
			r, err = bench.RunVirtual(ctx, wl, p, o)
		} else {
			r, err = bench.RunLive(ctx, wl, p, o, b.lo)
		}
		if err != nil {
			return nil, fmt.Errorf("%s on %s: %w", p, name, err)
		}
		rs = append(rs, r)
	}
	bench.AddUniformRatios(rs)
	if err := bench.WriteTable(w, rs); err != nil {
		return nil, err
	}
	for _, r := range rs {
		if err := bench.WriteDeciles(w, r); err != nil {
			return nil, err
		}
	}
	title := fmt.Sprintf("%s, %s mode: %d pages, %d hosts, %.0f fetches/day, seed %d", name, b.mode, rs[0].Pages, rs[0].Hosts, rs[0].FetchesPerDay, o.Seed)
	file := b.mode + "-" + name
	if o.Every > 0 {
		file += fmt.Sprintf("-every%g", o.Every)
	}
	if err := bench.WriteSVGFile(filepath.Join(b.out, file+".svg"), title, rs, o.Warmup); err != nil {
		return nil, err
	}
	return rs, nil
}
