package bench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestVirtualShortRun runs every policy for a few hundred simulated days on
// a small Table 6 web: the oracle bounds every policy (within noise), the
// optimal allocation beats uniform, and the CSV and SVG are written.
func TestVirtualShortRun(t *testing.T) {
	o := DefaultOptions()
	o.Pages, o.Hosts, o.Days, o.Warmup, o.HalfLifeDays = 300, 6, 600, 200, 365
	w, err := NewWorkload(WorkloadTable6, o.Pages, o.Hosts, o.Seed)
	if err != nil {
		t.Fatal(err)
	}
	var rs []Result
	byName := map[string]Result{}
	for _, p := range Policies() {
		r, err := RunVirtual(context.Background(), w, p, o)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		t.Logf("%-18s F=%.4f age=%.2f fetches/day=%.1f 304=%.2f oracle=%.4f ratio=%.3f plan errors=%d", p, r.Freshness, r.AgeDays, r.FetchesPerDay, r.NotModifiedShare(), r.Oracle, r.Ratio, r.PlanErrors)
		if r.Freshness > r.Oracle*1.03 {
			t.Errorf("%s: freshness %.4f above the oracle %.4f beyond noise", p, r.Freshness, r.Oracle)
		}
		if r.Fetches == 0 || len(r.Series) != o.Steps {
			t.Errorf("%s: %d fetches, %d series points", p, r.Fetches, len(r.Series))
		}
		rs = append(rs, r)
		byName[p] = r
	}
	if byName["optimal"].Freshness <= byName["uniform"].Freshness {
		t.Errorf("optimal %.4f not above uniform %.4f", byName["optimal"].Freshness, byName["uniform"].Freshness)
	}
	dir := t.TempDir()
	if err := WriteCSV(dir, rs); err != nil {
		t.Fatal(err)
	}
	if err := WriteSVGFile(filepath.Join(dir, "plot.svg"), "test", rs, o.Warmup); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"results.csv", "series.csv", "plot.svg"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil || len(b) == 0 {
			t.Fatalf("%s: %v (%d bytes)", f, err, len(b))
		}
		if f == "results.csv" && strings.Count(string(b), "\n") != len(rs)+1 {
			t.Errorf("results.csv has %d lines, want %d", strings.Count(string(b), "\n"), len(rs)+1)
		}
		if f == "plot.svg" && !strings.Contains(string(b), "<polyline") {
			t.Error("plot has no lines")
		}
	}
}

// TestVirtualTruthIntegration checks integrate on a hand-made history: a
// page changing at 10 and 30, fetched at 5 and 20, over [0, 40).
func TestVirtualTruthIntegration(t *testing.T) {
	s := func(x float64) int64 { return int64(x * 1e9) }
	ch := []int64{s(10), s(30)}
	changes := make([]time.Duration, len(ch))
	for i, c := range ch {
		changes[i] = time.Duration(c)
	}
	fetches := []fetchRec{{at: time.Duration(s(5)), ver: 0}, {at: time.Duration(s(20)), ver: 1}}
	fresh, age := integrate(changes, fetches, 0, time.Duration(s(40)), nil, 0)
	// Stale [0,5) since 0, fresh [5,10), stale [10,20) since 10, fresh
	// [20,30), stale [30,40) since 30: fresh 15 s; age ∫ = 12.5+50+50.
	if fresh != 15 || age != 112.5 {
		t.Errorf("fresh %v age %v, want 15 and 112.5", fresh, age)
	}
}

func TestParseLists(t *testing.T) {
	if ws, err := ParseWorkloads("table6,drift"); err != nil || len(ws) != 2 {
		t.Errorf("ParseWorkloads: %v %v", ws, err)
	}
	if _, err := ParseWorkloads("nope"); err == nil {
		t.Error("unknown workload accepted")
	}
	if ps, err := ParsePolicies(""); err != nil || len(ps) != len(Policies()) {
		t.Errorf("ParsePolicies: %v %v", ps, err)
	}
	for _, name := range Workloads() {
		if _, err := NewWorkload(name, 100, 4, 1); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
