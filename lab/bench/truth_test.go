package bench

import (
	"context"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/freshcrawl/freshcrawl/lab/sim"
)

// testClock is the sim's injected clock: the test sets it before each
// request instead of waiting.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// scriptedFetch is one GET of page at the offset at from the epoch.
type scriptedFetch struct {
	page int
	at   time.Duration
}

// crawlSim serves cfg on loopback with its clock at the virtual epoch and
// fetches the script over HTTP in time order, sending the copy's ETag as
// the worker does. It returns the sim and the crawler's side of every page
// as the virtual mode records it.
func crawlSim(t *testing.T, cfg sim.Config, script []scriptedFetch) (*sim.Sim, []vpage) {
	t.Helper()
	clk := &testClock{now: virtualEpoch()}
	cfg.Now, cfg.Day = clk.Now, virtualDay
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	urls := s.URLs()
	etags := make([]string, len(urls))
	pages := make([]vpage, len(urls))
	script = slices.Clone(script)
	slices.SortStableFunc(script, func(a, b scriptedFetch) int { return int(a.at - b.at) })
	for _, f := range script {
		at := virtualEpoch().Add(f.at)
		clk.set(at)
		req, err := http.NewRequest(http.MethodGet, urls[f.page], nil)
		if err != nil {
			t.Fatal(err)
		}
		if etags[f.page] != "" {
			req.Header.Set("If-None-Match", etags[f.page])
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		switch resp.StatusCode {
		case http.StatusOK:
			etags[f.page] = resp.Header.Get("ETag")
		case http.StatusNotModified:
		default:
			t.Fatalf("GET %s at %v: %s", urls[f.page], f.at, resp.Status)
		}
		pages[f.page].fetches = append(pages[f.page].fetches, sim.Fetch{At: f.at, Version: s.VersionAt(f.page, at)})
	}
	return s, pages
}

// measureAndReport measures a crawl of s both ways: sim.Report from the
// sim's own request log, over [warmup, days) and, for the series,
// [0, days), and the virtual mode's measure over the truth set read from s
// (the oracle must solve).
func measureAndReport(t *testing.T, s *sim.Sim, pages []vpage, days, warmup float64, steps int) (res Result, rep, full sim.Report) {
	t.Helper()
	hosts := len(s.Hosts())
	o, err := Options{Pages: len(pages), Hosts: hosts, Days: days, Warmup: warmup, Steps: steps}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	end := time.Duration(days * float64(virtualDay))
	ts := newTruthSet(s, nil, 0, end)
	w := Workload{Name: "test"}
	res, err = measure(w, ts, pages, o, end)
	if err != nil {
		t.Fatal(err)
	}
	e := s.Epoch()
	rep = s.Truth(e.Add(time.Duration(warmup*float64(virtualDay))), e.Add(end))
	full = s.Truth(e, e.Add(end), sim.WithStep(end/time.Duration(steps)))
	return res, rep, full
}

// agree checks that the virtual measure and sim.Report say the same of one
// crawl: freshness, age, fetches, 304s, bytes and the series.
func agree(t *testing.T, res Result, rep, full sim.Report) {
	t.Helper()
	if !same(res.Freshness, rep.Freshness) || !same(res.AgeDays, rep.AgeDays) {
		t.Errorf("measure: freshness %v age %v days; Report: %v and %v", res.Freshness, res.AgeDays, rep.Freshness, rep.AgeDays)
	}
	if res.Fetches != rep.Fetches || res.NotModified != rep.NotModified || res.Bytes != rep.Bytes {
		t.Errorf("measure: %d fetches, %d 304s, %d bytes; Report: %d, %d, %d", res.Fetches, res.NotModified, res.Bytes, rep.Fetches, rep.NotModified, rep.Bytes)
	}
	if len(res.Series) != len(full.Series) {
		t.Fatalf("measure has %d series points, Report %d", len(res.Series), len(full.Series))
	}
	for k, p := range res.Series {
		q := full.Series[k]
		if !same(p.Freshness, q.Freshness) || !same(p.Day, q.Time.Sub(full.From).Hours()/24) {
			t.Errorf("series[%d]: measure %+v, Report %+v", k, p, q)
		}
	}
}

func same(a, b float64) bool { return math.Abs(a-b) <= 1e-12*max(1, math.Abs(b)) }

// A hand-built history. One page changes every 2 days at day 1, 3, 5, 7, 9
// and is fetched at day 2 (v1), 2.5 (v1 again: 304), 4 (v2) and 8.5 (v4);
// the window is [2, 10).
//
//	fresh [2,3) [4,5) [8.5,9): 2.5 of 8 days, F = 0.3125
//	stale [3,4) since 3: ∫ = 0.5; [5,8.5) since 5: 6.125; [9,10) since 9: 0.5
//	A = 7.125 / 8 = 0.890625 days
//	series over [0, 10) in steps of 2 days (no copy before day 2):
//	fresh 0, 0.5, 0.5, 0, 0.25
func TestMeasureAgreesWithReportByHand(t *testing.T) {
	day := virtualDay
	cfg := sim.Config{Hosts: 1, Pages: 1, Periodic: []sim.PeriodicClass{{Share: 1, Period: 2 * day, Phases: []time.Duration{day}}}}
	at := func(d float64) time.Duration { return time.Duration(d * float64(day)) }
	s, pages := crawlSim(t, cfg, []scriptedFetch{{0, at(2)}, {0, at(2.5)}, {0, at(4)}, {0, at(8.5)}})
	res, rep, full := measureAndReport(t, s, pages, 10, 2, 5)
	if !same(res.Freshness, 0.3125) || !same(res.AgeDays, 0.890625) || res.Fetches != 4 || res.NotModified != 1 {
		t.Errorf("measure: freshness %v age %v days, %d fetches, %d 304s; want 0.3125, 0.890625, 4, 1", res.Freshness, res.AgeDays, res.Fetches, res.NotModified)
	}
	if want := int64(s.BodySize(0, 1) + s.BodySize(0, 2) + s.BodySize(0, 4)); res.Bytes != want {
		t.Errorf("measure: %d bytes, want the three bodies served, %d", res.Bytes, want)
	}
	for k, want := range []float64{0, 0.5, 0.5, 0, 0.25} {
		if k >= len(res.Series) || !same(res.Series[k].Freshness, want) {
			t.Errorf("series: %+v, want freshness %v at step %d", res.Series, want, k)
			break
		}
	}
	agree(t, res, rep, full)
}

// Random crawls of a Poisson web: the two computations agree whatever the
// history.
func TestMeasureAgreesWithReportRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for trial := range 3 {
		const days, pages = 40, 9
		var script []scriptedFetch
		for range 80 {
			script = append(script, scriptedFetch{page: rng.IntN(pages), at: time.Duration(rng.Float64() * days * float64(virtualDay))})
		}
		cfg := sim.Config{Hosts: 3, Pages: pages, Seed: uint64(trial + 1), Mix: sim.ScaleMix(sim.Table6Mix(), 1)}
		s, vp := crawlSim(t, cfg, script)
		res, rep, full := measureAndReport(t, s, vp, days, 10, 8)
		if res.Fetches == 0 || res.NotModified == 0 || res.Freshness == 0 {
			t.Fatalf("trial %d: a crawl that says nothing: %+v", trial, res)
		}
		agree(t, res, rep, full)
	}
}

// An oracle that cannot be solved is the run's error, not a silent zero;
// the truth is still measured.
func TestMeasureOracleError(t *testing.T) {
	cfg := sim.Config{Hosts: 1, Pages: 2, Mix: []sim.RateClass{{Share: 1, Rate: 0.5}}}
	s, pages := crawlSim(t, cfg, []scriptedFetch{{0, virtualDay}, {1, 2 * virtualDay}})
	o, err := Options{Pages: 2, Hosts: 1, Days: 4, Warmup: 1, Steps: 4}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	end := 4 * virtualDay
	ts := newTruthSet(s, nil, 0, end)
	ts.pages[1].rates[0] = math.NaN() // a true rate the allocation rejects
	res, err := measure(Workload{Name: "test"}, ts, pages, o, end)
	if err == nil || !strings.Contains(err.Error(), "oracle") {
		t.Fatalf("measure with an unsolvable oracle: err %v, result %+v", err, res)
	}
	if res.Oracle != 0 || res.Fetches != 2 || res.Freshness <= 0 {
		t.Errorf("result beside the error: oracle %v, %d fetches, freshness %v", res.Oracle, res.Fetches, res.Freshness)
	}
}

// Random crawls over HTTP of a generated web (groups: pages changing at
// the same moments, mirrors among them), served by the sim from the
// script the virtual mode reads: the two computations agree.
func TestMeasureAgreesWithReportGenerated(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	const days, pages, hosts = 40, 30, 2
	w, err := NewWorkload(workloadGroups, pages, hosts, 1)
	if err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions()
	o.Pages, o.Hosts, o.Days, o.Warmup = pages, hosts, days, 10
	var script []scriptedFetch
	for range 200 {
		script = append(script, scriptedFetch{page: rng.IntN(pages), at: time.Duration(rng.Float64() * days * float64(virtualDay))})
	}
	s, vp := crawlSim(t, w.simConfig(o, virtualDay), script)
	res, rep, full := measureAndReport(t, s, vp, days, 10, 8)
	if res.Fetches == 0 || res.NotModified == 0 || res.Freshness == 0 {
		t.Fatalf("a crawl that says nothing: %+v", res)
	}
	agree(t, res, rep, full)
}
