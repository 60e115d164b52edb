package worker

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/freshcrawl/freshcrawl/proto"
)

// signalSite is a site with a robots.txt naming its sitemaps, a gzipped
// sitemap index, a urlset honouring If-None-Match, an Atom feed, and a
// sitemap robots.txt disallows; it logs the paths requested.
type signalSite struct {
	*httptest.Server
	mu    sync.Mutex
	paths []string
}

func (s *signalSite) requested() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.paths)
}

func startSignalSite(t *testing.T, urlset func(base string) []byte) *signalSite {
	t.Helper()
	s := &signalSite{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.paths = append(s.paths, r.URL.Path)
		s.mu.Unlock()
		base := "http://" + r.Host
		switch r.URL.Path {
		case "/robots.txt":
			fmt.Fprintf(w, "User-agent: *\nDisallow: /private/\nSitemap: %s/sitemap.xml\nSitemap: %s/feed.xml\nSitemap: not a url\n", base, base)
		case "/sitemap.xml":
			w.Header().Set("Content-Type", "application/xml")
			fmt.Fprintf(w, `<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><sitemap><loc>%s/pages.xml.gz</loc><lastmod>2026-03-01T10:00:00Z</lastmod></sitemap></sitemapindex>`, base)
		case "/pages.xml.gz":
			w.Header().Set("ETag", `"p1"`)
			w.Header().Set("Cache-Control", "max-age=3600")
			if r.Header.Get("If-None-Match") == `"p1"` {
				w.WriteHeader(http.StatusNotModified)
				return
			}
			w.Header().Set("Content-Type", "application/x-gzip")
			var b bytes.Buffer
			zw := gzip.NewWriter(&b)
			_, _ = zw.Write(urlset(base))
			_ = zw.Close()
			_, _ = w.Write(b.Bytes())
		case "/feed.xml":
			w.Header().Set("Content-Type", "application/atom+xml")
			fmt.Fprintf(w, `<feed xmlns="http://www.w3.org/2005/Atom"><title>f</title><updated>2026-03-01T12:00:00Z</updated>
<entry><id>1</id><link href="%s/p/1"/><updated>2026-03-01T11:00:00Z</updated></entry><entry><id>2</id><link href="/p/2"/><published>2026-03-01T09:00:00Z</published></entry></feed>`, base)
		case "/private/sitemap.xml", "/plain.html":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<html><body>not a sitemap</body></html>")
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// smallURLSet is a urlset of three pages on base.
func smallURLSet(base string) []byte {
	return fmt.Appendf(nil, `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<url><loc>%[1]s/p/1</loc><lastmod>2026-03-01</lastmod><changefreq>daily</changefreq><priority>0.9</priority></url>
<url><loc>%[1]s/p/2</loc></url><url><loc>https://elsewhere.example/p/3</loc></url></urlset>`, base)
}

func signalTask(kind proto.Kind, url, etag string) proto.Task {
	return proto.Task{V: proto.Version, ID: "s-" + string(kind), Kind: kind, URL: url, Host: "127.0.0.1", IssuedAt: time.Now(), ETag: etag}
}

// A sitemap task reads a sitemap index, then a gzipped urlset of the
// host's pages with its caching headers, conditionally; a feed task
// reads the feed's links and times; each carries the host's robots.txt
// sitemaps. The politeness is a page's: robots.txt is read first, and a
// disallowed sitemap is never requested.
func TestSignalTasks(t *testing.T) {
	site := startSignalSite(t, smallURLSet)
	w := newTestWorker(t)
	ctx := context.Background()
	wantRobots := []string{site.URL + "/sitemap.xml", site.URL + "/feed.xml"}

	idx := w.process(ctx, signalTask(proto.KindSitemap, site.URL+"/sitemap.xml", ""))
	s := idx.Signal
	if !idx.OK() || s == nil || s.Format != "sitemapindex" || len(s.Sitemaps) != 1 || s.Sitemaps[0].URL != site.URL+"/pages.xml.gz" ||
		!s.Sitemaps[0].LastMod.Equal(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)) || !s.Last || s.Total != 1 || idx.Hash == "" {
		t.Fatalf("index: %+v %+v", idx, s)
	}
	if !slices.Equal(s.Robots, wantRobots) {
		t.Errorf("robots sitemaps %q, want %q", s.Robots, wantRobots)
	}
	if got := site.requested(); !slices.Equal(got, []string{"/robots.txt", "/sitemap.xml"}) {
		t.Errorf("requests %q", got)
	}

	pages := w.process(ctx, signalTask(proto.KindSitemap, site.URL+"/pages.xml.gz", ""))
	s = pages.Signal
	if !pages.OK() || s.Format != "urlset" || len(s.Entries) != 2 || s.Skipped["other host"] != 1 || pages.ETag != `"p1"` {
		t.Fatalf("urlset: %+v %+v", pages, s)
	}
	if e := s.Entries[0]; e.URL != site.URL+"/p/1" || e.ChangeFreq != "daily" || e.Priority != 0.9 || e.LastModSpan != 24*time.Hour {
		t.Errorf("entry 0: %+v", e)
	}
	if c := s.Cache; c == nil || c.Lifetime != time.Hour || c.From != "max-age" {
		t.Errorf("cache claim %+v", c)
	}
	same := w.process(ctx, signalTask(proto.KindSitemap, site.URL+"/pages.xml.gz", pages.ETag))
	if !same.OK() || !same.NotModified || same.Signal == nil || len(same.Signal.Entries) != 0 || same.ETag != `"p1"` || !same.Signal.Last {
		t.Errorf("conditional: %+v %+v", same, same.Signal)
	}

	feed := w.process(ctx, signalTask(proto.KindFeed, site.URL+"/feed.xml", ""))
	s = feed.Signal
	if !feed.OK() || s.Format != "atom" || len(s.Entries) != 2 || !s.Updated.Equal(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)) {
		t.Fatalf("feed: %+v %+v", feed, s)
	}
	if e := s.Entries[1]; e.URL != site.URL+"/p/2" || !e.LastMod.Equal(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)) {
		t.Errorf("feed entry 1: %+v", e)
	}

	for _, c := range []struct {
		kind proto.Kind
		path string
		want proto.ErrorKind
	}{
		{proto.KindSitemap, "/private/sitemap.xml", proto.ErrRobots},
		{proto.KindSitemap, "/plain.html", proto.ErrContent},
		{proto.KindFeed, "/plain.html", proto.ErrContent},
		{proto.KindSitemap, "/missing.xml", proto.ErrHTTPStatus},
	} {
		r := w.process(ctx, signalTask(c.kind, site.URL+c.path, ""))
		if r.ErrKind != c.want || r.Signal == nil || r.Signal.Entries != nil || r.Signal.Format != "" {
			t.Errorf("%s %s: %q %s, signal %+v", c.kind, c.path, r.ErrKind, r.Err, r.Signal)
		}
	}
	if slices.Contains(site.requested(), "/private/sitemap.xml") {
		t.Error("a sitemap robots.txt disallows was requested")
	}
}

// A page task whose robots.txt check fetched robots.txt carries the
// host's sitemaps; the next page, answered from the cache, carries none.
func TestPageResultsCarryRobotsSitemaps(t *testing.T) {
	site := startSignalSite(t, smallURLSet)
	w := newTestWorker(t)
	first := w.process(context.Background(), task(site.URL+"/plain.html", proto.Result{}, proto.IgnoreRules{}, ""))
	if !first.OK() || first.Signal == nil || len(first.Signal.Robots) != 2 || !first.Signal.Last || first.Signal.Format != "" {
		t.Fatalf("first page: %+v %+v", first, first.Signal)
	}
	if again := w.process(context.Background(), task(site.URL+"/plain.html", first, proto.IgnoreRules{}, "")); again.Signal != nil {
		t.Errorf("second page: %+v", again.Signal)
	}
}

// A feed over the worker's limit fails as too large, with nothing parsed.
func TestSignalFeedTooLarge(t *testing.T) {
	site := startSignalSite(t, smallURLSet)
	w := newWorker(t, nil, nil, testOptions(func(o *Options) {
		o.Fetch.AllowPrivate, o.IgnoreRobots, o.Signal.MaxFeedBytes = true, true, 64
	}))
	r := w.process(context.Background(), signalTask(proto.KindFeed, site.URL+"/feed.xml", ""))
	if r.ErrKind != proto.ErrTooLarge || !r.Truncated || r.Signal == nil || r.Signal.Entries != nil {
		t.Errorf("%q %s %+v", r.ErrKind, r.Err, r.Signal)
	}
}

// bigURLSet is a urlset of 50 000 pages on base, each with a lastmod, a
// changefreq and a priority: several MB, far over one NATS message.
func bigURLSet(base string) []byte {
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">` + "\n")
	for i := range 50_000 {
		fmt.Fprintf(&b, "<url><loc>%s/articles/%06d/a-title-of-some-length</loc><lastmod>2026-02-%02dT%02d:%02d:00+00:00</lastmod><changefreq>weekly</changefreq><priority>0.5</priority></url>\n",
			base, i, i%28+1, i%24, i%60)
	}
	b.WriteString("</urlset>\n")
	return b.Bytes()
}

// A 50 000-URL sitemap goes through a worker on embedded NATS: its
// result arrives as chunks that each fit NATS's default max payload, in
// order, the last one marked, every chunk with its own message id, and
// together they hold every URL; the task is acknowledged.
func TestSitemapChunksThroughNATS(t *testing.T) {
	site := startSignalSite(t, bigURLSet)
	rig := startRig(t, false, 30*time.Second, 30*time.Second)
	tk := signalTask(proto.KindSitemap, site.URL+"/pages.xml.gz", "")
	b, err := proto.Encode(tk)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*hostileGuard)
	defer cancel()
	if _, err := rig.js.Publish(ctx, proto.TaskSubject(proto.KindSitemap), b, jetstream.WithMsgID(tk.ID)); err != nil {
		t.Fatal(err)
	}
	var entries []proto.SignalEntry
	ids := map[string]bool{}
	for seq := 0; ; seq++ {
		m := nextResult(ctx, t, rig.results)
		if n := len(m.Data()); n > 1<<20 {
			t.Errorf("chunk %d: %d bytes, over NATS's default max payload", seq, n)
		}
		r, err := proto.DecodeResult(m.Data())
		if err != nil {
			t.Fatal(err)
		}
		_ = m.Ack()
		if !r.OK() || r.TaskID != tk.ID || r.Kind != proto.KindSitemap || r.Signal == nil || r.Signal.Seq != seq || r.Signal.Total != 50_000 {
			t.Fatalf("chunk %d: %+v (%s)", seq, r.Signal, r.Err)
		}
		ids[m.Headers().Get(jetstream.MsgIDHeader)] = true
		entries = append(entries, r.Signal.Entries...)
		if r.Signal.Last {
			break
		}
	}
	if len(entries) != 50_000 || len(ids) < 2 {
		t.Fatalf("%d entries in %d messages", len(entries), len(ids))
	}
	for i, e := range entries {
		if want := fmt.Sprintf("%s/articles/%06d/a-title-of-some-length", site.URL, i); e.URL != want || e.LastMod.IsZero() || e.Priority != 0.5 {
			t.Fatalf("entry %d: %+v, want %s", i, e, want)
		}
	}
	testutilWaitAcked(ctx, t, rig)
}

// nextResult waits for the next message of the results consumer.
func nextResult(ctx context.Context, t *testing.T, cons jetstream.Consumer) jetstream.Msg {
	t.Helper()
	for ctx.Err() == nil {
		batch, err := cons.Fetch(1, jetstream.FetchMaxWait(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for m := range batch.Messages() {
			return m
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
			t.Fatal(err)
		}
	}
	t.Fatal("no result before the deadline")
	return nil
}

// testutilWaitAcked waits until the task stream is empty: the worker
// acknowledged the task after its last chunk was stored.
func testutilWaitAcked(ctx context.Context, t *testing.T, rig *hostileRig) {
	t.Helper()
	for {
		info, err := rig.tasks.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.NumPending == 0 && info.NumAckPending == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("task not acknowledged: %+v", info)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// The worker refuses signal options Validate refuses, by their path.
func TestNewValidatesSignal(t *testing.T) {
	o := testOptions(func(o *Options) { o.Signal.MaxEntries = 0 })
	if _, err := New(nil, nil, nil, o); err == nil || !strings.Contains(err.Error(), "Signal.MaxEntries:") {
		t.Errorf("New = %v", err)
	}
}

// A page's result is one message under the task's id; a sitemap's is its
// chunks, each under an id of its fetch's start and its sequence, the
// last marked, even when the task ended before its fetch and carries no
// entries.
func TestResultMessages(t *testing.T) {
	w := newTestWorker(t)
	page := task("http://127.0.0.1/p", proto.Result{}, proto.IgnoreRules{}, "")
	msgs, err := w.resultMessages(page, proto.Result{V: proto.Version, TaskID: page.ID, URL: page.URL, Text: "x"})
	if err != nil || len(msgs) != 1 || msgs[0].id != "r-"+page.ID {
		t.Fatalf("page: %+v, %v", msgs, err)
	}
	sm := signalTask(proto.KindSitemap, "http://127.0.0.1/sitemap.xml", "")
	start := time.Unix(0, 36*36+5)
	refused := proto.Result{V: proto.Version, TaskID: sm.ID, Kind: sm.Kind, URL: sm.URL, Attempt: 2, StartedAt: start, ErrKind: proto.ErrBlocked}
	msgs, err = w.resultMessages(sm, refused)
	if err != nil || len(msgs) != 1 || msgs[0].id != "r-"+sm.ID+"/105/0" {
		t.Fatalf("refused sitemap: %+v, %v", msgs, err)
	}
	if r, err := proto.DecodeResult(msgs[0].data); err != nil || r.Signal == nil || !r.Signal.Last || r.Signal.Seq != 0 {
		t.Errorf("refused sitemap's result: %+v, %v", r.Signal, err)
	}
	big := refused
	big.ErrKind, big.Signal = "", &proto.SignalResult{Format: "urlset"}
	for i := range 20_000 {
		big.Signal.Entries = append(big.Signal.Entries, proto.SignalEntry{URL: fmt.Sprintf("http://127.0.0.1/%s/%d", strings.Repeat("p", 40), i), Priority: -1})
	}
	msgs, err = w.resultMessages(sm, big)
	if err != nil || len(msgs) < 2 {
		t.Fatalf("big sitemap: %d messages, %v", len(msgs), err)
	}
	for i, m := range msgs {
		if m.id != fmt.Sprintf("r-%s/105/%d", sm.ID, i) || len(m.data) > signalChunkBytes {
			t.Errorf("chunk %d: id %s, %d bytes", i, m.id, len(m.data))
		}
	}
}
