package schedule

import "time"

// StormCrawlerPolicy is StormCrawler's AdaptiveScheduler
// (com.digitalpebble.stormcrawler.persistence.AdaptiveScheduler, with the
// defaults of crawler-default.yaml), a peer freshcrawl is benchmarked
// against (docs/design.md §4). Each URL's interval moves on its own fetch
// outcomes, with no global budget:
//
//   - changed (signature differs): I ← (1 − dec)·I + dec·min, dec =
//     scheduler.adaptive.fetchInterval.rate.dec = 0.5, min =
//     scheduler.adaptive.fetchInterval.min = 60 minutes;
//   - unchanged or 304: I ← (1 + inc)·I, inc = 0.5, capped at
//     scheduler.adaptive.fetchInterval.max = 20160 minutes (14 days);
//   - a URL never fetched starts at fetchInterval.default = 1440 minutes
//     (one day); a failed fetch keeps its interval and is retried after
//     fetchInterval.fetch.error = 120 minutes.
//
// Durations are scaled by Day (real time per day).
type StormCrawlerPolicy struct {
	Day                      time.Duration
	IncRate, DecRate         float64
	Min, Max, Default, Error time.Duration
}

// NewStormCrawler returns StormCrawler's AdaptiveScheduler with its
// defaults, durations scaled so that a day lasts day (24h in production).
func NewStormCrawler(day time.Duration) *StormCrawlerPolicy {
	if day <= 0 {
		day = 24 * time.Hour
	}
	return &StormCrawlerPolicy{
		Day: day, IncRate: 0.5, DecRate: 0.5,
		Min:     scaleDay(time.Hour, day),
		Max:     scaleDay(14*24*time.Hour, day),
		Default: scaleDay(24*time.Hour, day),
		Error:   scaleDay(2*time.Hour, day),
	}
}

// Name implements Policy.
func (*StormCrawlerPolicy) Name() string { return "stormcrawler" }

// Plan implements Policy; see NutchPolicy.Plan.
func (*StormCrawlerPolicy) Plan(in PlanInput) (PlanOutput, error) { return uniformPolicy{}.Plan(in) }

// Initial implements Adaptive.
func (p *StormCrawlerPolicy) Initial() time.Duration { return p.Default }

// Next implements Adaptive: AdaptiveScheduler.schedule.
func (p *StormCrawlerPolicy) Next(st adaptiveState, fb Feedback) (adaptiveState, time.Time) {
	if !fb.OK {
		return st, fb.Start.Add(p.Error)
	}
	iv := float64(st.Interval)
	if iv <= 0 {
		iv = float64(p.Default)
	}
	if fb.Changed && !fb.NotModified {
		iv = (1-p.DecRate)*iv + p.DecRate*float64(p.Min)
	} else {
		iv = min((1+p.IncRate)*iv, float64(p.Max))
	}
	return adaptiveState{Interval: time.Duration(iv)}, fb.Start.Add(time.Duration(iv))
}
