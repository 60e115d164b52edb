package coordinator

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/freshcrawl/freshcrawl/proto"
)

// SignalStatus counts what the sitemaps and feeds fetched since this
// coordinator started told it: the fetches (a chunked result counts
// once) and the entries they listed (a sitemap index's child sitemaps
// included), of each kind apart.
type SignalStatus struct {
	SitemapFetches int64 `json:"sitemap_fetches"`
	SitemapEntries int64 `json:"sitemap_entries"`
	FeedFetches    int64 `json:"feed_fetches"`
	FeedEntries    int64 `json:"feed_entries"`
}

// signalCounts are SignalStatus's counters, for Status.
type signalCounts struct {
	sitemapFetches, sitemapEntries, feedFetches, feedEntries atomic.Int64
}

func (s *signalCounts) status() SignalStatus {
	return SignalStatus{SitemapFetches: s.sitemapFetches.Load(), SitemapEntries: s.sitemapEntries.Load(),
		FeedFetches: s.feedFetches.Load(), FeedEntries: s.feedEntries.Load()}
}

// signalMetrics are the Prometheus series of the signals, by kind
// (sitemap, feed).
type signalMetrics struct {
	fetches *prometheus.CounterVec
	entries *prometheus.CounterVec
}

func newSignalMetrics(reg prometheus.Registerer) signalMetrics {
	ns := "freshcrawl"
	m := signalMetrics{
		fetches: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "signal_fetches_total",
			Help: "Sitemap and feed fetches whose results arrived, by kind (sitemap, feed), failed and not-modified ones included."}, []string{"kind"}),
		entries: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "signal_entries_total",
			Help: "Entries the sitemaps and feeds fetched listed (a sitemap index's child sitemaps included), by kind."}, []string{"kind"}),
	}
	reg.MustRegister(m.fetches, m.entries)
	return m
}

// onSignal receives every result that carries what a site publishes
// about its changes: each chunk of a sitemap or feed task's result
// (instead of a fold: such a result describes other URLs, not its own),
// and, after its fold, a page result whose robots.txt check found the
// host's Sitemap: lines. It counts and logs them; a sitemap's result
// feeds the scheduler its entries' lastmods as signals and ends its
// one-off request, and robots.txt's Sitemap: lines are learnt
// (sitemaps.go). Delivery is at
// least once, and a task fetched twice (redelivered, handed back) sends
// two sequences of chunks, told apart by StartedAt (proto.SignalResult),
// so what it feeds must take a repeat as the same evidence; a sitemap or feed task's chunk with Signal.Last
// ends that task (a failed one is a single such chunk).
func (c *Coordinator) onSignal(_ context.Context, r *proto.Result) {
	s := r.Signal
	if r.Kind.IsSignal() {
		c.sawWorkers(time.Now(), r.WorkerID)
		n := 0
		if s != nil {
			n = len(s.Entries) + len(s.Sitemaps)
		}
		kind := string(r.Kind)
		if s == nil || s.Seq == 0 {
			c.sigm.fetches.WithLabelValues(kind).Inc()
		}
		c.sigm.entries.WithLabelValues(kind).Add(float64(n))
		fetches, entries := &c.sigc.sitemapFetches, &c.sigc.sitemapEntries
		if r.Kind == proto.KindFeed {
			fetches, entries = &c.sigc.feedFetches, &c.sigc.feedEntries
		}
		if s == nil || s.Seq == 0 {
			fetches.Add(1)
		}
		entries.Add(int64(n))
	}
	if s == nil {
		if r.Kind == proto.KindSitemap {
			c.sitemapResult(r, time.Now())
		}
		c.log.Debug("signal result without signal", "kind", r.Kind, "url", r.URL, "task", r.TaskID, "err_kind", r.ErrKind, "err", r.Err)
		return
	}
	now := time.Now()
	switch {
	case r.Kind == proto.KindSitemap:
		c.sitemapResult(r, now)
	case len(s.Robots) > 0:
		c.learnSitemaps(s.Robots, now)
	}
	c.log.Debug("signal", "kind", r.Kind, "url", r.URL, "task", r.TaskID, "started", r.StartedAt, "format", s.Format,
		"seq", s.Seq, "last", s.Last, "total", s.Total, "entries", len(s.Entries), "sitemaps", len(s.Sitemaps),
		"robots", len(s.Robots), "skipped", s.Skipped, "truncated", s.Truncated, "not_modified", r.NotModified,
		"err_kind", r.ErrKind, "err", r.Err)
}
