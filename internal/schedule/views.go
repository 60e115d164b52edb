package schedule

import (
	"slices"
	"strings"
	"time"
)

// Policy is the scheduler's policy.
func (s *Scheduler) Policy() Policy { return s.o.Policy }

// Len is the number of URLs (one-off requests not counted).
func (s *Scheduler) Len() int { return s.front.urls.len() - s.shots }

// Hosts is the number of hosts.
func (s *Scheduler) Hosts() int { return len(s.front.hosts) }

// Has reports whether url is known.
func (s *Scheduler) Has(url string) bool { _, ok := s.front.urls.get(url); return ok }

// Interval is the URL's current interval (0 if unknown or unscheduled).
func (s *Scheduler) Interval(url string) time.Duration {
	if e, ok := s.front.urls.get(url); ok {
		return e.interval
	}
	return 0
}

// Rate is the URL's current estimated rate.
func (s *Scheduler) Rate(url string) float64 {
	if e, ok := s.front.urls.get(url); ok && e.pos >= 0 {
		return s.rates[e.pos]
	}
	return 0
}

// ReplanDue reports whether the plan is stale: never made, older than
// Replan, or more than a tenth of the estimates moved since.
func (s *Scheduler) ReplanDue(now time.Time) bool {
	return s.planAt.IsZero() || now.Sub(s.planAt) >= s.o.Replan || s.moved > s.Len()/10+1
}

// Plan is the last plan and when it was made (zero before the first),
// without its frequencies: the URLs' intervals hold them.
func (s *Scheduler) Plan() (PlanOutput, time.Time, float64) { return s.plan, s.planAt, s.inUse }

// Gone counts URLs gone (410, or 404 for long enough): held until they
// are seeded again or resumed.
func (s *Scheduler) Gone() int { return s.gone }

// Disallowed counts URLs robots.txt disallows (rechecked every
// DisallowRetry, with no share of the budget).
func (s *Scheduler) Disallowed() int { return s.disallowed }

// Unspelled is how many times Next could not spell a due URL through the
// URL source and put it back.
func (s *Scheduler) Unspelled() int { return s.unspelled }

// UnreadStates is how many plans could not read the estimator states of
// their refit sample and re-summaries from the URL source
// (URLSource.Estimates): each went on with the summaries it had, and the
// next plan picks those URLs again.
func (s *Scheduler) UnreadStates() int { return s.unread }

// Sched states of an active URL (one the record does not mark paused,
// disallowed or failed), in order of precedence.
const (
	StateGivenUp   = "given up"  // the plan gives it f = 0: explored only
	StateDue       = "due"       // its next fetch time has passed; waiting for dispatch
	StateScheduled = "scheduled" // waiting for its next fetch time (or being fetched)
)

// URLView is what the scheduler knows of one URL now.
type URLView struct {
	Interval time.Duration `json:"interval"`
	NextDue  time.Time     `json:"next_due,omitzero"`
	InFlight bool          `json:"in_flight,omitempty"`
	Paused   bool          `json:"paused,omitempty"`
	Gone     bool          `json:"gone,omitempty"`
	// Backoff: the last fetch failed and the next is put off (NextDue is
	// when the backoff ends).
	Backoff    bool    `json:"backoff,omitempty"`
	Disallowed bool    `json:"disallowed,omitempty"`
	GivenUp    bool    `json:"given_up,omitempty"`
	Due        bool    `json:"due,omitempty"`
	Weight     float64 `json:"weight"`
	Capture    bool    `json:"capture,omitempty"`
	Rate       float64 `json:"rate"`
	RateSE     float64 `json:"rate_se,omitempty"`
	// State is the scheduler's own state: given up, due or scheduled.
	State string `json:"state"`
}

// View returns what the scheduler knows of url (false if it is unknown).
func (s *Scheduler) View(url string, now time.Time) (URLView, bool) {
	e, ok := s.front.urls.get(url)
	if !ok || e.is(flagOneShot) {
		return URLView{}, false
	}
	v := URLView{Interval: e.interval, NextDue: fromNanos(e.nextDue), InFlight: e.is(flagInFlight), Paused: e.is(flagPaused), Gone: e.is(flagGone), Backoff: e.is(flagBackoff), Disallowed: e.is(flagDisallowed),
		Weight: s.weights[e.pos], Capture: e.is(flagCapture), Rate: s.rates[e.pos], RateSE: float64(s.rateSEs[e.pos])}
	v.GivenUp = s.givenUpSet(e)
	v.Due = s.due(e, now)
	switch {
	case v.GivenUp:
		v.State = StateGivenUp
	case v.Due:
		v.State = StateDue
	default:
		v.State = StateScheduled
	}
	return v, true
}

func (s *Scheduler) due(e *entry, now time.Time) bool {
	return e.index >= 0 && !e.is(flagInFlight) && !e.held() && e.nextDue <= nanos(now)
}

// givenUpSet reports whether the current plan gives e f = 0.
func (s *Scheduler) givenUpSet(e *entry) bool {
	if e.held() || e.is(flagDisallowed) || e.is(flagBackoff) {
		return false
	}
	return s.life.givenUp.has(int(e.id)) && s.weights[e.pos] > 0
}

// URLsIn returns the known URLs in a scheduler state (StateGivenUp,
// StateDue or StateScheduled), in no particular order: a caller that
// shares the Scheduler under a lock sorts them after releasing it. Paused,
// gone and disallowed URLs are in none.
func (s *Scheduler) URLsIn(state string, now time.Time) []string {
	var in []*entry
	for _, id := range s.list {
		e := s.front.entry(id)
		if e.held() || e.is(flagDisallowed) {
			continue
		}
		var st string
		switch {
		case s.givenUpSet(e):
			st = StateGivenUp
		case s.due(e, now):
			st = StateDue
		default:
			st = StateScheduled
		}
		if st == state {
			in = append(in, e)
		}
	}
	// In the list's order; a URL the source cannot spell is left out
	// (the source logs why).
	urls := make([]string, len(in))
	_ = s.front.urls.spellAll(in, func(i int, url string) { urls[i] = url })
	out := urls[:0]
	for _, u := range urls {
		if u != "" {
			out = append(out, u)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// HostView is what the scheduler knows of one host.
type HostView struct {
	Host string `json:"host"`
	// Cap is the most fetches per second the host can take now (its gap
	// and how long its requests last); Gap the least time between two.
	Cap       float64       `json:"cap_per_s"`
	Gap       time.Duration `json:"gap"`
	Busy      time.Duration `json:"request_time"`
	NextFree  time.Time     `json:"next_free,omitzero"`
	InFlight  int           `json:"in_flight"`
	Saturated bool          `json:"at_cap,omitempty"`
	URLs      int           `json:"urls"`
	Queued    int           `json:"queued"`
	Paused    int           `json:"paused"`
	Gone      int           `json:"gone"`
	// Disallowed counts the host's URLs robots.txt disallows (or all, while
	// robots.txt is unreachable).
	Disallowed int `json:"disallowed"`
	// Planned is the fetch rate the intervals of the URLs not held or
	// backing off add up to.
	Planned float64 `json:"planned_per_s"`
}

// HostTally counts a schedule's URLs per host (HostView's URLs, Paused,
// Disallowed and Planned) over a walk taken a chunk at a time: the
// console holds the caller's lock for one chunk, not for a walk of ten
// million URLs, which would stall dispatch and folds for about 0.1 s
// (BenchmarkHostViews). A URL added or removed between two chunks may
// be missed or counted twice, so the counts are a view, not a ledger.
// The zero HostTally starts a walk.
type HostTally struct {
	next   int          // position in the schedule's list the walk goes on from
	counts []hostCounts // by host id (frontier.hostList)
}

type hostCounts struct {
	urls, paused, gone, disallowed int
	planned                        float64
}

// TallyHosts counts up to n more URLs into t and reports whether the walk
// has reached the end of the list.
func (s *Scheduler) TallyHosts(t *HostTally, n int) (done bool) {
	end := min(len(s.list), t.next+max(n, 1))
	for i := t.next; i < end; i++ { // every URL, not the one-off requests
		e := s.front.entry(s.list[i])
		if int(e.host) >= len(t.counts) {
			t.counts = append(t.counts, make([]hostCounts, len(s.front.hostList)-len(t.counts))...)
		}
		c := &t.counts[e.host]
		c.urls++
		switch {
		case e.is(flagPaused):
			c.paused++
		case e.is(flagGone):
			c.gone++
		case e.is(flagDisallowed):
			c.disallowed++
		case e.interval > 0 && !e.is(flagBackoff):
			c.planned += float64(time.Second) / float64(e.interval)
		}
	}
	t.next = max(t.next, end)
	return t.next >= len(s.list)
}

// HostViews lists every host, by name, with the URL counts of t, a walk
// by TallyHosts. With t nil it walks every URL itself, under the
// caller's lock.
func (s *Scheduler) HostViews(t *HostTally) []HostView {
	if t == nil {
		t = &HostTally{}
		s.TallyHosts(t, len(s.list))
	}
	out := make([]HostView, 0, len(s.front.hosts))
	for name, h := range s.front.hosts {
		v := HostView{Host: name, Cap: h.capacity(), Gap: h.gap, Busy: h.busy, NextFree: h.nextFree, InFlight: h.inFlight, Saturated: h.saturated, Queued: h.queued()}
		if int(h.id) < len(t.counts) {
			c := t.counts[h.id]
			v.URLs, v.Paused, v.Gone, v.Disallowed, v.Planned = c.urls, c.paused, c.gone, c.disallowed, c.planned
		}
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b HostView) int { return strings.Compare(a.Host, b.Host) })
	return out
}
