package bench

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, string(b)
}

func TestThroughputPages(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	site, err := startPages(PageOptions{Hosts: 3, PagesPerHost: 4, Seed: 1, Now: func() time.Time { return time.Unix(0, now.Load()) }})
	if err != nil {
		t.Fatal(err)
	}
	defer site.close()
	urls := site.urls()
	if len(urls) != 12 || countHosts(urls) != 3 {
		t.Fatalf("%d URLs on %d hosts, want 12 on 3", len(urls), countHosts(urls))
	}
	before := map[string]string{}
	for _, u := range urls {
		code, body := get(t, u)
		if code != http.StatusOK || len(body) < 20<<10 || len(body) > 50<<10 {
			t.Errorf("%s: status %d, %d bytes; want 200 and 20–50 KiB", u, code, len(body))
		}
		before[u] = body
	}
	// Every page changes at least once an hour: an hour later every page
	// shows another revision.
	now.Add(int64(time.Hour))
	for _, u := range urls {
		_, body := get(t, u)
		rev := func(s string) string {
			_, r, _ := strings.Cut(s, `class="updated">`)
			r, _, _ = strings.Cut(r, "<")
			return r
		}
		if rev(body) == rev(before[u]) {
			t.Errorf("%s: still %q an hour later", u, rev(body))
		}
	}
	base := urls[0][:strings.LastIndex(urls[0], "/h")]
	if code, body := get(t, base+"/robots.txt"); code != 200 || !strings.Contains(body, "User-agent: *") {
		t.Errorf("robots.txt: %d %q", code, body)
	}
	if code, _ := get(t, base+"/h9/p0"); code != http.StatusNotFound {
		t.Errorf("unknown page: status %d, want 404", code)
	}
}

// TestThroughputPipeline runs the real pipeline briefly and checks that it
// fetched and that every folded fetch is in the store.
func TestThroughputPipeline(t *testing.T) {
	if testing.Short() {
		t.Skip("starts NATS, a coordinator and workers")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := RunThroughput(ctx, ThroughputOptions{
		Workers: 2, Concurrency: 2, Warmup: 500 * time.Millisecond, Duration: 2 * time.Second,
		Site: PageOptions{Hosts: 8, PagesPerHost: 3, Seed: 2}, TempDir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	fc, p := res.Freshcrawl, res.Persisted
	t.Logf("%.0f fetches/s, %.2f ms CPU/fetch, %d folded, %d in store", fc.PerSecond, fc.CPUPerFetchMS, p.Folded, p.InStore)
	if fc.Fetches == 0 || fc.PerSecond <= 0 || fc.CPUPerFetchMS <= 0 {
		t.Errorf("no throughput measured: %+v", fc)
	}
	if fc.Errors != 0 {
		t.Errorf("%d fetches failed", fc.Errors)
	}
	if p.InStore != p.Folded || p.Folded < fc.Fetches {
		t.Errorf("folded %d, in store %d, measured %d: every folded fetch must be in the store", p.Folded, p.InStore, fc.Fetches)
	}
	if p.Contents != int64(res.URLs) {
		t.Errorf("%d of %d pages have stored text", p.Contents, res.URLs)
	}
	if fc.MaxRSSBytes <= 0 || fc.PeakHeapBytes == 0 {
		t.Errorf("memory not measured: %+v", fc)
	}
	if res.Colly != nil {
		t.Errorf("Colly ran without a binary")
	}
}

func TestThroughputPageSizes(t *testing.T) {
	site, err := startPages(PageOptions{Hosts: 1, PagesPerHost: 64, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer site.close()
	lo, hi := 1<<30, 0
	for _, u := range site.urls() { // every article block, twice
		_, body := get(t, u)
		lo, hi = min(lo, len(body)), max(hi, len(body))
	}
	if lo < 20<<10 || hi > 50<<10 {
		t.Errorf("pages of %d to %d bytes, want 20–50 KiB", lo, hi)
	}
}
