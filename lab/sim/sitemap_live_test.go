package sim

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/freshcrawl/freshcrawl/internal/broker"
	"github.com/freshcrawl/freshcrawl/internal/testutil"
	"github.com/freshcrawl/freshcrawl/proto"
	"github.com/freshcrawl/freshcrawl/worker"
	"github.com/freshcrawl/freshcrawl/worker/robots"
)

// liveSignals is a live sim with accurate sitemaps and feeds, a worker on
// embedded NATS, and the results consumer.
type liveSignals struct {
	s       *Sim
	js      jetstream.JetStream
	results jetstream.Consumer
}

func startLiveSignals(t *testing.T) *liveSignals {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := mustNew(t, Config{Hosts: 2, Pages: 20, Day: 200 * time.Millisecond, Seed: 3, Signals: Signals{Sitemap: SitemapAccurate, Feed: true, FeedEntries: 5}})
	// Not ctx: the sim serves until the test ends.
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	quiet := testutil.QuietLogger(t)
	srv := testutil.StartNATS(t)
	nc, js, err := broker.Connect(srv.ClientURL(), "sim-signals", quiet)
	if err != nil {
		t.Fatal(err)
	}
	if err := broker.Ensure(ctx, js, broker.DefaultSettings()); err != nil {
		t.Fatal(err)
	}
	results, err := js.Consumer(ctx, proto.ResultStream, proto.ResultConsumer)
	if err != nil {
		t.Fatal(err)
	}
	o := worker.DefaultOptions()
	o.ID, o.Concurrency, o.Log, o.Fetch.AllowPrivate = "sim", 2, quiet, true
	w, err := worker.New(nc, js, robots.NewMemoryStore(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	testutil.Run(t, "worker", w.Run)
	return &liveSignals{s: s, js: js, results: results}
}

// run publishes a task of kind for url and returns its result, its
// chunks put together.
func (l *liveSignals) run(t *testing.T, id string, kind proto.Kind, url string) proto.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	host := url[len("http://"):]
	host = host[:strings.IndexByte(host, '/')]
	b, _ := proto.Encode(proto.Task{V: proto.Version, ID: id, Kind: kind, URL: url, Host: host, IssuedAt: time.Now()})
	if _, err := l.js.Publish(ctx, proto.TaskSubject(kind), b, jetstream.WithMsgID(id)); err != nil {
		t.Fatal(err)
	}
	var out proto.Result
	for ctx.Err() == nil {
		batch, err := l.results.Fetch(1, jetstream.FetchMaxWait(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for m := range batch.Messages() {
			r, err := proto.DecodeResult(m.Data())
			if err != nil {
				t.Fatal(err)
			}
			_ = m.Ack()
			if r.TaskID != id {
				continue
			}
			if out.TaskID == "" {
				out = r
			} else if r.Signal != nil {
				out.Signal.Entries = append(out.Signal.Entries, r.Signal.Entries...)
				out.Signal.Sitemaps = append(out.Signal.Sitemaps, r.Signal.Sitemaps...)
			}
			if r.Signal == nil || r.Signal.Last {
				return out
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
			t.Fatal(err)
		}
	}
	t.Fatalf("no result for %s", id)
	return out
}

// requestedAt is when the sim served path on host h last.
func (l *liveSignals) requestedAt(t *testing.T, h int, path string) time.Time {
	t.Helper()
	var at time.Time
	for _, r := range l.s.Requests() {
		if r.Host == h && r.Path == path && r.Status == 200 {
			at = r.Time
		}
	}
	if at.IsZero() {
		t.Fatalf("host %d %s never served", h, path)
	}
	return at
}

// The crawler's side against the live sim: a page's result names the
// host's sitemap from its robots.txt; the sitemap task, through a worker
// on embedded NATS, lists every page of the host with its true last
// change as of the request; the feed task lists the host's latest
// changes with their true times.
func TestWorkerReadsSimSignals(t *testing.T) {
	l := startLiveSignals(t)
	time.Sleep(1500 * time.Millisecond) // a week of simulated days
	urls := l.s.URLs()
	page := l.run(t, "p-0", proto.KindFetch, urls[0])
	if !page.OK() || page.Signal == nil || len(page.Signal.Robots) != 1 || !strings.HasSuffix(page.Signal.Robots[0], "/sitemap.xml") {
		t.Fatalf("page result: %+v %+v", page, page.Signal)
	}
	sm := l.run(t, "s-0", proto.KindSitemap, page.Signal.Robots[0])
	at := l.requestedAt(t, 0, "/sitemap.xml")
	if !sm.OK() || sm.Signal.Format != "urlset" || len(sm.Signal.Entries) != 10 {
		t.Fatalf("sitemap: %+v %+v", sm, sm.Signal)
	}
	changed := 0
	for _, e := range sm.Signal.Entries {
		i, err := strconv.Atoi(e.URL[strings.LastIndex(e.URL, "/")+1:])
		if err != nil || urls[i] != e.URL {
			t.Fatalf("entry %s", e.URL)
		}
		if want := trueLast(l.s, i, at); !e.LastMod.Equal(want) {
			t.Errorf("page %d: lastmod %v, true last change %v", i, e.LastMod, want)
		} else if want.After(l.s.Epoch()) {
			changed++
		}
	}
	if changed == 0 {
		t.Error("no page had changed: nothing was checked")
	}
	feedURL := strings.TrimSuffix(page.Signal.Robots[0], "sitemap.xml") + "feed.xml"
	feed := l.run(t, "f-0", proto.KindFeed, feedURL)
	at = l.requestedAt(t, 0, "/feed.xml")
	if !feed.OK() || feed.Signal.Format != "atom" || len(feed.Signal.Entries) == 0 {
		t.Fatalf("feed: %+v %+v", feed, feed.Signal)
	}
	for _, e := range feed.Signal.Entries {
		i, _ := strconv.Atoi(e.URL[strings.LastIndex(e.URL, "/")+1:])
		// The feed's newest entry of a page is its last change.
		if want := trueLast(l.s, i, at); !e.LastMod.Equal(want) {
			t.Errorf("feed entry %s: %v, true last change %v", e.URL, e.LastMod, want)
		}
	}
}
