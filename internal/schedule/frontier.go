package schedule

import (
	"container/heap"
	"math/bits"
	"time"
	"unsafe"

	"github.com/freshcrawl/freshcrawl/estimate"
)

// entry is the in-memory schedule state of one URL. It is held for every
// URL of the collection, so its layout is kept small: times are Unix
// nanoseconds (0: none; time.Time takes 24 bytes), heap and list
// positions are int32, the path template is an index into the
// scheduler's interned templates, and the posterior's summary lives only
// in Scheduler.posts, the estimated rate and its standard error in
// Scheduler.rates and rateSEs, the weight in Scheduler.weights, the last
// successful fetch in Scheduler.lastOK, and an adaptive policy's record
// of the page's last change in Scheduler.adModified.
type entry struct {
	// The URL is urlIndex.origins[origin] + the path path points to
	// (urlIndex.url).
	path pathRef
	host *hostQueue
	// st is the estimator's state (docs/design.md §3.3), packed
	// (packState), nil while it is the zero state: most URLs of a new
	// collection have none, and a state takes 112 bytes unpacked.
	st *byte

	interval time.Duration // 1/f from the plan; 0 = not scheduled (given up, disallowed)
	// recheckTau is the probe interval of a URL given up and rechecked
	// (0: none): each check is followed by a probe that long after it;
	// rechecked is set between the two.
	recheckTau time.Duration
	nextDue    int64 // Unix ns
	// What the estimator learnt (docs/design.md §3.3): its state (st),
	// the version of the priors its posterior's summary was computed
	// under (priorVer; stale: to be recomputed under the current ones),
	// and the number of updates (seq, so that a recomputation from an
	// older state is dropped). The weight and the last two successful
	// fetches are only in the scheduler's arrays (Scheduler.weights,
	// lastOK and prevOK).
	priorVer uint64
	index    int32  // in its host's heap (urls or polls), -1 when not queued
	pos      int32  // in Scheduler.list, -1 for a one-off request or a removed URL
	tmpl     uint32 // path template: index into Scheduler.tmplNames
	origin   uint32
	seq      uint32
	flags    entryFlags
}

// entryFlags are an entry's yes/no states, one bit each.
type entryFlags uint16

const (
	flagInFlight entryFlags = 1 << iota
	// flagStrict: queued in host.polls, never handed out before due.
	flagStrict
	flagCapture // a capture URL: its capture state is in Scheduler.captures
	flagOneShot // a one-off request (a probe): forgotten once done
	// flagDisallowed: disallowed by robots.txt (or robots.txt unreachable): no share of
	// the budget, rechecked every DisallowRetry against the cached
	// robots.txt so that a host that allows it again gets it back.
	flagDisallowed
	flagStale   // the posterior's summary is to be recomputed under the current priors
	flagAdReset // adaptiveState.Reset
	// flagRechecked: between the check of a URL given up and its probe.
	flagRechecked
	// flagPaused: paused by the operator: never queued, no share of the budget
	// (lifecycle.go).
	flagPaused
	// flagObserved: the estimator state holds observations (its
	// Observations() > 0), kept so that asking does not unpack it.
	flagObserved
	// flagUnfetched: never fetched successfully. A host whose next URL is
	// one goes before the others (frontier.next): a cold start's first
	// pass is not stretched by refetches of the URLs it already has.
	flagUnfetched
)

// is reports whether e has flag f.
func (e *entry) is(f entryFlags) bool { return e.flags&f != 0 }

// set sets or clears flag f of e.
func (e *entry) set(f entryFlags, v bool) {
	if v {
		e.flags |= f
	} else {
		e.flags &^= f
	}
}

// state is e's estimator state.
func (e *entry) state() estimate.State {
	if e.st == nil {
		return estimate.State{}
	}
	return unpackState(e.st)
}

// setState sets e's estimator state.
func (e *entry) setState(st estimate.State) {
	e.set(flagObserved, st.Observations() > 0)
	if st == (estimate.State{}) {
		e.st = nil
		return
	}
	e.st = packState(&st)
}

// observed reports whether e's estimate holds observations.
func (e *entry) observed() bool { return e.is(flagObserved) }

// stateSize is the size of an estimator state in memory, and stateMap
// the size of a packed state's bitmap of its non-zero bytes.
const (
	stateSize = int(unsafe.Sizeof(estimate.State{}))
	stateMap  = (stateSize + 7) / 8
)

// packState is st with its zero bytes left out: a bitmap of its non-zero
// bytes, then those bytes (about half of a state's bytes are zero: the
// rate buckets a URL's intervals never fell in, the change points, the
// high bytes of small counts). A state is plain numbers (no pointers,
// TestPackedStateRoundTrips), so its bytes are all there is to it and
// unpackState gives it back exactly. The length of the packed form
// follows from its bitmap, so the entry holds a pointer to its first
// byte, 8 bytes where a slice takes 24.
func packState(st *estimate.State) *byte {
	raw := (*[stateSize]byte)(unsafe.Pointer(st))
	n := 0
	for _, b := range raw {
		if b != 0 {
			n++
		}
	}
	buf := make([]byte, stateMap+n)
	k := stateMap
	for i, b := range raw {
		if b != 0 {
			buf[i/8] |= 1 << (i % 8)
			buf[k] = b
			k++
		}
	}
	return &buf[0]
}

// unpackState is the state packState packed at p.
func unpackState(p *byte) estimate.State {
	var st estimate.State
	raw := (*[stateSize]byte)(unsafe.Pointer(&st))
	bitmap := unsafe.Slice(p, stateMap)
	n := 0
	for _, b := range bitmap {
		n += bits.OnesCount8(b)
	}
	packed := unsafe.Slice(p, stateMap+n)[stateMap:]
	k := 0
	for i := range raw {
		if bitmap[i/8]&(1<<(i%8)) != 0 {
			raw[i] = packed[k]
			k++
		}
	}
	return st
}

// nanos is t in Unix nanoseconds, 0 for the zero time (which is how an
// entry says "none").
func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// fromNanos is the time of nanos(t): the zero time for 0.
func fromNanos(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// hostQueue holds one host's URLs ordered by due time and the host's
// politeness state. Capture polls sit in a heap of their own: a poll is
// due at a phase of its URL's period, and one made early is worth no more
// than one made at a random time, so the saturated rule (serve the host
// as soon as it is free) never applies to them.
type hostQueue struct {
	name      string
	urls      entryHeap
	polls     entryHeap     // capture URLs: handed out at their due time, never before
	gap       time.Duration // least time between two fetches in force now
	nextFree  time.Time     // earliest time the host may be fetched again
	inFlight  int
	index     int   // in frontier.hosts heap, -1 when not queued
	plan      int32 // in Scheduler.planHosts, -1 until a URL of the host is added
	lastFetch time.Time
	// busy is a moving average of how long a request to the host takes:
	// the host is spaced from the end of each request, so it can take at
	// most 1/(gap+busy) fetches a second, which is the cap the plan uses.
	busy time.Duration
	// saturated is set when the plan gives the host all it can take: its
	// URLs' due times then leave no slack, so the host is served as soon
	// as it is free (work-conserving) rather than idling until the next
	// URL is due while others wait, which would lose part of its capacity.
	saturated bool
	in        readyClass // the ready heap it is in (when index >= 0)
}

// readyClass says which of the frontier's ready heaps a host belongs in,
// in the order next serves them.
type readyClass uint8

const (
	// readyNew: the host's next URL has never been fetched.
	readyNew readyClass = iota
	// readySat: the plan saturates the host (hostQueue.saturated).
	readySat
	readyPlain
)

// class is the ready heap h belongs in now.
func (h *hostQueue) class() readyClass {
	switch {
	case len(h.urls) > 0 && h.urls[0].is(flagUnfetched):
		return readyNew
	case h.saturated:
		return readySat
	}
	return readyPlain
}

// capacity is the most fetches per second the host can take now.
func (h *hostQueue) capacity() float64 {
	return float64(time.Second) / float64(max(h.gap+h.busy, time.Nanosecond))
}

// key is when the host can next give out a URL: the earlier of its next
// freshness URL (at once when saturated) and its next capture poll.
func (h *hostQueue) key() time.Time {
	k, ok := h.urlsKey()
	if c, cok := h.pollsKey(); cok && (!ok || !k.Before(c)) {
		return c
	}
	return k
}

func (h *hostQueue) urlsKey() (time.Time, bool) {
	if len(h.urls) == 0 {
		return time.Time{}, false
	}
	due := fromNanos(h.urls[0].nextDue)
	if h.nextFree.After(due) || h.saturated {
		return h.nextFree, true
	}
	return due, true
}

func (h *hostQueue) pollsKey() (time.Time, bool) {
	if len(h.polls) == 0 {
		return time.Time{}, false
	}
	return latest(fromNanos(h.polls[0].nextDue), h.nextFree), true
}

// queued is how many URLs the host holds in its heaps.
func (h *hostQueue) queued() int { return len(h.urls) + len(h.polls) }

// heap is the heap e is (or would be) queued in.
func (h *hostQueue) heap(strict bool) *entryHeap {
	if strict {
		return &h.polls
	}
	return &h.urls
}

// latest is the later of two times.
func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// frontier orders URLs for dispatch: a heap of hosts keyed by the time their
// earliest URL is due and the host is free, each host a heap of its URLs.
// Dispatching a URL only ever looks at heap tops, so it costs O(log n)
// whatever the number of URLs, and a host with a thousand due URLs cannot
// starve the others or be fetched faster than its gap.
type frontier struct {
	urls  urlIndex
	hosts map[string]*hostQueue
	// Hosts with queued URLs and no fetch in flight, in three heaps
	// (readyClass): those whose next URL has never been fetched, those
	// the plan saturates (see hostQueue.saturated), and the rest. A free
	// host with a URL never fetched goes first: until every URL has been
	// fetched once, a refetch would take a slot of the budget from the
	// first pass, which then takes longer than N/B (docs/design.md §3.7,
	// cold start). Then a saturated host that is free: its capacity is
	// the binding constraint, so a slot it waits for is lost for good,
	// while any other host's URL can wait a moment and keep its phase
	// (Scheduler.Done).
	ready [readyPlain + 1]hostHeap
}

func newFrontier() *frontier {
	return &frontier{urls: newURLIndex(), hosts: map[string]*hostQueue{}}
}

func (f *frontier) host(name string, gap time.Duration) *hostQueue {
	h, ok := f.hosts[name]
	if !ok {
		h = &hostQueue{name: name, gap: gap, index: -1, plan: -1}
		f.hosts[name] = h
	}
	return h
}

// url is e's URL.
func (f *frontier) url(e *entry) string { return f.urls.url(e) }

// add inserts or returns the entry of url.
func (f *frontier) add(url, host string, gap time.Duration) (*entry, bool) {
	if e, ok := f.urls.get(url); ok {
		return e, false
	}
	return f.insert(url, host, gap), true
}

// insert adds the entry of url, which must not be in the index: for a
// caller that has just looked it up (Scheduler.Add), so that a restart
// adding millions of URLs hashes and probes each once, not twice.
func (f *frontier) insert(url, host string, gap time.Duration) *entry {
	e := &entry{host: f.host(host, gap), index: -1, pos: -1}
	f.urls.put(e, url)
	return e
}

// schedule (re)queues e at due; interval 0 removes it from the queue. A
// capture URL is queued with the host's polls, any other with its URLs.
func (f *frontier) schedule(e *entry, due time.Time) {
	h := e.host
	e.nextDue = nanos(due)
	if e.is(flagInFlight) {
		return // requeued when its result comes back
	}
	strict := e.is(flagCapture)
	off := e.interval <= 0 || e.is(flagPaused)
	if e.index >= 0 && (e.is(flagStrict) != strict || off) {
		heap.Remove(h.heap(e.is(flagStrict)), int(e.index))
	}
	switch {
	case off:
	case e.index >= 0:
		heap.Fix(h.heap(e.is(flagStrict)), int(e.index))
	default:
		e.set(flagStrict, strict)
		heap.Push(h.heap(strict), e)
	}
	f.fixHost(h)
}

// fixHost puts h in its ready heap at its current key, or takes it out.
func (f *frontier) fixHost(h *hostQueue) {
	c := h.class()
	q := &f.ready[c]
	if h.index >= 0 && h.in != c {
		// Moved between the heaps: take it out of the old one.
		heap.Remove(&f.ready[h.in], h.index)
	}
	want := h.queued() > 0 && h.inFlight == 0
	switch {
	case want && h.index >= 0:
		heap.Fix(q, h.index)
	case want:
		h.in = c
		heap.Push(q, h)
	case h.index >= 0:
		heap.Remove(q, h.index)
	}
}

// next returns the URL to dispatch now, or nil and the time the next one is
// due (zero if nothing is queued): a free host with a URL never fetched
// first, then a free saturated host, else the host whose earliest URL is
// due first.
func (f *frontier) next(now time.Time) (*entry, time.Time) {
	var h *hostQueue
	var wait time.Time
	for _, q := range f.ready {
		if len(q) == 0 {
			continue
		}
		if k := q[0].key(); !k.After(now) {
			h = q[0]
			break
		} else if wait.IsZero() || k.Before(wait) {
			wait = k
		}
	}
	if h == nil {
		return nil, wait
	}
	// A due capture poll goes first: it is bound to its phase, a
	// freshness URL is not.
	q := &h.urls
	if k, ok := h.pollsKey(); ok && !k.After(now) {
		q = &h.polls
	}
	e := heap.Pop(q).(*entry)
	e.set(flagInFlight, true)
	h.inFlight++
	h.lastFetch = now
	h.nextFree = now.Add(h.gap)
	f.fixHost(h)
	return e, time.Time{}
}

// took records that a request to h lasted d.
func (h *hostQueue) took(d time.Duration) {
	if d < 0 {
		return
	}
	if h.busy == 0 {
		h.busy = d
		return
	}
	h.busy += (d - h.busy) / 8
}

// done marks e's fetch finished at fetchedAt (when the host was actually
// requested) and requeues it at its next due time.
func (f *frontier) done(e *entry, fetchedAt time.Time, due time.Time) {
	f.release(e, fetchedAt)
	f.schedule(e, due)
	f.fixHost(e.host)
}

// release ends e's fetch: it is no longer in flight, and its host is
// spaced from the real request time, which may be later than the dispatch
// time when the task waited in the queue.
func (f *frontier) release(e *entry, fetchedAt time.Time) {
	h := e.host
	if e.is(flagInFlight) {
		e.set(flagInFlight, false)
		h.inFlight--
	}
	if nf := fetchedAt.Add(h.gap); nf.After(h.nextFree) {
		h.nextFree = nf
	}
}

// finish ends a one-off entry: the host is spaced from its request and the
// entry forgotten.
func (f *frontier) finish(e *entry, fetchedAt time.Time) {
	h := e.host
	f.release(e, fetchedAt)
	if e.index >= 0 {
		heap.Remove(h.heap(e.is(flagStrict)), int(e.index))
	}
	f.urls.remove(e)
	f.fixHost(h)
}

// setGap changes a host's gap (crawl-delay, backoff, host rate).
func (f *frontier) setGap(h *hostQueue, gap time.Duration, notBefore time.Time) {
	h.gap = gap
	if notBefore.After(h.nextFree) {
		h.nextFree = notBefore
	}
	f.fixHost(h)
}

type entryHeap []*entry

func (q entryHeap) Len() int           { return len(q) }
func (q entryHeap) Less(i, j int) bool { return q[i].nextDue < q[j].nextDue }
func (q entryHeap) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].index, q[j].index = int32(i), int32(j)
}
func (q *entryHeap) Push(x any) { e := x.(*entry); e.index = int32(len(*q)); *q = append(*q, e) }
func (q *entryHeap) Pop() any {
	old := *q
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	e.index = -1
	return e
}

type hostHeap []*hostQueue

func (q hostHeap) Len() int           { return len(q) }
func (q hostHeap) Less(i, j int) bool { return q[i].key().Before(q[j].key()) }
func (q hostHeap) Swap(i, j int)      { q[i], q[j] = q[j], q[i]; q[i].index = i; q[j].index = j }
func (q *hostHeap) Push(x any)        { h := x.(*hostQueue); h.index = len(*q); *q = append(*q, h) }
func (q *hostHeap) Pop() any {
	old := *q
	h := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	h.index = -1
	return h
}
