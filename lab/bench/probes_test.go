package bench

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/freshcrawl/freshcrawl/internal/testutil"
)

// The virtual probe benchmark on a smaller site, with the source's default
// settings: greedy keeps the copy at most a fifth as stale as Naive 1 and
// fresher than Naive 2 at the same budget, every round report's model
// content freshness averages within 20 % of the truth at the same
// instants, and the interval search's rounds respect their bounds.
func TestProbesVirtual(t *testing.T) {
	testutil.Slow(t)
	o := ProbesOptions{Papers: 300, K: 10, TimeUnit: time.Second, Seed: 3, Policies: []string{"greedy", "naive1", "naive2"},
		Absent: 0.02, Renamed: 0.05, Units: 200, WarmupUnits: 50, Steps: 50, Alpha: 4}
	var out bytes.Buffer
	rs, err := ProbesVirtual(context.Background(), o, &out)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())
	by := map[string]ProbesResult{}
	for _, r := range rs {
		by[r.Policy] = r
		if r.RequestsPerUnit > 10.01 {
			t.Errorf("%s: %.2f requests per unit, over the budget of 10", r.Policy, r.RequestsPerUnit)
		}
		if r.ModelRatio < 0.8 || r.ModelRatio > 1.2 {
			t.Errorf("%s: model %.2f against truth %.2f at the rounds: not within 20%%", r.Policy, r.ModelMean, r.TruthAtRounds)
		}
		if len(r.Series) == 0 || r.RoundsMeasured == 0 {
			t.Errorf("%s: no series or no measured rounds", r.Policy)
		}
	}
	g, n1, n2 := by["greedy"], by["naive1"], by["naive2"]
	if g.ContentFreshness > n1.ContentFreshness/5 || g.ContentFreshness >= n2.ContentFreshness {
		t.Errorf("greedy %.2f, naive1 %.2f, naive2 %.2f: want greedy ≤ naive1/5 and < naive2", g.ContentFreshness, n1.ContentFreshness, n2.ContentFreshness)
	}
	if g.ItemRequests == 0 || g.SearchRequests == 0 {
		t.Errorf("greedy sent %d searches and %d fetches by id: want both", g.SearchRequests, g.ItemRequests)
	}
	if g.Gone != 6 {
		t.Errorf("greedy found %d absent papers gone, want all 6", g.Gone)
	}
	a := by["greedy α=4"]
	if a.IntervalMin < 1 || a.IntervalMax > 64 || a.IntervalMax <= a.IntervalMin {
		t.Errorf("interval search: min %v max %v, want in [1, 64] and varying", a.IntervalMin, a.IntervalMax)
	}
	for _, x := range a.Rounds {
		if x.Interval < 1 || (x.Interval > 1 && x.ExpectedMean > 4*(1+1e-5)) {
			t.Fatalf("round at %.1f: interval %v with expected mean %v: beyond alpha 4 though longer than the shortest round", x.Units, x.Interval, x.ExpectedMean)
		}
	}
	dir := t.TempDir()
	if err := WriteProbesSVGFile(filepath.Join(dir, "f.svg"), "t", rs, o.WarmupUnits); err != nil {
		t.Fatal(err)
	}
	svg, err := os.ReadFile(filepath.Join(dir, "f.svg"))
	if err != nil || strings.Count(string(svg), "<polyline") != len(rs) {
		t.Errorf("svg: %v, %d lines for %d runs", err, strings.Count(string(svg), "<polyline"), len(rs))
	}
	var csv bytes.Buffer
	if err := WriteRoundsCSV(&csv, rs); err != nil {
		t.Fatal(err)
	}
	rounds := 0
	for _, r := range rs {
		rounds += len(r.Rounds)
	}
	if got := strings.Count(csv.String(), "\n"); got != rounds+1 {
		t.Errorf("csv has %d lines, want %d rounds and a header", got, rounds)
	}
}
