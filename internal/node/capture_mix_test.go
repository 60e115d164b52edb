package node_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/freshcrawl/freshcrawl/config"
	"github.com/freshcrawl/freshcrawl/internal/node"
	"github.com/freshcrawl/freshcrawl/internal/testutil"
	"github.com/freshcrawl/freshcrawl/lab/sim"
)

// TestCaptureAndFreshnessShareHosts mixes capture URLs (period 1h) with
// freshness URLs on the same four hosts, the setting in which three of four
// hosts once stalled after the capture pages' second fetch: a saturated
// host handed a capture URL out before its poll time, the poll came back
// with the same due time, its task got the same id, JetStream dropped it as
// a duplicate and the host waited for a result that never came. From the
// server side every host must keep being fetched at about the host rate,
// robots.txt must be each host's first request, and the budget the status
// reports in use must be what the hosts really see.
//
// The site is static (a crawl of manuals and docs), the policy the
// default one, and some capture URLs poll 4 times an hour only: their
// planned share is far above that, which used to leave their host ahead
// of its plan and saturated at once.
func TestCaptureAndFreshnessShareHosts(t *testing.T) {
	testutil.Slow(t)
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()
	const hosts, pages = 4, 212
	s, err := sim.New(sim.Config{Hosts: hosts, Pages: pages, Day: time.Second, Seed: 12, Mix: []sim.RateClass{{Share: 1, Rate: 0}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	cfg := testConfig(t, t.TempDir())
	cfg.Budget = 20
	cfg.HostRate = 5
	cfg.MaxInFlight = 64
	cfg.Policy = "optimal"
	cfg.Replan = 30 * time.Second
	cfg.PriorRate = config.Default().PriorRate
	cfg.AckWait = time.Minute
	cfg.Workers, cfg.Concurrency = 2, 4
	n, err := node.Start(ctx, node.Options{Config: cfg, Roles: node.Roles{Coordinator: true, Workers: 2}, Log: testutil.QuietLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()

	var lines []string
	captures := 0
	for i, u := range s.URLs() {
		if i%17 == 0 { // 13 of 212, spread over every host
			line := fmt.Sprintf(`{"url":%q,"mode":"capture","period":"1h"}`, u)
			if i%34 == 0 { // and some with a configured number of polls
				line = fmt.Sprintf(`{"url":%q,"mode":"capture","period":"1h","polls":4}`, u)
			}
			lines = append(lines, line)
			captures++
			continue
		}
		lines = append(lines, fmt.Sprintf(`{"url":%q}`, u))
	}
	start := time.Now()
	if _, err := n.Coordinator.AddSeeds(strings.NewReader(strings.Join(lines, "\n")), "mix"); err != nil {
		t.Fatal(err)
	}
	defer func() { // what the crawl looked like, when it went wrong

		if t.Failed() {
			rep := s.Truth(start, time.Now())
			for _, h := range rep.Hosts {
				t.Logf("since start: host %s: %d requests", h.Host, h.Requests)
			}
			for i, p := range rep.PerPage {
				if i%17 == 0 {
					t.Logf("capture page %d: %d fetches", i, p.Fetches)
				}
			}
			st := n.Coordinator.Status()
			t.Logf("status: in flight %d, in use %.1f", st.InFlight, st.BudgetInUse)
		}
	}()
	// Every capture page without configured polls fetched at least three
	// times: past the second fetch, where the stall began.
	testutil.WaitFor(t, 60*time.Second, "three fetches of every capture page", func() bool {
		rep := s.Truth(start, time.Now())
		for i, p := range rep.PerPage {
			if i%17 == 0 && i%34 != 0 && p.Fetches < 3 {
				return false
			}
		}
		return true
	})
	// Then a window of 10 s: each host can take 5/s, the budget is 20/s
	// over 4 hosts, so every host should see about 50 requests.
	from := time.Now()
	window := 10 * time.Second
	testutil.WaitFor(t, 30*time.Second, "the measuring window to pass", func() bool { return time.Since(from) >= window })
	to := time.Now()
	rep := s.Truth(from, to)
	secs := to.Sub(from).Seconds()
	total := 0
	for _, h := range rep.Hosts {
		t.Logf("host %s: %d requests in %.1fs (%.1f/s)", h.Host, h.Requests, secs, float64(h.Requests)/secs)
		total += h.Requests
		// Half the host rate is far below what an even crawl gives and
		// far above a stalled host's handful of requests.
		if float64(h.Requests) < 0.5*cfg.HostRate.PerSecond()*secs {
			t.Errorf("host %s got %d requests in %.1fs: stalled (host rate %.0f/s)", h.Host, h.Requests, secs, cfg.HostRate.PerSecond())
		}
	}
	st := n.Coordinator.Status()
	seen := float64(total) / secs
	t.Logf("servers saw %.1f/s; status: %.1f/s in use, %d in flight, %d capture URLs", seen, st.BudgetInUse, st.InFlight, st.CaptureURLs)
	if st.CaptureURLs != captures {
		t.Errorf("status shows %d capture URLs, seeded %d", st.CaptureURLs, captures)
	}
	// The plan's budget in use is what is dispatched: within half of what
	// the servers saw (robots.txt requests are not in the plan, and a
	// loaded machine's workers lag the plan). The stall this guards
	// against claimed four times what the servers saw.
	if st.BudgetInUse > 1.5*seen || st.BudgetInUse < 0.5*seen {
		t.Errorf("status claims %.1f/s in use; the servers saw %.1f/s", st.BudgetInUse, seen)
	}
	// robots.txt is every host's first request.
	first := map[int]string{}
	for _, q := range s.Requests() {
		if _, ok := first[q.Host]; !ok {
			first[q.Host] = q.Path
		}
	}
	for h := range hosts {
		if first[h] != "/robots.txt" {
			t.Errorf("host %d: first request %q, want /robots.txt", h, first[h])
		}
	}
}
