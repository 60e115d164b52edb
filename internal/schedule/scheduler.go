package schedule

import (
	"container/heap"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/freshcrawl/freshcrawl/estimate"
)

// Scheduler is the scheduling step with no I/O and no clock of its own:
// every call says what time it is, so the same code runs in the
// coordinator on the wall clock and in `freshcrawl bench policies
// --mode virtual` on a simulated one. It is not safe for concurrent use:
// the coordinator's dispatcher holds it under its lock, and re-plans in
// three steps (Snapshot, PlanJob.Solve, Apply) so that the lock is never
// held while the policy runs.
//
// Its fields are set in this file only (Grow only reserves room for
// them), so that what a fetch, a plan or an operator does to the
// schedule reads in one place; the methods in other files read them. The
// parts with types of their own, the frontier's queues and the capture
// URLs' states, change through their own methods.
type Scheduler struct {
	o         SchedulerOptions
	front     *frontier
	plan      PlanOutput
	planAt    time.Time
	moved     int
	inUse     float64
	shots     int      // one-off entries queued or in flight
	unspelled int      // Next could not spell a due URL (URLSource): Unspelled
	unread    int      // plans whose estimator states the URL source could not read: UnreadStates
	list      []uint32 // every URL's entry id (not one-off requests), in the order added: the plan's element order

	// The plan's input, kept up to date element by element (mirror) so a
	// re-plan copies arrays instead of walking a million entries under
	// the caller's lock. Index i is list[i].
	rates []float64
	// rateSEs are the standard errors of rates, for the plan's freshness
	// band (bandOf), which is reported, never planned by: float32's 7
	// digits are more than an error needs.
	rateSEs []float32
	weights []float64 // the URL's weight; the plan's input is 0 where blocked (it takes no budget)
	blocked bitset    // disallowed by robots.txt or paused: no fetches, not even exploration
	// Under an adaptive policy only (adaptive; nil otherwise): the URL's
	// frequency now, 1/interval (0: unscheduled, disallowed or paused),
	// which is the policy's plan, and the policy's record of the page's
	// last change (adaptiveState.Modified, Unix ns).
	adaptive   bool
	freqs      []float64
	adModified []int64
	// fixed is the rate a capture URL polls at whatever the plan says
	// (its configured or learnt polls per period; 0: planned like any
	// URL). The plan takes it off the budget and the host's capacity, so
	// that the budget in use is what is really dispatched. Nil until a
	// URL has a fixed rate: most collections have no capture URL.
	fixed []float64
	// hosts[i] indexes planHosts, in order of first appearance in list.
	// Appends never touch its first elements, so a snapshot may share
	// them; Remove builds a new array.
	hosts     []int32
	planHosts []*hostQueue

	// Per element as well: the posterior summary and the last successful
	// fetch (unix nanoseconds, 0: never), for the model's freshness and
	// for exploration.
	posts   []postSummary
	models  []estimate.Sketch // the posterior under the model's priors (Feedback.Model)
	lastOK  []int64
	prevGap []float32 // seconds from the successful fetch before lastOK to it (okGap; 0: fewer than two)
	probing bitset    // explored by the last plan
	probes  []uint8   // fetches in the URL's current probe session
	dated   bitset    // the newest fetch's Last-Modified was trusted (Feedback.Dated)

	disallowed int                      // URLs disallowed now
	gone       int                      // URLs gone now (flagGone)
	captures   map[uint32]*captureState // capture URLs (entry ids): their capture state
	// rechecks holds the probe interval of the URLs (entry ids) given
	// up and rechecked (flagRecheck): each check is followed by a probe
	// that long after it; flagRechecked is set between the two. Few
	// URLs have one, so it is not in every entry.
	rechecks map[uint32]time.Duration
	// retired are the ids of removed URLs, with the number of snapshots
	// made before their removal: a plan made over an older list may
	// still name them, so they are reused only once a plan made after
	// it has taken effect (Apply).
	retired   []retiredEntry
	snapshots uint64

	priors *PriorSet
	// Interned path templates: an entry holds the index in tmplNames.
	tmpls     map[string]uint32
	tmplNames []string
	// What the exploration rule and the refits need to know of the
	// collection: change points seen and the time the observations
	// covered, both faded (the hazard of a rate change), and new
	// observations since the priors were last fitted.
	changePoints, urlTime float64
	hazardAt              time.Time
	learnt                int     // URLs with an estimate
	unfetched             int     // URLs never fetched successfully (flagUnfetched)
	exploreLift           float64 // the last plan's PlanJob.lift
	exploreItems          int     // the last plan's PlanJob.itemsHint
	sinceRefit            int
	resumFrom             int // where the next re-summary batch starts
	life                  lifecycle
	co                    *coChange // SchedulerOptions.CoChange; nil when off
}

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

// retiredEntry is the id of a removed URL and the number of snapshots
// made before it was removed.
type retiredEntry struct {
	id       uint32
	snapshot uint64
}

// NewScheduler returns an empty scheduler. It takes o as it is: start
// from DefaultSchedulerOptions; a field Validate refuses is an error, not
// a default.
func NewScheduler(o SchedulerOptions) (*Scheduler, error) {
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("scheduler options: %w", err)
	}
	if o.Priors == nil {
		o.Priors = newPriorSet(o.PriorRate)
	}
	_, adaptive := o.Policy.(adaptivePolicy)
	front := newFrontier()
	if o.URLs != nil {
		front.urls.src = newSourceIndex(o.URLs)
	}
	s := &Scheduler{o: o, front: front, captures: map[uint32]*captureState{}, rechecks: map[uint32]time.Duration{}, priors: o.Priors, tmpls: map[string]uint32{}, adaptive: adaptive}
	if o.CoChange {
		s.co = newCoChange()
	}
	return s, nil
}

// Add adds a URL, or for a known one updates its weight and mode only (it
// keeps its estimate and schedule).
func (s *Scheduler) Add(u URLInfo, now time.Time) bool {
	e, ok, collided := s.front.urls.find(u.URL, u.ID)
	if ok {
		s.front.urls.learnID(e, u.ID)
		if e.pos >= 0 && s.weights[e.pos] != u.Weight {
			s.moved++
			s.weights[e.pos] = u.Weight
		}
		e.set(flagCapture, u.Capture)
		s.setCapture(e, u)
		s.setGone(e, u.Gone, now)
		s.mirror(e)
		if e.index >= 0 && e.is(flagStrict) != e.is(flagCapture) {
			s.front.schedule(e, fromNanos(e.nextDue)) // into the heap of its new mode
		}
		return false
	}
	e = s.front.insert(u.URL, u.Host, s.baseGap(), u.ID, collided) // not found above
	e.set(flagCapture, u.Capture)
	e.tmpl = s.template(u.URL)
	dated := false
	if len(u.Estimate) > 0 {
		var st EstimateState
		if st.UnmarshalBinary(u.Estimate) == nil {
			s.setState(e, st.State)
			if e.observed() {
				s.learnt++
			}
			// As Learn would say after the stored fetch (Feedback.Dated):
			// the trust counts are the estimator's defaults; only the
			// clock skew of a check is configured.
			dated = !st.PrevLM.IsZero() && st.Trust.Trustworthy(estimate.DefaultTrustConfig())
		}
	}
	// The posterior is recomputed under the current priors by the next
	// plans (a batch each, in PlanJob.Solve); until then the rate stands
	// for it.
	e.priorVer = 0
	e.set(flagStale, true)
	e.pos = int32(len(s.list))
	s.list = append(s.list, e.id)
	if h := s.front.hostOf(e); h.plan < 0 {
		h.plan = int32(len(s.planHosts))
		s.planHosts = append(s.planHosts, h)
	}
	s.hosts = append(s.hosts, s.front.hostOf(e).plan)
	s.rates, s.rateSEs, s.weights = append(s.rates, u.Rate), append(s.rateSEs, float32(u.RateSE)), append(s.weights, u.Weight)
	n := len(s.list)
	s.blocked, s.probing, s.dated = s.blocked.extend(n), s.probing.extend(n), s.dated.extend(n)
	s.blocked.set(n-1, false)
	s.probing.set(n-1, false)
	s.dated.set(n-1, dated)
	if s.adaptive {
		s.freqs, s.adModified = append(s.freqs, 0), append(s.adModified, 0)
	}
	if s.fixed != nil {
		s.fixed = append(s.fixed, 0)
	}
	s.posts, s.lastOK, s.probes = append(s.posts, compactSummary(pointSummary(u.Rate))), append(s.lastOK, nanos(u.LastOK)), append(s.probes, 0)
	s.models = append(s.models, estimate.PointSketch(s.priors.load().grid(), u.Rate))
	s.prevGap = append(s.prevGap, 0)
	s.setCapture(e, u)
	s.moved++
	s.setDisallowed(e, u.Disallowed)
	e.set(flagPaused, u.Paused)
	e.set(flagBackoff, u.Backoff)
	s.setGone(e, u.Gone, now)
	if u.LastOK.IsZero() {
		e.set(flagUnfetched, true)
		s.unfetched++
	}
	e.interval = u.Interval
	if e.interval <= 0 {
		if a, ok := s.o.Policy.(adaptivePolicy); ok {
			e.interval = a.Initial()
		} else {
			// Until the next plan: the uniform share, so a new URL is
			// fetched soon and learnt.
			e.interval = s.uniformInterval()
		}
	}
	due := u.NextDue
	if due.IsZero() {
		due = s.firstDue(u.URL, now)
	}
	s.mirror(e)
	s.front.schedule(e, due)
	return true
}

// Enqueue adds a one-off request (a keyword-search probe, a fetch of an
// item by id) due at `at`. It is dispatched under the same host politeness
// as every URL and forgotten once Done. It returns false if url is already
// known.
func (s *Scheduler) Enqueue(url, host string, at time.Time) bool {
	_, ok, collided := s.front.urls.find(url, 0)
	if ok {
		return false
	}
	e := s.front.insert(url, host, s.baseGap(), 0, collided)
	e.set(flagOneShot, true)
	e.interval = time.Hour // any interval > 0 keeps it queued
	s.shots++
	s.front.schedule(e, at)
	return true
}

// Spelling a URL through the URL source may fail (the store could not be
// read, or no longer holds it): Next then puts the URL back, due again
// after unspelledRetry, and tries the next due one, up to
// maxUnspelled times a call, after which it waits unspelledWait.
const (
	unspelledRetry = time.Minute
	maxUnspelled   = 16
	unspelledWait  = time.Second
)

// Next hands out the URL to fetch now, if any; otherwise it says when the
// next one is due (zero if none is queued).
func (s *Scheduler) Next(now time.Time) (Dispatch, bool, time.Time) {
	for tries := 0; ; tries++ {
		e, next := s.front.next(now)
		if e == nil {
			return Dispatch{}, false, next
		}
		url, err := s.front.urls.spell(e)
		if err != nil {
			// Nothing is lost: the URL stays in the schedule and is
			// tried again (the source logs what failed).
			s.unspelled++
			s.front.done(e, now, now.Add(unspelledRetry))
			if tries+1 >= maxUnspelled {
				return Dispatch{}, false, now.Add(unspelledWait)
			}
			continue
		}
		h := s.front.hostOf(e)
		return Dispatch{URL: url, Host: h.name, Capture: e.is(flagCapture), Gap: h.gap, Due: fromNanos(e.nextDue)}, true, time.Time{}
	}
}

// Done folds a fetch's outcome into the schedule: the host's spacing, the
// URL's rate, and its next due time.
func (s *Scheduler) Done(url string, fb Feedback) {
	if s.releaseOrphan(url, fb.End) {
		return
	}
	e, ok := s.front.urls.get(url)
	if !ok {
		return
	}
	h := s.front.hostOf(e)
	s.front.setGap(h, s.hostGap(fb.HostGap, fb.HostSlowdown), fb.HostNotBefore)
	if !fb.End.IsZero() && !fb.Start.IsZero() {
		h.took(fb.End.Sub(fb.Start))
	}
	// Space the host from when the request finished: measured at the
	// server, a request's start can lag ours by the connection set-up, so
	// spacing from our start could bring two requests closer than the gap.
	end := fb.End
	if end.Before(fb.Start) {
		end = fb.Start
	}
	if e.is(flagOneShot) {
		s.shots--
		s.front.finish(e, end)
		return
	}
	s.record(e, fb)
	s.coLearn(e, fb)
	if e.is(flagDisallowed) != fb.Disallowed {
		s.setDisallowed(e, fb.Disallowed)
		s.moved++
	}
	if e.interval <= 0 {
		e.interval = s.uniformInterval()
	}
	due := s.afterFailure(e, s.nextDue(e, url, fb), fb)
	s.mirror(e)
	s.front.done(e, end, due)
}

// record keeps what the fetch fb taught of e's URL (its rate, its last
// successful fetch, its estimate and probe session) and of the
// collection (the counts of the hazard of a rate change).
func (s *Scheduler) record(e *entry, fb Feedback) {
	if fb.Rate > 0 && fb.Rate != s.rates[e.pos] {
		s.rates[e.pos], s.rateSEs[e.pos] = fb.Rate, float32(fb.RateSE)
		s.moved++
	}
	if fb.OK {
		s.prevGap[e.pos], s.lastOK[e.pos] = okGap(s.lastOK[e.pos], nanos(fb.Start)), nanos(fb.Start)
		if e.is(flagUnfetched) {
			e.set(flagUnfetched, false)
			s.unfetched--
		}
	}
	if fb.Learnt {
		s.recordEstimate(e, fb)
	}
	if fb.Learnt && !fb.First {
		// The time this observation covered, for the hazard of a rate
		// change per unit of observed time.
		s.updateHazard(fb.Start)
		if prev := s.prevOK(e.pos); s.lastOK[e.pos] != 0 && nanos(fb.Start) > prev && prev != 0 {
			s.urlTime += fb.Start.Sub(fromNanos(prev)).Seconds()
		}
	}
	if fb.ChangePoint {
		s.changePoints++
		s.moved++
		s.probes[e.pos] = 0
	}
	if fb.OK && e.pos >= 0 && s.probing.has(int(e.pos)) && s.probes[e.pos] < math.MaxUint8 {
		s.probes[e.pos]++
	}
}

// recordEstimate keeps the estimate a fetch updated (Feedback.Learnt):
// the estimator's state, and the posterior the plan and the model read.
func (s *Scheduler) recordEstimate(e *entry, fb Feedback) {
	if e.pos >= 0 {
		s.dated.set(int(e.pos), fb.Dated)
	}
	if !e.observed() && fb.State.Observations() > 0 {
		s.learnt++
	}
	s.setState(e, fb.State)
	e.priorVer = uint32(fb.PriorVersion)
	e.set(flagStale, false)
	if e.pos >= 0 {
		s.posts[e.pos] = compactSummary(fb.Posterior)
		s.models[e.pos] = fb.Model
		if !fb.Model.Valid() {
			s.models[e.pos] = fb.Posterior.Sketch(s.priors.load().grid())
		}
	}
	e.seq++
	s.sinceRefit++
}

// nextDue is when e is due again after the fetch fb: one interval on at
// the phase it keeps (phasedDue), unless robots.txt disallows it, a
// capture URL's polls or an adaptive policy say otherwise. It moves what
// the fetch moves of those: the capture URL's polls, the policy's record.
func (s *Scheduler) nextDue(e *entry, url string, fb Feedback) time.Time {
	due, rechecked := s.phasedDue(e, fb)
	e.set(flagRechecked, rechecked)
	cs := s.capOf(e)
	switch a, adaptive := s.o.Policy.(adaptivePolicy); {
	case e.is(flagDisallowed):
		due = fb.Start.Add(s.o.DisallowRetry)
	case cs != nil && e.interval > 0:
		if fb.OK {
			before := cs.rate()
			cs.poll(fb.Start, fb.Changed, e.interval)
			if cs.rate() != before {
				s.moved++ // mirrored by Done
			}
		}
		// After the poll just made, and after the phase it was due at:
		// a poll handed out early (a retry) must not be due again at
		// the same phase, where it would get the same task id.
		due = cs.next(url, latest(fb.Start, fromNanos(e.nextDue)), e.interval)
	case adaptive && e.interval > 0:
		var st adaptiveState
		st, due = a.Next(adaptiveState{Interval: e.interval, Modified: fromNanos(s.adModified[e.pos]), Reset: e.is(flagAdReset)}, fb)
		e.interval, s.adModified[e.pos] = st.Interval, nanos(st.Modified)
		e.set(flagAdReset, st.Reset)
	}
	return due
}

// Abort requeues a URL whose fetch produced no result (lost, failed,
// never published): it is due again at due.
func (s *Scheduler) Abort(url string, at, due time.Time) {
	if s.releaseOrphan(url, at) {
		return
	}
	if e, ok := s.front.urls.get(url); ok {
		s.front.done(e, at, due)
	}
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
		if !ok || !e.held() {
			continue
		}
		e.set(flagPaused, false)
		s.setGone(e, false, now)
		if e.interval <= 0 {
			e.interval = s.uniformInterval()
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
		if e.is(flagInFlight) && !e.is(flagFreeSlot) {
			if s.life.orphans == nil {
				s.life.orphans = map[string]*hostQueue{}
			}
			s.life.orphans[url] = h
		}
		s.front.urls.remove(e)
		s.front.fixHost(h)
		if s.co != nil {
			s.co.forget(e.id)
		}
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
		if e.is(flagGone) {
			s.gone--
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

// Replan re-solves the policy over all URLs and sets every interval: the
// three steps of a PlanJob at once, for a caller that owns the Scheduler
// (the virtual benchmark). An adaptive policy has no global plan: only the
// model's freshness is refreshed.
func (s *Scheduler) Replan(now time.Time) (PlanOutput, error) {
	j := s.Snapshot(now)
	if err := j.Solve(); err != nil {
		return PlanOutput{}, err
	}
	for !s.Apply(j, now, len(j.freq)) {
	}
	return j.out, nil
}

// Snapshot copies what a re-plan needs at now: every URL's rate, weight,
// host, posterior summary and last fetch, and every host's capacity; when
// due, a sample of estimator states to refit the priors from, and a batch
// of URLs whose posterior was computed under older priors. It costs a
// copy of a few arrays of n numbers, not a walk over the entries.
func (s *Scheduler) Snapshot(now time.Time) *PlanJob {
	n := len(s.list)
	_, adaptive := s.o.Policy.(adaptivePolicy)
	j := &PlanJob{at: now, policy: s.o.Policy, adaptive: adaptive, explore: s.o.ExploreShare, moved: s.moved, list: s.list[:n:n], liftGuess: s.exploreLift, itemsHint: s.exploreItems, snapshot: s.snapshots, states: s.o.URLs}
	s.snapshots++
	// The posterior summaries are half of the bytes copied (48 a URL):
	// copied on the other core meanwhile, since a caller holds its lock
	// (folds wait) for the whole snapshot. Nothing below touches them.
	var posts sync.WaitGroup
	posts.Go(func() {
		j.posts = make([]estimate.Summary, n)
		for i := range j.posts {
			j.posts[i] = s.posts[i].summary()
		}
	})
	s.copyInput(j)
	s.updateHazard(now)
	j.hazard = CollectionHazard(s.changePoints, s.urlTime, s.o.HalfLife)
	j.horizon = 1 / j.hazard
	s.priors.setHazard(j.hazard)
	j.halfLife = s.o.HalfLife.Seconds()
	j.priors = s.priors.load()
	if s.learnt > 0 && (j.priors.revision() == 0 || s.sinceRefit >= max(50, s.learnt/4)) {
		j.refit, j.refitIDs = s.sampleStates()
		j.refitSince, s.sinceRefit = s.sinceRefit, 0
	}
	s.pickResummaries(j)
	posts.Wait()
	return j
}

// pickResummaries copies, for Solve to recompute, the states of up to
// resumPerPlan URLs whose posterior predates the priors (or will, after
// the refit this plan makes): round robin over the collection.
func (s *Scheduler) pickResummaries(j *PlanJob) {
	n := len(s.list)
	if n == 0 {
		return
	}
	// Whether a refit made by this plan moves the priors is known only
	// after Solve: the posteriors computed under earlier versions are
	// recomputed now, those under this one by the plans after it.
	ver := j.priors.revision()
	j.resum = make([]resummary, 0, min(n, resumPerPlan)) // a state each: sized once, not doubled
	start := s.resumFrom % n
	j.resumStart = s.resumFrom
	for k := 0; k < n && len(j.resum) < resumPerPlan; k++ {
		i := (start + k) % n
		e := s.front.entry(s.list[i])
		// A URL never observed keeps the rate it was added with until the
		// priors have been fitted to the collection (version > 0): before
		// that, the configured prior rate is all there is.
		if e.is(flagDisallowed) || (!e.is(flagStale) && uint64(e.priorVer) >= ver) || (ver == 0 && !e.observed()) {
			continue
		}
		r := resummary{i: i, seq: e.seq, id: s.front.urls.stateID(e), host: s.front.hostOf(e).name, tmpl: s.tmplNames[e.tmpl]}
		if r.id == 0 {
			r.st = s.front.ents.state(e)
		}
		j.resum = append(j.resum, r)
		s.resumFrom = i + 1
	}
}

// Apply sets the intervals of up to limit more URLs from a solved job,
// moving each queued URL's next fetch by the change of its interval, and
// reports whether the job is done; the plan takes effect (Plan,
// ReplanDue) with the last call. A caller that shares the Scheduler under
// a lock takes it for each call, so that a fold waits for at most limit
// URLs' worth of heap updates. The first call also installs refitted
// priors and the recomputed posteriors (at most resumPerPlan).
func (s *Scheduler) Apply(j *PlanJob, now time.Time, limit int) bool {
	if j.next == 0 {
		s.applyEstimates(j)
		s.applyExploration(j)
		if !j.adaptive {
			for h, sat := range j.sat {
				if hq := s.planHosts[h]; hq.saturated != sat {
					hq.saturated = sat
					s.front.fixHost(hq)
				}
			}
		}
	}
	end := len(j.freq)
	if j.adaptive {
		j.next = end
	}
	if limit < end-j.next {
		end = j.next + limit
	}
	for i := j.next; i < end; i++ {
		s.applyInterval(j, i, now)
	}
	j.next = end
	if j.next < len(j.freq) {
		return false
	}
	s.plan, s.planAt, s.inUse, s.life.band = j.out, j.at, j.inUse, j.band
	// The frequencies are in the entries' intervals now; what the views
	// still need of them is which URLs they give up.
	s.life.givenUp = s.life.givenUp.truncate(0).extend(int(s.front.ents.next))
	for i, f := range s.plan.Freq {
		if f <= 0 && i < len(j.list) {
			s.life.givenUp.set(int(j.list[i]), true)
		}
	}
	s.plan.Freq = nil
	s.reuseRetired(j.snapshot)
	s.moved -= j.moved
	if s.moved < 0 {
		s.moved = 0
	}
	return true
}

// applyEstimates installs what the job made of the estimates: the
// refitted priors and the recomputed posteriors, or, if it could not
// read the states, the refit and re-summaries it left for the next plan.
func (s *Scheduler) applyEstimates(j *PlanJob) {
	if j.newPrior != nil {
		s.priors.store(j.newPrior)
	}
	if j.stateErr != nil {
		// The states were not read: the refit and the re-summaries
		// left out are the next plan's.
		s.unread++
		s.sinceRefit += j.refitSince
		s.resumFrom = j.resumStart
	}
	ver := s.priors.load().revision()
	for _, r := range j.resum {
		e := s.front.entry(j.list[r.i])
		if e.pos < 0 || e.seq != r.seq {
			continue // fetched meanwhile: its own posterior is newer
		}
		s.posts[e.pos], s.models[e.pos], e.priorVer = compactSummary(r.post), r.model, uint32(ver)
		e.set(flagStale, false)
		if r.post.Harmonic > 0 && r.post.Harmonic != s.rates[e.pos] {
			s.rates[e.pos] = r.post.Harmonic
		}
		s.mirror(e)
	}
}

// applyExploration installs the job's exploration: the URLs it probes,
// the probe sessions it ended, and what the next plan starts from.
func (s *Scheduler) applyExploration(j *PlanJob) {
	s.exploreLift, s.exploreItems = j.lift, j.itemsHint
	// The job's elements are its list's; a URL removed since the
	// snapshot has pos < 0, and the others may have moved.
	clear(s.probing)
	for i, p := range j.probe {
		if e := s.front.entry(j.list[i]); p && e.pos >= 0 {
			s.probing.set(int(e.pos), true)
		}
	}
	for _, i := range j.sessionsOver {
		if e := s.front.entry(j.list[i]); e.pos >= 0 {
			s.probes[e.pos] = 0
		}
	}
}

// applyInterval sets the interval of the job's element i from its
// frequency, and moves its next fetch by the change (replannedDue).
func (s *Scheduler) applyInterval(j *PlanJob, i int, now time.Time) {
	e := s.front.entry(j.list[i])
	if e.pos < 0 || e.held() {
		// Removed since the snapshot, paused or gone: it keeps its
		// interval for when it is resumed.
		return
	}
	if e.is(flagDisallowed) {
		e.interval = s.o.DisallowRetry
		s.mirror(e)
		return
	}
	f := j.freq[i]
	if f <= 0 {
		if !(j.in.Weights[i] > 0) {
			return
		}
		// Given up, and no room for its recheck in this plan: it
		// must not keep the interval it had (it would go on taking
		// budget the plan gave to others); it waits for the longest
		// recheck interval or a later plan's recheck.
		f = 1 / (maxRecheck * j.halfLife)
	}
	tau := time.Duration(0)
	if j.recheckTau != nil && j.recheckTau[i] > 0 {
		// A recheck: a fetch every 2/f, each followed by its probe.
		tau = time.Duration(j.recheckTau[i] * float64(time.Second))
		f /= 2
	}
	s.setRecheckTau(e, tau)
	old := e.interval
	// f is within the host's cap, so iv is at least the host's gap;
	// the floor only keeps a rounding from making it zero (which
	// would unschedule the URL), and is no time scale of its own.
	iv := max(time.Duration(float64(time.Second)/f), time.Nanosecond)
	e.interval = iv
	// A URL backing off keeps its due time: a plan must not bring it
	// back before its backoff ends.
	if e.index >= 0 && old > 0 && e.nextDue != 0 && !e.is(flagCapture) && !e.is(flagBackoff) && s.lastOK[e.pos] != 0 {
		due := s.replannedDue(e, old, iv, now)
		// A URL whose due time stays (its interval did not move,
		// as for most URLs in a re-plan) is where it was in its
		// host's heap, and so is the host: nothing to fix.
		if nanos(due) != e.nextDue || e.is(flagStrict) {
			s.front.schedule(e, due)
		}
	}
	s.mirror(e)
}

// updateHazard fades the change-point count and the observed time to
// now. The hazard is change points per unit of time the observations
// covered (each fetch covers the time since the previous one): a page
// rechecked after a year has been watched for a year.
func (s *Scheduler) updateHazard(now time.Time) {
	if !s.hazardAt.IsZero() && now.After(s.hazardAt) {
		dt := now.Sub(s.hazardAt).Seconds()
		f := math.Exp2(-dt / (hazardMemory * s.o.HalfLife.Seconds()))
		s.changePoints *= f
		s.urlTime *= f
	}
	if now.After(s.hazardAt) {
		s.hazardAt = now
	}
}

// RestoreHazardCounts sets the counts HazardCounts gave, in a scheduler
// that has counted nothing yet (a plan may have been made); they fade from
// at as if the scheduler had run since. Counts a scheduler cannot have
// made (negative, NaN, infinite, undated) are refused, as are counts over a
// scheduler's own.
func (s *Scheduler) RestoreHazardCounts(changePoints, observed float64, at time.Time) error {
	ok := func(x float64) bool { return x >= 0 && !math.IsInf(x, 1) }
	switch {
	case !ok(changePoints) || !ok(observed) || at.IsZero():
		return fmt.Errorf("schedule: restore hazard counts: invalid (change points %g, observed %g s, at %v)", changePoints, observed, at)
	case s.changePoints != 0 || s.urlTime != 0:
		return fmt.Errorf("schedule: restore hazard counts: the scheduler has counted %g change points over %g s since %v", s.changePoints, s.urlTime, s.hazardAt)
	}
	s.changePoints, s.urlTime, s.hazardAt = changePoints, observed, at
	return nil
}

// mirror copies e's plan input into the scheduler's arrays; every change
// of e's rate (or its error), weight, interval, disallowed or paused flag
// ends with it.
func (s *Scheduler) mirror(e *entry) {
	if e.pos < 0 {
		return
	}
	off := e.is(flagDisallowed) || e.held() || e.is(flagBackoff)
	f, fx := 0.0, 0.0
	if !off && e.interval > 0 {
		f = float64(time.Second) / float64(e.interval)
	}
	if cs := s.capOf(e); cs != nil && !off {
		if fx = cs.rate(); fx > 0 {
			f = fx
		}
	}
	s.blocked.set(int(e.pos), off)
	if s.fixed == nil && fx != 0 {
		s.fixed = make([]float64, len(s.list))
	}
	if s.fixed != nil {
		s.fixed[e.pos] = fx
	}
	if s.adaptive {
		s.freqs[e.pos] = f
	}
}

// setDisallowed sets e's disallowed flag, keeping the count.
func (s *Scheduler) setDisallowed(e *entry, v bool) {
	if e.is(flagDisallowed) == v {
		return
	}
	e.set(flagDisallowed, v)
	if v {
		s.disallowed++
	} else {
		s.disallowed--
	}
}

// setState keeps e's estimator state: in its slab's arena, or, when the
// URL source holds it (urlIndex.stateID: the store, which a fold writes
// before Done), only whether it holds observations.
func (s *Scheduler) setState(e *entry, st estimate.State) {
	if s.front.urls.stateID(e) != 0 {
		s.front.ents.dropState(e)
		e.set(flagObserved, st.Observations() > 0)
		return
	}
	s.front.ents.setState(e, st)
}

// setCapture gives a capture URL its capture state, keeping what it learnt
// when only the seed's fields change.
func (s *Scheduler) setCapture(e *entry, u URLInfo) {
	if !u.Capture {
		delete(s.captures, e.id)
		return
	}
	cs := s.captures[e.id]
	if cs == nil || (cs.configured && cs.period != u.Period.Seconds()) || (!cs.configured && u.Period > 0) {
		cs = newCaptureState(u.Period, u.Polls)
		cs.uniform = s.o.CaptureUniform
		s.captures[e.id] = cs
		return
	}
	cs.polls = u.Polls
}

// captureMoved re-mirrors e after its capture state changed, if its rate
// moved from before: the plan must count it at its new rate.
func (s *Scheduler) captureMoved(e *entry, before float64) {
	if s.capOf(e).rate() != before {
		s.mirror(e)
		s.moved++
	}
}

// setRecheckTau sets the probe interval of e's recheck (0: none).
func (s *Scheduler) setRecheckTau(e *entry, tau time.Duration) {
	switch {
	case tau != 0:
		s.rechecks[e.id] = tau
	case e.is(flagRecheck):
		delete(s.rechecks, e.id)
	}
	e.set(flagRecheck, tau != 0)
}

// template interns the path template of url: its index in tmplNames.
func (s *Scheduler) template(url string) uint32 {
	t := PathTemplate(url)
	if v, ok := s.tmpls[t]; ok {
		return v
	}
	v := uint32(len(s.tmplNames))
	s.tmpls[t] = v
	s.tmplNames = append(s.tmplNames, t)
	return v
}

func (s *Scheduler) baseGap() time.Duration {
	return time.Duration(float64(time.Second) / s.o.HostRate)
}
