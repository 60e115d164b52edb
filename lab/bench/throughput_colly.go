package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// collyDir is where the collybench module lives in the repository.
const collyDir = "tools/collybench"

// FindCollyDir looks for tools/collybench/go.mod in dir and its parents, so
// the benchmark finds the tool from anywhere inside the repository.
func FindCollyDir(dir string) (string, error) {
	d, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("find %s: %w", collyDir, err)
	}
	for {
		cand := filepath.Join(d, filepath.FromSlash(collyDir))
		if _, err := os.Stat(filepath.Join(cand, "go.mod")); err == nil {
			return cand, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("no %s/go.mod in %s or its parents: run from the repository or pass --colly-bin", collyDir, dir)
		}
		d = parent
	}
}

// BuildColly builds the collybench module in dir into outDir with the go
// tool and returns the binary's path. Colly stays in that nested module:
// it is never a dependency of the freshcrawl binary.
func BuildColly(ctx context.Context, dir, outDir string) (string, error) {
	bin := filepath.Join(outDir, "collybench")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build %s: %w: %s", dir, err, strings.TrimSpace(stderr.String()))
	}
	return bin, nil
}

// runColly runs collybench on pages at freshcrawl's total concurrency and
// reads its JSON report.
func runColly(ctx context.Context, o ThroughputOptions, pages []string) (RunStats, error) {
	conc := o.Workers * o.Concurrency
	f, err := os.CreateTemp(o.TempDir, "collybench-urls-*.txt")
	if err != nil {
		return RunStats{}, fmt.Errorf("colly: URL list: %w", err)
	}
	defer os.Remove(f.Name())
	_, werr := f.WriteString(strings.Join(pages, "\n") + "\n")
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return RunStats{}, fmt.Errorf("colly: write URL list: %w", werr)
	}
	o.Progress("colly: concurrency %d, %d pages; warming up %s, measuring %s", conc, len(pages), o.Warmup, o.Duration)
	cmd := exec.CommandContext(ctx, o.CollyBin, "-urls", f.Name(), "-concurrency", strconv.Itoa(conc),
		"-warmup", o.Warmup.String(), "-duration", o.Duration.String())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		return RunStats{}, fmt.Errorf("colly: start %s: %w", o.CollyBin, err)
	}
	// The page server's CPU over the same window, measured from outside:
	// sampled when collybench starts measuring (after its warm-up) and
	// when it exits.
	var srv0 time.Duration
	var srvOK bool
	if o.ServerPID > 0 && sleepOrDone(ctx, o.Warmup) {
		srv0, srvOK = procCPU(o.ServerPID)
	}
	err = cmd.Wait()
	srv1, _ := procCPU(o.ServerPID)
	if err != nil {
		return RunStats{}, fmt.Errorf("colly: %s: %w: %s", o.CollyBin, err, strings.TrimSpace(stderr.String()))
	}
	var st RunStats
	if err := json.Unmarshal(stdout.Bytes(), &st); err != nil {
		return RunStats{}, fmt.Errorf("colly: decode report %q: %w", stdout.String(), err)
	}
	if st.Fetches == 0 {
		return st, errors.New("colly: fetched nothing")
	}
	if srvOK {
		st.ServerCPUPerFetchMS = (srv1 - srv0).Seconds() * 1000 / float64(st.Fetches)
	}
	o.Progress("colly: %.0f fetches/s", st.PerSecond)
	return st, nil
}
