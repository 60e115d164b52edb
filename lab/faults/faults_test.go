package faults

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/freshcrawl/freshcrawl/internal/testutil"
)

// buildBinary builds the freshcrawl binary the processes run, with its
// failpoints.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "freshcrawl")
	// The go command running the test, else the one on PATH.
	goTool := "go"
	if p, err := exec.LookPath(filepath.Join(os.Getenv("GOROOT"), "bin", "go")); err == nil && os.Getenv("GOROOT") != "" {
		goTool = p
	}
	cmd := exec.Command(goTool, "build", "-tags", "failpoints", "-o", bin, "github.com/freshcrawl/freshcrawl/cmd/freshcrawl")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out.String())
	}
	return bin
}

// The short cases of the fault suite on a real 3-node cluster of separate
// processes: a worker killed mid-fetch, the coordinator killed between a
// fold's commit and its acks, the NATS node leading the task stream
// killed. After each, nothing is lost, nothing folded twice, every URL is
// fetched again and the store checks sound. `freshcrawl bench faults`
// runs every case with repetitions.
func TestFaultSuiteShortCases(t *testing.T) {
	testutil.Slow(t)
	names := []string{"worker-mid-fetch", "coordinator-after-commit", "stream-leader"}
	if testing.Short() {
		names = names[:1]
	}
	bin := buildBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	dir := t.TempDir()
	res, err := Run(ctx, Options{Binary: bin, Failpoints: true, Dir: dir, Cases: names, Progress: &progress})
	t.Log("\n" + progress.String())
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	if err := WriteTable(&table, res); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + table.String())
	if len(res) != len(names) {
		t.Fatalf("%d results for %d cases", len(res), len(names))
	}
	for _, r := range res {
		if r.Reps != 1 || len(r.Recover) != 1 {
			t.Errorf("%s: %d repetitions, %d recoveries measured; want 1 and 1", r.Case, r.Reps, len(r.Recover))
		}
		if !r.OK() {
			t.Errorf("%s: lost %d, duplicated %d, unexplained %d, URLs missing %d, err %v (logs in %s)", r.Case, r.Lost, r.Duplicated, r.Unexplained, r.Missing, r.Err, dir)
		}
	}
	if r := res[0]; r.Unfolded == 0 {
		// The worker was killed holding a task mid-fetch (responses take
		// 150 ms): its request was served and never folded.
		t.Logf("worker-mid-fetch: the killed worker's requests were all folded (it was between fetches)")
	}
}
