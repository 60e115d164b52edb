package bench

import (
	"context"
	"math"
	"testing"
	"time"
)

// TestCeilingRuns runs both ceiling measurements briefly, the responder in
// this process: tasks flow through the queue, results are folded, and
// every folded result is in the store afterwards.
func TestCeilingRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("starts NATS twice and a coordinator")
	}
	res, err := RunCeiling(context.Background(), CeilingOptions{
		Warmup: 500 * time.Millisecond, Duration: time.Second, Hosts: 50, PagesPerHost: 2, MaxInFlight: 64, Responders: 8,
		TempDir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Queue.Messages <= 0 || res.Queue.PayloadBytes <= 0 {
		t.Errorf("queue: %+v, want messages acknowledged", res.Queue)
	}
	p := res.Pipeline
	if p.Folded <= 0 || p.URLs != 100 {
		t.Errorf("pipeline: %+v, want results folded for 100 URLs", p)
	}
	if want := p.CoordinatorCores * p.Seconds * 1000 / float64(p.Folded); !(p.CoordinatorCPUPer1000 > 0) || math.Abs(p.CoordinatorCPUPer1000-want) > 1e-9*want {
		t.Errorf("coordinator CPU per 1000 results %v, want %v (its cores × seconds per result)", p.CoordinatorCPUPer1000, want)
	}
	// Each result is at least decoded, folded and acknowledged, which
	// allocates; a counter that read nothing would give 0.
	if !(p.AllocsPerResult >= 1) || !(p.AllocBytesPerResult >= p.AllocsPerResult) {
		t.Errorf("allocations per result: %v objects, %v bytes; want at least one object of at least a byte", p.AllocsPerResult, p.AllocBytesPerResult)
	}
	if p.Persisted.Folded < p.Folded || p.Persisted.InStore != p.Persisted.Folded {
		t.Errorf("persisted: %+v, want every folded result in the store", p.Persisted)
	}
}
