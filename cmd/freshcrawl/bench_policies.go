package main

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime/pprof"
	"time"

	"github.com/spf13/cobra"

	"github.com/freshcrawl/freshcrawl/lab/bench"
)

// benchPoliciesCmd is `freshcrawl bench policies`: freshcrawl's revisit
// policy against uniform, proportional, Nutch, StormCrawler and the
// LambdaCrawl family, measured from the truth of the simulated web and
// compared with the oracle at the same number of fetches (docs/design.md §4).
func benchPoliciesCmd() *cobra.Command {
	o := bench.DefaultOptions()
	var mode, workloads, policies, out, cpuProfile string
	var lo bench.LiveOptions
	cmd := &cobra.Command{
		Use:   "policies",
		Short: "Compare revisit policies on simulated webs, against the truth and the oracle",
		Long: `Runs every policy on every workload and reports the true time-averaged
freshness and age after warm-up, fetches, bytes, the 304 share and the ratio to
the oracle (the optimal allocation with the true rates at the same fetch rate).

--mode virtual drives the coordinator's real Scheduler, estimator and policies
on a virtual clock (a simulated day is a day unless --sim-day says otherwise,
and the figures must not depend on it; no HTTP, no NATS), so thousands
of simulated days take seconds. --mode live runs the whole system (embedded
NATS, coordinator, workers, HTTP) against an in-process sim, one policy after
another with the same seed, budget and duration, for --days × --sim-day of
real time each.

Rates and durations are in simulated days. Writes results.csv, series.csv and
one SVG plot of freshness over time per workload into --out.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			wls, err := bench.ParseWorkloads(workloads)
			if err != nil {
				return err
			}
			pols, err := bench.ParsePolicies(policies)
			if err != nil {
				return err
			}
			if mode != "virtual" && mode != "live" {
				return fmt.Errorf("--mode %q: want virtual or live", mode)
			}
			if mode == "live" {
				lo.Log = slog.New(slog.DiscardHandler)
				lo.Day = o.Day
				if lo.Day <= 0 {
					lo.Day = time.Second
				}
			}
			if cpuProfile != "" {
				f, err := createProfile("cpuprofile", cpuProfile)
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
				wl, err := bench.NewWorkload(name, o.Pages, o.Hosts, o.Seed)
				if err != nil {
					return err
				}
				if mode == "live" && workloads == "all" && (wl.After != nil || wl.VirtualOnly) {
					fmt.Fprintf(w, "\n== %s: virtual mode only, skipped\n", name)
					continue
				}
				fmt.Fprintf(w, "\n== %s (%s mode): %s\n", name, mode, wl.Description)
				var rs []bench.Result
				for _, p := range pols {
					var r bench.Result
					if mode == "virtual" {
						r, err = bench.RunVirtual(cmd.Context(), wl, p, o)
					} else {
						r, err = bench.RunLive(cmd.Context(), wl, p, o, lo)
					}
					if err != nil {
						return fmt.Errorf("%s on %s: %w", p, name, err)
					}
					rs = append(rs, r)
				}
				if err := bench.WriteTable(w, rs); err != nil {
					return err
				}
				for _, r := range rs {
					if err := bench.WriteDeciles(w, r); err != nil {
						return err
					}
				}
				title := fmt.Sprintf("%s, %s mode: %d pages, %d hosts, %.0f fetches/day, seed %d", name, mode, rs[0].Pages, rs[0].Hosts, rs[0].FetchesPerDay, o.Seed)
				if err := bench.WriteSVGFile(filepath.Join(out, mode+"-"+name+".svg"), title, rs, o.Warmup); err != nil {
					return err
				}
				all = append(all, rs...)
				// Write as we go, so a long live run leaves its figures.
				if err := bench.WriteCSV(out, all); err != nil {
					return err
				}
			}
			fmt.Fprintf(w, "\nwrote %s\n", filepath.Join(out, "results.csv"))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&mode, "mode", "virtual", "virtual (discrete-event, virtual clock) or live (the real system against the sim)")
	f.StringVar(&workloads, "workload", "all", "comma-separated workloads: table6, heavytail, weighted, drift, hostbound, nolm, lm-mixed, coldstart (virtual only)")
	f.StringVar(&policies, "policy", "all", "comma-separated policies: optimal, uniform, proportional, nutch, stormcrawler, binarylambdacrawl, lambdacrawl")
	f.StringVar(&out, "out", "bench-out", "directory for results.csv, series.csv and the SVG plots")
	f.IntVar(&o.Pages, "pages", o.Pages, "simulated pages")
	f.IntVar(&o.Hosts, "hosts", o.Hosts, "simulated hosts (127.0.0.2, ... in live mode)")
	f.Uint64Var(&o.Seed, "seed", o.Seed, "seed of the change processes and workloads")
	f.Float64Var(&o.Days, "days", o.Days, "length of each run in simulated days")
	f.Float64Var(&o.Warmup, "warmup", o.Warmup, "simulated days left out of the figures")
	f.Float64Var(&o.Budget, "budget", o.Budget, "fetches per simulated day (0: pages/30, every page once a month as in Cho & Garcia-Molina Table 6)")
	f.Float64Var(&o.HostRate, "host-rate", o.HostRate, "most fetches per simulated day of one host (0: 10x a host's uniform share)")
	f.Float64Var(&o.PriorRate, "prior-rate", o.PriorRate, "coordinator option: changes per simulated day assumed for a URL never observed")
	f.Float64Var(&o.HalfLifeDays, "half-life", o.HalfLifeDays, "coordinator option: estimator half-life in simulated days")
	f.BoolVar(&o.TrueRates, "true-rates", false, "diagnostic (virtual mode): feed the scheduler the true rates instead of its estimates")
	f.BoolVar(&o.Deciles, "deciles", false, "diagnostic (virtual mode): print each policy's fetches and freshness by decile of the true rate against the full-budget oracle's")
	f.Float64Var(&o.Explore, "explore", o.Explore, "coordinator option: exploration share for URLs the optimum gives up on")
	f.Float64Var(&o.ReplanDays, "replan", o.ReplanDays, "coordinator option: longest time between plans, in simulated days")
	f.DurationVar(&o.Latency, "latency", o.Latency, "virtual mode: duration of one fetch (0: 200ms for a 24h day, scaled with --sim-day)")
	f.IntVar(&o.ColdStartPages, "coldstart-pages", o.ColdStartPages, "virtual mode: URLs seeded at once in the coldstart workload")
	f.DurationVar(&o.Day, "sim-day", 0, "duration of one simulated day: real time in live mode (0: 1s), virtual time in virtual mode (0: 24h)")
	f.IntVar(&lo.Workers, "workers", 2, "live mode: in-process workers")
	f.IntVar(&lo.Concurrency, "concurrency", 8, "live mode: fetches at once per worker")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	return cmd
}
