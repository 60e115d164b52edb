package bench

import (
	"context"
	"testing"
	"time"

	"github.com/freshcrawl/freshcrawl/internal/testutil"
	"github.com/freshcrawl/freshcrawl/store"
)

// A short soak (the hour-long one is `freshcrawl bench soak`): the crawl
// folds throughout, announces its changes, leaks no goroutines or files,
// and its history is cut by the retention while it runs.
func TestShortSoak(t *testing.T) {
	testutil.Slow(t)
	if testing.Short() {
		t.Skip("a 20-second crawl")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const workers, concurrency = 2, 4
	keep := store.Retention{Versions: 3, Changes: 100}
	var samples []SoakSample
	res, err := RunSoak(ctx, SoakOptions{
		Duration: 20 * time.Second, Warmup: 6 * time.Second, Sample: time.Second,
		URLs: 300, Hosts: 10, Budget: 60, HostRate: 20, Day: 2 * time.Second,
		CaptureShare: 0.2, CapturePeriod: 4 * time.Second, CapturePolls: 4, Seed: 1,
		Retention: keep, Workers: workers, Concurrency: concurrency,
		TempDir:  t.TempDir(),
		OnSample: func(s SoakSample) { samples = append(samples, s) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Samples) != len(samples) || len(samples) < 10 {
		t.Fatalf("%d samples (%d seen), want about 20", len(res.Samples), len(samples))
	}
	last := samples[len(samples)-1]
	var after []SoakSample
	for _, s := range samples {
		if s.Elapsed > res.Warmup {
			after = append(after, s)
		}
	}
	if len(after) < 2 || last.Fetches <= after[0].Fetches || last.Errors != 0 {
		t.Fatalf("fetches %d → %d after the warm-up, %d errors: want the crawl to go on without errors", after[0].Fetches, last.Fetches, last.Errors)
	}
	if res.LatencyN == 0 || res.LatencyP99 <= 0 || res.LatencyMax < res.LatencyP99 {
		t.Fatalf("%d change latencies, p99 %.1f ms, max %.1f ms: want the fold's announcements measured", res.LatencyN, res.LatencyP99, res.LatencyMax)
	}
	// No leak: a goroutine or a file descriptor left behind per fetch
	// would add hundreds over the run. What a fetch holds while it runs
	// (its goroutines, its connection) is bounded by the concurrency.
	base := after[0]
	for _, s := range after {
		if s.Goroutines > base.Goroutines+4*workers*concurrency {
			t.Errorf("at %s: %d goroutines, %d after the warm-up", s.Elapsed, s.Goroutines, base.Goroutines)
		}
		if base.OpenFiles >= 0 && s.OpenFiles > base.OpenFiles+2*workers*concurrency+16 {
			t.Errorf("at %s: %d open files, %d after the warm-up", s.Elapsed, s.OpenFiles, base.OpenFiles)
		}
	}
	// Retention works while the crawl runs: what it deleted is counted
	// before the crawler stops, and the history kept is a fraction of
	// what was produced.
	if res.Pruned.Versions == 0 || res.Pruned.Changes == 0 {
		t.Fatalf("retention deleted %+v while running", res.Pruned)
	}
	if int64(last.Versions) > res.ProducedVersions/2 || int64(last.ChangeLog) > res.ProducedChanges/2 {
		t.Fatalf("kept %d of %d versions and %d of %d changes: the retention (%+v) cut too little",
			last.Versions, res.ProducedVersions, last.ChangeLog, res.ProducedChanges, keep)
	}
	if res.CaptureURLs != 60 {
		t.Errorf("%d capture URLs, want 20%% of 300", res.CaptureURLs)
	}
}
