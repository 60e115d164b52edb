package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/freshcrawl/freshcrawl/lab/bench"
)

func benchProbesCmd() *cobra.Command {
	o := bench.ProbesOptions{Papers: 1000, K: 10, TimeUnit: time.Second, Seed: 1,
		Policies: []string{"greedy", "naive1", "naive2"}, Absent: 0.02, Renamed: 0.05,
		Duration: 3 * time.Minute, Warmup: 20 * time.Second,
		Units: 1000, WarmupUnits: 100, Steps: 200, Alpha: 20}
	var mode, out string
	cmd := &cobra.Command{
		Use:   "probes",
		Short: "Content freshness of keyword probes (greedy) against fetch by id (Naive 1, Naive 2), the content-freshness paper §5.2",
		Long: `Runs each policy against its own copy of the simulated citation search site
(1000 papers with power-law citations that grow as Poisson processes, ~200
author groups; 2% of the listed papers absent from the site and 5% listed under
an older title), at the same request budget of 10 requests per time unit, with
the source's default planner settings, and prints the content freshness the
sim measured from the values it served (lower is fresher).

--mode virtual (the default) drives the real Prober, result-page parser and the
sim's search pages in process on a virtual clock, --units time units long, so
the rate estimates leave their prior as the paper's Naive 2 needs; it adds a
greedy run with the §4.4 interval search at --alpha, compares each round's
model content freshness with the truth, and with --out writes the content
freshness over time (the paper's Figure 2) as an SVG and every round as CSV.
--mode live runs the whole system (embedded NATS, coordinator, worker, HTTP)
for --duration in real time.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch mode {
			case "live":
				_, err := bench.Probes(cmd.Context(), o, cmd.OutOrStdout())
				return err
			case "virtual":
			default:
				return fmt.Errorf("--mode %q: want virtual or live", mode)
			}
			if !(o.WarmupUnits >= 0 && o.WarmupUnits < o.Units) {
				return fmt.Errorf("--warmup-units %v: must be in [0, --units %v)", o.WarmupUnits, o.Units)
			}
			rs, err := bench.ProbesVirtual(cmd.Context(), o, cmd.OutOrStdout())
			if err != nil || out == "" {
				return err
			}
			title := fmt.Sprintf("content freshness over time: %d papers, K=%d, 10 requests per time unit, seed %d", o.Papers, o.K, o.Seed)
			svg := filepath.Join(out, "probes-figure2.svg")
			if err := bench.WriteProbesSVGFile(svg, title, rs, o.WarmupUnits); err != nil {
				return err
			}
			csvPath := filepath.Join(out, "probes-rounds.csv")
			f, err := os.Create(csvPath)
			if err != nil {
				return fmt.Errorf("rounds: %w", err)
			}
			if err := bench.WriteRoundsCSV(f, rs); err != nil {
				f.Close()
				return err
			}
			if err := f.Close(); err != nil {
				return fmt.Errorf("rounds: %w", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s and %s\n", svg, csvPath)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&mode, "mode", "virtual", "virtual (in process, virtual clock) or live (the whole system, real time)")
	f.IntVar(&o.Papers, "papers", o.Papers, "papers on the simulated search site")
	f.IntVar(&o.K, "k", o.K, "results per page")
	f.DurationVar(&o.TimeUnit, "time-unit", o.TimeUnit, "real duration of one time unit")
	f.Uint64Var(&o.Seed, "seed", o.Seed, "random seed of the corpus and the citation processes")
	f.StringSliceVar(&o.Policies, "policies", o.Policies, "policies to run: greedy, naive1, naive2")
	f.Float64Var(&o.Absent, "absent", o.Absent, "share of the listed papers the site does not have")
	f.Float64Var(&o.Renamed, "renamed", o.Renamed, "share of the listed papers the site shows under a new title")
	f.Float64Var(&o.Untracked, "untracked", o.Untracked, "share of the site's papers not on the list of tracked papers")
	f.StringVar(&o.Score, "score", "", "override the source's score: per_result or per_request (default: the source's, per_result)")
	f.DurationVar(&o.Duration, "duration", o.Duration, "live mode: length of each run")
	f.DurationVar(&o.Warmup, "warmup", o.Warmup, "live mode: time left out of the figure")
	f.Float64Var(&o.Units, "units", o.Units, "virtual mode: length of each run in time units")
	f.Float64Var(&o.WarmupUnits, "warmup-units", o.WarmupUnits, "virtual mode: time units left out of the figures")
	f.IntVar(&o.Steps, "steps", o.Steps, "virtual mode: points of the content-freshness series")
	f.Float64Var(&o.Alpha, "alpha", o.Alpha, "virtual mode: threshold of the interval search for an extra greedy run (0: none)")
	f.StringVar(&out, "out", "", "virtual mode: directory for probes-figure2.svg and probes-rounds.csv")
	return cmd
}
