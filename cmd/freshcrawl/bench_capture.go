package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/freshcrawl/freshcrawl/lab/bench"
)

// captureScenarios are the runs `bench capture --scenarios` can pick.
func captureScenarios() map[string]bench.CaptureScenario {
	return map[string]bench.CaptureScenario{
		// The paper's setting, scaled: Last-Modified, period configured.
		"lm": {Name: "Last-Modified, period configured", Period: time.Minute, Phases: []time.Duration{5 * time.Second, 15 * time.Second},
			Jitter: time.Second, LastModified: true, ConfigurePeriod: true, Polls: 2},
		// A new user's feed: an ETag only, no period given, two updates
		// 5 s apart every 45 s. Until the period is known each page polls
		// once a second.
		"censored": {Name: "no Last-Modified, no period given", Period: 45 * time.Second, Phases: []time.Duration{10 * time.Second, 15 * time.Second},
			Jitter: time.Second, Polls: 2, LearnBudget: 1},
		// The same rhythm as an Atom feed whose items carry their dates.
		"feed": {Name: "Atom feed with item dates, no period given", Period: 45 * time.Second, Phases: []time.Duration{10 * time.Second, 15 * time.Second},
			Jitter: time.Second, Feed: "atom", Polls: 2, LearnBudget: 1},
	}
}

func benchCaptureCmd() *cobra.Command {
	o := bench.CaptureOptions{Pages: 10, MaxLearn: 10, Measure: 10, Seed: 1}
	names := []string{"lm", "censored"}
	cmd := &cobra.Command{
		Use:   "capture",
		Short: "Change recall of capture mode (Ashish, Kulkarni & Wang) against uniform polling, measured on the sim",
		Long: `Runs capture mode on simulated pages that update at fixed phases of a
period with jitter, one crawler per scenario, side by side:

  lm        Last-Modified sent, period configured (1 min, updates at 5 s
            and 15 s ±1 s), 2 polls a period
  censored  ETag only, no period given (45 s, updates at 10 s and 15 s
            ±1 s): the crawler finds the period and the phases from
            "changed since the last poll" alone; 2 polls a period
  feed      as censored, served as an Atom feed whose items are dated

Each page polls while it learns (at most --max-learn periods), then
change recall (versions captured / versions published, from the sim's
truth) is measured over the next --measure periods, with the polls a page
made a period. The baseline is uniform polling with as many polls a
period: its expected recall at a random phase (the mean over phases) and
at the worst phase, computed exactly on the true pattern.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			all := captureScenarios()
			o.Scenarios = nil
			for _, n := range names {
				sc, ok := all[n]
				if !ok {
					return fmt.Errorf("--scenarios: unknown scenario %q (want lm, censored or feed)", n)
				}
				o.Scenarios = append(o.Scenarios, sc)
			}
			_, err := bench.Capture(cmd.Context(), o, cmd.OutOrStdout())
			return err
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&names, "scenarios", names, "scenarios to run: lm, censored, feed")
	f.IntVar(&o.Pages, "pages", o.Pages, "capture pages per scenario (one a host)")
	f.IntVar(&o.MaxLearn, "max-learn", o.MaxLearn, "most periods learning may take")
	f.IntVar(&o.Measure, "measure", o.Measure, "periods the recall is measured over after learning")
	f.Uint64Var(&o.Seed, "seed", o.Seed, "random seed of the sims")
	return cmd
}
