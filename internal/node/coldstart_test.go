package node_test

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/freshcrawl/freshcrawl/config"
	"github.com/freshcrawl/freshcrawl/internal/node"
	"github.com/freshcrawl/freshcrawl/internal/testutil"
	"github.com/freshcrawl/freshcrawl/lab/sim"
)

// dispatchedTotal reads freshcrawl_tasks_dispatched_total from /metrics.
func dispatchedTotal(t *testing.T, url string) float64 {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "freshcrawl_tasks_dispatched_total "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	t.Fatal("no freshcrawl_tasks_dispatched_total in /metrics")
	return 0
}

// TestColdStartFullBudget: a freshly seeded list of 20 000 URLs on 40
// hosts, budget 10/s, host rate 1/s, runs its first pass at the full
// budget from the first second: freshcrawl_tasks_dispatched_total is at
// least 550 a minute after the seeds are in (600 at 10/s; the first plans
// must not push never-fetched URLs back by an interval). It runs a real
// minute, so it is skipped with -short.
func TestColdStartFullBudget(t *testing.T) {
	testutil.Slow(t)
	if testing.Short() {
		t.Skip("runs a minute of real time")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	web, err := sim.New(sim.Config{Hosts: 40, Pages: 20_000, Day: time.Hour, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := web.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer web.Close()

	cfg := config.Default()
	cfg.Data = t.TempDir()
	cfg.NATSListen = "127.0.0.1:-1"
	cfg.AllowPrivate = true
	cfg.Budget, cfg.HostRate = 10, 1
	cfg.Workers, cfg.Concurrency = 2, 16
	n, err := node.Start(ctx, node.Options{Config: cfg, Roles: node.Roles{Coordinator: true, Workers: cfg.Workers}, Log: testutil.QuietLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	api := httptest.NewServer(n.Coordinator.Handler())
	defer api.Close()

	sum, err := n.Coordinator.AddSeeds(strings.NewReader(strings.Join(web.URLs(), "\n")), "coldstart")
	if err != nil || sum.Added != 20_000 {
		t.Fatalf("seed: %+v %v", sum, err)
	}
	start := time.Now()
	base := dispatchedTotal(t, api.URL)
	timer := time.NewTimer(time.Minute)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	case <-timer.C:
	}
	got := dispatchedTotal(t, api.URL) - base
	t.Logf("%.0f tasks dispatched in the %v after seeding 20 000 URLs at a budget of 10/s", got, time.Since(start).Round(time.Second))
	if got < 550 {
		t.Errorf("%.0f tasks dispatched in the first minute, want at least 550 (10/s)", got)
	}
	if st := n.Coordinator.Status(); st.BudgetInUse <= 0 || st.ModelFreshness > 0.05 {
		t.Errorf("status: budget in use %v, model freshness %v (most copies are still missing: want near 0)", st.BudgetInUse, st.ModelFreshness)
	}
}
