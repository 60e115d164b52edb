package sim

import (
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The worked example: one page changing at t = 1, 3 (and 5), fetched at
// t = 2 and t = 4, window [0, 5).
//
//	current version: 0 on [0,1), 1 on [1,3), 2 on [3,5)
//	copy:            none on [0,2), 1 on [2,4), 2 on [4,5)
//	fresh on [2,3) and [4,5): F = 2/5 = 0.4
//	age: [0,2) no copy, stale since 0: ∫₀² t dt = 2
//	     [3,4) copy 1 stale since the change at 3: ∫₃⁴ (t−3) dt = 0.5
//	     A = 2.5 / 5 = 0.5 s = 0.5 simulated days (Day = 1s)
func TestTruthScriptedByHand(t *testing.T) {
	clk := newFakeClock()
	s := periodicOne(t, clk)
	for _, at := range []float64{2, 4} {
		clk.At(secs(at))
		if r := get(t, s, 0, "/p/0", nil); r.Code != 200 {
			t.Fatalf("GET at %v: %d", at, r.Code)
		}
	}
	rep := s.Truth(t0, t0.Add(5*time.Second), WithStep(time.Second))
	if !near(rep.Freshness, 0.4, 1e-12) || !near(rep.AgeSeconds, 0.5, 1e-12) || !near(rep.AgeDays, 0.5, 1e-12) {
		t.Fatalf("freshness %v age %v s %v d; want 0.4, 0.5, 0.5", rep.Freshness, rep.AgeSeconds, rep.AgeDays)
	}
	wantF := []float64{0, 0, 1, 0, 1}
	wantA := []float64{0.5, 1.5, 0, 0.5, 0}
	if len(rep.Series) != 5 {
		t.Fatalf("series has %d points, want 5", len(rep.Series))
	}
	for k, p := range rep.Series {
		if !near(p.Freshness, wantF[k], 1e-12) || !near(p.AgeSeconds, wantA[k], 1e-12) || !p.Time.Equal(t0.Add(time.Duration(k)*time.Second)) {
			t.Errorf("series[%d] = %+v, want freshness %v age %v", k, p, wantF[k], wantA[k])
		}
	}
	// Steps that do not divide the window, and span several segments.
	rep = s.Truth(t0, t0.Add(5*time.Second), WithStep(2*time.Second))
	wantF, wantA = []float64{0, 0.5, 1}, []float64{1, 0.25, 0}
	for k, p := range rep.Series {
		if !near(p.Freshness, wantF[k], 1e-12) || !near(p.AgeSeconds, wantA[k], 1e-12) {
			t.Errorf("2s series[%d] = %+v, want freshness %v age %v", k, p, wantF[k], wantA[k])
		}
	}
	// One step covering everything equals the totals.
	rep = s.Truth(t0, t0.Add(5*time.Second), WithStep(time.Minute))
	if p := rep.Series[0]; len(rep.Series) != 1 || !near(p.Freshness, 0.4, 1e-12) || !near(p.AgeSeconds, 0.5, 1e-12) {
		t.Errorf("single-step series %+v", rep.Series)
	}
	if rep.Fetches != 2 || rep.PerPage[0].Fetches != 2 {
		t.Errorf("fetches %d / %d, want 2", rep.Fetches, rep.PerPage[0].Fetches)
	}
}

// 304s and change recall on the same one-page site
// (changes at 1, 3, 5, 7), window [0, 8):
//
//	fetches: 0.5 → v0; 2 → v1; 2.5 If-None-Match v1 → 304 (v1); 6 If-None-Match v1 → 200 v3
//	fresh: [0.5,1) [2,3) [6,7) = 2.5 → F = 2.5/8
//	age:   [0,0.5) ∫t = 0.125; [1,2) ∫(t−1) = 0.5; [3,6) ∫(t−3) = 4.5; [7,8) ∫(t−7) = 0.5
//	       A = 5.625/8
//	published in window: v1..v4; captured v1, v3 → recall 0.5
func TestTruthWith304AndRecall(t *testing.T) {
	clk := newFakeClock()
	s := periodicOne(t, clk)
	var etag string
	for _, step := range []struct {
		at   float64
		inm  bool
		code int
	}{{0.5, false, 200}, {2, true, 200}, {2.5, true, 304}, {6, true, 200}} {
		clk.At(secs(step.at))
		hdr := map[string]string{}
		if step.inm {
			hdr["If-None-Match"] = etag
		}
		r := get(t, s, 0, "/p/0", hdr)
		if r.Code != step.code {
			t.Fatalf("GET at %v: %d, want %d", step.at, r.Code, step.code)
		}
		if r.Code == 200 {
			etag = r.Header().Get("ETag")
		}
	}
	rep := s.Truth(t0, t0.Add(8*time.Second))
	if !near(rep.Freshness, 2.5/8, 1e-12) || !near(rep.AgeSeconds, 5.625/8, 1e-12) {
		t.Fatalf("freshness %v age %v; want %v, %v", rep.Freshness, rep.AgeSeconds, 2.5/8, 5.625/8)
	}
	if rep.Fetches != 4 || rep.NotModified != 1 || rep.NotModifiedShare != 0.25 {
		t.Fatalf("fetches %d 304s %d share %v", rep.Fetches, rep.NotModified, rep.NotModifiedShare)
	}
	if rep.RecallPublished != 4 || rep.RecallCaptured != 2 || rep.Recall != 0.5 {
		t.Fatalf("recall %d/%d = %v, want 2/4", rep.RecallCaptured, rep.RecallPublished, rep.Recall)
	}
	// A window starting later inherits the copy fetched before it: over
	// [2.2, 3.2) the copy v1 (fetched at 2) is fresh until the change at 3.
	rep = s.Truth(t0.Add(secs(2.2)), t0.Add(secs(3.2)))
	if !near(rep.Freshness, 0.8, 1e-9) || !near(rep.AgeSeconds, 0.02, 1e-9) {
		t.Fatalf("late window: freshness %v age %v; want 0.8, 0.02", rep.Freshness, rep.AgeSeconds)
	}
	if r := s.Truth(t0.Add(time.Second), t0.Add(time.Second)); r.Freshness != 0 || r.PerPage != nil {
		t.Fatalf("empty window: %+v", r)
	}
}

// Change recall on periodic pages (Ashish, Kulkarni & Wang): updates at :01 and :06 of a
// 10 s period with ±0.5 s jitter. Polling at :03 and :08 captures every
// version; polling only at :08 captures half.
func TestRecallPeriodic(t *testing.T) {
	for _, tc := range []struct {
		name  string
		polls []float64
		want  float64
	}{
		{"learned phases", []float64{3, 8}, 1},
		{"one poll", []float64{8}, 0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newFakeClock()
			s := mustNew(t, Config{Hosts: 2, Pages: 6, Seed: 3, Now: clk.Now, Periodic: []PeriodicClass{{
				Share: 1, Period: 10 * time.Second, Phases: []time.Duration{6 * time.Second, time.Second}, Jitter: 500 * time.Millisecond,
			}}})
			for k := range 10 {
				for _, p := range tc.polls {
					clk.At(secs(float64(10*k) + p))
					for i := range 6 {
						get(t, s, i%2, "/p/"+strconv.Itoa(i), nil)
					}
				}
			}
			rep := s.Truth(t0, t0.Add(100*time.Second))
			if rep.RecallPublished != 6*20 || rep.Recall != tc.want {
				t.Fatalf("recall %d/%d = %v, want %v of 120", rep.RecallCaptured, rep.RecallPublished, rep.Recall, tc.want)
			}
		})
	}
}

func TestMinGapPerHost(t *testing.T) {
	clk := newFakeClock()
	s := mustNew(t, Config{Hosts: 3, Pages: 6, Now: clk.Now})
	for _, r := range []struct {
		at   float64
		host int
		path string
	}{
		{0, 0, "/p/0"}, {0.5, 1, "/p/1"}, {1.5, 0, "/p/3"}, {1.7, 0, "/robots.txt"},
		{2.5, 1, "/p/4"}, {3, 0, "/p/0"}, {9, 2, "/p/2"},
	} {
		clk.At(secs(r.at))
		get(t, s, r.host, r.path, nil)
	}
	rep := s.Truth(t0, t0.Add(10*time.Second))
	want := []time.Duration{200 * time.Millisecond, 2 * time.Second, -1}
	for h, w := range want {
		if got := rep.Hosts[h].MinGap; got != w {
			t.Errorf("host %d min gap %v, want %v", h, got, w)
		}
	}
	if rep.MinGap != 200*time.Millisecond {
		t.Errorf("overall min gap %v, want 200ms", rep.MinGap)
	}
	if got := []int{rep.Hosts[0].Requests, rep.Hosts[1].Requests, rep.Hosts[2].Requests}; got[0] != 4 || got[1] != 2 || got[2] != 1 {
		t.Errorf("requests per host %v, want [4 2 1]", got)
	}
}

// A never-fetched site: freshness 0, age t − from on average = T/2.
func TestTruthNeverFetched(t *testing.T) {
	s := mustNew(t, Config{Pages: 10, Now: newFakeClock().Now})
	rep := s.Truth(t0.Add(time.Second), t0.Add(5*time.Second))
	if rep.Freshness != 0 || !near(rep.AgeSeconds, 2, 1e-12) || rep.MinGap != -1 || rep.Recall != 0 {
		t.Fatalf("never fetched: %+v", rep)
	}
}

func TestControlHandler(t *testing.T) {
	clk := newFakeClock()
	s := mustNew(t, Config{Pages: 12, Now: clk.Now})
	clk.At(3 * time.Second)
	get(t, s, 1, "/p/1", nil)
	clk.At(10 * time.Second)
	h := s.Handler()
	call := func(target string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
		return rec
	}
	if r := call("/urls"); r.Code != 200 || len(strings.Fields(r.Body.String())) != 12 {
		t.Fatalf("/urls: %d %q", r.Code, r.Body.String())
	}
	var pages []PageInfo
	if r := call("/pages"); json.Unmarshal(r.Body.Bytes(), &pages) != nil || len(pages) != 12 || pages[5].Host != "127.0.0.3" {
		t.Fatalf("/pages: %s", r.Body.String())
	}
	var rep Report
	r := call("/truth?warmup=2s&step=4s")
	if err := json.Unmarshal(r.Body.Bytes(), &rep); err != nil {
		t.Fatalf("/truth: %v: %s", err, r.Body.String())
	}
	if !rep.From.Equal(t0.Add(2*time.Second)) || !rep.To.Equal(t0.Add(10*time.Second)) || len(rep.Series) != 2 || rep.Fetches != 1 || len(rep.PerPage) != 12 {
		t.Fatalf("/truth report: from %v to %v, %d points, %d fetches", rep.From, rep.To, len(rep.Series), rep.Fetches)
	}
	if r := call("/truth?warmup=soon"); r.Code != http.StatusBadRequest {
		t.Fatalf("bad warmup: %d", r.Code)
	}
}

// Concurrent requests and Truth calls, for -race.
func TestConcurrentRequestsAndTruth(t *testing.T) {
	s := mustNew(t, Config{Pages: 40, Day: 10 * time.Millisecond})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for k := range 200 {
				i := (g*31 + k) % 40
				get(t, s, i%4, "/p/"+strconv.Itoa(i), nil)
			}
		})
	}
	wg.Go(func() {
		for range 20 {
			s.Truth(s.Epoch(), time.Now(), WithStep(time.Millisecond))
		}
	})
	wg.Wait()
	rep := s.Truth(s.Epoch(), time.Now().Add(time.Second))
	if rep.Fetches != 1600 || math.IsNaN(rep.Freshness) {
		t.Fatalf("fetches %d, freshness %v", rep.Fetches, rep.Freshness)
	}
}

// End to end against the paper: the Table 6 mix crawled with the uniform
// policy (every page once a month, fixed order) must show the freshness and
// age of Cho & Garcia-Molina Table 6, computed here from Table 2's fixed-order
// formulas: F = (1 − e^{−r})/r and A = (1/f)(1/2 − 1/r + (1 − e^{−r})/r²).
func TestTruthMatchesPaperTable6Uniform(t *testing.T) {
	const pages, interval, days = 2000, 30.0, 900.0
	s := mustNew(t, Config{Pages: pages, Seed: 11, Now: newFakeClock().Now})
	day := func(d float64) time.Duration { return secs(d) } // Day = 1s
	for i := range pages {
		for at := interval * float64(i) / pages; at < days+interval; at += interval {
			fetchAt(s, i, day(at))
		}
	}
	var wantF, wantA float64
	for _, c := range Table6Mix() {
		r := c.Rate * interval
		wantF += c.Share * (1 - math.Exp(-r)) / r
		wantA += c.Share * interval * (0.5 - 1/r + (1-math.Exp(-r))/(r*r))
	}
	rep := s.Truth(t0.Add(day(interval)), t0.Add(day(days+interval)))
	t.Logf("freshness %.4f (formula %.4f, paper 0.57), age %.2f days (formula %.2f, paper 5.6)", rep.Freshness, wantF, rep.AgeDays, wantA)
	if !near(rep.Freshness, wantF, 0.015) || !near(rep.AgeDays, wantA, 0.3) {
		t.Fatalf("freshness %.4f age %.2f d, want %.4f and %.2f d", rep.Freshness, rep.AgeDays, wantF, wantA)
	}
}

// fetchAt logs a successful GET of page i at offset off, as the handler
// would, without going through HTTP.
func fetchAt(s *Sim, i int, off time.Duration) {
	p := s.pages[i]
	p.mu.Lock()
	v := p.sched.countAt(off)
	p.mu.Unlock()
	s.record(record{off: off, path: "/p/" + strconv.Itoa(i), page: int32(i), version: int32(v), status: 200, host: uint8(i % s.cfg.Hosts)}, "test")
}
