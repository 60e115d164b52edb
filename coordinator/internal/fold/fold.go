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

	"github.com/freshcrawl/freshcrawl/internal/optcheck"
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
	o    Options
	log  *slog.Logger
	skew time.Duration // clock skew allowed to feed item dates
}

// Options say how a folded failure backs its URL and its host off
// (docs/design.md §2.9). Start from DefaultOptions: every field is taken
// as it is, and New refuses what Validate refuses.
type Options struct {
	// MinBackoff and MaxBackoff bound a URL's error backoff. The n-th
	// failure in a row puts its next fetch base·2^n after the failure was
	// known, base being the URL's interval or MinBackoff if that is
	// longer, and never more than MaxBackoff.
	MinBackoff, MaxBackoff time.Duration
	// GoneAfter is how long a URL answers 404 (from the first 404 of a
	// run with no success) before it is gone; a 410 is gone at once.
	GoneAfter time.Duration
	// RecoverAfter is how many successes in a row at a host whose rate
	// was halved double it back, one halving at a time.
	RecoverAfter int
}

// DefaultOptions are the defaults of the coordinator's failure settings
// (the config takes them from the coordinator, which takes them from
// here).
func DefaultOptions() Options {
	return Options{MinBackoff: time.Minute, MaxBackoff: 30 * 24 * time.Hour, GoneAfter: 7 * 24 * time.Hour, RecoverAfter: 4}
}

// Validate reports every field New would refuse, each by its name.
func (o Options) Validate() error {
	var errs optcheck.Errors
	if o.MinBackoff <= 0 {
		errs.Check("MinBackoff", fmt.Errorf("must be > 0, got %s", o.MinBackoff))
	}
	if o.MaxBackoff < o.MinBackoff {
		errs.Check("MaxBackoff", fmt.Errorf("must be ≥ MinBackoff %s, got %s", o.MinBackoff, o.MaxBackoff))
	}
	if o.GoneAfter <= 0 {
		errs.Check("GoneAfter", fmt.Errorf("must be > 0, got %s", o.GoneAfter))
	}
	if o.RecoverAfter < 1 {
		errs.Check("RecoverAfter", fmt.Errorf("must be ≥ 1, got %d", o.RecoverAfter))
	}
	return errs.Err()
}

// backoff is how far the n-th failure in a row (n ≥ 1) of a URL whose
// interval is interval puts its next fetch off.
func (o Options) backoff(n int, interval time.Duration) time.Duration {
	d := max(interval, o.MinBackoff)
	for range n {
		if d >= o.MaxBackoff/2 {
			return o.MaxBackoff
		}
		d *= 2
	}
	return d
}

// New returns a folder into db that learns change rates with est and
// backs failures off by o, or Validate's error.
func New(db *store.DB, est schedule.Estimator, o Options, log *slog.Logger) (*Folder, error) {
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("fold options: %w", err)
	}
	if log == nil {
		log = slog.Default()
	}
	return &Folder{db: db, est: est, o: o, log: log, skew: FeedSkew}, nil
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
		if first, err = f.content(tx, &u, r, o, prevOK, at); err != nil {
			return err
		}
	}
	host, err := f.foldHost(tx, r, u.Host, at)
	if err != nil {
		return err
	}
	obs := observation(r, at, host)
	obs.URL, obs.Host = u.URL, u.Host
	obs.First, obs.Prev, obs.Changed = first, prevOK, o.Changed
	obs.Content, obs.Hinted = contentKey(u.Hash), in.Hinted
	// The estimator's state travels with the record: learnt here, in the
	// fold's transaction, and applied to the live schedule after commit.
	// A failed fetch says nothing of how often the page changes: it
	// leaves the state alone (its backoff is failure's business).
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
	o.Feedback.HostSlowdown = host.Slowdown
	if st != nil {
		u.Rate, u.RateSE = o.Feedback.Rate, o.Feedback.RateSE
		u.Estimate, _ = st.MarshalBinary()
	}
	if r.OK() && len(r.Raw) > 0 && u.KeepRaw && !u.NoArchive {
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
	f.failure(&u, r, at, &o.Feedback)
	return tx.PutOver(&stored, u)
}

// content applies a successful fetch's content to u: the first version,
// a change (logged, announced, kept as a capture version), the copy kept
// or, for a page that forbids one (Result.NoArchive), dropped. It reports
// whether this was the URL's first version.
func (f *Folder) content(tx *store.Tx, u *store.URL, r *proto.Result, o *Outcome, prevOK, at time.Time) (first bool, err error) {
	if r.NotModified {
		return false, nil
	}
	// withheld: no copy is kept of the stored hash's version, so the
	// worker sent this one's text as a first version (prepare asks it
	// to), or none at all: the change is told by the hashes alone.
	withheld := u.NoArchive
	u.Truncated, u.NoArchive = r.Truncated, r.NoArchive
	first = u.Hash == "" && r.Hash != ""
	changed := !first && r.Hash != "" && r.Hash != u.Hash && (r.Changed || r.NoArchive || withheld)
	text := r.Text
	if r.NoArchive {
		text = ""
		if err := tx.DropRaw(u.URL); err != nil {
			return first, err
		}
	}
	if !first && !changed {
		if withheld != r.NoArchive {
			// The page forbids a copy now, or allows one again: the
			// stored text follows.
			return first, tx.SetContent(u.URL, text)
		}
		return first, nil
	}
	if changed {
		ch := store.Change{URL: u.URL, Host: u.Host, At: at, TaskID: r.TaskID, Hash: r.Hash, PrevHash: u.Hash}
		if r.Diff != nil && !r.NoArchive {
			ch.Diff = store.DiffSummary(*r.Diff)
		}
		if _, err := tx.AddChange(ch); err != nil {
			return first, err
		}
		o.Event = &proto.ChangeEvent{V: proto.Version, URL: u.URL, Host: u.Host, TaskID: r.TaskID, At: at, Hash: r.Hash, PrevHash: u.Hash, Diff: proto.DiffSummary(ch.Diff)}
		u.Changes++
		u.LastChange = at
		o.Changed = true
	}
	u.Hash = r.Hash
	if err := tx.SetContent(u.URL, text); err != nil {
		return first, err
	}
	if u.Mode != string(seed.ModeCapture) {
		return first, nil
	}
	if first {
		_, err := addVersion(tx, u, r, text, prevOK, at, nil)
		return first, err
	}
	o.UpdateTimes = feedTimes(r.FeedTimes, prevOK, at, f.skew)
	v, err := addVersion(tx, u, r, text, prevOK, at, o.UpdateTimes)
	if err != nil {
		return first, err
	}
	o.Version = &v
	return first, nil
}

// foldHost applies a fetch's politeness signals to its host: its
// Crawl-delay; a 429 or 503 with Retry-After holds the host until then
// (counted from when the answer was known); one without halves its rate
// (Slowdown), and every RecoverAfter successes in a row double it back.
// Other failures are the URL's business (failure), so that one broken page
// does not slow its healthy neighbours, nor their successes hide it.
func (f *Folder) foldHost(tx *store.Tx, r *proto.Result, name string, at time.Time) (store.Host, error) {
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
	overload := r.Status == http.StatusTooManyRequests || r.Status == http.StatusServiceUnavailable
	switch {
	case r.RetryAfter > 0:
		host.Backoff = min(r.RetryAfter, maxRetryAfter)
		host.BackoffTill = knownAt(r, at).Add(host.Backoff)
		host.OKStreak = 0
	case overload:
		host.Slowdown = min(host.Slowdown+1, schedule.MaxHostSlowdown)
		host.OKStreak = 0
	case r.OK() && host.Slowdown > 0:
		if host.OKStreak++; host.OKStreak >= f.o.RecoverAfter {
			host.Slowdown--
			host.OKStreak = 0
		}
	}
	return host, tx.PutHost(host)
}

// maxRetryAfter caps the hold of a host's Retry-After: a server cannot
// park its host for longer, whatever it asks.
const maxRetryAfter = 6 * time.Hour

// knownAt is when a result's outcome was known: when its fetch finished,
// else when it started.
func knownAt(r *proto.Result, at time.Time) time.Time {
	if r.FinishedAt.After(at) {
		return r.FinishedAt
	}
	return at
}

// backsOff reports whether a failure of kind k puts its URL's next fetch
// off. Not those that say nothing against the URL: a 429 (the host's rate
// is at fault, and the host is slowed), a robots.txt refusal or outage
// (rechecked every DisallowRetry), or a failure on the crawler's side
// (other, a task out of deliveries).
func backsOff(k proto.ErrorKind) bool {
	switch k {
	case proto.ErrNone, proto.ErrRateLimited, proto.ErrRobots, proto.ErrRobotsUnreachable, proto.ErrOther, proto.ErrFailed:
		return false
	}
	return true
}

// failure applies a fetch's outcome to u's error streak, its run of 404s
// and its gone state: a success ends them; a failure that backs off puts
// the next fetch off by the backoff of its streak, counted from when the
// failure was known, and says so in fb (RetryAt); a 410, or a 404 that
// has lasted GoneAfter, retires the URL (fb.Gone).
func (f *Folder) failure(u *store.URL, r *proto.Result, at time.Time, fb *schedule.Feedback) {
	switch {
	case r.OK():
		u.ErrStreak, u.NotFoundSince = 0, time.Time{}
		return
	case !backsOff(r.ErrKind):
		return
	}
	known := knownAt(r, at)
	u.ErrStreak++
	if r.ErrKind == proto.ErrNotFound {
		if u.NotFoundSince.IsZero() {
			u.NotFoundSince = known
		}
		if r.Status == http.StatusGone || known.Sub(u.NotFoundSince) >= f.o.GoneAfter {
			u.Gone, fb.Gone = true, true
			return
		}
	}
	fb.RetryAt = known.Add(f.o.backoff(u.ErrStreak, u.Interval))
	u.NextDue = fb.RetryAt
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
func addVersion(tx *store.Tx, u *store.URL, r *proto.Result, text string, prevOK, at time.Time, dated []time.Time) (store.Version, error) {
	v := store.Version{URL: u.URL, CapturedAt: at, After: prevOK, Before: at, Hash: r.Hash, Text: text, TaskID: r.TaskID}
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
	host, err := f.foldHost(tx, r, r.Host, o.At)
	if err != nil {
		return err
	}
	o.Feedback = f.est.Learn(nil, 0, observation(r, o.At, host))
	o.Feedback.HostSlowdown = host.Slowdown
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
