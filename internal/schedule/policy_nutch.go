package schedule

import (
	"time"
)

// NutchPolicy is Apache Nutch's AdaptiveFetchSchedule
// (org.apache.nutch.crawl.AdaptiveFetchSchedule and CrawlDbReducer, Nutch
// ≥ 1.13, with the defaults shipped in conf/nutch-default.xml), a peer
// freshcrawl is benchmarked against (docs/design.md §4). Each URL's
// interval moves on its own fetch outcomes, with no global budget:
//
//   - the first fetch (no previous signature to compare: STATUS_UNKNOWN)
//     leaves the interval alone;
//   - changed (STATUS_MODIFIED): interval × (1 − dec_rate), dec_rate =
//     0.2, and the page's modifiedTime becomes the fetch time;
//   - unchanged, including a 304 (STATUS_NOTMODIFIED): interval ×
//     (1 + inc_rate), inc_rate = 0.4; modifiedTime is the fetch's (its
//     Last-Modified when the server sent one, else what was stored);
//   - sync_delta = true, sync_delta_rate = 0.3: with delta = fetch time −
//     modifiedTime (0 when unknown), the interval becomes delta if delta
//     is larger, and the next fetch is computed from fetch time −
//     0.3·delta, pulling it earlier to re-synchronise with the page's
//     change times;
//   - the interval is clamped to [min_interval, max_interval] = [60 s,
//     365 days]; a URL never fetched starts at db.fetch.interval.default =
//     30 days;
//   - an interval above db.fetch.interval.max = 90 days forces a refetch
//     (CrawlDbReducer → forceRefetch): the interval drops to 0.9 × 90 days,
//     the signature and modifiedTime are cleared (so the next fetch is
//     STATUS_UNKNOWN again), and since the next fetch time is then more
//     than 90 days away the generator fetches it at once
//     (AbstractFetchSchedule.shouldFetch);
//   - a failed fetch keeps the interval and is retried a day later
//     (AbstractFetchSchedule.setPageRetrySchedule).
//
// Every constant that is a duration is scaled by Day (real time per day)
// so the policy behaves on a simulated web whose days last a second as it
// would on the real one.
type NutchPolicy struct {
	// Day is the real duration of one day (24h in production).
	Day time.Duration
	// IncRate, DecRate and SyncDeltaRate are Nutch's
	// db.fetch.schedule.adaptive.{inc_rate,dec_rate,sync_delta_rate}.
	IncRate, DecRate, SyncDeltaRate float64
	// SyncDelta is db.fetch.schedule.adaptive.sync_delta.
	SyncDelta bool
	// Min, Max and Default are min_interval, max_interval and
	// db.fetch.interval.default, already scaled; RefetchMax is
	// db.fetch.interval.max.
	Min, Max, Default, RefetchMax time.Duration
}

// NewNutch returns Nutch's AdaptiveFetchSchedule with its shipped defaults,
// durations scaled so that a day lasts day (24h in production).
func NewNutch(day time.Duration) *NutchPolicy {
	if day <= 0 {
		day = 24 * time.Hour
	}
	return &NutchPolicy{
		Day:     day,
		IncRate: 0.4, DecRate: 0.2, SyncDeltaRate: 0.3, SyncDelta: true,
		Min:        scaleDay(60*time.Second, day),
		Max:        scaleDay(365*24*time.Hour, day),
		Default:    scaleDay(30*24*time.Hour, day),
		RefetchMax: scaleDay(90*24*time.Hour, day),
	}
}

// scaleDay maps a duration on the 24-hour clock to one where a day lasts
// day.
func scaleDay(d, day time.Duration) time.Duration {
	return time.Duration(float64(d) * float64(day) / float64(24*time.Hour))
}

// Name implements Policy.
func (*NutchPolicy) Name() string { return "nutch" }

// Plan implements Policy. The Scheduler never asks an Adaptive policy for
// a plan; were it asked, the uniform split is what a fixed-interval crawler
// would do.
func (*NutchPolicy) Plan(in PlanInput) (PlanOutput, error) { return uniformPolicy{}.Plan(in) }

// Initial implements Adaptive: db.fetch.interval.default.
func (p *NutchPolicy) Initial() time.Duration { return p.Default }

// Next implements Adaptive: AdaptiveFetchSchedule.setFetchSchedule, then
// CrawlDbReducer's forced refetch beyond db.fetch.interval.max.
func (p *NutchPolicy) Next(st adaptiveState, fb Feedback) (adaptiveState, time.Time) {
	fetch := fb.Start
	if !fb.OK {
		return st, fetch.Add(p.Day)
	}
	iv := float64(st.Interval)
	if iv <= 0 {
		iv = float64(p.Default)
	}
	// The fetch's modified time: its Last-Modified, else what was stored.
	mod := st.Modified
	if !fb.LastModified.IsZero() && !fb.LastModified.After(fetch) {
		mod = fb.LastModified
	}
	switch {
	case fb.First || st.Reset:
		// STATUS_UNKNOWN: no signature to compare with.
	case fb.Changed && !fb.NotModified:
		iv *= 1 - p.DecRate
		mod = fetch
	default:
		iv *= 1 + p.IncRate
	}
	if mod.IsZero() {
		mod = fetch
	}
	ref := fetch
	if p.SyncDelta {
		delta := float64(fetch.Sub(mod))
		if delta > iv {
			iv = delta
		}
		ref = fetch.Add(-time.Duration(delta * p.SyncDeltaRate))
	}
	iv = min(max(iv, float64(p.Min)), float64(p.Max))
	next := adaptiveState{Interval: time.Duration(iv), Modified: mod}
	due := ref.Add(time.Duration(iv))
	if p.RefetchMax > 0 && time.Duration(iv) > p.RefetchMax {
		// forceRefetch(asap = false), then shouldFetch: a fetch time more
		// than db.fetch.interval.max away is brought to now.
		next = adaptiveState{Interval: time.Duration(0.9 * float64(p.RefetchMax)), Reset: true}
		if due.Sub(fetch) > p.RefetchMax {
			due = fetch
		}
	}
	return next, due
}
