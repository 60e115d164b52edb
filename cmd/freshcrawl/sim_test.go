package main

import (
	"strings"
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
