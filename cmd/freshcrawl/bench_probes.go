package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/freshcrawl/freshcrawl/internal/bench"
)

func benchProbesCmd() *cobra.Command {
	o := bench.ProbesOptions{Papers: 1000, K: 10, TimeUnit: time.Second, Duration: 3 * time.Minute, Warmup: 20 * time.Second, Seed: 1,
		Policies: []string{"greedy", "naive1", "naive2"}}
	cmd := &cobra.Command{
		Use:   "probes",
		Short: "Content freshness of keyword probes (greedy) against fetch by id (Naive 1, Naive 2), the content-freshness paper §5.2",
		Long: `Runs the real system once per policy, side by side, each against its own copy
of the simulated citation search site (1000 papers, power-law citations that
grow as Poisson processes, ~200 author groups), at the same request budget
of 10 requests per time unit, and prints the content freshness the sim
measured from the values it served (lower is fresher).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := bench.Probes(cmd.Context(), o, cmd.OutOrStdout())
			return err
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.Papers, "papers", o.Papers, "papers on the simulated search site")
	f.IntVar(&o.K, "k", o.K, "results per page")
	f.DurationVar(&o.TimeUnit, "time-unit", o.TimeUnit, "real duration of one time unit")
	f.DurationVar(&o.Duration, "duration", o.Duration, "length of each run")
	f.DurationVar(&o.Warmup, "warmup", o.Warmup, "time left out of the figure")
	f.Uint64Var(&o.Seed, "seed", o.Seed, "random seed of the corpus and the citation processes")
	f.StringSliceVar(&o.Policies, "policies", o.Policies, "policies to run: greedy, naive1, naive2")
	return cmd
}
