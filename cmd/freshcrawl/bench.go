package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
)

func benchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure freshcrawl: revisit policies against the truth, pipeline throughput, scheduler scale",
		Long: `Benchmarks that measure from the truth of the simulated web (what its pages
really were when), never from freshcrawl's own model: revisit policies against
their peers and the oracle, pipeline throughput against Colly, the
coordinator's ceiling against the raw JetStream work queue, worker scale-out,
scheduler scale, change recall of capture mode, and content freshness of
keyword probes.
docs/benchmarks.md holds the latest figures and the exact commands.`,
	}
	cmd.AddCommand(benchPoliciesCmd(), benchThroughputCmd(), benchScheduleCmd(), benchScaleCmd(), benchCaptureCmd(), benchProbesCmd(), benchSoakCmd(),
		benchCeilingCmd(), benchScaleOutCmd(), benchFaultsCmd())
	return cmd
}

// progressTo is the progress callback of the long benches: a line on w,
// stamped with the time of day.
func progressTo(w io.Writer) func(format string, args ...any) {
	return func(format string, args ...any) {
		fmt.Fprintf(w, "%s  "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
	}
}

// profileFile creates the file a bench's profile flag names, if any, and
// points dst at it; the returned func closes it.
func profileFile(flag, path string, dst *io.Writer) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := createProfile(flag, path)
	if err != nil {
		return nil, err
	}
	*dst = f
	return func() { f.Close() }, nil
}

// profileFiles opens the files of a bench's --cpuprofile and
// --allocprofile (either may be empty) into cpu and alloc; the returned
// function closes both.
func profileFiles(cpuPath, allocPath string, cpu, alloc *io.Writer) (func(), error) {
	closeCPU, err := profileFile("cpuprofile", cpuPath, cpu)
	if err != nil {
		return nil, err
	}
	closeAlloc, err := profileFile("allocprofile", allocPath, alloc)
	if err != nil {
		closeCPU()
		return nil, err
	}
	return func() { closeAlloc(); closeCPU() }, nil
}

// createProfile creates the file a bench's --cpuprofile or --allocprofile
// names; the error names the flag.
func createProfile(flag, path string) (*os.File, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--%s: %w", flag, err)
	}
	return f, nil
}
