// Package faults is the fault suite: a crawl of a simulated web by a
// coordinator and workers, each a separate OS process, on a real 3-node
// NATS JetStream cluster (three processes of the freshcrawl binary's own
// nats-server, streams at R3), into which faults are injected one at a
// time (processes killed with SIGKILL, a worker cut off from NATS, the
// store's disk full). After each, the crawl is stopped cleanly and the
// invariant of docs/design.md §2.3 is checked against the sim's own
// request log and the store:
//
//   - every task dispatched is folded exactly once, recorded failed, or
//     still queued: none is lost;
//   - no fold is applied twice: the fetches the store counts never exceed
//     the page requests the sim served (robots.txt aside), URL by URL;
//   - the requests served and never folded are all the faults' doing (made
//     by a process the fault hit, within its window): each costs a
//     refetch, nothing else;
//   - no URL drops off the schedule: after the recovery every URL is
//     fetched again;
//   - the store passes store.Check.
//
// `go test ./lab/faults` runs a short subset; `freshcrawl bench
// faults` runs them all with repetitions and prints the table.
package faults

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// Options configure a run of the suite.
type Options struct {
	// Binary is the freshcrawl binary the processes run.
	Binary string
	// Failpoints says Binary was built with the build tag failpoints;
	// without, the cases that stop the coordinator at a failpoint are
	// skipped.
	Failpoints bool
	// Dir is the working directory: stores, NATS files, process logs.
	Dir string
	// Cases are the cases to run, by name (Cases); empty: all.
	Cases []string
	// Reps is how many times each case runs (default 1).
	Reps int
	// Hosts and Pages size the simulated web (default 4 and 40).
	Hosts, Pages int
	// Progress receives a line per step (default: discarded).
	Progress io.Writer
	// Data is the coordinator's data directory (default Dir/coordinator);
	// the disk-full case mounts a tmpfs there when it can.
	Data string
}

// Result is one case's row of the table.
type Result struct {
	Case, What string
	// Reps is how many times the fault was injected.
	Reps int
	// Lost and Duplicated are tasks lost and folds applied twice, found by
	// the checks after this case (0 is the requirement).
	Lost, Duplicated int
	// Unfolded is requests served whose result was dropped because the
	// fault hit the process holding it (each a refetch); Unexplained is
	// requests served and not folded outside any fault: results lost.
	Unfolded, Unexplained int
	// Failed is tasks recorded failed.
	Failed int
	// Recover is the time to recover of each injection.
	Recover []time.Duration
	// Missing is URLs not fetched again after the recovery.
	Missing int
	Notes   []string
	Err     error
	Skipped bool
}

// OK reports whether the case held the invariant.
func (r *Result) OK() bool {
	return r.Err == nil && r.Lost == 0 && r.Duplicated == 0 && r.Unexplained == 0 && r.Missing == 0
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// Run runs the suite and returns a row per case. Cases run one after the
// other on one crawl; the check after each is cumulative, so a row's
// figures are what that case added.
func Run(ctx context.Context, o Options) ([]Result, error) {
	if o.Reps <= 0 {
		o.Reps = 1
	}
	if o.Hosts == 0 {
		o.Hosts = 4
	}
	if o.Pages == 0 {
		o.Pages = 40
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	var run []faultCase
	for _, c := range cases {
		if len(o.Cases) == 0 || slices.Contains(o.Cases, c.name) {
			run = append(run, c)
		}
	}
	for _, name := range o.Cases {
		if !slices.ContainsFunc(cases, func(c faultCase) bool { return c.name == name }) {
			return nil, fmt.Errorf("unknown fault case %q (known: %s)", name, strings.Join(Cases(), ", "))
		}
	}
	if o.Data == "" {
		o.Data = filepath.Join(o.Dir, "coordinator")
	}
	if err := os.MkdirAll(o.Data, 0o755); err != nil {
		return nil, err
	}
	tmpfs := false
	if slices.ContainsFunc(run, func(c faultCase) bool { return c.name == "disk-full" }) {
		if err := exec.Command("mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", o.Data).Run(); err == nil {
			tmpfs = true
			defer func() { _ = exec.Command("umount", "-l", o.Data).Run() }()
		} else {
			fmt.Fprintf(o.Progress, "disk-full: cannot mount a tmpfs on %s (%v): the case is skipped\n", o.Data, err)
		}
	}
	e, err := startEnv(ctx, o)
	if err != nil {
		return nil, err
	}
	e.tmpfs = tmpfs
	defer e.close()
	e.logf("crawl started: %d pages on %d hosts, NATS %s, coordinator %s", o.Pages, o.Hosts, e.natsURL, e.api)
	// Warm up: every URL fetched once.
	if missing := e.coverage(ctx, e.seeded, 2*time.Minute); len(missing) > 0 {
		return nil, fmt.Errorf("warm-up: %d URLs never fetched (first %s)", len(missing), missing[0])
	}
	var prev tally
	var out []Result
	for _, c := range run {
		r := Result{Case: c.name, What: c.what}
		for rep := 1; rep <= o.Reps && r.Err == nil && !r.Skipped; rep++ {
			e.logf("%s, repetition %d: %s", c.name, rep, c.what)
			ds, notes, err := c.run(ctx, e)
			r.Notes = append(r.Notes, notes...)
			switch {
			case errors.Is(err, errSkipped):
				r.Skipped = true
				continue
			case err != nil:
				r.Err = err
			}
			r.Reps++
			r.Recover = append(r.Recover, ds...)
			for _, d := range ds {
				e.logf("%s: recovered in %s", c.name, d.Round(10*time.Millisecond))
			}
			if missing := e.coverage(ctx, time.Now(), 90*time.Second); len(missing) > 0 {
				r.Missing += len(missing)
				r.Notes = append(r.Notes, fmt.Sprintf("%d URLs not fetched again after the recovery, e.g. %s", len(missing), missing[0]))
			}
			t, err := e.check(ctx)
			if err != nil {
				r.Err = errors.Join(r.Err, err)
				break
			}
			r.Lost += len(t.Lost) - len(prev.Lost)
			r.Duplicated += t.Duplicated - prev.Duplicated
			r.Unfolded += t.Unfolded - prev.Unfolded
			r.Unexplained += t.Unexplained - prev.Unexplained
			r.Failed += t.Failed - prev.Failed
			r.Notes = append(r.Notes, t.Problems...)
			e.logf("%s: check: %d dispatched, %d folded, %d failed, %d queued, %d lost; %d requests served, %d fetches folded, %d unfolded in fault windows, %d unexplained, %d duplicated",
				c.name, t.Dispatched, t.Folded, t.Failed, t.Queued, len(t.Lost), t.Served, t.Stored, t.Unfolded, t.Unexplained, t.Duplicated)
			prev = t
		}
		out = append(out, r)
	}
	return out, nil
}

// WriteTable writes the results as a Markdown table: fault, repetitions,
// tasks lost, duplicated folds, time to recover.
func WriteTable(w io.Writer, rs []Result) error {
	tw := tabwriter.NewWriter(w, 0, 4, 1, ' ', tabwriter.Debug)
	fmt.Fprintln(tw, "| fault\t repetitions\t tasks lost\t duplicated folds\t time to recover (median, max)\t fetches unfolded by the fault\t tasks failed\t result\t")
	fmt.Fprintln(tw, "|---\t---\t---\t---\t---\t---\t---\t---\t")
	for _, r := range rs {
		rec := "—"
		if len(r.Recover) > 0 {
			s := slices.Clone(r.Recover)
			sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
			rec = fmt.Sprintf("%.1f s, %.1f s", s[len(s)/2].Seconds(), s[len(s)-1].Seconds())
		}
		res := "ok"
		switch {
		case r.Skipped:
			res = "skipped"
		case !r.OK():
			res = "FAILED"
		}
		fmt.Fprintf(tw, "| %s\t %d\t %d\t %d\t %s\t %d\t %d\t %s\t\n", r.What, r.Reps, r.Lost, r.Duplicated, rec, r.Unfolded, r.Failed, res)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range rs {
		if r.Err != nil {
			fmt.Fprintf(w, "\n%s: %v\n", r.Case, r.Err)
		}
		for _, n := range r.Notes {
			fmt.Fprintf(w, "%s: %s\n", r.Case, n)
		}
	}
	return nil
}
