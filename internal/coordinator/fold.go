package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/freshcrawl/freshcrawl/internal/proto"
	"github.com/freshcrawl/freshcrawl/internal/schedule"
	"github.com/freshcrawl/freshcrawl/internal/store"
)

func decodeHeartbeat(b []byte) (proto.Heartbeat, error) {
	var h proto.Heartbeat
	if err := json.Unmarshal(b, &h); err != nil {
		return h, err
	}
	if h.V != proto.Version || h.WorkerID == "" {
		return h, errors.New("bad heartbeat")
	}
	return h, nil
}

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

// folded is what a fold leaves for the in-memory
type folded struct {
	res     proto.Result
	applied bool
	rate    float64
	rateSE  float64
	changed bool
	event   *proto.ChangeEvent
	host    store.Host
	version *store.Version // a capture version stored by this fold
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
	out, err := c.Fold(results)
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
	c.afterFold(out)
}

// Fold folds results into the store (idempotently) and returns what each
// did. Exported so tests and the benchmark can fold directly.
func (c *Coordinator) Fold(results []proto.Result) ([]folded, error) {
	out := make([]folded, len(results))
	ids := make([]string, len(results))
	for i, r := range results {
		ids[i] = r.TaskID
		out[i].res = r
	}
	applied, err := c.db.FoldMany(ids, func(i int, tx *store.Tx) error {
		return c.foldOne(tx, &out[i])
	})
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].applied = applied[i]
	}
	return out, nil
}

// foldOne applies one result to its URL record; it must be idempotent with
// respect to a retried transaction (it only reads and writes through tx).
func (c *Coordinator) foldOne(tx *store.Tx, f *folded) error {
	r := &f.res
	if r.Kind == proto.KindProbe {
		return c.foldProbeResult(tx, f)
	}
	u, found, err := tx.Get(r.URL)
	if err != nil {
		return err
	}
	if !found {
		return nil // URL removed since dispatch: nothing to fold into
	}
	at := r.StartedAt
	if at.IsZero() {
		at = r.FinishedAt
	}
	prevOK := u.LastOK
	u.Fetches++
	u.LastFetch = at
	u.LastStatus = r.Status
	if !r.OK() {
		u.Errors++
		if u.ErrorKinds == nil {
			u.ErrorKinds = map[string]int64{}
		}
		u.ErrorKinds[string(r.ErrKind)]++
		u.LastErrKind, u.LastErr = string(r.ErrKind), r.Err
		u.Disallowed = r.Disallowed
	} else {
		u.LastOK = at
		u.LastErrKind, u.LastErr, u.Disallowed = "", "", false
		if r.ETag != "" || r.LastModified != "" || !r.NotModified {
			u.ETag, u.LastMod = r.ETag, r.LastModified
		}
		if r.NotModified {
			u.NotModified++
		}
		first := u.Hash == "" && r.Hash != ""
		switch {
		case first:
			u.Hash = r.Hash
			if err := tx.SetContent(u.URL, r.Text); err != nil {
				return err
			}
			if u.Mode == "capture" {
				if _, err := c.addVersion(tx, &u, r, prevOK, at); err != nil {
					return err
				}
			}
		case r.Changed && r.Hash != u.Hash:
			ch := store.Change{URL: u.URL, Host: u.Host, At: at, TaskID: r.TaskID, Hash: r.Hash, PrevHash: u.Hash}
			if r.Diff != nil {
				ch.Diff = *r.Diff
			}
			if _, err := tx.AddChange(ch); err != nil {
				return err
			}
			f.event = &proto.ChangeEvent{V: proto.Version, URL: u.URL, Host: u.Host, TaskID: r.TaskID, At: at, Hash: r.Hash, PrevHash: u.Hash, Diff: ch.Diff}
			u.Hash = r.Hash
			u.Changes++
			u.LastChange = at
			f.changed = true
			if err := tx.SetContent(u.URL, r.Text); err != nil {
				return err
			}
			if u.Mode == "capture" {
				v, err := c.addVersion(tx, &u, r, prevOK, at)
				if err != nil {
					return err
				}
				f.version = &v
			}
		}
		var st schedule.EstimateState
		if len(u.Estimate) > 0 {
			if err := st.UnmarshalBinary(u.Estimate); err != nil {
				c.log.Warn("discarding unreadable estimator state", "url", u.URL, "err", err)
				st = schedule.EstimateState{}
			}
		}
		fe := schedule.Fetch{At: at, Prev: prevOK, Changed: f.changed}
		if first {
			fe.Prev = time.Time{}
		}
		if lm, err := http.ParseTime(r.LastModified); err == nil {
			fe.LastModified = lm
		}
		u.Rate = c.est.Observe(&st, fe)
		u.RateSE = finite(c.est.RateSE(&st))
		u.Estimate, _ = st.MarshalBinary()
		if len(r.Raw) > 0 && u.KeepRaw {
			if err := tx.SetRaw(u.URL, store.Raw{ContentType: r.ContentType, FetchedAt: at, Hash: r.Hash, Size: max(r.Bytes, int64(len(r.Raw))), Truncated: r.RawTruncated || r.Truncated, Body: r.Raw}); err != nil {
				return err
			}
		}
	}
	if err := tx.AddFetch(u.URL, fetchOf(r, at, f.changed)); err != nil {
		return err
	}
	host, err := c.foldHost(tx, r, u.Host, at)
	if err != nil {
		return err
	}
	f.host = host
	f.rate, f.rateSE = u.Rate, u.RateSE
	// Persist the schedule so a restarted coordinator resumes it.
	c.mu.Lock()
	if iv := c.sched.Interval(u.URL); iv > 0 {
		u.Interval = iv
	}
	c.mu.Unlock()
	if u.Interval > 0 && !u.Disallowed {
		u.NextDue = at.Add(u.Interval)
	}
	return tx.Put(u)
}

// foldHost applies a fetch's politeness signals to its host: Crawl-delay,
// Retry-After, and exponential backoff on repeated server errors, reset by
// the first success.
func (c *Coordinator) foldHost(tx *store.Tx, r *proto.Result, name string, at time.Time) (store.Host, error) {
	host, _, err := tx.GetHost(name)
	if err != nil {
		return host, err
	}
	host.Host = name
	host.LastFetch = at
	host.Fetches++
	if !r.OK() {
		host.Errors++
	}
	if r.OK() {
		host.ServerErrs = 0
	} else if r.Status >= 500 || r.Status == 429 || r.ErrKind == proto.ErrConnect || r.ErrKind == proto.ErrTimeout {
		host.ServerErrs++
	}
	// Every fetch that consulted robots.txt reports its Crawl-delay (0 for
	// none), so a host that drops its Crawl-delay recovers its rate.
	if r.ErrKind != proto.ErrRobots || r.Disallowed {
		host.CrawlDelay = r.CrawlDelay
	}
	switch {
	case r.RetryAfter > 0:
		host.BackoffTill = at.Add(min(r.RetryAfter, 6*time.Hour))
	case host.ServerErrs > 1:
		// Repeated 5xx: back off exponentially, up to an hour.
		b := time.Duration(1<<min(host.ServerErrs-1, 12)) * time.Second
		host.Backoff = min(b, time.Hour)
		host.BackoffTill = at.Add(host.Backoff)
	case host.ServerErrs == 0:
		host.Backoff = 0
	}
	return host, tx.PutHost(host)
}

// foldProbeResult folds a keyword-search or fetch-by-id result.
func (c *Coordinator) foldProbeResult(tx *store.Tx, f *folded) error {
	r := &f.res
	at := r.StartedAt
	if at.IsZero() {
		at = r.FinishedAt
	}
	c.mu.Lock()
	req, ok := c.probes[r.URL]
	var ss *sourceState
	if ok {
		ss = c.sourceByName(req.Source)
		if ss != nil && r.OK() && req.Item == "" && req.Page == 1 {
			ss.ObserveTotal(req.Query, r.Total)
		}
	}
	c.mu.Unlock()
	host, err := c.foldHost(tx, r, r.Host, at)
	if err != nil {
		return err
	}
	f.host = host
	if ss == nil || !r.OK() {
		return nil
	}
	return c.foldProbe(tx, r, ss)
}

// addVersion stores a capture version with the interval it appeared in:
// (previous poll, this poll], or exactly its Last-Modified when that is
// plausible (not after this poll, after the previous one).
func (c *Coordinator) addVersion(tx *store.Tx, u *store.URL, r *proto.Result, prevOK, at time.Time) (store.Version, error) {
	v := store.Version{URL: u.URL, CapturedAt: at, After: prevOK, Before: at, Hash: r.Hash, Text: r.Text, TaskID: r.TaskID}
	if lm, err := http.ParseTime(r.LastModified); err == nil && !lm.After(at) && (prevOK.IsZero() || lm.After(prevOK)) {
		v.Before, v.Exact = lm, true
	}
	seq, err := tx.AddVersion(v)
	if err != nil {
		return v, err
	}
	v.Seq, v.Text = seq, ""
	u.Versions++
	return v, nil
}

// urlInFlight reports whether a task for url is in flight.
func (c *Coordinator) urlInFlight(url string) bool {
	for _, in := range c.inflight {
		if in.url == url {
			return true
		}
	}
	return false
}

// afterFold updates the live schedule, host politeness and metrics, and
// publishes change events, once the batch is committed.
func (c *Coordinator) afterFold(out []folded) {
	now := time.Now()
	var events []*proto.ChangeEvent
	c.mu.Lock()
	for i := range out {
		f := &out[i]
		r := &f.res
		at := r.StartedAt
		if at.IsZero() {
			at = now
		}
		_, found := c.inflight[r.TaskID]
		if found {
			delete(c.inflight, r.TaskID)
		}
		// A result of a task this run did not dispatch (redelivered from
		// before a restart) updates the schedule only if the URL is not
		// being fetched now; the current task decides otherwise.
		if found || !c.urlInFlight(r.URL) {
			end := r.FinishedAt
			if end.IsZero() {
				end = at
			}
			fb := schedule.Feedback{Start: at, End: end, OK: r.OK(), Changed: f.changed, NotModified: r.NotModified, Disallowed: r.Disallowed,
				HostGap: f.host.CrawlDelay, HostNotBefore: f.host.BackoffTill}
			if f.applied {
				fb.Rate, fb.RateSE = f.rate, f.rateSE
			}
			if lm, err := http.ParseTime(r.LastModified); err == nil {
				fb.LastModified = lm
			}
			c.sched.Done(r.URL, fb)
		}
		if r.Kind == proto.KindProbe {
			delete(c.probes, r.URL)
		}
		if v := f.version; v != nil && f.applied {
			c.sched.ObserveVersion(r.URL, v.After, v.Before, v.Exact, at)
		}
		if !f.applied {
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
		if f.changed {
			c.m.changes.Inc()
		}
		if f.event != nil {
			events = append(events, f.event)
		}
	}
	c.m.inFlight.Set(float64(len(c.inflight)))
	c.mu.Unlock()

	var fetches, changes int64
	c.counts.Lock()
	for i := range out {
		if !out[i].applied {
			continue
		}
		fetches++
		c.counts.fetches++
		if out[i].changed {
			changes++
			c.counts.changes++
		}
		if k := out[i].res.ErrKind; k != proto.ErrNone {
			c.counts.errors[string(k)]++
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
	c.poke()
}

// fetchOf is a result as the URL's fetch history keeps it.
func fetchOf(r *proto.Result, at time.Time, changed bool) store.Fetch {
	f := store.Fetch{At: at, Duration: r.Duration, Status: r.Status, Bytes: r.Bytes, ErrKind: string(r.ErrKind), Outcome: store.OutcomeOK}
	switch {
	case !r.OK():
		f.Outcome = store.OutcomeError
	case r.NotModified:
		f.Outcome = store.OutcomeNotModified
	case changed:
		f.Outcome = store.OutcomeChanged
	}
	return f
}

// finite keeps a standard error storable: JSON has no infinity, and an
// unknown error is stored as 0.
func finite(v float64) float64 {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return 0
	}
	return v
}
