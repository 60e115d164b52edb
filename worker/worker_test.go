package worker

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/freshcrawl/freshcrawl/internal/testutil"
	"github.com/freshcrawl/freshcrawl/proto"
	"github.com/freshcrawl/freshcrawl/worker/robots"
)

// newTestWorker builds a worker for Process alone: no NATS is needed to
// process one task.
func newTestWorker(t testing.TB) *Worker {
	return newWorker(t, nil, nil, testOptions(func(o *Options) { o.Fetch.AllowPrivate = true }))
}

// testOptions are the defaults with the worker named "t" and a test user
// agent, then set's changes.
func testOptions(set func(o *Options)) Options {
	o := DefaultOptions()
	o.ID, o.Fetch.UserAgent = "t", "freshcrawl-test/1"
	set(&o)
	return o
}

// newWorker builds a worker on a shared in-memory robots store and fails
// the test if New refuses o.
func newWorker(t testing.TB, nc *nats.Conn, js jetstream.JetStream, o Options) *Worker {
	t.Helper()
	w, err := New(nc, js, robots.NewMemoryStore(), o)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func task(url string, prev proto.Result, ignore proto.IgnoreRules, selector string) proto.Task {
	return proto.Task{V: proto.Version, ID: "t", Kind: proto.KindFetch, URL: url, Host: "127.0.0.1",
		ETag: prev.ETag, LastModified: prev.LastModified, PrevHash: prev.Hash, PrevText: prev.Text, Ignore: ignore, Selector: selector}
}

// A page whose only change is a clock and a rotating ad is not reported as
// changed once ignore rules are set; without them it is.
func TestNoiseRules(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := n.Add(1)
		fmt.Fprintf(w, `<html><body><h1>Prices</h1><p>Widget: 10 EUR</p>
<div class="ad">Buy brand %d now!</div><p class="clock">Updated 12:%02d:%02d on 2026-11-%02d</p></body></html>`, i, i%60, (i*7)%60, i%28+1)
	}))
	defer srv.Close()
	w := newTestWorker(t)
	ctx := context.Background()

	first := w.process(ctx, task(srv.URL, proto.Result{}, proto.IgnoreRules{}, ""))
	if !first.OK() || first.Changed || first.Text == "" {
		t.Fatalf("first fetch: %+v", first)
	}
	noisy := w.process(ctx, task(srv.URL, first, proto.IgnoreRules{}, ""))
	if !noisy.Changed || noisy.Diff == nil || noisy.Diff.Magnitude <= 0 {
		t.Fatalf("without rules the clock and the ad should count as a change: %+v", noisy)
	}

	rules := proto.IgnoreRules{Selectors: []string{".ad"}, Patterns: []string{`\d{2}:\d{2}:\d{2}`, `\d{4}-\d{2}-\d{2}`}}
	base := w.process(ctx, task(srv.URL, proto.Result{}, rules, ""))
	for range 3 {
		r := w.process(ctx, task(srv.URL, base, rules, ""))
		if !r.OK() || r.Changed || r.Hash != base.Hash {
			t.Fatalf("with rules set, a clock and an ad are not a change: %+v", r)
		}
	}
	if strings.Contains(base.Text, "Buy brand") || strings.Contains(base.Text, "12:") {
		t.Errorf("ignored content left in the text: %q", base.Text)
	}
}

// The change magnitude is recorded: numeric difference for a selector that
// picks a number, share of text otherwise; below MinChange nothing counts.
func TestChangeMagnitude(t *testing.T) {
	var price atomic.Value
	price.Store("19.99")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<html><body><span id="price">%s</span><p>A long description that stays the same.</p></body></html>`, price.Load())
	}))
	defer srv.Close()
	w := newTestWorker(t)
	ctx := context.Background()
	first := w.process(ctx, task(srv.URL, proto.Result{}, proto.IgnoreRules{}, "#price"))
	price.Store("24.99")
	r := w.process(ctx, task(srv.URL, first, proto.IgnoreRules{}, "#price"))
	if !r.Changed || r.Diff == nil || !r.Diff.Numeric || r.Diff.Magnitude < 4.999 || r.Diff.Magnitude > 5.001 {
		t.Fatalf("price change: %+v %+v", r, r.Diff)
	}
	price.Store("25.00")
	small := w.process(ctx, task(srv.URL, r, proto.IgnoreRules{MinChange: 0.5}, "#price"))
	if small.Changed || small.Hash != r.Hash {
		t.Fatalf("a 0.01 change below min_change 0.5 must not count: %+v", small)
	}
}

// Changes below min_change keep the stored version as the baseline, and
// with it the validators: a server that honours If-None-Match must keep
// sending the page, so that small changes add up to a change that counts.
func TestSmallChangesAddUp(t *testing.T) {
	var price atomic.Int64
	price.Store(1000) // cents
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		etag := fmt.Sprintf(`"v%d"`, price.Load())
		w.Header().Set("ETag", etag)
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		fmt.Fprintf(w, `<html><body><span id="price">%d.%02d</span></body></html>`, price.Load()/100, price.Load()%100)
	}))
	defer srv.Close()
	w := newTestWorker(t)
	ctx := context.Background()
	rules := proto.IgnoreRules{MinChange: 0.5}
	stored := w.process(ctx, task(srv.URL, proto.Result{}, rules, "#price"))
	if !stored.OK() || stored.ETag != `"v1000"` {
		t.Fatalf("first fetch: %+v", stored)
	}
	// Four steps of 0.20: each below 0.5, together 0.80 above it.
	for step := 1; step <= 4; step++ {
		price.Add(20)
		r := w.process(ctx, task(srv.URL, stored, rules, "#price"))
		if !r.OK() || r.NotModified {
			t.Fatalf("step %d: the page changed since the stored version, want a 200: %+v", step, r)
		}
		if step < 3 {
			if r.Changed || r.Hash != stored.Hash || r.ETag != stored.ETag {
				t.Fatalf("step %d: a change of %.2f is below min_change, want the stored hash and validators kept: %+v", step, float64(step)*0.2, r)
			}
			continue
		}
		if !r.Changed || r.Diff == nil || r.Diff.Magnitude < 0.599 {
			t.Fatalf("step %d: %.2f since the stored version must count: %+v %+v", step, float64(step)*0.2, r, r.Diff)
		}
		if r.ETag != fmt.Sprintf(`"v%d"`, price.Load()) {
			t.Fatalf("step %d: a counted change stores the new validators, got %q", step, r.ETag)
		}
		return
	}
}

// Disallowed URLs are never fetched; 304 counts as unchanged.
func TestRobotsAndNotModified(t *testing.T) {
	var pageHits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			fmt.Fprint(w, "User-agent: freshcrawl-test\nDisallow: /secret\nCrawl-delay: 2\n")
		default:
			pageHits.Add(1)
			if r.Header.Get("If-None-Match") == `"v1"` {
				w.WriteHeader(http.StatusNotModified)
				return
			}
			w.Header().Set("ETag", `"v1"`)
			fmt.Fprint(w, "<p>hello</p>")
		}
	}))
	defer srv.Close()
	w := newTestWorker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r := w.process(ctx, task(srv.URL+"/secret/x", proto.Result{}, proto.IgnoreRules{}, ""))
	if r.ErrKind != proto.ErrRobots || !r.Disallowed || pageHits.Load() != 0 {
		t.Fatalf("disallowed: %+v (page hits %d)", r, pageHits.Load())
	}
	if r.CrawlDelay != 2*time.Second {
		t.Errorf("crawl delay %s, want 2s", r.CrawlDelay)
	}
	first := w.process(ctx, task(srv.URL+"/page", proto.Result{}, proto.IgnoreRules{}, ""))
	again := w.process(ctx, task(srv.URL+"/page", first, proto.IgnoreRules{}, ""))
	if !again.NotModified || again.Changed || again.Hash != first.Hash || again.ETag != `"v1"` {
		t.Fatalf("304: %+v", again)
	}
	if !again.FinishedAt.After(again.StartedAt) && !again.FinishedAt.Equal(again.StartedAt) {
		t.Errorf("finished %v before started %v", again.FinishedAt, again.StartedAt)
	}
	if again.FinishedAt.IsZero() {
		t.Error("FinishedAt not set")
	}
}

// A capture task of a feed reports its items' dates; a fetch task of the
// same feed reports none (only capture uses them).
func TestCaptureFeedTimes(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/atom+xml")
		fmt.Fprint(w, `<feed xmlns="http://www.w3.org/2005/Atom"><entry><updated>2026-11-22T10:00:00Z</updated></entry>
<entry><updated>2026-11-22T11:00:00.5Z</updated></entry></feed>`)
	}))
	defer srv.Close()
	w := newTestWorker(t)
	tk := task(srv.URL+"/feed", proto.Result{}, proto.IgnoreRules{}, "")
	tk.Kind = proto.KindCapture
	r := w.process(context.Background(), tk)
	want := []time.Time{time.Date(2026, 11, 22, 11, 0, 0, 5e8, time.UTC), time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	if !r.OK() || len(r.FeedTimes) != 2 || !r.FeedTimes[0].Equal(want[0]) || !r.FeedTimes[1].Equal(want[1]) {
		t.Fatalf("capture of a feed: ok %v, feed times %v, want %v", r.OK(), r.FeedTimes, want)
	}
	tk.Kind = proto.KindFetch
	if r := w.process(context.Background(), tk); len(r.FeedTimes) != 0 {
		t.Errorf("fetch task reported feed times %v", r.FeedTimes)
	}
}

// A task that keeps the raw body gets it with the first version and with a
// change, capped at MaxRaw; an unchanged page sends none unless the
// coordinator says it has none yet.
func TestRawBody(t *testing.T) {
	var version atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "<html><body><p>version %d</p><!-- %s --></body></html>", version.Load(), strings.Repeat("x", 100))
	}))
	defer srv.Close()
	w := newWorker(t, nil, nil, testOptions(func(o *Options) { o.MaxRaw, o.Fetch.AllowPrivate = 64, true }))
	ctx := context.Background()
	keep := func(prev proto.Result, need bool) proto.Task {
		tk := task(srv.URL, prev, proto.IgnoreRules{}, "")
		tk.KeepRaw, tk.NeedRaw = true, need
		return tk
	}
	first := w.process(ctx, keep(proto.Result{}, false))
	if !first.OK() || !strings.HasPrefix(string(first.Raw), "<html><body><p>version 0</p>") || len(first.Raw) != 64 || !first.RawTruncated {
		t.Fatalf("first version: raw %q (%d bytes, truncated %v)", first.Raw, len(first.Raw), first.RawTruncated)
	}
	if same := w.process(ctx, keep(first, false)); same.Changed || same.Raw != nil {
		t.Errorf("unchanged page sent a raw body: %+v", same)
	}
	if need := w.process(ctx, keep(first, true)); need.Changed || len(need.Raw) != 64 {
		t.Errorf("need_raw on an unchanged page: %d bytes", len(need.Raw))
	}
	version.Store(1)
	changed := w.process(ctx, keep(first, false))
	if !changed.Changed || !strings.Contains(string(changed.Raw), "version 1") {
		t.Errorf("changed page: changed %v raw %q", changed.Changed, changed.Raw)
	}
	plain := w.process(ctx, task(srv.URL, proto.Result{}, proto.IgnoreRules{}, ""))
	if plain.Raw != nil {
		t.Errorf("a task without keep_raw got a raw body")
	}
}

// A fetch slower than three AckWaits stays with the worker that holds it:
// the worker's toucher keeps it in progress, so JetStream never redelivers
// it, the page is requested once and one result comes back.
func TestSlowTaskIsTouchedNotRedelivered(t *testing.T) {
	const ackWait = time.Second
	var hits atomic.Int64
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
		fmt.Fprint(w, "<html><body><p>slow page</p></body></html>")
	}))
	defer srv.Close()
	rig := startRig(t, true, ackWait, hostileGuard)
	rig.publish(t, "slow-1", srv.URL+"/slow", "")
	// Hold the response past three AckWaits, by the server's clock of
	// requests: the request has arrived, then the deadline passes.
	testutil.WaitFor(t, hostileGuard, "the slow page to be requested", func() bool { return hits.Load() > 0 })
	held := time.NewTimer(3*ackWait + ackWait/2)
	<-held.C
	select {
	case release <- struct{}{}:
	default:
		t.Fatal("the slow request ended before the page was sent")
	}
	res := rig.collect(t, "slow-1")
	if !res[0].OK() || res[0].Text != "slow page" {
		t.Errorf("result %+v, want the slow page", res[0])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info, err := rig.tasks.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.NumRedelivered != 0 || hits.Load() != 1 {
		t.Errorf("%d redelivered tasks and %d requests of the slow page; want 0 and 1", info.NumRedelivered, hits.Load())
	}
}

// New refuses what Validate refuses, naming the field (a nested fetch
// option by its path); a Grace of 0 is taken as it is.
func TestNewValidates(t *testing.T) {
	for _, c := range []struct {
		field string
		set   func(*Options)
	}{
		{"Concurrency", func(o *Options) { o.Concurrency = 0 }},
		{"Grace", func(o *Options) { o.Grace = -time.Second }},
		{"Heartbeat", func(o *Options) { o.Heartbeat = 0 }},
		{"MaxRaw", func(o *Options) { o.MaxRaw = 0 }},
		{"Fetch.MaxRedirects", func(o *Options) { o.Fetch.MaxRedirects = -1 }},
	} {
		if _, err := New(nil, nil, robots.NewMemoryStore(), testOptions(c.set)); err == nil || !strings.Contains(err.Error(), c.field+":") {
			t.Errorf("%s: New = %v, want an error naming the field", c.field, err)
		}
	}
	w := newWorker(t, nil, nil, testOptions(func(o *Options) { o.Grace = 0 }))
	if w.opts.Grace != 0 {
		t.Errorf("Grace 0 became %s", w.opts.Grace)
	}
}
