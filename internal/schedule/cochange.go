package schedule

import (
	"math"
	"time"
)

// Pages that change together (docs/design.md §3.8). A change seen at one
// URL is evidence that the URLs tied to it changed too, and a URL known to
// be stale is the best use of a fetch there is: refetched, its copy stays
// fresh until its next change, where a blind fetch of it may find nothing
// new. Two keys tie URLs, both from what fetches already return: a
// fingerprint of the extracted text (mirrors, one source published under
// several names) and a trusted Last-Modified to the second on one host
// (pages a site regenerates at once). A URL that comes to hold a key
// another URL holds joins that URL's group and stays in it.
//
// When a fetch finds a change, the members that missed it (a mirror whose
// content is not the new one; a page dated together last fetched before
// the change) are refetched at once only if the expected freshness the
// fetch buys, P(stale | hint)·w·E[(1 − e^{−λD})/λ] (D the time to its next
// planned fetch, the expectation over its posterior), exceeds the plan's
// marginal value of a fetch on its host, μ + ν_h: a hint is spent exactly
// where the plan would spend its last fetch less well. What a kind of
// hint is worth is learnt per host from the hinted fetches: how often
// they find the page unchanged, against how often its posterior expected
// that anyway (coTrust), so a tie or a sitemap that tells nothing soon
// costs nothing.

// coTie names what ties URLs that change together.
type coTie uint8

const (
	tieContent coTie = iota // the same content fingerprint
	tieDate                 // the same trusted Last-Modified on one host
	tieSitemap              // a sitemap's <lastmod> (Scheduler.Signal)
	tieFeed                 // a feed entry's updated time (Scheduler.Signal)
	coTies
)

// String names the tie as the views show it.
func (t coTie) String() string {
	return [...]string{"content", "date", "sitemap", "feed"}[t]
}

// maxCoCandidates bounds the URLs a key ties: a key shared by thousands
// of URLs (a site-wide date) is more likely a template or a deploy than
// one source, and a change must not flood the frontier.
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

// maxCoGroup bounds a group of URLs tied together: past it, more URLs
// holding the same key are more likely a template than one source.
const maxCoGroup = maxCoCandidates

// coGroups are the URLs tied together, a group each: a URL that once
// held the same key as another (the same content, the same dated last
// change) stays tied to it, whatever keys they hold later, until its
// hints stop being confirmed. Each URL names its group's root and the
// next member of a circular list of the group (8 bytes a URL); groups
// are small (maxCoGroup), so a union relabels the smaller one.
type coGroups struct {
	root, next []uint32 // by entry id; root 0: in no group
	size       map[uint32]int
	tie        map[uint32]coTie // by root: the tie that formed the group
}

// grow makes room for entry id.
func (g *coGroups) grow(id uint32) {
	if int(id) < len(g.root) {
		return
	}
	n := max(int(id)+1, 2*len(g.root), 64)
	g.root = append(g.root, make([]uint32, n-len(g.root))...)
	g.next = append(g.next, make([]uint32, n-len(g.next))...)
}

// rootOf is id's group (0: none).
func (g *coGroups) rootOf(id uint32) uint32 {
	if int(id) >= len(g.root) {
		return 0
	}
	return g.root[id]
}

// union ties a and b by tie t, unless the group would grow past
// maxCoGroup.
func (g *coGroups) union(a, b uint32, t coTie) {
	if a == b {
		return
	}
	g.grow(max(a, b))
	if g.size == nil {
		g.size, g.tie = map[uint32]int{}, map[uint32]coTie{}
	}
	for _, id := range []uint32{a, b} {
		if g.root[id] == 0 {
			g.root[id], g.next[id], g.size[id], g.tie[id] = id, id, 1, t
		}
	}
	ra, rb := g.root[a], g.root[b]
	if ra == rb || g.size[ra]+g.size[rb] > maxCoGroup {
		return
	}
	if g.size[ra] < g.size[rb] {
		ra, rb, a, b = rb, ra, b, a
	}
	for id := rb; ; {
		g.root[id] = ra
		if id = g.next[id]; id == rb {
			break
		}
	}
	g.next[a], g.next[b] = g.next[b], g.next[a] // splice the two cycles
	g.size[ra] += g.size[rb]
	delete(g.size, rb)
	delete(g.tie, rb)
}

// members calls fn for every member of id's group but id.
func (g *coGroups) members(id uint32, fn func(uint32)) {
	if g.rootOf(id) == 0 {
		return
	}
	for m := g.next[id]; m != id; m = g.next[m] {
		fn(m)
	}
}

// remove takes id out of its group.
func (g *coGroups) remove(id uint32) {
	r := g.rootOf(id)
	if r == 0 {
		return
	}
	prev := id
	for g.next[prev] != id {
		prev = g.next[prev]
	}
	n := g.next[id]
	g.next[prev] = n
	g.root[id], g.next[id] = 0, 0
	size, tie := g.size[r]-1, g.tie[r]
	delete(g.size, r)
	delete(g.tie, r)
	if size <= 1 {
		if size == 1 {
			g.root[n], g.next[n] = 0, 0
		}
		return
	}
	if r == id {
		for m := n; ; {
			g.root[m] = n
			if m = g.next[m]; m == n {
				break
			}
		}
		r = n
	}
	g.size[r], g.tie[r] = size, tie
}

// coTrust is what a host's hints of one kind have proven: the hinted
// fetches that found no change (misses), and how many the URLs' own
// posteriors expected to find none anyway (expected, the sum over the
// hinted fetches of P(unchanged since the copy)). A signal is worth
// believing only as far as it finds fewer unchanged pages than the model
// expects without it: a sitemap whose lastmod is always "now" points at
// every page, and finds as many unchanged as fetching at random would; a
// mirror whose twin changed is never found unchanged.
type coTrust struct{ misses, expected float32 }

// Pseudo-counts of coTrust: a kind starts as worth trying (half the
// misses the model expects), and a few hints outweigh the start.
const (
	trustMisses0   = 1
	trustExpected0 = 2
)

// freshRatio is P(unchanged | hint) / P(unchanged), as the hints have
// shown it: 0 for a signal never wrong, 1 for one that tells nothing.
func (t coTrust) freshRatio() float64 {
	return math.Min(1, (float64(t.misses)+trustMisses0)/(float64(t.expected)+trustExpected0))
}

// coChange is the scheduler's record of which URLs change together
// (SchedulerOptions.CoChange).
type coChange struct {
	rings  [coTies]coRing
	groups coGroups
	// trust by host (frontier.hostList index) and tie.
	trust map[uint32]*[coTies]coTrust
	// hinted are the URLs (entry ids) refetched for a hint and not yet
	// back, with the tie that hinted them and the change the URL's
	// posterior expected without it.
	hinted map[uint32]coHinted
	// Counts for the views: hints acted on, and their outcomes.
	sent, confirmed, refuted [coTies]int
}

// coHinted is a hint under way: its tie, and P(unchanged since the
// copy) under the URL's posterior when it was sent.
type coHinted struct {
	tie   coTie
	fresh float32
}

func newCoChange() *coChange {
	return &coChange{trust: map[uint32]*[coTies]coTrust{}, hinted: map[uint32]coHinted{}}
}

// forget drops a removed URL.
func (c *coChange) forget(id uint32) {
	for t := range c.rings {
		c.rings[t].unlink(id)
	}
	c.groups.remove(id)
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
	if h, ok := c.hinted[e.id]; ok && fb.OK {
		delete(c.hinted, e.id)
		tr := &c.trustOf(e.host)[h.tie]
		tr.expected += h.fresh
		if fb.Changed {
			c.confirmed[h.tie]++
		} else {
			tr.misses++
			c.refuted[h.tie]++
		}
	}
	if !fb.OK {
		return
	}
	// Tie e to the URLs that hold the key it holds now: they share its
	// content, or its dated last change, so they changed together at
	// least once.
	join := func(t coTie, key uint64) {
		if key == 0 || c.rings[t].set(e.id, key) == key {
			return
		}
		c.rings[t].holders(key, e.id, maxCoCandidates, func(id uint32) { c.groups.union(e.id, id, t) })
	}
	join(tieContent, fb.Content)
	dated := fb.Dated && !fb.LastModified.IsZero()
	if dated {
		join(tieDate, dateKey(e.host, fb.LastModified))
	}
	if !fb.Changed || c.groups.rootOf(e.id) == 0 {
		return
	}
	t := c.groups.tie[c.groups.rootOf(e.id)]
	if t == tieContent && fb.Content != 0 {
		// Mirrors: a peer whose content is not the new one is stale.
		c.groups.members(e.id, func(id uint32) {
			if c.rings[tieContent].keyOf(id) != fb.Content {
				s.coHint(s.front.entry(id), t, fb.Start, fb.Start)
			}
		})
		return
	}
	// Pages dated together: the change is after the last change dated,
	// else after the fetch before this one, and a peer last fetched
	// before then has missed it.
	since := fromNanos(s.prevOK(e.pos))
	if dated {
		since = fb.LastModified
	}
	if since.IsZero() {
		return
	}
	c.groups.members(e.id, func(id uint32) { s.coHint(s.front.entry(id), t, since, fb.Start) })
}

// coHint refetches e at once if a change after since, hinted by tie t, is
// worth a fetch at the plan's margin, and reports whether it did.
func (s *Scheduler) coHint(e *entry, t coTie, since, now time.Time) bool {
	if e.pos < 0 || e.is(flagInFlight|flagPaused|flagDisallowed|flagCapture|flagOneShot) {
		return false
	}
	last := s.lastOK[e.pos]
	if last == 0 || last >= nanos(since) {
		return false // never fetched (due anyway), or fetched after the change
	}
	if _, ok := s.co.hinted[e.id]; ok {
		return false
	}
	mu := s.plan.Mu
	if h := s.front.hostOf(e).plan; h >= 0 && int(h) < len(s.plan.HostNu) {
		mu += s.plan.HostNu[h]
	}
	if !(mu > 0) || math.IsInf(mu, 0) {
		return false // a policy with no multiplier: no margin to weigh a hint against
	}
	d := math.Inf(1) // given up: no planned fetch
	if e.interval > 0 && e.index >= 0 {
		d = math.Max(0, float64(e.nextDue-nanos(now))/1e9)
	}
	r := s.co.trustOf(e.host)[t].freshRatio()
	post := s.posts[e.pos].summary()
	fresh := 0.5
	if post.Valid() {
		fresh = post.ExpectFresh(float64(nanos(now)-last) / 1e9)
	}
	if r > maxFreshRatio || (1-fresh*r)*s.weights[e.pos]*staleGain(s.posts[e.pos], d) <= mu {
		return false
	}
	s.co.hinted[e.id] = coHinted{tie: t, fresh: float32(fresh)}
	s.co.sent[t]++
	if e.interval <= 0 {
		// Queued for this fetch only: the next plan gives it its
		// interval (or none) again.
		e.interval = s.uniformInterval()
	}
	s.front.schedule(e, now)
	return true
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

// Signal is what a site said of url: a sitemap's <lastmod> or a feed
// entry's updated time (kind "sitemap" or "feed"), that it changed at or
// after changedAt. If its copy is older, it is refetched at once when that
// is worth a fetch at the plan's margin, weighed by how often the host's
// signals of that kind have proven true (docs/design.md §3.8); a signal
// that lies soon costs nothing. It reports whether it queued a fetch:
// what the signal was worth.
func (s *Scheduler) Signal(url, kind string, changedAt, now time.Time) bool {
	e, ok := s.front.urls.get(url)
	if !ok || e.is(flagOneShot) || s.co == nil || changedAt.IsZero() {
		return false
	}
	t := tieSitemap
	if kind == "feed" {
		t = tieFeed
	}
	return s.coHint(e, t, changedAt, now)
}

// maxFreshRatio is the most a host's hints of one kind may find pages
// unchanged, as a share of what the model expects, for the next to be
// acted on: where fetches are cheap (a loose budget, a small μ) even an
// uninformative signal would pass the value test, and a signal wrong
// nearly as often as a guess is noise, not evidence.
const maxFreshRatio = 0.8

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
