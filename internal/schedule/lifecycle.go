package schedule

import (
	"container/heap"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/freshcrawl/freshcrawl/alloc"
	"github.com/freshcrawl/freshcrawl/estimate"
)

// lifecycle is the scheduler's state for live operations on URLs: pause,
// resume, remove, and the views the operator's console reads.
type lifecycle struct {
	// orphans are removed URLs whose fetch was in flight: their host
	// stays busy until the result (or its loss) comes back, so a removal
	// never lets a host be fetched twice at once.
	orphans map[string]*hostQueue
	// givenUp holds, by entry id, the URLs the last plan gives f = 0: a
	// bit a URL, where the plan's frequencies and the list they were
	// made over would take twelve bytes. An id removed since keeps its
	// bit until the next plan, before which it is not reused
	// (reuseRetired).
	givenUp bitset
	// band is the last plan's freshness band (FreshnessBand), computed
	// with the plan, outside the caller's lock (PlanJob.Solve).
	band freshnessBand
}

type freshnessBand struct{ mid, lo, hi float64 }

// Sched states of an active URL (one the record does not mark paused,
// disallowed or failed), in order of precedence.
const (
	StateGivenUp   = "given up"  // the plan gives it f = 0: explored only
	StateDue       = "due"       // its next fetch time has passed; waiting for dispatch
	StateScheduled = "scheduled" // waiting for its next fetch time (or being fetched)
)

// URLView is what the scheduler knows of one URL now.
type URLView struct {
	Interval   time.Duration `json:"interval"`
	NextDue    time.Time     `json:"next_due,omitzero"`
	InFlight   bool          `json:"in_flight,omitempty"`
	Paused     bool          `json:"paused,omitempty"`
	Disallowed bool          `json:"disallowed,omitempty"`
	GivenUp    bool          `json:"given_up,omitempty"`
	Due        bool          `json:"due,omitempty"`
	Weight     float64       `json:"weight"`
	Capture    bool          `json:"capture,omitempty"`
	Rate       float64       `json:"rate"`
	RateSE     float64       `json:"rate_se,omitempty"`
	// State is the scheduler's own state: given up, due or scheduled.
	State string `json:"state"`
}

// View returns what the scheduler knows of url (false if it is unknown).
func (s *Scheduler) View(url string, now time.Time) (URLView, bool) {
	e, ok := s.front.urls.get(url)
	if !ok || e.is(flagOneShot) {
		return URLView{}, false
	}
	v := URLView{Interval: e.interval, NextDue: fromNanos(e.nextDue), InFlight: e.is(flagInFlight), Paused: e.is(flagPaused), Disallowed: e.is(flagDisallowed),
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
	return e.index >= 0 && !e.is(flagInFlight) && !e.is(flagPaused) && e.nextDue <= nanos(now)
}

// givenUpSet reports whether the current plan gives e f = 0.
func (s *Scheduler) givenUpSet(e *entry) bool {
	if e.is(flagPaused) || e.is(flagDisallowed) {
		return false
	}
	return s.life.givenUp.has(int(e.id)) && s.weights[e.pos] > 0
}

// URLsIn returns the known URLs in a scheduler state (StateGivenUp,
// StateDue or StateScheduled), in no particular order: a caller that
// shares the Scheduler under a lock sorts them after releasing it. Paused
// and disallowed URLs are in none.
func (s *Scheduler) URLsIn(state string, now time.Time) []string {
	var in []*entry
	for _, id := range s.list {
		e := s.front.entry(id)
		if e.is(flagPaused) || e.is(flagDisallowed) {
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

// Pause stops fetching the URLs (a fetch in flight finishes) and takes
// them out of the plan; it returns how many it paused.
func (s *Scheduler) Pause(urls []string) int {
	n := 0
	for _, url := range urls {
		e, ok := s.front.urls.get(url)
		if !ok || e.is(flagOneShot) || e.is(flagPaused) {
			continue
		}
		e.set(flagPaused, true)
		s.front.schedule(e, fromNanos(e.nextDue)) // takes it off its host's queue
		s.mirror(e)                               // and out of the plan's input
		s.moved++
		n++
	}
	return n
}

// Resume puts paused URLs back on the schedule: due at their old next
// fetch time, or now if that has passed.
func (s *Scheduler) Resume(urls []string, now time.Time) int {
	n := 0
	for _, url := range urls {
		e, ok := s.front.urls.get(url)
		if !ok || !e.is(flagPaused) {
			continue
		}
		e.set(flagPaused, false)
		if e.interval <= 0 {
			e.interval = time.Duration(float64(s.Len()) / s.o.Budget * float64(time.Second))
		}
		due := fromNanos(e.nextDue)
		if due.Before(now) {
			due = now
		}
		s.front.schedule(e, due)
		s.mirror(e)
		s.moved++
		n++
	}
	return n
}

// Remove forgets the URLs: they leave the queue, the plan and the list. A
// fetch in flight keeps its host busy until Done or Abort comes back for
// it. It returns how many it removed.
func (s *Scheduler) Remove(urls []string) int {
	gone := map[uint32]bool{}
	for _, url := range urls {
		e, ok := s.front.urls.get(url)
		if !ok || e.is(flagOneShot) {
			continue
		}
		h := s.front.hostOf(e)
		if e.index >= 0 {
			heap.Remove(h.heap(e.is(flagStrict)), int(e.index))
		}
		if e.is(flagInFlight) {
			if s.life.orphans == nil {
				s.life.orphans = map[string]*hostQueue{}
			}
			s.life.orphans[url] = h
		}
		s.front.urls.remove(e)
		s.front.fixHost(h)
		gone[e.id] = true
	}
	if len(gone) == 0 {
		return 0
	}
	// One pass keeps the list and the plan's input aligned. A re-plan in
	// progress keeps its snapshot's list: it is left as it is, so hosts
	// gets a new array (a snapshot shares the old one) and so does list.
	n := len(s.list) - len(gone)
	list, hosts := make([]uint32, 0, n), make([]int32, 0, n)
	k := 0
	for i, id := range s.list {
		e := s.front.entry(id)
		if gone[id] {
			e.pos = -1
			continue
		}
		e.pos = int32(k)
		list, hosts = append(list, id), append(hosts, s.hosts[i])
		s.rates[k], s.rateSEs[k], s.weights[k] = s.rates[i], s.rateSEs[i], s.weights[i]
		s.blocked.set(k, s.blocked.has(i))
		s.probing.set(k, s.probing.has(i))
		s.dated.set(k, s.dated.has(i))
		if s.fixed != nil {
			s.fixed[k] = s.fixed[i]
		}
		if s.adaptive {
			s.freqs[k], s.adModified[k] = s.freqs[i], s.adModified[i]
		}
		s.posts[k], s.lastOK[k], s.probes[k] = s.posts[i], s.lastOK[i], s.probes[i]
		s.prevGap[k], s.models[k] = s.prevGap[i], s.models[i]
		k++
	}
	s.list, s.hosts = list, hosts
	s.rates, s.rateSEs, s.weights = s.rates[:k], s.rateSEs[:k], s.weights[:k]
	s.blocked, s.probing, s.dated = s.blocked.truncate(k), s.probing.truncate(k), s.dated.truncate(k)
	if s.fixed != nil {
		s.fixed = s.fixed[:k]
	}
	if s.adaptive {
		s.freqs, s.adModified = s.freqs[:k], s.adModified[:k]
	}
	s.posts, s.lastOK, s.probes = s.posts[:k], s.lastOK[:k], s.probes[:k]
	s.prevGap, s.models = s.prevGap[:k], s.models[:k]
	for id := range gone {
		e := s.front.entry(id)
		if e.is(flagDisallowed) {
			s.disallowed--
		}
		if e.observed() {
			s.learnt--
		}
		if e.is(flagUnfetched) {
			s.unfetched--
		}
		delete(s.captures, id)
		s.setRecheckTau(e, 0)
		s.retired = append(s.retired, retiredEntry{id: id, snapshot: s.snapshots})
	}
	s.moved += len(gone)
	return len(gone)
}

// reuseRetired frees the ids of the URLs removed before the snapshot-th
// snapshot, which the plan that has just taken effect was made from: no
// plan to come can name them (one PlanJob at a time).
func (s *Scheduler) reuseRetired(snapshot uint64) {
	k := 0
	for _, r := range s.retired {
		if r.snapshot <= snapshot {
			s.front.ents.release(s.front.entry(r.id))
			continue
		}
		s.retired[k] = r
		k++
	}
	s.retired = s.retired[:k]
}

// releaseOrphan ends the fetch of a removed URL, spacing its host from
// `at`; false if url is not such a URL.
func (s *Scheduler) releaseOrphan(url string, at time.Time) bool {
	h, ok := s.life.orphans[url]
	if !ok {
		return false
	}
	delete(s.life.orphans, url)
	if h.inFlight > 0 {
		h.inFlight--
	}
	if nf := at.Add(h.gap); nf.After(h.nextFree) {
		h.nextFree = nf
	}
	s.front.fixHost(h)
	return true
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
	// Disallowed counts the host's URLs robots.txt disallows (or all, while
	// robots.txt is unreachable).
	Disallowed int `json:"disallowed"`
	// Planned is the fetch rate the URLs' intervals add up to.
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
	urls, paused, disallowed int
	planned                  float64
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
		case e.is(flagDisallowed):
			c.disallowed++
		case e.interval > 0:
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
			v.URLs, v.Paused, v.Disallowed, v.Planned = c.urls, c.paused, c.disallowed, c.planned
		}
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b HostView) int { return strings.Compare(a.Host, b.Host) })
	return out
}

// bandZ is the normal quantile of a two-sided 90% interval.
const bandZ = 1.6448536269514722

// FreshnessBand returns the model's weighted freshness of the last plan
// (the plan's own figure) and its value if every rate estimate sat at the
// upper (lo) or lower (hi) end of its 90% interval rate·exp(±z·se/rate):
// the uncertainty the estimates carry, taken as fully correlated (a prior
// that is wrong for every new URL errs the same way for all). It is
// computed with the plan (PlanJob.Solve), over the plan's input, so it
// costs the caller's lock nothing and moves only with the plan.
func (s *Scheduler) FreshnessBand() (mid, lo, hi float64) {
	b := s.life.band
	if s.planAt.IsZero() {
		return 1, 1, 1
	}
	return b.mid, b.lo, b.hi
}

// bandOf is the freshness band of a plan's frequencies freq over its input
// in, whose rates have standard errors se. Paused and disallowed URLs have
// weight 0 in the input and count for nothing, as in the plan.
func bandOf(in PlanInput, se []float32, freq []float64) freshnessBand {
	var num, numLo, numHi, den float64
	for i, f := range freq {
		w, rate := in.Weights[i], in.Rates[i]
		if !(w > 0) || math.IsInf(w, 1) || !(rate >= 0) || !(f >= 0) {
			continue
		}
		rLo, rHi := rate, rate
		if se[i] > 0 {
			rLo, rHi = estimate.RateInterval(rate, float64(se[i]), bandZ)
		}
		num += w * alloc.FixedOrder.Freshness(rate, f)
		numLo += w * alloc.FixedOrder.Freshness(rHi, f)
		numHi += w * alloc.FixedOrder.Freshness(rLo, f)
		den += w
	}
	b := freshnessBand{mid: 1, lo: 1, hi: 1}
	if den > 0 {
		b.mid, b.lo, b.hi = num/den, numLo/den, numHi/den
	}
	return b
}

// RateSE returns the standard error of the rate st gives; for a URL never
// observed, that of the prior. An unknown (infinite) error is 0, as a
// record stores it: JSON has no infinity.
func (e Estimator) RateSE(st *EstimateState) float64 {
	_, se := st.State.RateUncertainty(e.Prior)
	if math.IsInf(se, 0) || math.IsNaN(se) {
		return 0
	}
	return se
}
