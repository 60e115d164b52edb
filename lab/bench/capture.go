package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strings"
	"time"

	"github.com/freshcrawl/freshcrawl/capture"
	"github.com/freshcrawl/freshcrawl/config"
	"github.com/freshcrawl/freshcrawl/internal/node"
	"github.com/freshcrawl/freshcrawl/internal/schedule"
	"github.com/freshcrawl/freshcrawl/lab/sim"
)

// CaptureScenario is one change-recall run of `freshcrawl bench capture`:
// what the simulated sources do and what the crawler is told.
type CaptureScenario struct {
	Name   string
	Period time.Duration // the sources' rhythm
	Phases []time.Duration
	Jitter time.Duration
	// LastModified: the pages send a trustworthy Last-Modified; else an
	// ETag only, and the crawler sees "changed since the last poll".
	LastModified bool
	// Feed serves the pages as feeds ("rss", "atom", "json"): item dates.
	Feed string
	// ConfigurePeriod gives the crawler the period; else it detects it.
	ConfigurePeriod bool
	// Polls per period the crawler is given (its learnt polls).
	Polls int
	// LearnBudget is each page's share of the fetch budget while the
	// period is unknown, fetches a second: the learning polls.
	LearnBudget float64
}

// CaptureOptions configure the change-recall benchmark of Ashish, Kulkarni & Wang.
type CaptureOptions struct {
	Scenarios []CaptureScenario
	Pages     int // capture pages per scenario, one a host
	// MaxLearn is the most periods learning may take; Measure the periods
	// the recall is measured over once every page has learnt.
	MaxLearn, Measure int
	Seed              uint64
	Log               *slog.Logger
}

// CaptureResult is one scenario's truth-measured change recall.
type CaptureResult struct {
	Scenario CaptureScenario
	// LearnPeriods is how many periods it took until every page had a
	// plan (MaxLearn+ when some never did), LearnPolls the polls a period
	// a page made meanwhile.
	LearnPeriods float64
	LearnPolls   float64
	Learnt       int // pages that had a plan when the measurement began
	// Recall over the Measure periods after learning, from the sim's truth.
	Recall              float64
	Published, Captured int
	PollsPerPeriod      float64
	// Uniform polling with the same polls a period (rounded up): the
	// expected recall at a random phase (the mean over phases) and at the
	// worst phase, exact on the sources' true pattern.
	UniformPolls                     int
	UniformRandomPhase, UniformWorst float64
	// Status is what the coordinator said of its capture URLs at the end.
	Status []schedule.CaptureStatus
}

// Capture runs each scenario against its own simulated web, concurrently,
// and reports change recall measured on the sims' truth after learning,
// against uniform polling computed exactly on the true pattern.
func Capture(ctx context.Context, o CaptureOptions, out io.Writer) ([]CaptureResult, error) {
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Pages <= 0 || o.MaxLearn <= 0 || o.Measure <= 0 || len(o.Scenarios) == 0 {
		return nil, fmt.Errorf("bench capture: pages %d, max-learn %d, measure %d, %d scenarios: all must be > 0", o.Pages, o.MaxLearn, o.Measure, len(o.Scenarios))
	}
	results := make([]CaptureResult, len(o.Scenarios))
	errs := make([]error, len(o.Scenarios))
	done := make(chan int, len(o.Scenarios))
	for i, sc := range o.Scenarios {
		go func() {
			results[i], errs[i] = captureRun(ctx, o, sc)
			done <- i
		}()
	}
	for range o.Scenarios {
		<-done
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	for _, r := range results {
		sc := r.Scenario
		fmt.Fprintf(out, "\n%s: %d pages, period %s, updates at %v ±%s, %s, period %s, %d polls a period\n",
			sc.Name, o.Pages, sc.Period, sc.Phases, sc.Jitter, signal(sc), map[bool]string{true: "configured", false: "not given"}[sc.ConfigurePeriod], sc.Polls)
		fmt.Fprintf(out, "  learning: %.1f periods (at most %d), %.1f polls a period; %d of %d pages learnt\n", r.LearnPeriods, o.MaxLearn, r.LearnPolls, r.Learnt, o.Pages)
		fmt.Fprintf(out, "  %-34s %8s %10s %9s %14s\n", "over the next "+fmt.Sprint(o.Measure)+" periods", "recall", "published", "captured", "polls a period")
		fmt.Fprintf(out, "  %-34s %8.3f %10d %9d %14.2f\n", "learnt phases (sim truth)", r.Recall, r.Published, r.Captured, r.PollsPerPeriod)
		fmt.Fprintf(out, "  %-34s %8.3f %10s %9s %14d\n", "uniform, random phase (expected)", r.UniformRandomPhase, "", "", r.UniformPolls)
		fmt.Fprintf(out, "  %-34s %8.3f %10s %9s %14d\n", "uniform, worst phase", r.UniformWorst, "", "", r.UniformPolls)
		for _, st := range r.Status {
			state := fmt.Sprintf("polls at %v (expected recall %.3f)", st.Phases, st.ExpectedRecall)
			if st.Learning {
				state = "still learning"
			}
			period := st.Period + map[bool]string{true: " detected", false: " configured"}[st.Detected]
			fmt.Fprintf(out, "    %s: period %s (strength %.2f, %d changes over %d polls), %s\n", st.URL, period, st.Strength, st.Observations, st.PolledTimes, state)
		}
	}
	return results, nil
}

func signal(sc CaptureScenario) string {
	switch {
	case sc.Feed != "":
		return sc.Feed + " feed with item dates"
	case sc.LastModified:
		return "Last-Modified"
	}
	return "no Last-Modified (ETag only)"
}

func captureRun(ctx context.Context, o CaptureOptions, sc CaptureScenario) (CaptureResult, error) {
	res := CaptureResult{Scenario: sc}
	T := sc.Period
	// One page a host, so that politeness does not spread the polls of
	// pages that share a rhythm over several seconds.
	s, err := sim.New(sim.Config{Hosts: o.Pages, Pages: o.Pages, Seed: o.Seed, Day: time.Second,
		Periodic: []sim.PeriodicClass{{Share: 1, Period: T, Phases: sc.Phases, Jitter: sc.Jitter, NoLastModified: !sc.LastModified, Feed: sc.Feed}}})
	if err != nil {
		return res, err
	}
	if err := s.Start(ctx); err != nil {
		return res, err
	}
	defer s.Close()
	cfg, cleanup, err := crawlerConfig("freshcrawl-capture-")
	if err != nil {
		return res, err
	}
	defer cleanup()
	// The budget is each page's learning share; pages that share a rhythm
	// are due at the same moments, so it also lets them all go within a
	// second, or the global limiter, not the plan, would decide.
	learn := sc.LearnBudget
	if learn <= 0 {
		learn = float64(4*sc.Polls) / T.Seconds()
	}
	cfg.Budget = config.Rate(math.Max(float64(o.Pages), learn*float64(o.Pages)))
	cfg.HostRate = config.Rate(math.Max(2, 2*learn))
	cfg.Workers, cfg.Concurrency = 1, 4
	cfg.Policy = "uniform"
	n, err := node.Start(ctx, node.Options{Config: cfg, Roles: node.Roles{Coordinator: true, Workers: 1}, Log: o.Log})
	if err != nil {
		return res, err
	}
	defer n.Stop()
	var lines []string
	for _, u := range s.URLs() {
		if sc.ConfigurePeriod {
			lines = append(lines, fmt.Sprintf(`{"url":%q,"mode":"capture","period":%q,"polls":%d}`, u, T.String(), sc.Polls))
		} else {
			lines = append(lines, fmt.Sprintf(`{"url":%q,"mode":"capture","polls":%d}`, u, sc.Polls))
		}
	}
	start := time.Now()
	if _, err := n.Coordinator.AddSeeds(strings.NewReader(strings.Join(lines, "\n")), "capture-bench"); err != nil {
		return res, err
	}
	// Learning: until every page has a plan, at most MaxLearn periods.
	deadline := start.Add(time.Duration(o.MaxLearn) * T)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		learnt := 0
		for _, st := range n.Coordinator.Status().Capture {
			if !st.Learning {
				learnt++
			}
		}
		res.Learnt = learnt
		if learnt == o.Pages || !time.Now().Before(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-tick.C:
		}
	}
	learnt := time.Now()
	res.LearnPeriods = learnt.Sub(start).Seconds() / T.Seconds()
	if res.Learnt < o.Pages {
		res.LearnPeriods = float64(o.MaxLearn) // and more: reported as learnt of pages
	}
	end := learnt.Add(time.Duration(o.Measure) * T)
	t := time.NewTimer(time.Until(end))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return res, ctx.Err()
	case <-t.C:
	}
	rep := s.Truth(learnt, end)
	res.Recall, res.Published, res.Captured = rep.Recall, rep.RecallPublished, rep.RecallCaptured
	res.PollsPerPeriod = float64(rep.PageRequests) / float64(o.Pages*o.Measure)
	before := s.Truth(start, learnt)
	res.LearnPolls = float64(before.PageRequests) / float64(o.Pages) / math.Max(1e-9, learnt.Sub(start).Seconds()/T.Seconds())
	res.Status = n.Coordinator.Status().Capture
	// The baseline, exact on the true pattern: uniform polls with as many
	// polls a period as the learnt crawler made (rounded up).
	res.UniformPolls = max(sc.Polls, int(math.Ceil(res.PollsPerPeriod-1e-9)))
	res.UniformRandomPhase, res.UniformWorst, err = uniformBaseline(sc, res.UniformPolls)
	return res, err
}

// uniformBaseline is the expected change recall of n uniform polls a
// period on the scenario's true pattern, averaged over 1000 phases, and
// the least over them.
func uniformBaseline(sc CaptureScenario, n int) (mean, worst float64, err error) {
	T := sc.Period.Seconds()
	p := capture.Pattern{Period: T}
	for _, ph := range sc.Phases {
		p.Updates = append(p.Updates, capture.Update{Phase: ph.Seconds(), Jitter: sc.Jitter.Seconds(), Weight: 1})
	}
	const phases = 1000
	worst = 1
	for k := range phases {
		polls, err := capture.UniformPolls(n, T, float64(k)*T/phases/float64(n))
		if err != nil {
			return 0, 0, err
		}
		r, err := p.Recall(polls)
		if err != nil {
			return 0, 0, err
		}
		mean += r / phases
		worst = math.Min(worst, r)
	}
	return mean, worst, nil
}
