package node_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/freshcrawl/freshcrawl/internal/node"
	"github.com/freshcrawl/freshcrawl/internal/testutil"
	"github.com/freshcrawl/freshcrawl/lab/sim"
)

// TestPolitenessAcrossWorkers runs 8 workers against four hosts on
// 127.0.0.2-5 and checks from the server side that no host is fetched
// faster than its rate, that robots.txt Crawl-delay is honoured, and that
// disallowed paths get no request at all.
func TestPolitenessAcrossWorkers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := sim.New(sim.Config{
		Hosts: 4, Pages: 40, Day: time.Second, Seed: 7,
		Robots: map[int]string{0: "User-agent: *\nCrawl-delay: 1\nDisallow: /private/\n"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	cfg := testConfig(t, t.TempDir())
	cfg.Budget = 200 // far more than the hosts allow: politeness must bind
	cfg.HostRate = 4 // 250 ms between requests to one host
	cfg.MaxInFlight = 64
	cfg.Workers = 8
	cfg.Concurrency = 4
	cfg.PriorRate = 1
	n, err := node.Start(ctx, node.Options{Config: cfg, Roles: node.Roles{Coordinator: true, Workers: 8}, Log: testutil.QuietLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()

	seeds := s.URLs()
	for _, h := range s.Hosts() {
		seeds = append(seeds, fmt.Sprintf("http://%s:%d/private/secret", h, s.Port()))
	}
	start := time.Now()
	if _, err := n.Coordinator.AddSeeds(strings.NewReader(strings.Join(seeds, "\n")), "politeness"); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 40*time.Second, "robots.txt to mark every /private/ URL disallowed", func() bool {
		return n.Coordinator.Status().Disallowed >= len(s.Hosts())
	})
	testutil.WaitFor(t, 40*time.Second, "several requests to every host", func() bool {
		rep := s.Truth(start, time.Now())
		for _, h := range rep.Hosts {
			if h.Requests < 5 {
				return false
			}
		}
		return true
	})
	rep := s.Truth(start, time.Now())
	if rep.Disallowed != 0 {
		t.Errorf("%d requests to disallowed paths: %v", rep.Disallowed, rep.DisallowedPaths)
	}
	minGap := time.Duration(float64(time.Second) / cfg.HostRate.PerSecond())
	for _, h := range rep.Hosts {
		want := minGap
		if h.Index == 0 {
			want = time.Second // Crawl-delay: 1
		}
		if h.MinGap < want {
			t.Errorf("host %s: min gap between requests %s < %s", h.Host, h.MinGap, want)
		}
		t.Logf("host %s: %d requests (%d robots.txt), min gap %s (limit %s)", h.Host, h.Requests, h.Robots, h.MinGap, want)
		if h.Robots != 1 {
			t.Errorf("host %s: robots.txt requested %d times, want once (shared cache)", h.Host, h.Robots)
		}
	}
	for _, h := range s.Hosts() {
		u, err := n.DB.Get(fmt.Sprintf("http://%s:%d/private/secret", h, s.Port()))
		if err != nil || !u.Disallowed || u.LastErrKind != "robots" {
			t.Errorf("%s /private/: disallowed=%v kind=%q (%v)", h, u.Disallowed, u.LastErrKind, err)
		}
	}
}
