package coordinator

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/freshcrawl/freshcrawl/internal/dispatch"
	"github.com/freshcrawl/freshcrawl/internal/fold"
	"github.com/freshcrawl/freshcrawl/internal/proto"
)

// foldBatch is how many results are folded in one bbolt transaction.
const foldBatch = 256

// resultLoop pulls results in batches and folds each batch in one
// transaction, then acknowledges them: a result is acknowledged only once
// its effects are committed, and folding is idempotent, so a crash between
// the two only causes a harmless redelivery.
func (c *Coordinator) resultLoop(ctx context.Context) error {
	cons, err := c.js.Consumer(ctx, proto.ResultStream, proto.ResultConsumer)
	if err != nil {
		return err
	}
	for ctx.Err() == nil {
		// Block for the first result, then take whatever else is already
		// waiting, so a batch never waits to fill up.
		first, err := cons.Fetch(1, jetstream.FetchMaxWait(time.Second))
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			c.log.Warn("fetch results", "err", err)
			sleepCtx(ctx, time.Second)
			continue
		}
		var msgs []jetstream.Msg
		for m := range first.Messages() {
			msgs = append(msgs, m)
		}
		if len(msgs) == 0 {
			continue
		}
		if more, err := cons.FetchNoWait(foldBatch - 1); err == nil {
			for m := range more.Messages() {
				msgs = append(msgs, m)
			}
		}
		c.foldMsgs(msgs)
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func (c *Coordinator) foldMsgs(msgs []jetstream.Msg) {
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
		results = append(results, r)
		keep = append(keep, m)
	}
	out, err := c.fold(results)
	if err != nil {
		c.log.Error("fold failed; results will be redelivered", "n", len(results), "err", err)
		for _, m := range keep {
			_ = m.NakWithDelay(time.Second)
		}
		return
	}
	for _, m := range keep {
		_ = m.Ack()
	}
	c.m.foldSeconds.Observe(time.Since(start).Seconds())
	c.afterFold(results, out)
}

// fold folds a batch of results into the store. What the fold needs of
// the live state is read first — each URL's interval under the
// dispatcher's lock, each probe's request under the probes lock — so the
// bbolt transaction runs with no lock held and never waits for one.
func (c *Coordinator) fold(results []proto.Result) ([]fold.Outcome, error) {
	in := make([]fold.Input, len(results))
	urls := make([]string, len(results))
	for i, r := range results {
		in[i].Result = r
		if r.Kind != proto.KindProbe {
			urls[i] = r.URL
		}
	}
	ivs := c.disp.Intervals(urls)
	c.probes.Lock()
	for i := range in {
		in[i].Interval = ivs[i]
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
	c.counts.Lock()
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
		fetches++
		c.counts.fetches++
		if o.Changed {
			c.m.changes.Inc()
			changes++
			c.counts.changes++
		}
		if r.ErrKind != proto.ErrNone {
			c.counts.errors[string(r.ErrKind)]++
		}
		if o.Event != nil {
			events = append(events, o.Event)
		}
	}
	c.counts.Unlock()
	c.fetchWin.add(now, fetches)
	c.chgWin.add(now, changes)
	for _, ev := range events {
		if b, err := proto.Encode(ev); err == nil {
			if err := c.nc.Publish(proto.ChangeSubject(ev.Host), b); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
				c.log.Warn("publish change event", "url", ev.URL, "err", err)
			}
		}
	}
}
