package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/freshcrawl/freshcrawl/internal/node"
	"github.com/freshcrawl/freshcrawl/internal/testutil"
	"github.com/freshcrawl/freshcrawl/store"
)

// TestStatusWithDisallowedSeedAndDegenerateEstimates: a seed robots.txt
// disallows, and stored records with degenerate estimates (an enormous
// rate, an unreadable estimator state, a weight of zero), must not break
// GET /api/status or /metrics: the body is JSON, every model figure a
// number in range, and no NaN or Inf reaches the metrics.
func TestStatusWithDisallowedSeedAndDegenerateEstimates(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	web := newSite()
	srv := httptest.NewServer(web)
	defer srv.Close()

	dir := t.TempDir()
	db, err := store.Open(filepath.Join(dir, store.FileName), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(srv.URL, "http://")
	degenerate := []store.URL{
		{URL: srv.URL + "/huge", Host: host, Weight: 1, Rate: math.MaxFloat64, LastOK: time.Now().Add(-time.Hour), Estimate: []byte{2, 9, 9}},
		{URL: srv.URL + "/tiny", Host: host, Weight: 1, Rate: math.SmallestNonzeroFloat64, LastOK: time.Now().Add(-time.Hour)},
		{URL: srv.URL + "/zero", Host: host, Weight: 0, Rate: 1},
	}
	if _, err := db.Upsert(degenerate); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	cfg := testConfig(t, dir)
	cfg.Policy = "optimal"
	n, err := node.Start(ctx, node.Options{Config: cfg, Roles: node.Roles{Coordinator: true, Workers: 1}, Log: testutil.QuietLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	lines := []string{srv.URL + "/private/secret"}
	for i := range 4 {
		lines = append(lines, fmt.Sprintf("%s/p/%d", srv.URL, i))
	}
	if _, err := n.Coordinator.AddSeeds(strings.NewReader(strings.Join(lines, "\n")), "test"); err != nil {
		t.Fatal(err)
	}
	api := httptest.NewServer(n.Coordinator.Handler())
	defer api.Close()

	var disallowedAt time.Time
	testutil.WaitFor(t, 60*time.Second, "the disallowed seed to be fetched and planned after", func() bool {
		u, err := n.DB.Get(srv.URL + "/private/secret")
		if err != nil || !u.Disallowed {
			return false
		}
		if disallowedAt.IsZero() {
			disallowedAt = time.Now()
		}
		return n.Coordinator.Status().PlannedAt.After(disallowedAt)
	})

	resp, err := http.Get(api.URL + "/api/status")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var st map[string]any
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &st) != nil {
		t.Fatalf("GET /api/status: %d, body %q", resp.StatusCode, body)
	}
	for _, k := range []string{"model_freshness", "plan_freshness"} {
		v, ok := st[k].(float64)
		if !ok || v < 0 || v > 1 {
			t.Errorf("%s = %v, want a number in [0, 1]", k, st[k])
		}
	}
	if d, _ := st["disallowed"].(float64); d < 1 {
		t.Errorf("status counts %v disallowed URLs, want the robots-disallowed seed", st["disallowed"])
	}

	resp, err = http.Get(api.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(metrics), "freshcrawl_model_freshness ") {
		t.Error("/metrics has no freshcrawl_model_freshness")
	}
	for _, line := range strings.Split(string(metrics), "\n") {
		if strings.HasPrefix(line, "freshcrawl_") && (strings.HasSuffix(line, " NaN") || strings.HasSuffix(line, "Inf")) {
			t.Errorf("metric not a number: %s", line)
		}
	}
}
