package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/freshcrawl/freshcrawl/internal/failpoint"
	"github.com/freshcrawl/freshcrawl/lab/faults"
)

func benchFaultsCmd() *cobra.Command {
	var (
		caseList, dir string
		reps          int
		hosts, pages  int
		keep          bool
	)
	cmd := &cobra.Command{
		Use:   "faults",
		Short: "Inject faults into a crawl on a 3-node NATS cluster and check that nothing is lost",
		Long: `Run a crawl of a simulated web by a coordinator and 3 workers, each a separate
process of this binary, on a 3-node NATS JetStream cluster (three more
processes, streams at R3), and inject faults one at a time: ` + strings.Join(faults.Cases(), ", ") + `.
Processes are killed with SIGKILL. After each fault the crawl is stopped cleanly
and checked against the sim's own request log and the store: every task
dispatched is folded exactly once, recorded failed or still queued; no fold is
applied twice; the requests served and never folded were all made by a process
the fault hit (each costs a refetch); every URL is fetched again; the store
checks sound. The table gives per fault the repetitions, tasks lost, duplicated
folds and the time to recover. disk-full mounts a 24 MiB tmpfs for the store
and needs root; without it the case is skipped.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			bin, err := os.Executable()
			if err != nil {
				return err
			}
			if dir == "" {
				if dir, err = os.MkdirTemp("", "freshcrawl-faults-"); err != nil {
					return err
				}
				if !keep {
					defer os.RemoveAll(dir)
				}
			}
			var names []string
			if caseList != "" && caseList != "all" {
				names = strings.Split(caseList, ",")
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "fault suite in %s (process logs there)\n", dir)
			res, err := faults.Run(cmd.Context(), faults.Options{Binary: bin, Failpoints: failpoint.Enabled, Dir: dir, Cases: names, Reps: reps, Hosts: hosts, Pages: pages, Progress: cmd.ErrOrStderr()})
			if err != nil {
				return err
			}
			if err := faults.WriteTable(cmd.OutOrStdout(), res); err != nil {
				return err
			}
			for _, r := range res {
				if !r.OK() && !r.Skipped {
					return errors.New("the invariant did not hold: see the table")
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&caseList, "cases", "all", "comma-separated fault cases: "+strings.Join(faults.Cases(), ", "))
	f.IntVar(&reps, "reps", 3, "repetitions of each case")
	f.IntVar(&hosts, "hosts", 4, "simulated hosts")
	f.IntVar(&pages, "pages", 40, "simulated pages")
	f.StringVar(&dir, "dir", "", "working directory (default: a temporary one, removed unless --keep)")
	f.BoolVar(&keep, "keep", false, "keep the working directory")
	return cmd
}
