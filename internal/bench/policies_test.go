package bench

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVirtualShortRun runs every policy for a few hundred simulated days on
// a small Table 6 web: the oracle bounds every policy (within noise), the
// optimal allocation beats uniform, and the CSV and SVG are written.
func TestVirtualShortRun(t *testing.T) {
	o := DefaultOptions()
	o.Pages, o.Hosts, o.Days, o.Warmup, o.HalfLifeDays = 300, 6, 600, 200, 365
	w, err := NewWorkload(workloadTable6, o.Pages, o.Hosts, o.Seed)
	if err != nil {
		t.Fatal(err)
	}
	var rs []Result
	byName := map[string]Result{}
	for _, p := range defaultPolicies() {
		r, err := RunVirtual(context.Background(), w, p, o)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		t.Logf("%-18s F=%.4f age=%.2f fetches/day=%.1f 304=%.2f oracle=%.4f ratio=%.3f plan errors=%d", p, r.Freshness, r.AgeDays, r.FetchesPerDay, r.notModifiedShare(), r.Oracle, r.Ratio, r.PlanErrors)
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

func TestParseLists(t *testing.T) {
	if ws, err := ParseWorkloads("table6,drift"); err != nil || len(ws) != 2 {
		t.Errorf("ParseWorkloads: %v %v", ws, err)
	}
	if _, err := ParseWorkloads("nope"); err == nil {
		t.Error("unknown workload accepted")
	}
	if ps, err := ParsePolicies(""); err != nil || len(ps) != len(defaultPolicies()) {
		t.Errorf("ParsePolicies: %v %v", ps, err)
	}
	for _, name := range workloadNames() {
		if _, err := NewWorkload(name, 100, 4, 1); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Options that are not finite numbers are refused with the option's name.
func TestOptionsRejectNonFinite(t *testing.T) {
	w, err := NewWorkload(workloadTable6, 10, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	for name, spoil := range map[string]func(*Options){
		"budget":    func(o *Options) { o.Budget = math.NaN() },
		"host rate": func(o *Options) { o.HostRate = math.Inf(1) },
		"days":      func(o *Options) { o.Days = math.Inf(1) },
	} {
		o := DefaultOptions()
		o.Pages, o.Hosts = 10, 2
		spoil(&o)
		if _, err := RunVirtual(context.Background(), w, "uniform", o); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: err %v", name, err)
		}
	}
}
