package coordinator

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"syscall"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/freshcrawl/freshcrawl/coordinator/internal/dispatch"
	"github.com/freshcrawl/freshcrawl/coordinator/internal/fold"
	"github.com/freshcrawl/freshcrawl/internal/broker"
	"github.com/freshcrawl/freshcrawl/internal/failpoint"
	"github.com/freshcrawl/freshcrawl/proto"
	"github.com/freshcrawl/freshcrawl/store"
)

// foldBatch is the most results folded in one bbolt transaction.
const foldBatch = 256

// foldLinger is how long a batch waits for more results after its first:
// a few milliseconds of latency buy one commit (and one fsync) for every
// result that arrives meanwhile, and the commit is most of a small fold's
// cost (BenchmarkFold in coordinator/internal/fold).
const foldLinger = 2 * time.Millisecond

// resultPrefetch is how many results the consumer keeps coming while a
// batch is folded, so the next batch is waiting when the commit returns.
// Unacknowledged, they come back after the consumer's AckWait if this
// coordinator stops.
const resultPrefetch = 2 * foldBatch

// resultLoop folds results in batches: it blocks for one result, takes
// whatever else arrives within foldLinger (up to foldBatch), folds them in
// one transaction, then acknowledges each. A result is acknowledged only
// once its effects are committed, and folding is idempotent (the fold
// marks), so a crash between commit and acknowledgement only causes a
// redelivery that the fold recognises.
func (c *Coordinator) resultLoop(ctx context.Context) error {
	// The consumer's lookup fails while its replicas elect a leader (a
	// NATS node restarted): retried, like every JetStream set-up.
	var cons jetstream.Consumer
	err := broker.Retry(ctx, c.log, "results consumer", func(ctx context.Context) error {
		var err error
		cons, err = c.js.Consumer(ctx, proto.ResultStream, proto.ResultConsumer)
		return err
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	msgs := make([]jetstream.Msg, 0, foldBatch)
	for ctx.Err() == nil {
		it, err := cons.Messages(jetstream.PullMaxMessages(resultPrefetch))
		if err != nil {
			c.cond.consume.Hold(ctx, c.log, slog.LevelWarn, err.Error(), "consume results", "err", err)
			sleepCtx(ctx, time.Second)
			continue
		}
		err = c.foldStream(ctx, it, msgs)
		it.Stop()
		if err != nil {
			return err
		}
	}
	return nil
}

// foldStream folds the batches of one message iterator until ctx ends
// (nil), the iterator closes (nil: the caller opens another) or a fold
// fails for good (its error).
func (c *Coordinator) foldStream(ctx context.Context, it jetstream.MessagesContext, msgs []jetstream.Msg) error {
	for {
		m, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			switch {
			case ctx.Err() != nil:
				return nil
			case errors.Is(err, jetstream.ErrMsgIteratorClosed):
				c.cond.consume.Hold(ctx, c.log, slog.LevelWarn, err.Error(), "results iterator closed; consuming again", "err", err)
				sleepCtx(ctx, time.Second)
				return nil
			}
			// A status the iterator survives (it closes on the ones it
			// does not): a short pause, so a repeated one cannot spin.
			c.cond.consume.Hold(ctx, c.log, slog.LevelWarn, err.Error(), "next result", "err", err)
			sleepCtx(ctx, 100*time.Millisecond)
			continue
		}
		c.cond.consume.End(ctx, c.log, "consuming results again")
		msgs = append(msgs[:0], m)
		deadline := time.Now().Add(foldLinger)
		for len(msgs) < foldBatch {
			wait := time.Until(deadline)
			if wait <= 0 {
				break
			}
			m, err := it.Next(jetstream.NextMaxWait(wait))
			if err != nil {
				break // the linger is over (or the iterator ended: fold what we have)
			}
			msgs = append(msgs, m)
		}
		if err := c.foldMsgs(ctx, msgs); err != nil {
			return err
		}
		clear(msgs)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// foldFailure is a failed fold, for status and /healthz.
type foldFailure struct {
	Err   string    `json:"error"`
	Since time.Time `json:"since"`
}

// foldFailed records a failed fold: the results are negatively
// acknowledged and come back, so a store that refuses writes (a full
// disk) only stalls the crawl until it accepts them again.
func (c *Coordinator) foldFailed(err error) {
	f := &foldFailure{Err: err.Error(), Since: time.Now()}
	if prev := c.foldErr.Load(); prev != nil {
		f.Since = prev.Since
	}
	c.foldErr.Store(f)
	msg := "fold failed; the results will be redelivered and folded once the store accepts writes"
	if errors.Is(err, syscall.ENOSPC) {
		msg = "fold failed: the disk of the store is full; the results will be redelivered and folded once there is space (nothing was written)"
	}
	c.cond.fold.Hold(context.Background(), c.log, slog.LevelError, msg, msg, "store", c.db.Path(), "err", err)
}

func (c *Coordinator) foldMsgs(ctx context.Context, msgs []jetstream.Msg) error {
	start := time.Now()
	results := make([]proto.Result, 0, len(msgs))
	keep := make([]jetstream.Msg, 0, len(msgs))
	for _, m := range msgs {
		r, err := proto.DecodeResult(m.Data())
		if err != nil {
			c.log.Error("bad result, dropping", "err", err)
			_ = m.Term()
			continue
		}
		if r.Kind.IsSignal() {
			// Evidence about other URLs, not a page to fold.
			c.onSignal(ctx, &r)
			_ = m.Ack()
			continue
		}
		results = append(results, r)
		keep = append(keep, m)
	}
	if len(results) == 0 {
		return nil
	}
	out, err := c.fold(ctx, results)
	if err != nil {
		c.foldFailed(err)
		for _, m := range keep {
			_ = m.NakWithDelay(time.Second)
		}
		if errors.Is(err, store.ErrFenced) {
			return err
		}
		return nil
	}
	if c.foldErr.Swap(nil) != nil {
		c.cond.fold.End(ctx, c.log, "folding again: the store accepts writes")
	}
	if err := failpoint.Hit(failpoint.FoldAfterCommit); err != nil {
		// As if the acks were lost: the fold stands, its results come
		// back, and the store folds none of them twice.
		for _, m := range keep {
			_ = m.NakWithDelay(time.Second)
		}
		c.afterFold(results, out)
		return nil
	}
	done := time.Now()
	for _, m := range keep {
		_ = m.Ack()
		if md, err := m.Metadata(); err == nil && !md.Timestamp.IsZero() {
			c.m.foldLatency.Observe(max(done.Sub(md.Timestamp), 0).Seconds())
		}
	}
	c.m.foldSeconds.Observe(done.Sub(start).Seconds())
	c.afterFold(results, out)
	return nil
}

// fold folds a batch of results into the store. What the fold needs of
// the live state is read first — each URL's interval under the
// dispatcher's lock, each probe's request under the probes lock — so the
// bbolt transaction runs with no lock held and never waits for one.
func (c *Coordinator) fold(_ context.Context, results []proto.Result) ([]fold.Outcome, error) {
	in := make([]fold.Input, len(results))
	urls := make([]string, len(results))
	for i, r := range results {
		in[i].Result = r
		if r.Kind != proto.KindProbe {
			urls[i] = r.URL
		}
	}
	ivs, hinted := c.disp.Intervals(urls), c.disp.Hinted(urls)
	c.probes.Lock()
	for i := range in {
		in[i].Interval, in[i].Hinted = ivs[i], hinted[i]
		if results[i].Kind != proto.KindProbe {
			continue
		}
		if req, ok := c.probes.reqs[results[i].URL]; ok {
			if ss := c.sourceByName(req.Source); ss != nil {
				in[i].Source = ss.Source()
			}
		}
	}
	c.probes.Unlock()
	return c.folder.Fold(in)
}

// afterFold applies a committed batch to the live schedule (the feedback
// the fold learnt), the probe requests, metrics and counters, and
// publishes the change events.
func (c *Coordinator) afterFold(results []proto.Result, out []fold.Outcome) {
	now := time.Now()
	done := make([]dispatch.Finished, len(results))
	for i := range results {
		o := &out[i]
		done[i] = dispatch.Finished{TaskID: results[i].TaskID, URL: results[i].URL, At: o.At, Applied: o.Applied, Feedback: o.Feedback}
		if v := o.Version; v != nil {
			done[i].Version = &dispatch.Version{After: v.After, Before: v.Before, Exact: v.Exact, Times: o.UpdateTimes}
		}
		if done[i].At.IsZero() {
			done[i].At = now
		}
	}
	gone := c.disp.Finish(done)
	// A result is as good as a heartbeat: its worker was alive.
	var last string
	for i := range results {
		if id := results[i].WorkerID; id != last {
			c.sawWorkers(now, id)
			last = id
		}
	}

	c.probes.Lock()
	for i := range results {
		r := &results[i]
		if r.Kind != proto.KindProbe {
			continue
		}
		req, ok := c.probes.reqs[r.URL]
		switch {
		case !ok || !out[i].Applied:
		case r.OK() && req.Item == "":
			ids := make([]string, len(r.Items))
			for k, it := range r.Items {
				ids[k] = it.ID
			}
			// Total is -1 when the page shows none.
			c.probes.seen[req.Source] = append(c.probes.seen[req.Source], probeSeen{query: req.Query, page: req.Page, total: r.Total, ids: ids, at: out[i].At})
		case req.Item != "" && (r.Status == http.StatusNotFound || r.Status == http.StatusGone):
			c.probes.seen[req.Source] = append(c.probes.seen[req.Source], probeSeen{gone: req.Item})
		}
		if gone[i] {
			delete(c.probes.reqs, r.URL)
		}
	}
	c.probes.Unlock()

	var events []*proto.ChangeEvent
	var fetches, changes int64
	for i := range results {
		r, o := &results[i], &out[i]
		if !o.Applied {
			c.m.duplicates.Inc()
			continue
		}
		switch {
		case !r.OK():
			c.m.fetches.WithLabelValues("error").Inc()
			c.m.errors.WithLabelValues(string(r.ErrKind)).Inc()
		case r.NotModified:
			c.m.fetches.WithLabelValues("not_modified").Inc()
		default:
			c.m.fetches.WithLabelValues("ok").Inc()
		}
		c.m.bytes.Add(float64(r.Bytes))
		if r.Signal != nil {
			c.onSignal(context.Background(), r)
		}
		fetches++
		if o.Changed {
			c.m.changes.Inc()
			changes++
		}
		if o.Event != nil {
			events = append(events, o.Event)
		}
	}
	c.fetchWin.add(now, fetches)
	c.chgWin.add(now, changes)
	if len(events) > 0 {
		// The changes are in the change log: the publisher and the
		// webhooks take them from there.
		c.publisher.Wake()
		c.hooks.Wake()
	}
}
