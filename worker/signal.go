package worker

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"net/url"
	"strconv"
	"time"

	"github.com/freshcrawl/freshcrawl/proto"
	"github.com/freshcrawl/freshcrawl/worker/fetch"
	"github.com/freshcrawl/freshcrawl/worker/robots"
	"github.com/freshcrawl/freshcrawl/worker/signal"
)

// signalAccept asks for what sitemaps and feeds are served as, XML first.
const signalAccept = "application/xml, text/xml;q=0.9, application/rss+xml, application/atom+xml, application/feed+json, application/json;q=0.8, */*;q=0.5"

// signalChunkBytes bounds one result message of a sitemap or feed task:
// well under NATS's default max payload (1 MiB), leaving room for the
// message's headers, whatever the server in use allows.
const signalChunkBytes = 768 << 10

// Robots' Sitemap: lines sent with a result are bounded too: a
// robots.txt of nothing but sitemap lines would otherwise fill it.
const (
	maxRobotsSitemaps     = 500
	maxRobotsSitemapBytes = 64 << 10
	maxSignalURL          = 2048
)

// fetchSignal fetches a sitemap or a feed, reading it as it arrives, and
// puts what it lists on res.Signal. It is fetched as a page is (work has
// checked robots.txt and spaced the host; the request is conditional on
// the task's validators), through the same fetcher and so the same
// address screening.
func (w *Worker) fetchSignal(ctx context.Context, task proto.Task, res *proto.Result) {
	if res.Signal == nil {
		res.Signal = &proto.SignalResult{}
	}
	sig := res.Signal
	sig.Last = true
	req := fetch.StreamRequest{Request: fetch.Request{URL: task.URL, ETag: task.ETag, LastModified: task.LastModified}, Accept: signalAccept}
	resp := w.fetcher.Stream(ctx, req, func(b fetch.Body) error {
		if c, ok := signal.ParseCache(b.Header, time.Now()); ok {
			sig.Cache = &proto.CacheClaim{Lifetime: c.Lifetime, Age: c.Age, From: c.From, NoStore: c.NoStore, NoCache: c.NoCache, MustRevalidate: c.MustRevalidate}
		}
		// Entries of other hosts are skipped against the URL the
		// coordinator asked for, not where a redirect led.
		if task.Kind == proto.KindSitemap {
			sm, err := w.signals.Sitemap(b.R, task.URL)
			if err != nil {
				return err
			}
			sig.Format = "urlset"
			if sm.Index {
				sig.Format = "sitemapindex"
			}
			sig.Entries, sig.Sitemaps = wireEntries(sm.Entries), wireEntries(sm.Children)
			sig.Skipped, sig.Ignored, sig.Truncated = nonEmpty(sm.Skipped), nonEmpty(sm.Ignored), sm.Truncated
			return nil
		}
		f, err := w.signals.Feed(b.R, task.URL)
		if err != nil {
			return err
		}
		sig.Format, sig.Updated, sig.Entries = f.Format, f.Updated, wireEntries(f.Entries)
		sig.Skipped, sig.Ignored, sig.Truncated = nonEmpty(f.Skipped), nonEmpty(f.Ignored), f.Truncated
		return nil
	})
	w.opts.Metrics.fetched(resp.Elapsed, resp.Bytes)
	res.StartedAt = resp.Started
	res.Status, res.FinalURL, res.Bytes = resp.Status, resp.FinalURL, resp.Bytes
	res.ETag, res.LastModified, res.ContentType, res.RetryAfter = resp.ETag, resp.LastModified, resp.ContentType, resp.RetryAfter
	if resp.ErrKind != proto.ErrNone {
		res.ErrKind = resp.ErrKind
		if resp.Err != nil {
			res.Err = resp.Err.Error()
		}
		if errors.Is(resp.Err, signal.ErrTooLarge) {
			res.ErrKind, res.Truncated = proto.ErrTooLarge, true
		}
		// Nothing parsed is reported: a failed fetch says nothing of
		// the file.
		sig.Format, sig.Entries, sig.Sitemaps, sig.Skipped, sig.Ignored, sig.Truncated, sig.Updated, sig.Cache = "", nil, nil, nil, nil, "", time.Time{}, nil
		return
	}
	if resp.NotModified {
		// The file the coordinator has is current, as a page's 304.
		res.NotModified, res.Hash = true, task.PrevHash
		return
	}
	sig.Total = len(sig.Entries) + len(sig.Sitemaps)
	res.Hash = signalHash(sig)
}

// wireEntries converts parsed entries to the wire's.
func wireEntries(es []signal.Entry) []proto.SignalEntry {
	if len(es) == 0 {
		return nil
	}
	out := make([]proto.SignalEntry, len(es))
	for i, e := range es {
		out[i] = proto.SignalEntry{URL: e.URL, LastMod: e.LastMod, LastModSpan: e.LastModSpan, ChangeFreq: e.ChangeFreq, Priority: e.Priority}
	}
	return out
}

func nonEmpty(m map[string]int) map[string]int {
	if len(m) == 0 {
		return nil
	}
	return m
}

// signalHash identifies what a sitemap or feed listed, so that a file
// served without validators still shows the coordinator when it did not
// change: the entries in order, with every field.
func signalHash(s *proto.SignalResult) string {
	h := sha256.New()
	var num [8]byte
	put := func(str string) {
		binary.LittleEndian.PutUint64(num[:], uint64(len(str)))
		h.Write(num[:])
		h.Write([]byte(str))
	}
	put(s.Format)
	for _, list := range [][]proto.SignalEntry{s.Entries, s.Sitemaps} {
		put(strconv.Itoa(len(list)))
		for i := range list {
			e := &list[i]
			put(e.URL)
			put(e.ChangeFreq)
			for _, v := range []uint64{uint64(e.LastMod.UnixNano()), uint64(e.LastModSpan), math.Float64bits(e.Priority)} {
				binary.LittleEndian.PutUint64(num[:], v)
				h.Write(num[:])
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// noteRobots puts the host's robots.txt Sitemap: lines on res: always
// for a sitemap or feed task, and for a page when this check fetched
// robots.txt (once a day per host across all workers), so that the
// coordinator learns a host's sitemaps without asking for them.
func noteRobots(task proto.Task, res *proto.Result, dec robots.Decision) {
	if !task.Kind.IsSignal() && !dec.Fetched {
		return
	}
	list := robotsSitemaps(dec.Sitemaps)
	if len(list) == 0 && !task.Kind.IsSignal() {
		return
	}
	if res.Signal == nil {
		res.Signal = &proto.SignalResult{Last: true}
	}
	res.Signal.Robots = list
}

// robotsSitemaps keeps the absolute http(s) URLs of a robots.txt's
// Sitemap: lines, within the bounds above.
func robotsSitemaps(lines []string) []string {
	var out []string
	size := 0
	for _, s := range lines {
		if len(out) == maxRobotsSitemaps || size+len(s) > maxRobotsSitemapBytes {
			break
		}
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || len(s) >= maxSignalURL {
			continue
		}
		out = append(out, s)
		size += len(s)
	}
	return out
}

// resultMsg is one message of a result: its body and its message id.
type resultMsg struct {
	id   string
	data []byte
}

// resultMessages encodes res as the messages to publish: one for a page
// (id r-<task id>, de-duplicated across redeliveries), the chunks of
// proto.SplitSignal for a sitemap or feed (ids r-<task id>/<fetch
// start>/<seq>: a second fetch of the task, after a redelivery or a
// hand-back, which restarts the delivery count, may list other entries,
// and its chunks must not be dropped as repeats of the first's, while a
// publish repeated within one fetch still is).
func (w *Worker) resultMessages(task proto.Task, res proto.Result) ([]resultMsg, error) {
	if !task.Kind.IsSignal() {
		b, err := proto.Encode(res)
		return []resultMsg{{id: "r-" + task.ID, data: b}}, err
	}
	if res.Signal == nil {
		// A task that ended before its fetch (a refused host) still
		// says its result is whole.
		res.Signal = &proto.SignalResult{}
	}
	limit := signalChunkBytes
	if w.nc != nil {
		if mp := int(w.nc.MaxPayload()); mp > 0 {
			limit = min(limit, mp*3/4)
		}
	}
	chunks := proto.SplitSignal(res, limit)
	out := make([]resultMsg, len(chunks))
	for i, c := range chunks {
		b, err := proto.Encode(c)
		if err != nil {
			return nil, err
		}
		out[i] = resultMsg{id: "r-" + task.ID + "/" + strconv.FormatInt(res.StartedAt.UnixNano(), 36) + "/" + strconv.Itoa(i), data: b}
	}
	return out, nil
}

// publishAll publishes a result's messages in order; the task is
// acknowledged only once every one is stored.
func (w *Worker) publishAll(ctx context.Context, task proto.Task, msgs []resultMsg) error {
	for _, m := range msgs {
		if err := w.publishResult(ctx, task, m.data, m.id); err != nil {
			return err
		}
	}
	return nil
}
