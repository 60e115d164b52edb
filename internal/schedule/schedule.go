package schedule

import (
	"time"

	"github.com/freshcrawl/freshcrawl/estimate"
)

// SchedulerOptions configure a Scheduler. DefaultSchedulerOptions holds
// their defaults; a zero field means zero, not the default.
type SchedulerOptions struct {
	// Budget is the total fetches per second.
	Budget float64
	// HostRate is the most fetches per second of one host.
	HostRate float64
	// Policy turns estimates into frequencies (default: the optimal
	// policy for freshness, DefaultPolicy).
	Policy Policy
	// ExploreShare is the largest share of the budget (and of each host's
	// cap) exploration may take (docs/design.md §3.7): probes of URLs
	// whose rate is not resolved and checks of URLs given up. Policies
	// with no multiplier (uniform, proportional, the LambdaCrawl peers)
	// keep URLs the plan gives up on at ExploreShare × budget/URLs.
	ExploreShare float64
	// Priors are the population priors shared with the Estimator that
	// folds results (Estimator.Priors); the scheduler refits them from
	// the collection. Nil: a set of its own around PriorRate.
	Priors *PriorSet
	// PriorRate is the change rate (per second) the priors start from
	// when Priors is nil.
	PriorRate float64
	// HalfLife is the estimator's half-life: what it learns is forgotten
	// on that scale, which bounds how long the exploration rule counts on
	// knowledge lasting (default 90 days).
	HalfLife time.Duration
	// Replan is the longest time between two plans.
	Replan time.Duration
	// DisallowRetry is how often a URL disallowed by robots.txt is checked
	// again (default 1h); the check hits the shared robots.txt cache, not
	// the host, until the cache expires.
	DisallowRetry time.Duration
	// CaptureUniform keeps capture URLs on uniform polls at fixed phases
	// (k·T/N), never learning: the baseline of Ashish, Kulkarni & Wang.
	CaptureUniform bool
	// CoChange learns which URLs change together (the same content, the
	// same trusted Last-Modified on one host) and refetches a URL at once
	// when a change seen at a URL tied to it makes that worth a fetch at
	// the plan's margin (docs/design.md §3.8).
	CoChange bool
	// URLs, when set, spells URLs by their store ids (URLInfo.ID): the
	// scheduler then holds a fingerprint and the id of each URL instead
	// of the URL (a coordinator, whose store holds the URLs). Nil: the
	// scheduler holds the URLs (front coded, urlIndex).
	URLs URLSource
}

// URLInfo is what the scheduler is told about a URL.
type URLInfo struct {
	URL, Host string
	// ID is the URL's id in the store SchedulerOptions.URLs reads (0: not
	// known; the scheduler then holds the URL). Without a source it is
	// not used.
	ID         uint64
	Weight     float64
	Capture    bool
	Rate       float64       // estimated changes per second (0: prior)
	Interval   time.Duration // from a previous plan (0: none yet)
	NextDue    time.Time     // zero: new URL, first fetch soon
	Disallowed bool
	// LastOK is the URL's last successful fetch (zero: never fetched, so
	// its copy is stale and its first fetch is due at once).
	LastOK time.Time
	// Estimate is the URL's estimator state as stored (nil: none), from
	// which its posterior is recomputed under the current priors.
	Estimate []byte
	// Capture URLs: the period of their rhythm (0: detect it) and polls
	// per period (0: from the URL's share of the budget).
	Period time.Duration
	Polls  int
	// Paused URLs are known but not fetched (Scheduler.Pause); RateSE is the
	// standard error of Rate.
	Paused bool
	RateSE float64
	// Gone URLs are held like paused ones until seeded again or resumed
	// (a known URL added with Gone false comes back); Backoff says
	// NextDue is the end of an error backoff, which a plan must not move.
	Gone, Backoff bool
}

// Dispatch is a URL the scheduler hands out.
type Dispatch struct {
	URL, Host string
	Capture   bool
	Gap       time.Duration // least time between requests to the host
	Due       time.Time     // the time it was due (identifies the fetch)
}

// Feedback is what a fetch taught the scheduler.
type Feedback struct {
	Start, End   time.Time // when the request started and finished
	OK           bool
	Changed      bool
	NotModified  bool
	Disallowed   bool
	LastModified time.Time // zero if unknown
	// Rate is the URL's new estimated change rate (0 = unchanged) and
	// RateSE its standard error.
	Rate   float64
	RateSE float64
	// HostGap is the gap the host now needs (Crawl-delay; 0 = base rate)
	// and HostNotBefore when it may be fetched again (Retry-After,
	// backoff).
	HostGap       time.Duration
	HostNotBefore time.Time
	// HostSlowdown halves the host's rate that many times (429 and 503
	// without Retry-After): its gap is max(1/host rate, HostGap) ·
	// 2^HostSlowdown.
	HostSlowdown int
	// RetryAt, when set, is the earliest next fetch of a URL whose fetch
	// failed (the error backoff, counted from when the failure was
	// known); Gone retires the URL (410, or 404 for long enough). The
	// fold sets both; the change-rate estimate learns nothing from a
	// failure either way.
	RetryAt time.Time
	Gone    bool
	// Learnt is set when the fetch updated the URL's estimate: Posterior
	// is then its posterior (computed under the priors of version
	// PriorVersion) and State its estimator state.
	Learnt       bool
	Posterior    estimate.Summary
	State        estimate.State
	PriorVersion uint64
	// Model is the URL's posterior under the model's priors, for the
	// model freshness (valid when Learnt).
	Model estimate.Sketch
	// ChangePoint: the estimator found the URL's rate had changed
	// (estimate.State's change points).
	ChangePoint bool
	// Content is a fingerprint of the URL's content after the fetch (0:
	// none known), which ties mirrors together (§3.8).
	Content uint64
	// First: this fetch saw the URL's content for the first time.
	First bool
	// Dated: the URL's Last-Modified has earned the estimator's trust and
	// came with this fetch, so that one fetch dates the URL's last change
	// (a recheck of a URL given up is then one fetch, not a pair:
	// docs/design.md §3.7).
	Dated bool
}

// adaptivePolicy is a policy that sets each URL's interval from its own fetch
// outcomes (Nutch, StormCrawler) instead of from a global allocation.
type adaptivePolicy interface {
	Policy
	// Initial is the interval of a URL never fetched.
	Initial() time.Duration
	// Next returns the URL's new state and next due time after a fetch.
	Next(st adaptiveState, fb Feedback) (adaptiveState, time.Time)
}

// adaptiveState is what an Adaptive policy keeps per URL.
type adaptiveState struct {
	Interval time.Duration
	// Modified is the policy's own record of the page's last change
	// (Nutch's modifiedTime; zero: unknown).
	Modified time.Time
	// Reset: the next fetch has nothing to compare with (Nutch clears a
	// page's signature when it forces a refetch).
	Reset bool
}

// capOf is e's capture state: nil unless e is a capture URL. Few URLs
// are, so it lives in Scheduler.captures, not in every entry.
func (s *Scheduler) capOf(e *entry) *captureState {
	if !e.is(flagCapture) {
		return nil
	}
	return s.captures[e.id]
}

// recheckTau is the probe interval of e's recheck (0: none).
func (s *Scheduler) recheckTau(e *entry) time.Duration {
	if !e.is(flagRecheck) {
		return 0
	}
	return s.rechecks[e.id]
}
