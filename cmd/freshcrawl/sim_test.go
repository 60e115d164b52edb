package main

import (
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/freshcrawl/freshcrawl/lab/sim"
)

// The demo's oracle is bench.SolveOracle on the sim's true rates: a window
// of no length is an error, not a skipped line, and no fetches give the
// oracle of a zero budget.
func TestDemoOracle(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	s, err := sim.New(sim.Config{Hosts: 2, Pages: 20, Day: time.Second, Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := demoOracle(s, s.Truth(t0, t0), 5); err == nil || !strings.Contains(err.Error(), "oracle") {
		t.Errorf("empty window: err %v", err)
	}
	idle, err := demoOracle(s, s.Truth(t0, t0.Add(time.Minute)), 5)
	if err != nil || idle.Freshness != 0 {
		t.Errorf("no fetches: %+v, %v; want freshness 0 (every page changes)", idle, err)
	}
	// 20 fetches a simulated day on 20 pages that change 0.25 times a
	// day on average: the optimum is well above zero and below one.
	tr := s.Truth(t0, t0.Add(time.Minute))
	tr.Fetches = 20 * 60
	orc, err := demoOracle(s, tr, 5)
	if err != nil || !(orc.Freshness > 0.5 && orc.Freshness < 1) || !(orc.Age > 0) {
		t.Errorf("busy: %+v, %v", orc, err)
	}
}

// TestDemoTableNotInterleaved: at the default level no log line comes
// between the demo's table rows, even with a budget the hosts cannot take
// (4 hosts at 5/s for 40/s), re-planned several times; the shortfall is
// in the summary instead. At --log-level warn the same run does log the
// warning, so the default level is what keeps the table whole.
func TestDemoTableNotInterleaved(t *testing.T) {
	run := func(extra ...string) string {
		t.Helper()
		var out syncWriter
		root := newRoot(&out, &out)
		root.SetArgs(append([]string{"demo", "--duration", "3s", "--every", "250ms", "--replan", "200ms", "--budget", "40", "--sim-pages", "40"}, extra...))
		if err := root.ExecuteContext(t.Context()); err != nil {
			t.Fatalf("demo: %v\n%s", err, out.String())
		}
		return out.String()
	}
	out := run()
	lines := strings.Split(out, "\n")
	header := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, "elapsed") && strings.Contains(l, "true-fresh") })
	after := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "after ") })
	if header < 0 || after < header {
		t.Fatalf("no table and summary in the demo's output:\n%s", out)
	}
	row := regexp.MustCompile(`^\s+\d+(\.\d+)?m?s(\s+\d+){4}\s+\d\.\d{3}\s+\d\.\d{3}$`)
	rows := 0
	for _, l := range lines[header+1 : after] {
		switch {
		case row.MatchString(l):
			rows++
		case l != "":
			t.Fatalf("a line that is not a table row between the rows: %q\n%s", l, out)
		}
	}
	if rows < 3 {
		t.Fatalf("%d table rows in 3 s at one every 250 ms:\n%s", rows, out)
	}
	if !strings.Contains(out, "the hosts could not take") {
		t.Fatalf("the summary does not say the budget was not absorbed:\n%s", out)
	}
	if warn := run("--log-level", "warn"); !strings.Contains(warn, "budget exceeds what the hosts can take") {
		t.Fatalf("at --log-level warn the same demo did not log the budget warning: the test checks nothing\n%s", warn)
	}
}

// syncWriter is the demo's stdout and stderr at once: its logger writes
// from the node's goroutines.
type syncWriter struct {
	mu sync.Mutex
	b  strings.Builder
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}
