package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/freshcrawl/freshcrawl/internal/testutil"
)

// TestRunScaleSmall runs the scale bench end to end on a few thousand URLs:
// every seeded URL is loaded again at restart, about the asked share gets
// a fetched state, the sizes are plausible, and the plot names its series.
func TestRunScaleSmall(t *testing.T) {
	testutil.Slow(t)
	rep, err := RunScale(context.Background(), ScaleOptions{Sizes: []int{3000}, Hosts: 40, TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Sizes) != 1 {
		t.Fatalf("%d sizes", len(rep.Sizes))
	}
	r := rep.Sizes[0]
	if r.Fetched < 1200 || r.Fetched > 1800 {
		t.Errorf("%d of 3000 URLs fetched, want about half", r.Fetched)
	}
	if r.MeanURLBytes < 60 || r.MeanURLBytes > 100 {
		t.Errorf("mean URL %.1f bytes, want 60 to 100", r.MeanURLBytes)
	}
	if r.CompactBytesPerURL <= 0 || r.CompactBytesPerURL > r.FileBytesPerURL {
		t.Errorf("compacted %.0f B/URL, as written %.0f", r.CompactBytesPerURL, r.FileBytesPerURL)
	}
	var keys int
	for _, b := range r.Buckets {
		if b.Name == "urls" {
			keys = b.Keys
		}
	}
	if keys != 3000 {
		t.Errorf("urls bucket holds %d keys, want 3000", keys)
	}
	var svg bytes.Buffer
	writeScaleSVG(&svg, rep)
	for _, want := range []string{"<svg", "restart (load + first plan)", "store, compacted", "</svg>"} {
		if !strings.Contains(svg.String(), want) {
			t.Errorf("plot lacks %q", want)
		}
	}
}

// TestScaleURLLength: the generated URLs are 60 to 100 bytes.
func TestScaleURLLength(t *testing.T) {
	rng := newScaleRand(3)
	for i := range 5000 {
		u := scaleURL(rng, scaleHost(rng, 10_000), i*997)
		if len(u) < 60 || len(u) > 100 {
			t.Fatalf("URL of %d bytes: %s", len(u), u)
		}
	}
}

// TestRunScaleKeep: with KeepDir the first run seeds and keeps the store,
// and a second run finds it seeded and restarts on it without seeding:
// every URL is loaded again, and the seed figures are left at zero.
func TestRunScaleKeep(t *testing.T) {
	testutil.Slow(t)
	o := ScaleOptions{Sizes: []int{2000}, Hosts: 30, NoCompact: true, KeepDir: t.TempDir()}
	first, err := RunScale(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if r := first.Sizes[0]; r.SeedSeconds <= 0 || r.Fetched == 0 || r.FileBytesPerURL <= 0 {
		t.Fatalf("first run did not seed: %+v", r)
	}
	again, err := RunScale(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	r := again.Sizes[0]
	if r.SeedSeconds != 0 || r.Fetched != 0 {
		t.Errorf("second run seeded again: %+v", r)
	}
	if r.LoadSeconds <= 0 || r.SchedulerBytesPerURL <= 0 || r.PlanError != "" {
		t.Errorf("second run's restart: %+v", r)
	}
}
