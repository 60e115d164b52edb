package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/freshcrawl/freshcrawl/internal/config"
	"github.com/freshcrawl/freshcrawl/internal/node"
	"github.com/freshcrawl/freshcrawl/internal/schedule"
	"github.com/freshcrawl/freshcrawl/internal/sim"
)

// CaptureOptions configure the change-recall benchmark of Ashish, Kulkarni & Wang.
type CaptureOptions struct {
	Pages    int           // capture pages on the sim
	Period   time.Duration // their rhythm
	Phases   []time.Duration
	Jitter   time.Duration
	Polls    int           // polls per period
	Duration time.Duration // whole run
	Warmup   time.Duration // left out of the recall figure (learning)
	Seed     uint64
	Log      *slog.Logger
}

// CaptureResult is one crawler's truth-measured change recall.
type CaptureResult struct {
	Name      string
	Recall    float64
	Published int
	Captured  int
	Fetches   int
	// Status is what the coordinator said of its capture URLs at the end.
	Status []schedule.CaptureStatus
	// PollPhases counts page requests after the warm-up by their phase
	// in the period (whole seconds since the period's start).
	PollPhases map[int]int
}

// Capture runs two crawlers side by side, each against its own simulated
// web with the same rhythm: one learns the update phases (freshcrawl's
// capture mode), one polls uniformly at fixed phases with the same number
// of polls. Recall comes from the sims' truth, after the warm-up.
func Capture(ctx context.Context, o CaptureOptions, out io.Writer) ([]CaptureResult, error) {
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	// Start both sims on a whole period of the wall clock, so that the
	// update phases are the same offsets from the period boundaries the
	// uniform crawler polls at (k·T/N): the paper's setting, where uniform
	// polls at :00 and :30 and updates come at :05 and :15.
	if wait := time.Until(time.Now().Truncate(o.Period).Add(o.Period)); wait > 0 {
		fmt.Fprintf(out, "waiting %s for the next period boundary...\n", wait.Round(time.Second))
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
	runs := []struct {
		name    string
		uniform bool
	}{{"learnt phases", false}, {"uniform polls", true}}
	results := make([]CaptureResult, len(runs))
	errs := make([]error, len(runs))
	var wg sync.WaitGroup
	for i, r := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = captureRun(ctx, o, r.name, r.uniform)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(out, "change recall, %d capture pages, period %s, updates at %v ±%s, %d polls a period, measured after %s of %s\n\n",
		o.Pages, o.Period, o.Phases, o.Jitter, o.Polls, o.Warmup, o.Duration)
	fmt.Fprintf(out, "%-15s %8s %10s %9s %8s\n", "crawler", "recall", "published", "captured", "fetches")
	for _, r := range results {
		fmt.Fprintf(out, "%-15s %8.3f %10d %9d %8d\n", r.Name, r.Recall, r.Published, r.Captured, r.Fetches)
	}
	for _, r := range results {
		fmt.Fprintf(out, "%s: polls by second of the period: %s\n", r.Name, phaseHistogram(r.PollPhases))
	}
	fmt.Fprintln(out, "\nwhat the learning crawler's status said of its capture URLs at the end:")
	for _, st := range results[0].Status {
		state := fmt.Sprintf("polls at %v (expected recall %.3f)", st.Phases, st.ExpectedRecall)
		if st.Learning {
			state = fmt.Sprintf("still learning (%d exact update times)", st.ExactUpdates)
		}
		fmt.Fprintf(out, "  %s: period %s, concentration %.2f, %s\n", st.URL, st.Period, st.Strength, state)
	}
	return results, nil
}

func captureRun(ctx context.Context, o CaptureOptions, name string, uniform bool) (CaptureResult, error) {
	// One page a host, so that politeness does not spread the polls of
	// pages that share a rhythm over several seconds.
	s, err := sim.New(sim.Config{Hosts: o.Pages, Pages: o.Pages, Seed: o.Seed, Day: time.Second,
		Periodic: []sim.PeriodicClass{{Share: 1, Period: o.Period, Phases: o.Phases, Jitter: o.Jitter}}})
	if err != nil {
		return CaptureResult{}, err
	}
	if err := s.Start(ctx); err != nil {
		return CaptureResult{}, err
	}
	defer s.Close()
	cfg, cleanup, err := crawlerConfig("freshcrawl-capture-")
	if err != nil {
		return CaptureResult{}, err
	}
	defer cleanup()
	// Pages that share a rhythm are due at the same moments: the budget
	// must allow them all within a second or the global limiter, not the
	// plan, decides when they are polled.
	cfg.Budget = config.Rate(max(float64(o.Pages), float64(o.Pages*o.Polls)/o.Period.Seconds()*2))
	cfg.HostRate = 2
	cfg.Workers, cfg.Concurrency = 1, 4
	cfg.CaptureUniform = uniform
	n, err := node.Start(ctx, node.Options{Config: cfg, Roles: node.Roles{Coordinator: true, Workers: 1}, Log: o.Log})
	if err != nil {
		return CaptureResult{}, err
	}
	defer n.Stop()
	var lines []string
	for _, u := range s.URLs() {
		lines = append(lines, fmt.Sprintf(`{"url":%q,"mode":"capture","period":%q,"polls":%d}`, u, o.Period.String(), o.Polls))
	}
	start := time.Now()
	if _, err := n.Coordinator.AddSeeds(strings.NewReader(strings.Join(lines, "\n")), "capture-bench"); err != nil {
		return CaptureResult{}, err
	}
	t := time.NewTimer(o.Duration)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return CaptureResult{}, ctx.Err()
	case <-t.C:
	}
	rep := s.Truth(start.Add(o.Warmup), time.Now())
	phases := map[int]int{}
	for _, q := range s.Requests() {
		if q.Page >= 0 && q.Time.After(start.Add(o.Warmup)) {
			phases[int(q.Time.Sub(s.Epoch())%o.Period/time.Second)]++
		}
	}
	return CaptureResult{Name: name, Recall: rep.Recall, Published: rep.RecallPublished, Captured: rep.RecallCaptured, Fetches: rep.Fetches,
		Status: n.Coordinator.Status().Capture, PollPhases: phases}, nil
}

// phaseHistogram prints "second:count" for every second that had polls.
func phaseHistogram(h map[int]int) string {
	keys := make([]int, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%ds:%d ", k, h[k])
	}
	return b.String()
}
