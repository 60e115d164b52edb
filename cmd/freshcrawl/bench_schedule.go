package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/freshcrawl/freshcrawl/lab/bench"
)

// benchScheduleCmd measures the scheduler at scale: the allocation solve
// for millions of URLs, and what each URL costs on disk and in memory.
func benchScheduleCmd() *cobra.Command {
	var (
		o      bench.ScheduleOptions
		sizes  string
		noWarm bool
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "schedule",
		Short: "Allocation solve time and memory for millions of URLs; bytes per URL in bbolt and in memory",
		Long: `Solves the optimal allocation (alloc.Solve, docs/design.md §3.2) for each of
--sizes URLs — Table-6 change rates jittered log-normally, log-normal
weights, --hosts hosts of Zipf-like sizes, every tenth capped below its
share — and reports wall and CPU time against the target of one second per
million URLs, heap allocated and retained per URL, and a warm re-solve
after 1% of the rates moved.

It then writes --bbolt-n realistic URL records into a temporary store
(batched Upsert, as seeding does) and reports the file's bytes per URL, and
adds --scheduler-n URLs to the coordinator's in-memory Scheduler and reports
its live heap per URL and one re-plan with the optimal policy.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if o.Sizes, err = parseSizes(sizes); err != nil {
				return err
			}
			o.Resolve = !noWarm
			o.Progress = progressTo(cmd.ErrOrStderr())
			res, err := bench.RunSchedule(cmd.Context(), o)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), res)
			}
			printSchedule(cmd.OutOrStdout(), res)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&sizes, "sizes", "1000000,10000000", "comma-separated URL counts to solve for")
	f.IntVar(&o.Hosts, "hosts", 1000, "hosts the URLs are spread over")
	f.BoolVar(&noWarm, "no-resolve", false, "skip the warm re-solve")
	f.IntVar(&o.BboltN, "bbolt-n", 100000, "URL records written to the store (negative: skip)")
	f.IntVar(&o.SchedulerN, "scheduler-n", 1000000, "URLs added to the in-memory scheduler (negative: skip)")
	f.Uint64Var(&o.Seed, "seed", 1, "random seed of the generated problems")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON")
	f.SortFlags = false
	return cmd
}

func printSchedule(w io.Writer, r bench.ScheduleResult) {
	m := r.Machine
	fmt.Fprintf(w, "%s %s/%s, %d CPUs, load %s, %s\n\n", m.GoVersion, m.OS, m.Arch, m.CPUs, m.LoadAvg, m.Date.Format(time.RFC3339))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "URLs\thosts\tcapped\tsolve s\ttarget s\tCPU s\tpasses\tinput B/URL\talloc B/URL\tkept B/URL\twarm re-solve s\t(passes)\tfreshness\t")
	for _, s := range r.Solves {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%.3f\t%.0f\t%.3f\t%d\t%.1f\t%.1f\t%.1f\t%.3f\t%d\t%.3f\t\n", s.URLs, s.Hosts, s.CappedHosts, s.Seconds, s.TargetSeconds, s.CPUSeconds,
			s.Passes, s.ProblemBytesPerURL, s.AllocBytesPerURL, s.RetainedBytesPerURL, s.ResolveSeconds, s.ResolvePasses, s.Freshness)
	}
	tw.Flush()
	if b := r.Bbolt; b != nil {
		fmt.Fprintf(w, "\nbbolt: %d URL records in %.1fs (%.0f/s), file %.1f MiB = %.0f bytes/URL (record %.0f bytes of JSON and key)\n",
			b.URLs, b.Seconds, b.RecordsPerSec, float64(b.FileBytes)/(1<<20), b.BytesPerURL, b.RecordBytes)
	}
	if s := r.Scheduler; s != nil {
		fmt.Fprintf(w, "scheduler: %d URLs on %d hosts added in %.1fs, %.0f bytes/URL in memory (URLs average %.0f bytes); one re-plan %.2fs, allocating %.0f bytes/URL\n",
			s.URLs, s.Hosts, s.AddSeconds, s.BytesPerURL, s.URLLen, s.ReplanSeconds, s.ReplanAllocBytesPerURL)
	}
	fmt.Fprintf(w, "max RSS %.0f MiB\n", float64(r.MaxRSS)/(1<<20))
}

// parseSizes reads the benches' --sizes, comma-separated URL counts.
func parseSizes(list string) ([]int, error) {
	var sizes []int
	for _, s := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("--sizes: %q is not a positive count", s)
		}
		sizes = append(sizes, n)
	}
	return sizes, nil
}
