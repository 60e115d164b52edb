package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/freshcrawl/freshcrawl/lab/bench"
)

// benchScaleCmd measures the coordinator at millions of URLs end to end:
// seeding, the store's bytes per URL, and a restart.
func benchScaleCmd() *cobra.Command {
	var (
		o      bench.ScaleOptions
		sizes  string
		svg    string
		asJSON bool
		prof   string
	)
	cmd := &cobra.Command{
		Use:   "scale",
		Short: "Seed time, bytes per URL, restart time, schedule memory and re-plan time at millions of URLs",
		Long: `For each of --sizes N, in a temporary directory (--dir):

  - writes a seed file of N realistic URLs (60 to 100 bytes, --hosts hosts of
    Zipf-like sizes) and seeds it into a fresh store, as ` + "`freshcrawl seed FILE`" + ` does;
  - gives --fetched of the URLs the state folds leave (counters, validators,
    a content hash, the estimator's state after a few fetches, a rate and a
    schedule), written through the fold's store calls;
  - reports the store file's bytes per URL as written and after a compacted
    copy, and the bytes of every bucket;
  - restarts a coordinator on it: opens the store, loads every URL into the
    schedule (as Run does) and plans once; reports each step, the schedule's
    live heap per URL, and the time of a second plan.

The directory is removed after each size, unless --keep names one to keep
it in: a later run with the same --keep skips the seeding and measures the
restart only (its seed and file columns are then 0). 10 M URLs need about 15 GB of disk.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if o.Sizes, err = parseSizes(sizes); err != nil {
				return err
			}
			o.Progress = progressTo(cmd.ErrOrStderr())
			closeCPU, err := profileFile("cpuprofile", prof, &o.RestartProfile)
			if err != nil {
				return err
			}
			defer closeCPU()
			res, err := bench.RunScale(cmd.Context(), o)
			if err != nil {
				return err
			}
			if svg != "" {
				if err := bench.WriteScaleSVG(svg, res); err != nil {
					return err
				}
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), res)
			}
			printScale(cmd.OutOrStdout(), res)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&sizes, "sizes", "1000000,3000000,10000000", "comma-separated URL counts")
	f.IntVar(&o.Hosts, "hosts", 10000, "hosts the URLs are spread over")
	f.Float64Var(&o.FetchedShare, "fetched", 0.5, "share of the URLs given a fetched state (negative: none)")
	f.BoolVar(&o.NoCompact, "no-compact", false, "skip the compacted copy (it needs as much disk again)")
	f.StringVar(&o.TempDir, "dir", "", "where the seed file and data directory go (default the system's temporary directory)")
	f.StringVar(&o.KeepDir, "keep", "", "keep each size's seeded store in this directory (DIR/N); a later run with the same --keep measures the restart only")
	f.StringVar(&svg, "svg", "", "also plot cost against N into this SVG file")
	f.Uint64Var(&o.Seed, "seed", 1, "random seed of the generated URLs")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON")
	f.StringVar(&prof, "cpuprofile", "", "write a CPU profile of the restart (open, load, first plan) to this file; needs one size")
	f.SortFlags = false
	return cmd
}

func printScale(w io.Writer, r bench.ScaleReport) {
	m := r.Machine
	fmt.Fprintf(w, "%s %s/%s, %d CPUs, load %s, %s\n\n", m.GoVersion, m.OS, m.Arch, m.CPUs, m.LoadAvg, m.Date.Format(time.RFC3339))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "URLs\tfetched\tseed s\t(CPU s)\tfile B/URL\tcompact B/URL\topen s\tload s\t(CPU s)\tfirst plan s\t(CPU s)\trestart s\t(CPU s)\tschedule B/URL\tre-plan s\t(CPU s)\t")
	for _, s := range r.Sizes {
		fmt.Fprintf(tw, "%d\t%d\t%.1f\t%.1f\t%.0f\t%.0f\t%.2f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.0f\t%.1f\t%.1f\t\n", s.URLs, s.Fetched, s.SeedSeconds, s.SeedCPUSeconds,
			s.FileBytesPerURL, s.CompactBytesPerURL, s.OpenSeconds, s.LoadSeconds, s.LoadCPUSeconds, s.FirstPlanSeconds, s.FirstPlanCPUSeconds, s.RestartSeconds, s.RestartCPUSeconds, s.SchedulerBytesPerURL, s.ReplanSeconds, s.ReplanCPUSeconds)
	}
	tw.Flush()
	for _, s := range r.Sizes {
		if s.PlanError != "" {
			fmt.Fprintf(w, "%d URLs: planning failed: %s\n", s.URLs, s.PlanError)
		}
	}
	for _, s := range r.Sizes {
		fmt.Fprintf(w, "\n%d URLs, bytes per URL by bucket (pages / in use):", s.URLs)
		for _, b := range s.Buckets {
			if b.Keys > 0 && b.Bytes*100 >= int64(s.URLs) {
				fmt.Fprintf(w, " %s %.0f/%.0f", b.Name, float64(b.Bytes)/float64(s.URLs), float64(b.InUse)/float64(s.URLs))
			}
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "\npeak RSS %.2f GiB\n", float64(r.MaxRSS)/(1<<30))
}
