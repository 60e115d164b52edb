package main

import "github.com/spf13/cobra"

func benchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure freshcrawl: revisit policies against the truth, pipeline throughput, scheduler scale",
		Long: `Benchmarks that measure from the truth of the simulated web (DESIGN.md §4),
never from freshcrawl's own model. docs/benchmarks.md holds the latest figures
and the exact commands.`,
	}
	cmd.AddCommand(benchPoliciesCmd(), benchThroughputCmd(), benchScheduleCmd(), benchCaptureCmd(), benchProbesCmd())
	return cmd
}
