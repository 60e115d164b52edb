package scratch

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/freshcrawl/freshcrawl/internal/bench"
)

func TestRun(t *testing.T) {
	o := bench.DefaultOptions()
	wl := os.Getenv("WL")
	if wl == "" { wl = "nolm" }
	pols := os.Getenv("POL")
	if pols == "" { pols = "optimal" }
	if d := os.Getenv("DAYS"); d != "" { fmt.Sscan(d, &o.Days); o.Warmup = o.Days / 4 }
	if d := os.Getenv("EXPLORE"); d != "" { fmt.Sscan(d, &o.Explore) }
	for _, name := range strings.Split(wl, ",") {
		w, err := bench.NewWorkload(name, o.Pages, o.Hosts, o.Seed)
		if err != nil { t.Fatal(err) }
		for _, p := range strings.Split(pols, ",") {
			r, err := bench.RunVirtual(context.Background(), w, p, o)
			if err != nil { t.Fatal(err) }
			fmt.Printf("%-10s %-18s F=%.4f model=%.4f f/d=%.1f ratio@budget=%.4f oracle=%.4f wall=%v\n", name, p, r.Freshness, r.ModelFreshness, r.FetchesPerDay, r.FullRatio, r.FullOracle, r.Wall)
		}
	}
}

func TestSeries(t *testing.T) {
	o := bench.DefaultOptions()
	w, _ := bench.NewWorkload(os.Getenv("WL"), o.Pages, o.Hosts, o.Seed)
	r, err := bench.RunVirtual(context.Background(), w, "optimal", o)
	if err != nil { t.Fatal(err) }
	for k, p := range r.Series {
		if k%5 == 0 { fmt.Printf("day %.0f: %.3f\n", p.Day, p.Freshness) }
	}
	fmt.Printf("F=%.4f ratio@budget=%.4f\n", r.Freshness, r.FullRatio)
}
