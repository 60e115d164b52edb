package bench

import (
	"context"
	"testing"
)

func TestVirtualScratch(t *testing.T) {
	o := DefaultOptions()
	for _, wl := range []string{"table6"} {
		w, _ := NewWorkload(wl, o.Pages, o.Hosts, o.Seed)
		for _, p := range Policies() {
			r, err := RunVirtual(context.Background(), w, p, o)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s %-18s F=%.4f age=%.2f fetch/d=%.1f 304=%.2f oracle=%.4f ratio=%.4f wall=%v", wl, p, r.Freshness, r.AgeDays, r.FetchesPerDay, r.NotModifiedShare(), r.Oracle, r.Ratio, r.Wall)
		}
	}
}
