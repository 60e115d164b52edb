package coordinator

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	tu "github.com/freshcrawl/freshcrawl/internal/testutil"
	"github.com/freshcrawl/freshcrawl/proto"
)

func signalEntries(n int, from int) []proto.SignalEntry {
	out := make([]proto.SignalEntry, n)
	for i := range out {
		out[i] = proto.SignalEntry{URL: fmt.Sprintf("http://127.0.0.1:9/p/%d", from+i), LastMod: time.Now().Add(-time.Hour).UTC(), Priority: -1}
	}
	return out
}

// Sitemap and feed results reach onSignal instead of the fold: they are
// acknowledged, counted by kind (a chunked result as one fetch) in
// status and in the metrics, and leave the store's fetch totals alone;
// a page result whose check fetched robots.txt is folded and then
// passed on with its Sitemap: lines.
func TestSignalResultsReachTheHook(t *testing.T) {
	e := newEnv(t, testSettings())
	logs := &syncBuffer{}
	c := e.coordinator(t, func(o *Options) {
		o.Budget, o.HostRate = 2, 20
		o.Log = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	addSeeds(t, c, testURL)
	run(t, c)

	now := time.Now()
	sitemap := proto.Result{TaskID: "s-1", Kind: proto.KindSitemap, URL: "http://127.0.0.1:9/sitemap.xml", Host: testHost, WorkerID: "w-sig",
		StartedAt: now, FinishedAt: now, Status: 200}
	for seq, n := range []int{2, 2, 1} {
		r := sitemap
		r.Signal = &proto.SignalResult{Format: "urlset", Seq: seq, Last: seq == 2, Total: 5, Entries: signalEntries(n, 10*seq)}
		if seq == 0 {
			r.Signal.Skipped, r.Signal.Robots = map[string]int{"other host": 1}, []string{"http://127.0.0.1:9/sitemap.xml"}
		}
		e.sendResult(t, r)
	}
	e.sendResult(t, proto.Result{TaskID: "f-1", Kind: proto.KindFeed, URL: "http://127.0.0.1:9/feed.xml", Host: testHost, StartedAt: now, FinishedAt: now,
		Status: 200, Signal: &proto.SignalResult{Format: "atom", Last: true, Total: 3, Entries: signalEntries(3, 100)}})
	e.sendResult(t, proto.Result{TaskID: "f-2", Kind: proto.KindFeed, URL: "http://127.0.0.1:9/feed.xml", Host: testHost, StartedAt: now, FinishedAt: now,
		ErrKind: proto.ErrHTTPStatus, Err: "404", Status: 404, Signal: &proto.SignalResult{Last: true}})

	want := SignalStatus{SitemapFetches: 1, SitemapEntries: 5, FeedFetches: 2, FeedEntries: 3}
	tu.WaitFor(t, 10*time.Second, "the signal results counted", func() bool { return c.Status().Signals == want })
	tu.WaitFor(t, 10*time.Second, "the signal results acknowledged", func() bool { return e.resultsPending(t) == 0 })
	if n := counterValue(t, c, "freshcrawl_signal_fetches_total", "sitemap"); n != 1 {
		t.Errorf("signal_fetches_total{kind=sitemap} = %v", n)
	}
	if n := counterValue(t, c, "freshcrawl_signal_entries_total", "feed"); n != 3 {
		t.Errorf("signal_entries_total{kind=feed} = %v", n)
	}
	if got := c.Status().Fetches; got != 0 {
		t.Errorf("the store counted %d page fetches for signal results", got)
	}

	task, m := e.takeTask(t, 10*time.Second)
	_ = m.Ack()
	page := ok(task, "h1")
	page.Signal = &proto.SignalResult{Last: true, Robots: []string{"http://127.0.0.1:9/sitemap.xml", "http://127.0.0.1:9/feed.xml"}}
	e.sendResult(t, page)
	tu.WaitFor(t, 10*time.Second, "the page folded", func() bool { return c.fetches() == 1 })
	tu.WaitFor(t, 10*time.Second, "the page's robots sitemaps logged", func() bool {
		return strings.Contains(logs.String(), "task="+task.ID) && strings.Contains(logs.String(), "robots=2")
	})
	if got := c.Status().Signals; got != want {
		t.Errorf("a page's robots sitemaps counted as signal fetches: %+v", got)
	}
	if w := c.Status().Workers; len(w) == 0 || w[0] != "w-sig" {
		t.Errorf("workers %v: a signal result is as good as a heartbeat", w)
	}
}

// counterValue reads a counter of c's registry by name and kind label.
func counterValue(t *testing.T, c *Coordinator, name, kind string) float64 {
	t.Helper()
	mfs, err := c.m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" && l.GetValue() == kind {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no %s{kind=%q}", name, kind)
	return 0
}

// Signal results left in the stream when the coordinator starts go to
// onSignal too, and are deleted, not folded.
func TestSignalResultsLeftInTheStream(t *testing.T) {
	e := newEnv(t, testSettings())
	now := time.Now()
	e.sendResult(t, proto.Result{TaskID: "s-left", Kind: proto.KindSitemap, URL: "http://127.0.0.1:9/sitemap.xml", Host: testHost,
		StartedAt: now, FinishedAt: now, Status: 200, Signal: &proto.SignalResult{Format: "urlset", Last: true, Total: 4, Entries: signalEntries(4, 0)}})
	c := e.coordinator(t, func(o *Options) { o.Budget, o.HostRate = 2, 20 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.foldLeftResults(ctx); err != nil {
		t.Fatal(err)
	}
	if got := c.Status().Signals; got != (SignalStatus{SitemapFetches: 1, SitemapEntries: 4}) {
		t.Errorf("signals %+v", got)
	}
	if n := e.resultsPending(t); n != 0 {
		t.Errorf("%d results left in the stream", n)
	}
	if got := c.Status().Fetches; got != 0 {
		t.Errorf("%d fetches folded", got)
	}
}
