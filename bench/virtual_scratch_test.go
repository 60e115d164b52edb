package bench

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
)

func TestVirtualScratch(t *testing.T) {
	o := DefaultOptions()
	o.PriorRate = 0.25
	env := func(k string, d float64) float64 {
		if v, err := strconv.ParseFloat(os.Getenv(k), 64); err == nil {
			return v
		}
		return d
	}
	o.HalfLifeDays = env("HL", 30)
	o.Explore = env("EX", 0.05)
	o.ReplanDays = env("RP", 1)
	o.PriorRate = env("PR", 0.25)
	for _, wl := range strings.Split(os.Getenv("WL"), ",") {
		w, _ := NewWorkload(wl, o.Pages, o.Hosts, o.Seed)
		for _, p := range strings.Split(os.Getenv("POL"), ",") {
			r, err := RunVirtual(context.Background(), w, p, o)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("errs=%d %s %-18s F=%.4f age=%.2f fetch/d=%.1f 304=%.2f oracle=%.4f ratio=%.4f wall=%v", r.PlanErrors, wl, p, r.Freshness, r.AgeDays, r.FetchesPerDay, r.NotModifiedShare(), r.Oracle, r.Ratio, r.Wall)
		}
	}
}
