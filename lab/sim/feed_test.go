package sim

import (
	"net/http"
	"testing"
	"time"

	"github.com/freshcrawl/freshcrawl/worker/extract"
)

// A periodic class without Last-Modified serves ETags only, and ignores
// If-Modified-Since; the truth still counts its versions.
func TestPeriodicWithoutLastModified(t *testing.T) {
	clk := newFakeClock()
	s := mustNew(t, Config{Hosts: 1, Pages: 1, Now: clk.Now, Periodic: []PeriodicClass{{Share: 1, Period: 10 * time.Second, Phases: []time.Duration{2 * time.Second}, NoLastModified: true}}})
	clk.At(3 * time.Second)
	r := get(t, s, 0, "/p/0", nil)
	if r.Code != 200 || r.Header().Get("ETag") == "" || r.Header().Get("Last-Modified") != "" {
		t.Fatalf("status %d, ETag %q, Last-Modified %q: want 200, an ETag, none", r.Code, r.Header().Get("ETag"), r.Header().Get("Last-Modified"))
	}
	if r := get(t, s, 0, "/p/0", map[string]string{"If-Modified-Since": clk.Now().Format(http.TimeFormat)}); r.Code != 200 {
		t.Errorf("If-Modified-Since honoured (%d) by a page that sends no Last-Modified", r.Code)
	}
	if r := get(t, s, 0, "/p/0", map[string]string{"If-None-Match": r.Header().Get("ETag")}); r.Code != http.StatusNotModified {
		t.Errorf("If-None-Match: %d, want 304", r.Code)
	}
	if rep := s.Truth(t0, t0.Add(4*time.Second)); rep.RecallPublished != 1 || rep.RecallCaptured != 1 {
		t.Errorf("recall truth: %d published, %d captured; want 1 and 1", rep.RecallPublished, rep.RecallCaptured)
	}
}

// A feed page lists its versions as items dated with their exact change
// times, which the worker's feed parser reads back, in every format.
func TestPeriodicFeeds(t *testing.T) {
	for _, kind := range []string{"rss", "atom", "json"} {
		clk := newFakeClock()
		s := mustNew(t, Config{Hosts: 1, Pages: 1, Now: clk.Now, Seed: 3, Periodic: []PeriodicClass{{Share: 1, Period: 10 * time.Second,
			Phases: []time.Duration{2 * time.Second, 6 * time.Second}, Jitter: time.Second, Feed: kind, NoLastModified: true}}})
		clk.At(200 * time.Second)
		r := get(t, s, 0, "/p/0", nil)
		if r.Code != 200 || r.Header().Get("Content-Type") != feedContentType(kind) {
			t.Fatalf("%s: status %d, Content-Type %q", kind, r.Code, r.Header().Get("Content-Type"))
		}
		times, ok := extract.FeedTimes(r.Body.Bytes())
		if !ok || len(times) != feedItems {
			t.Fatalf("%s: %d item times (feed %v), want %d", kind, len(times), ok, feedItems)
		}
		truth := s.ChangeTimes(0, t0, clk.Now())
		for i, at := range times {
			want := truth[len(truth)-1-i]
			tol := time.Microsecond
			if kind == "rss" {
				tol = time.Second // RFC 1123 dates are whole seconds
			}
			if d := at.Sub(want); d > tol || d < -tol {
				t.Errorf("%s: item %d dated %v, changed at %v", kind, i, at, want)
			}
		}
	}
}
