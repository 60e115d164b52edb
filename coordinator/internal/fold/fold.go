// Package fold applies workers' results to the store: a batch of
// proto.Result becomes, in one bbolt transaction, each URL's record
// (counters, validators, hash, estimator state and the rate's standard
// error, schedule), its fetch history, its host's politeness state and
// counters, its latest content (and raw body, for a URL that keeps it),
// the change log, capture versions and the tracked items a keyword probe
// saw. Folding is idempotent: a
// result already folded changes nothing. What each result teaches the
// live schedule comes back as a schedule.Feedback, for the caller to apply
// once the transaction has committed.
package fold

import (
	"fmt"
	"hash/fnv"
	"log/slog"
	"net/http"
	"time"

	"github.com/freshcrawl/freshcrawl/internal/schedule"
	"github.com/freshcrawl/freshcrawl/internal/seed"
	"github.com/freshcrawl/freshcrawl/internal/source"
	"github.com/freshcrawl/freshcrawl/proto"
	"github.com/freshcrawl/freshcrawl/store"
)

// Folder folds results into one store.
type Folder struct {
	db   *store.DB
	est  schedule.Estimator
	log  *slog.Logger
	skew time.Duration // clock skew allowed to feed item dates
}

// New returns a folder into db that learns change rates with est.
func New(db *store.DB, est schedule.Estimator, log *slog.Logger) *Folder {
	if log == nil {
		log = slog.Default()
	}
	return &Folder{db: db, est: est, log: log, skew: FeedSkew}
}

// FeedSkew is how far after a poll a feed item's date may lie and still be
// taken as that poll's update (the server's clock ahead of ours).
const FeedSkew = 2 * time.Second

// Input is a result with what its fold needs of the live state, read by
// the caller before the transaction so that the transaction waits for no
// lock.
type Input struct {
	Result proto.Result
	// Interval is the URL's interval in the schedule now (0: keep the
	// stored one); the record's next due time is the fetch plus it.
	Interval time.Duration
	// Source is the keyword-search source of a probe result (nil: not a
	// probe, or one no longer planned: its items are not folded).
	Source *source.Source
	// Hinted: the fetch was made because a URL tied to this one changed
	// (schedule.Scheduler.Hinted): no rate is learnt from it.
	Hinted bool
}

// Outcome is what folding one result did.
type Outcome struct {
	// Applied is false when the result had been folded before.
	Applied bool
	// At is when the fetch started (the result's start, else its end).
	At time.Time
	// Changed: the fetch found a new version of a known page.
	Changed bool
	// Event is the change to announce, if any.
	Event *proto.ChangeEvent
	// Version is the capture version stored, without its text.
	Version *store.Version
	// UpdateTimes are the exact update times a capture version's feed
	// dated in the poll's interval (see feedTimes), newest first.
	UpdateTimes []time.Time
	// Feedback is what the fetch teaches the schedule (schedule.Learn);
	// zero unless Applied.
	Feedback schedule.Feedback
}

// fetchedAt is when a result's fetch happened: its start, else its end.
func fetchedAt(r *proto.Result) time.Time {
	if r.StartedAt.IsZero() {
		return r.FinishedAt
	}
	return r.StartedAt
}

// Fold folds a batch in one transaction (one commit, one fsync) and
// returns what each result did. On error nothing is stored.
func (f *Folder) Fold(in []Input) ([]Outcome, error) {
	out := make([]Outcome, len(in))
	ids := make([]string, len(in))
	for i := range in {
		ids[i] = in[i].Result.TaskID
		out[i].At = fetchedAt(&in[i].Result)
	}
	applied, err := f.db.FoldMany(ids, func(i int, tx *store.Tx) error {
		if err := f.one(tx, &in[i], &out[i]); err != nil {
			return err
		}
		return tx.AddTotals(totalsOf(&in[i].Result, &out[i]))
	})
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].Applied = applied[i]
	}
	return out, nil
}

// totalsOf is what one folded result adds to the crawl's totals.
func totalsOf(r *proto.Result, o *Outcome) store.Totals {
	d := store.Totals{Fetches: 1}
	if o.Changed {
		d.Changes = 1
	}
	if r.ErrKind != proto.ErrNone {
		d.Errors = map[string]int64{string(r.ErrKind): 1}
	}
	return d
}

// observation is what a result says regardless of the record.
func observation(r *proto.Result, at time.Time, host store.Host) schedule.Observation {
	o := schedule.Observation{
		Start: at, End: r.FinishedAt, OK: r.OK(), NotModified: r.NotModified, Disallowed: r.Disallowed,
		HostGap: host.CrawlDelay, HostNotBefore: host.BackoffTill,
	}
	if o.End.IsZero() {
		o.End = at
	}
	if r.LastModified != "" {
		if lm, err := http.ParseTime(r.LastModified); err == nil {
			o.LastModified = lm
		}
	}
	return o
}

// contentKey is the fingerprint of a content hash the scheduler ties
// mirrors by (0: no content).
func contentKey(hash string) uint64 {
	if hash == "" {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(hash))
	return max(h.Sum64(), 1)
}

// one folds one result; it reads and writes only through tx.
func (f *Folder) one(tx *store.Tx, in *Input, o *Outcome) error {
	r := &in.Result
	at := o.At
	if r.Kind == proto.KindProbe {
		return f.probeResult(tx, in, o)
	}
	u, found, err := tx.Get(r.URL)
	if err != nil {
		return err
	}
	if !found {
		// URL removed since dispatch: nothing to fold into.
		o.Feedback = f.est.Learn(nil, 0, observation(r, at, store.Host{}))
		return nil
	}
	stored := u // as stored, for PutOver to move the index keys
	prevOK := u.LastOK
	first := false
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
		first = u.Hash == "" && r.Hash != ""
		switch {
		case first:
			u.Hash = r.Hash
			if err := tx.SetContent(u.URL, r.Text); err != nil {
				return err
			}
			if u.Mode == string(seed.ModeCapture) {
				if _, err := addVersion(tx, &u, r, prevOK, at, nil); err != nil {
					return err
				}
			}
		case r.Changed && r.Hash != u.Hash:
			ch := store.Change{URL: u.URL, Host: u.Host, At: at, TaskID: r.TaskID, Hash: r.Hash, PrevHash: u.Hash}
			if r.Diff != nil {
				ch.Diff = store.DiffSummary(*r.Diff)
			}
			if _, err := tx.AddChange(ch); err != nil {
				return err
			}
			o.Event = &proto.ChangeEvent{V: proto.Version, URL: u.URL, Host: u.Host, TaskID: r.TaskID, At: at, Hash: r.Hash, PrevHash: u.Hash, Diff: proto.DiffSummary(ch.Diff)}
			u.Hash = r.Hash
			u.Changes++
			u.LastChange = at
			o.Changed = true
			if err := tx.SetContent(u.URL, r.Text); err != nil {
				return err
			}
			if u.Mode == string(seed.ModeCapture) {
				o.UpdateTimes = feedTimes(r.FeedTimes, prevOK, at, f.skew)
				v, err := addVersion(tx, &u, r, prevOK, at, o.UpdateTimes)
				if err != nil {
					return err
				}
				o.Version = &v
			}
		}
	}
	host, err := foldHost(tx, r, u.Host, at)
	if err != nil {
		return err
	}
	obs := observation(r, at, host)
	obs.URL, obs.Host = u.URL, u.Host
	obs.First, obs.Prev, obs.Changed = first, prevOK, o.Changed
	obs.Content, obs.Hinted = contentKey(u.Hash), in.Hinted
	// The estimator's state travels with the record: learnt here, in the
	// fold's transaction, and applied to the live schedule after commit.
	var st *schedule.EstimateState
	if r.OK() {
		st = &schedule.EstimateState{}
		if len(u.Estimate) > 0 {
			if err := st.UnmarshalBinary(u.Estimate); err != nil {
				f.log.Warn("discarding unreadable estimator state", "url", u.URL, "err", err)
				*st = schedule.EstimateState{}
			}
		}
	}
	o.Feedback = f.est.Learn(st, u.Rate, obs)
	if st != nil {
		u.Rate, u.RateSE = o.Feedback.Rate, o.Feedback.RateSE
		u.Estimate, _ = st.MarshalBinary()
	}
	if r.OK() && len(r.Raw) > 0 && u.KeepRaw {
		raw := store.Raw{ContentType: r.ContentType, FetchedAt: at, Hash: r.Hash, Size: max(r.Bytes, int64(len(r.Raw))), Truncated: r.RawTruncated || r.Truncated, Body: r.Raw}
		if err := tx.SetRaw(u.URL, raw); err != nil {
			return err
		}
	}
	if err := tx.AddFetch(u.URL, fetchOf(r, at, o.Changed)); err != nil {
		return err
	}
	// Persist the schedule so a restarted coordinator resumes it.
	if in.Interval > 0 {
		u.Interval = in.Interval
	}
	if u.Interval > 0 && !u.Disallowed {
		u.NextDue = at.Add(u.Interval)
	}
	return tx.PutOver(&stored, u)
}

// foldHost applies a fetch's politeness signals to its host: Crawl-delay,
// Retry-After, and exponential backoff on repeated server errors, reset by
// the first success.
func foldHost(tx *store.Tx, r *proto.Result, name string, at time.Time) (store.Host, error) {
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

// addVersion stores a capture version with the interval it appeared in:
// (previous poll, this poll], or exactly the newest of its feed's item
// dates in that interval, else its Last-Modified when that is plausible
// (not after this poll, after the previous one).
func addVersion(tx *store.Tx, u *store.URL, r *proto.Result, prevOK, at time.Time, dated []time.Time) (store.Version, error) {
	v := store.Version{URL: u.URL, CapturedAt: at, After: prevOK, Before: at, Hash: r.Hash, Text: r.Text, TaskID: r.TaskID}
	if len(dated) > 0 {
		v.Before, v.Exact = dated[0], true
	} else if lm, err := http.ParseTime(r.LastModified); err == nil && !lm.After(at) && (prevOK.IsZero() || lm.After(prevOK)) {
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

// feedTimes keeps the feed item dates that are updates of the poll's
// interval: after the previous poll and not after this one. A date up to
// skew after this poll is the server's clock running ahead and counts as
// this poll's time; anything later, or before the previous poll, is not
// an update this poll saw (an old item, a date in the future).
func feedTimes(times []time.Time, prev, at time.Time, skew time.Duration) []time.Time {
	if prev.IsZero() {
		return nil
	}
	var out []time.Time
	for _, t := range times {
		if t.After(at) && !t.After(at.Add(skew)) {
			t = at
		}
		if t.After(prev) && !t.After(at) {
			out = append(out, t)
		}
	}
	return out
}

// probeResult folds a keyword-search or fetch-by-id result: its host's
// politeness, and the tracked items on the page.
func (f *Folder) probeResult(tx *store.Tx, in *Input, o *Outcome) error {
	r := &in.Result
	host, err := foldHost(tx, r, r.Host, o.At)
	if err != nil {
		return err
	}
	o.Feedback = f.est.Learn(nil, 0, observation(r, o.At, host))
	if in.Source == nil || !r.OK() {
		return nil
	}
	return f.items(tx, r, o.At, in.Source)
}

// items folds a probe result into the tracked items: each item seen gets
// its new value, the dissimilarity of the refresh, its sync time and an
// observation for its change-rate estimate.
func (f *Folder) items(tx *store.Tx, r *proto.Result, at time.Time, src *source.Source) error {
	for _, pi := range r.Items {
		it, found, err := tx.GetItem(src.Name, pi.ID)
		if err != nil {
			return err
		}
		if !found {
			continue // not tracked: results also show items nobody asked for
		}
		if !it.HasValue {
			// The attributes the item was added with are the first copy.
			it.Value, it.HasValue = src.Value(it.Attrs)
		}
		newV, ok := src.Value(pi.Fields)
		if !ok {
			continue
		}
		changed := it.HasValue && newV != it.Value
		if it.HasValue {
			it.Dissimilarity += src.Dissimilarity(it.Attrs, pi.Fields)
			if !it.LastSync.IsZero() && at.After(it.LastSync) {
				var st schedule.EstimateState
				if len(it.Estimate) > 0 {
					_ = st.UnmarshalBinary(it.Estimate)
				}
				it.Rate = schedule.ObserveRefresh(f.est, src, &st, it.LastSync, at, it.Attrs, pi.Fields)
				it.Estimate, _ = st.MarshalBinary()
			}
		}
		if changed {
			it.Changes++
		}
		if it.Attrs == nil {
			it.Attrs = map[string]string{}
		}
		for k, v := range pi.Fields {
			it.Attrs[k] = v
		}
		it.Value, it.HasValue = newV, true
		it.LastSync = at
		it.Syncs++
		if err := tx.PutItem(it); err != nil {
			return err
		}
	}
	return nil
}

// Failed records that a task ran out of deliveries: the URL's failed and
// error counters and last error, once per task (idempotent like a fold).
// It reports whether the record changed.
func (f *Folder) Failed(task proto.Task, why string) (bool, error) {
	applied, err := f.db.Fold(task.ID, func(tx *store.Tx) error {
		if err := tx.AddTotals(store.Totals{Failed: 1, Errors: map[string]int64{string(proto.ErrFailed): 1}}); err != nil {
			return err
		}
		u, found, err := tx.Get(task.URL)
		if err != nil || !found {
			return err
		}
		u.Failed++
		u.Errors++
		if u.ErrorKinds == nil {
			u.ErrorKinds = map[string]int64{}
		}
		u.ErrorKinds[string(proto.ErrFailed)]++
		u.LastErrKind, u.LastErr = string(proto.ErrFailed), why
		return tx.Put(u)
	})
	if err != nil {
		return false, fmt.Errorf("record failed task: %w", err)
	}
	return applied, nil
}
