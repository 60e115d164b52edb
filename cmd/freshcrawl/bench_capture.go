package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/freshcrawl/freshcrawl/internal/bench"
)

func benchCaptureCmd() *cobra.Command {
	o := bench.CaptureOptions{Pages: 10, Period: 60 * time.Second, Phases: []time.Duration{5 * time.Second, 15 * time.Second},
		Jitter: time.Second, Polls: 2, Duration: 15 * time.Minute, Warmup: 7 * time.Minute, Seed: 1}
	cmd := &cobra.Command{
		Use:   "capture",
		Short: "Change recall of capture mode (Ashish, Kulkarni & Wang) against uniform polling, measured on the sim",
		Long: `Runs two crawlers side by side on simulated pages that update at fixed
phases of a period with jitter: one learns the phases and polls just after
them, the other polls uniformly at fixed phases with the same number of
polls. Change recall (versions captured / versions published) comes from
the sim's truth after the warm-up, during which the first crawler learns.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := bench.Capture(cmd.Context(), o, cmd.OutOrStdout())
			return err
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.Pages, "pages", o.Pages, "capture pages on the sim")
	f.DurationVar(&o.Period, "period", o.Period, "period of the pages' rhythm")
	f.DurationSliceVar(&o.Phases, "phases", o.Phases, "update phases within the period")
	f.DurationVar(&o.Jitter, "jitter", o.Jitter, "uniform jitter around each phase")
	f.IntVar(&o.Polls, "polls", o.Polls, "polls per period")
	f.DurationVar(&o.Duration, "duration", o.Duration, "length of the run")
	f.DurationVar(&o.Warmup, "warmup", o.Warmup, "time left out of the recall figure while phases are learnt")
	f.Uint64Var(&o.Seed, "seed", o.Seed, "random seed of the sim")
	return cmd
}
