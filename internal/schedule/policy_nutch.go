package schedule

import (
	"time"
)

// NutchPolicy is Apache Nutch's AdaptiveFetchSchedule
// (org.apache.nutch.crawl.AdaptiveFetchSchedule, Nutch 1.x, with the
// defaults shipped in conf/nutch-default.xml), a peer freshcrawl is
// benchmarked against (docs/design.md §4). Each URL's interval moves on its own
// fetch outcomes, with no global budget:
//
//   - changed: interval × (1 − dec_rate), dec_rate = 0.2;
//   - unchanged (including a 304): interval × (1 + inc_rate), inc_rate = 0.4;
//   - sync_delta = true, sync_delta_rate = 0.3: with delta = fetch time −
//     modified time (the Last-Modified header; the fetch time when unknown,
//     so delta = 0), the interval becomes delta if delta is larger, and the
//     next fetch is computed from fetch time − 0.3·delta, pulling it earlier
//     to re-synchronise with the page's change times;
//   - the interval is clamped to [min_interval, max_interval] = [60 s,
//     365 days]; a URL never fetched starts at db.fetch.interval.default =
//     30 days;
//   - a failed fetch keeps the interval and is retried a day later
//     (AbstractFetchSchedule.setPageRetrySchedule).
//
// As in the Java source the sync_delta step runs after the change step
// whatever the outcome: a changed page whose Last-Modified lies further back
// than its shrunk interval takes that delta as interval.
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
	// db.fetch.interval.default, already scaled.
	Min, Max, Default time.Duration
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
		Min:     scaleDay(60*time.Second, day),
		Max:     scaleDay(365*24*time.Hour, day),
		Default: scaleDay(30*24*time.Hour, day),
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

// Next implements Adaptive: AdaptiveFetchSchedule.setFetchSchedule.
func (p *NutchPolicy) Next(interval time.Duration, fb Feedback) (time.Duration, time.Time) {
	fetch := fb.Start
	if !fb.OK {
		return interval, fetch.Add(p.Day)
	}
	iv := float64(interval)
	if iv <= 0 {
		iv = float64(p.Default)
	}
	if fb.Changed && !fb.NotModified {
		iv *= 1 - p.DecRate
	} else {
		iv *= 1 + p.IncRate
	}
	ref := fetch
	if p.SyncDelta {
		mod := fb.LastModified
		if mod.IsZero() || mod.After(fetch) {
			mod = fetch
		}
		delta := float64(fetch.Sub(mod))
		if delta > iv {
			iv = delta
		}
		ref = fetch.Add(-time.Duration(delta * p.SyncDeltaRate))
	}
	iv = min(max(iv, float64(p.Min)), float64(p.Max))
	return time.Duration(iv), ref.Add(time.Duration(iv))
}
