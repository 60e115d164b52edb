package schedule

import (
	"math"
	"time"
)

// Pages that change together (docs/design.md §3.8). A change seen at one
// URL is evidence that the URLs tied to it changed too, and a URL known to
// be stale is the best use of a fetch there is: refetched, its copy stays
// fresh until its next change, where a blind fetch of it may find nothing
// new. Two ties are learnt, both from what fetches already return:
//
//   - the same content (a fingerprint of the extracted text): mirrors,
//     one source published under several names. When a URL's content
//     moves from A to B, every other URL still holding A is a candidate.
//   - the same trusted Last-Modified, to the second, on one host: pages a
//     site regenerates at once (a section and its articles). When a URL's
//     dated last change moves from t₁ to t₂, every URL of its host last
//     dated t₁ and not fetched since t₂ is a candidate.
//
// A candidate is refetched at once only if the expected freshness the
// fetch buys, p·w·E[(1 − e^{−λD})/λ] (p the tie's precision, D the time to
// its next planned fetch, the expectation over its posterior), exceeds the
// plan's marginal value of a fetch on its host, μ + ν_h: a hint is spent
// exactly where the plan would spend its last fetch less well. p is
// learnt per host and tie from the hints' outcomes (a hinted fetch that
// finds a change confirms it), starting at ½, so a tie that does not hold
// soon costs nothing.

// coTie names what ties URLs that change together.
type coTie uint8

const (
	tieContent coTie = iota // the same content fingerprint
	tieDate                 // the same trusted Last-Modified on one host
	coTies
)

// String names the tie as the views show it.
func (t coTie) String() string {
	if t == tieDate {
		return "date"
	}
	return "content"
}

// maxCoCandidates bounds the URLs one change hints: a key shared by
// thousands of URLs (a site-wide date) is more likely a template or a
// deploy than a change of each, and a change must not flood the frontier.
const maxCoCandidates = 256

// coRing is, for one tie, the key each URL holds now and the URLs that
// hold each key, as circular doubly linked lists through slices indexed
// by entry id (16 bytes a URL) and one map entry per distinct key.
type coRing struct {
	key        []uint64 // by entry id; 0: none
	next, prev []uint32
	head       map[uint64]uint32
}

// grow makes room for entry id.
func (r *coRing) grow(id uint32) {
	if int(id) < len(r.key) {
		return
	}
	n := max(int(id)+1, 2*len(r.key), 64)
	r.key = append(r.key, make([]uint64, n-len(r.key))...)
	r.next = append(r.next, make([]uint32, n-len(r.next))...)
	r.prev = append(r.prev, make([]uint32, n-len(r.prev))...)
}

// keyOf is the key id holds (0: none).
func (r *coRing) keyOf(id uint32) uint64 {
	if int(id) >= len(r.key) {
		return 0
	}
	return r.key[id]
}

// unlink takes id out of its key's list.
func (r *coRing) unlink(id uint32) {
	k := r.keyOf(id)
	if k == 0 {
		return
	}
	n, p := r.next[id], r.prev[id]
	if n == id {
		delete(r.head, k)
	} else {
		r.next[p], r.prev[n] = n, p
		if r.head[k] == id {
			r.head[k] = n
		}
	}
	r.key[id], r.next[id], r.prev[id] = 0, 0, 0
}

// set makes id hold key (0: none) and returns the key it held.
func (r *coRing) set(id uint32, key uint64) uint64 {
	old := r.keyOf(id)
	if old == key {
		return old
	}
	r.unlink(id)
	if key == 0 {
		return old
	}
	r.grow(id)
	if r.head == nil {
		r.head = map[uint64]uint32{}
	}
	r.key[id] = key
	if h, ok := r.head[key]; ok {
		p := r.prev[h]
		r.next[p], r.prev[id] = id, p
		r.next[id], r.prev[h] = h, id
	} else {
		r.head[key] = id
		r.next[id], r.prev[id] = id, id
	}
	return old
}

// holders calls fn for up to limit URLs holding key, skipping skip; it
// returns false, calling fn for none, when more than limit hold it.
func (r *coRing) holders(key uint64, skip uint32, limit int, fn func(id uint32)) bool {
	h, ok := r.head[key]
	if !ok {
		return true
	}
	var ids []uint32
	for id := h; ; {
		if id != skip {
			if len(ids) == limit {
				return false
			}
			ids = append(ids, id)
		}
		if id = r.next[id]; id == h {
			break
		}
	}
	for _, id := range ids {
		fn(id)
	}
	return true
}

// coTrust counts a host's hints of one tie that a fetch confirmed (the
// URL had changed) and refuted.
type coTrust struct{ hits, misses float32 }

// precision is the posterior mean of the share of hints confirmed, from a
// uniform prior.
func (t coTrust) precision() float64 {
	return (float64(t.hits) + 1) / (float64(t.hits) + float64(t.misses) + 2)
}

// coChange is the scheduler's record of which URLs change together
// (SchedulerOptions.CoChange).
type coChange struct {
	rings [coTies]coRing
	// trust by host (frontier.hostList index) and tie.
	trust map[uint32]*[coTies]coTrust
	// hinted are the URLs (entry ids) refetched for a hint and not yet
	// back, with the tie that hinted them.
	hinted map[uint32]coTie
	// Counts for the views: hints acted on, and their outcomes.
	sent, confirmed, refuted [coTies]int
}

func newCoChange() *coChange {
	return &coChange{trust: map[uint32]*[coTies]coTrust{}, hinted: map[uint32]coTie{}}
}

// forget drops a removed URL.
func (c *coChange) forget(id uint32) {
	for t := range c.rings {
		c.rings[t].unlink(id)
	}
	delete(c.hinted, id)
}

// trustOf is host h's record of tie t.
func (c *coChange) trustOf(h uint32) *[coTies]coTrust {
	tr, ok := c.trust[h]
	if !ok {
		tr = &[coTies]coTrust{}
		c.trust[h] = tr
	}
	return tr
}

// dateKey is the key of a trusted Last-Modified lm on host h.
func dateKey(h uint32, lm time.Time) uint64 {
	k := mix64(uint64(h)<<32 ^ uint64(lm.Unix()) ^ 0x646174656b6579) // "datekey"
	return max(k, 1)
}

// mix64 is a 64-bit finaliser (splitmix64's), to spread keys.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// Hinted reports whether url's fetch under way was made for a hint: the
// fetch was chosen because a change was likely, so its outcome is not a
// draw of the URL's change process and the estimator must not learn a
// rate from it (Observation.Hinted).
func (s *Scheduler) Hinted(url string) bool {
	if s.co == nil {
		return false
	}
	e, ok := s.front.urls.get(url)
	if !ok {
		return false
	}
	_, ok = s.co.hinted[e.id]
	return ok
}

// coLearn folds the fetch fb of e into the ties: a hint it answers, the
// keys e holds now, and the hints a change of them gives to e's peers.
func (s *Scheduler) coLearn(e *entry, fb Feedback) {
	c := s.co
	if c == nil || e.pos < 0 {
		return
	}
	if t, ok := c.hinted[e.id]; ok && fb.OK {
		delete(c.hinted, e.id)
		tr := &c.trustOf(e.host)[t]
		if fb.Changed {
			tr.hits++
			c.confirmed[t]++
		} else {
			tr.misses++
			c.refuted[t]++
		}
	}
	if !fb.OK {
		return
	}
	if fb.Content != 0 {
		old := c.rings[tieContent].set(e.id, fb.Content)
		if fb.Changed && old != 0 && old != fb.Content {
			c.rings[tieContent].holders(old, e.id, maxCoCandidates, func(id uint32) {
				s.coHint(s.front.entry(id), tieContent, fb.Start, fb.Start)
			})
		}
	}
	if fb.Dated && !fb.LastModified.IsZero() {
		k := dateKey(e.host, fb.LastModified)
		old := c.rings[tieDate].set(e.id, k)
		if old != 0 && old != k {
			c.rings[tieDate].holders(old, e.id, maxCoCandidates, func(id uint32) {
				s.coHint(s.front.entry(id), tieDate, fb.LastModified, fb.Start)
			})
		}
	}
}

// coHint refetches e at once if a change after since, hinted by tie t, is
// worth a fetch at the plan's margin.
func (s *Scheduler) coHint(e *entry, t coTie, since, now time.Time) {
	if e.pos < 0 || e.is(flagInFlight|flagPaused|flagDisallowed|flagCapture|flagOneShot) {
		return
	}
	last := s.lastOK[e.pos]
	if last == 0 || last >= nanos(since) {
		return // never fetched (due anyway), or fetched after the change
	}
	if _, ok := s.co.hinted[e.id]; ok {
		return
	}
	mu := s.plan.Mu
	if h := s.front.hostOf(e).plan; h >= 0 && int(h) < len(s.plan.HostNu) {
		mu += s.plan.HostNu[h]
	}
	if !(mu > 0) || math.IsInf(mu, 0) {
		return // a policy with no multiplier: no margin to weigh a hint against
	}
	d := math.Inf(1) // given up: no planned fetch
	if e.interval > 0 && e.index >= 0 {
		d = math.Max(0, float64(e.nextDue-nanos(now))/1e9)
	}
	p := s.co.trustOf(e.host)[t].precision()
	if p*s.weights[e.pos]*staleGain(s.posts[e.pos], d) <= mu {
		return
	}
	s.co.hinted[e.id] = t
	s.co.sent[t]++
	if e.interval <= 0 {
		// Queued for this fetch only: the next plan gives it its
		// interval (or none) again.
		e.interval = s.uniformInterval()
	}
	s.front.schedule(e, now)
}

// staleGain is the expected time (seconds) a copy refetched now stays
// fresh before the URL changes or its next planned fetch in d seconds
// would have refreshed it anyway, E[(1 − e^{−λd})/λ] over the posterior's
// quantile rates.
func staleGain(p postSummary, d float64) float64 {
	sum := p.summary()
	if !sum.Valid() {
		return 0
	}
	return sum.Expect(func(l float64) float64 {
		if math.IsInf(d, 1) {
			return 1 / l
		}
		return -math.Expm1(-l*d) / l
	})
}

// CoChangeStats are the hints the co-change ties gave, by tie: how many
// were sent, and how many of those that came back found a change.
type CoChangeStats struct {
	Tie                      string
	Sent, Confirmed, Refuted int
}

// CoChange reports the hints by tie (nil when the ties are off).
func (s *Scheduler) CoChange() []CoChangeStats {
	if s.co == nil {
		return nil
	}
	out := make([]CoChangeStats, coTies)
	for t := range coTies {
		out[t] = CoChangeStats{Tie: t.String(), Sent: s.co.sent[t], Confirmed: s.co.confirmed[t], Refuted: s.co.refuted[t]}
	}
	return out
}
