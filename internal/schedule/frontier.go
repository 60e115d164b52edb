package schedule

import (
	"container/heap"
	"math/bits"
	"slices"
	"time"
	"unsafe"

	"github.com/freshcrawl/freshcrawl/estimate"
)

// entry is the in-memory schedule state of one URL. It is held for every
// URL of the collection, so its layout is kept small: times are Unix
// nanoseconds (0: none; time.Time takes 24 bytes), heap and list
// positions are int32, the host and the path template are indexes
// (frontier.hostList, Scheduler.tmplNames), and the posterior's summary
// lives only in Scheduler.posts, the estimated rate and its standard
// error in Scheduler.rates and rateSEs, the weight in Scheduler.weights,
// the last successful fetch in Scheduler.lastOK, an adaptive policy's
// record of the page's last change in Scheduler.adModified, and a
// recheck's probe interval (few URLs have one) in Scheduler.rechecks.
// Entries live in slabs (entryStore) and are named by their id there:
// the URL index, the list and the hosts' heaps hold 4-byte ids, not
// 8-byte pointers.
type entry struct {
	// The URL is urlIndex.origins[origin] + the path path points to
	// (urlIndex.url). With a URL source (sourceIndex) path holds the
	// URL's fingerprint and origin its store id instead.
	path pathRef

	interval time.Duration // 1/f from the plan; 0 = not scheduled (given up, disallowed)
	nextDue  int64         // Unix ns
	host     uint32        // index in frontier.hostList
	// What the estimator learnt (docs/design.md §3.3): its state (in
	// its slab's stateArena, by the entry's place), the version of the
	// priors its posterior's summary was computed under (priorVer;
	// stale: to be recomputed under the current ones),
	// and the number of updates (seq, so that a recomputation from an
	// older state is dropped: it only has to differ from the one a
	// snapshot saw, so it may wrap). The weight and the last two
	// successful fetches are only in the scheduler's arrays
	// (Scheduler.weights, lastOK and prevGap).
	priorVer uint32
	index    int32  // in its host's heap (urls or polls), -1 when not queued
	pos      int32  // in Scheduler.list, -1 for a one-off request or a removed URL
	tmpl     uint32 // path template: index into Scheduler.tmplNames
	origin   uint32
	id       uint32 // in entryStore
	seq      uint16
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
	// (Scheduler.Pause).
	flagPaused
	// flagObserved: the estimator state holds observations (its
	// Observations() > 0), kept so that asking does not unpack it.
	flagObserved
	// flagUnfetched: never fetched successfully. A host whose next URL is
	// one goes before the others (frontier.next): a cold start's first
	// pass is not stretched by refetches of the URLs it already has.
	flagUnfetched
	// flagRecheck: the URL has a recheck's probe interval in
	// Scheduler.rechecks.
	flagRecheck
	// flagGone: the URL answered 410, or 404 for long enough: held like a
	// paused URL until it is seeded again or resumed (failures.go).
	flagGone
	// flagBackoff: the URL's last fetch failed and its next one is put
	// off (Feedback.RetryAt): queued strictly, never handed out before
	// due, and out of the plan (failures.go).
	flagBackoff
	// flagFreeSlot: in flight without holding its host's slot: a task
	// found delivered and unacknowledged when the coordinator started,
	// whose worker may have died with it (Scheduler.AdoptDelivered).
	flagFreeSlot
)

// held reports whether e is kept off the queue and out of the plan by
// the operator (paused) or by its answers (gone).
func (e *entry) held() bool { return e.is(flagPaused) || e.is(flagGone) }

// entryChunkBits sets the size of a slab of entries: 4 096 entries, 256
// KiB, large next to an entry and small next to a collection.
const (
	entryChunkBits = 12
	entryChunk     = 1 << entryChunkBits
)

// entryStore holds the entries in slabs of entryChunk, each entry at a
// fixed place for its life, named by its id (its place; 0 is never
// used, so that 0 can say "none"). The ids of one-off requests, which
// no list names, are reused once they are done; those of removed URLs
// once no plan can name them (Scheduler.reuseRetired).
type entryStore struct {
	chunks []*[entryChunk]entry
	arenas []stateArena // per slab: its entries' packed states
	next   uint32       // ids below it have been handed out
	free   []uint32     // ids to reuse
}

// at is the entry of id.
func (p *entryStore) at(id uint32) *entry {
	return &p.chunks[id>>entryChunkBits][id&(entryChunk-1)]
}

// alloc returns a new zero entry with its id set.
func (p *entryStore) alloc() *entry {
	var id uint32
	if n := len(p.free); n > 0 {
		id = p.free[n-1]
		p.free = p.free[:n-1]
	} else {
		if p.next == 0 {
			p.next = 1
		}
		id = p.next
		p.next++
		if int(id>>entryChunkBits) == len(p.chunks) {
			p.chunks = append(p.chunks, new([entryChunk]entry))
			p.arenas = append(p.arenas, stateArena{})
		}
	}
	e := p.at(id)
	e.id = id
	return e
}

// release gives e's place back for reuse: nothing may name e any more.
func (p *entryStore) release(e *entry) {
	p.setState(e, estimate.State{})
	id := e.id
	*e = entry{}
	p.free = append(p.free, id)
}

// reserve makes room for n more entries at once.
func (p *entryStore) reserve(n int) {
	if more := (int(p.next)+n)/entryChunk + 1 - len(p.chunks); more > 0 {
		p.chunks = slices.Grow(p.chunks, more)
		p.arenas = slices.Grow(p.arenas, more)
	}
}

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
func (p *entryStore) state(e *entry) estimate.State {
	r := p.ref(e)
	if r == 0 {
		return estimate.State{}
	}
	return unpackState(p.arenas[e.id>>entryChunkBits].at(r))
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
// follows from its bitmap (packedLen), so the entry holds a reference
// to its first byte (stateRef), 4 bytes where a slice takes 24.
func packState(st *estimate.State) []byte {
	buf := make([]byte, packedSize(st))
	packInto(buf, st)
	return buf
}

// packedSize is the length of st packed.
func packedSize(st *estimate.State) int {
	n := stateMap
	for _, b := range (*[stateSize]byte)(unsafe.Pointer(st)) {
		if b != 0 {
			n++
		}
	}
	return n
}

// packInto packs st into buf, which is packedSize(st) zero bytes.
func packInto(buf []byte, st *estimate.State) {
	k := stateMap
	for i, b := range (*[stateSize]byte)(unsafe.Pointer(st)) {
		if b != 0 {
			buf[i/8] |= 1 << (i % 8)
			buf[k] = b
			k++
		}
	}
}

// packedLen is the length of the packed state at p.
func packedLen(p *byte) int {
	n := stateMap
	for _, b := range unsafe.Slice(p, stateMap) {
		n += bits.OnesCount8(b)
	}
	return n
}

// stateBlock is the size of a block of a stateArena: some hundred
// packed states, so that a slab's partly filled last block costs about a
// byte an entry.
const (
	stateBlockBits = 13
	stateBlock     = 1 << stateBlockBits
)

// stateRef names the first byte of a packed state in its slab's arena
// (stateArena.at): one more than its block's index times stateBlock plus
// its offset in the block, so that 0 names none. A slab's 4 096 states of
// at most 126 bytes fill at most 63 blocks of 8 KiB, far below the 2^19
// a reference can name.
type stateRef uint32

// stateArena holds the packed estimator states of one slab of entries
// in blocks, so that a state costs its bytes and no allocation of its
// own (an allocation of its own would round it up to a size class: 66
// bytes on average for states of 56). A state replaced by a longer one
// leaves its bytes dead in the arena; once they are more than an eighth
// of the live ones, the slab's states are copied into new blocks
// (entryStore.compactStates), a few hundred kilobytes at most, so a
// fold that triggers it does not wait long.
type stateArena struct {
	blocks     [][]byte
	live, dead int
	// refs names each entry's packed state (packState) by the entry's
	// place in the slab, 0 while it is the zero state: most URLs of a
	// new collection have none, and a state takes 112 bytes unpacked.
	// Not a field of the entry: a scheduler whose URL source holds the
	// states (dropState) never allocates refs, and its entries are 56
	// bytes rather than 64. References of 4 bytes, not pointers, leave
	// the arena with no pointer for the garbage collector to scan.
	refs *[entryChunk]stateRef
}

// ref is the reference of e's packed state, 0 for none.
func (p *entryStore) ref(e *entry) stateRef {
	a := &p.arenas[e.id>>entryChunkBits]
	if a.refs == nil {
		return 0
	}
	return a.refs[e.id&(entryChunk-1)]
}

// setRef sets the reference of e's packed state.
func (p *entryStore) setRef(e *entry, r stateRef) {
	a := &p.arenas[e.id>>entryChunkBits]
	if a.refs == nil {
		if r == 0 {
			return
		}
		a.refs = new([entryChunk]stateRef)
	}
	a.refs[e.id&(entryChunk-1)] = r
}

// take returns n zero bytes in the arena and their reference.
func (a *stateArena) take(n int) ([]byte, stateRef) {
	last := len(a.blocks) - 1
	if last < 0 || cap(a.blocks[last])-len(a.blocks[last]) < n {
		a.blocks = append(a.blocks, make([]byte, 0, stateBlock))
		last++
	}
	b := a.blocks[last]
	a.blocks[last] = b[:len(b)+n]
	a.live += n
	return b[len(b) : len(b)+n : len(b)+n], stateRef(last<<stateBlockBits+len(b)) + 1
}

// at is the first byte of the packed state r names (r > 0).
func (a *stateArena) at(r stateRef) *byte {
	r--
	return &a.blocks[r>>stateBlockBits][r&(stateBlock-1)]
}

// setState sets e's estimator state.
func (p *entryStore) setState(e *entry, st estimate.State) {
	e.set(flagObserved, st.Observations() > 0)
	a := &p.arenas[e.id>>entryChunkBits]
	old, r := 0, p.ref(e)
	if r != 0 {
		old = packedLen(a.at(r))
	}
	if st == (estimate.State{}) {
		p.setRef(e, 0)
		a.live -= old
		a.dead += old
		return
	}
	n := packedSize(&st)
	if n <= old {
		// In place: the bytes after it are dead.
		buf := unsafe.Slice(a.at(r), old)
		clear(buf)
		packInto(buf[:n], &st)
		a.live -= old - n
		a.dead += old - n
	} else {
		buf, ref := a.take(n)
		packInto(buf, &st)
		p.setRef(e, ref)
		a.live -= old
		a.dead += old
	}
	if a.dead > stateBlock && a.dead > a.live/8 {
		p.compactStates(e.id >> entryChunkBits)
	}
}

// dropState frees e's packed state, if it has one, and keeps whether it
// holds observations (flagObserved): for a URL whose state its URL
// source holds (urlIndex.stateID).
func (p *entryStore) dropState(e *entry) {
	if p.ref(e) == 0 {
		return
	}
	obs := e.observed()
	p.setState(e, estimate.State{})
	e.set(flagObserved, obs)
}

// compactStates copies the live states of slab c into new blocks,
// leaving the old ones to the garbage collector.
func (p *entryStore) compactStates(c uint32) {
	old := &p.arenas[c]
	fresh := stateArena{refs: old.refs}
	if old.refs != nil {
		for i, r := range old.refs {
			if r == 0 {
				continue
			}
			src := old.at(r)
			n := packedLen(src)
			buf, ref := fresh.take(n)
			copy(buf, unsafe.Slice(src, n))
			old.refs[i] = ref
		}
	}
	p.arenas[c] = fresh
}

// unpackState is the state packState packed at p.
func unpackState(p *byte) estimate.State {
	var st estimate.State
	raw := (*[stateSize]byte)(unsafe.Pointer(&st))
	bitmap := unsafe.Slice(p, stateMap)
	packed := unsafe.Slice(p, packedLen(p))[stateMap:]
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
	id        uint32 // in frontier.hostList
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
	case len(h.urls.ids) > 0 && h.urls.top().is(flagUnfetched):
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
	if len(h.urls.ids) == 0 {
		return time.Time{}, false
	}
	due := fromNanos(h.urls.top().nextDue)
	if h.nextFree.After(due) || h.saturated {
		return h.nextFree, true
	}
	return due, true
}

func (h *hostQueue) pollsKey() (time.Time, bool) {
	if len(h.polls.ids) == 0 {
		return time.Time{}, false
	}
	return latest(fromNanos(h.polls.top().nextDue), h.nextFree), true
}

// queued is how many URLs the host holds in its heaps.
func (h *hostQueue) queued() int { return len(h.urls.ids) + len(h.polls.ids) }

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
	ents  *entryStore
	urls  urlIndex
	hosts map[string]*hostQueue
	// hostList is every host, by id (entry.host).
	hostList []*hostQueue
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
	ents := &entryStore{}
	return &frontier{ents: ents, urls: newURLIndex(ents), hosts: map[string]*hostQueue{}}
}

func (f *frontier) host(name string, gap time.Duration) *hostQueue {
	h, ok := f.hosts[name]
	if !ok {
		h = &hostQueue{name: name, id: uint32(len(f.hostList)), gap: gap, index: -1, plan: -1}
		h.urls.ents, h.polls.ents = f.ents, f.ents
		f.hosts[name] = h
		f.hostList = append(f.hostList, h)
	}
	return h
}

// hostOf is e's host.
func (f *frontier) hostOf(e *entry) *hostQueue { return f.hostList[e.host] }

// entry is the entry of id.
func (f *frontier) entry(id uint32) *entry { return f.ents.at(id) }

// url is e's URL.
func (f *frontier) url(e *entry) string { return f.urls.url(e) }

// insert adds the entry of url, which must not be in the index: for a
// caller that has just looked it up (urlIndex.find), so that a restart
// adding millions of URLs hashes and probes each once, not twice. With a
// URL source, id is its store id (0: none) and collided what find said.
func (f *frontier) insert(url, host string, gap time.Duration, id uint64, collided bool) *entry {
	e := f.ents.alloc()
	e.host, e.index, e.pos = f.host(host, gap).id, -1, -1
	if f.urls.src != nil {
		f.urls.putID(e, url, id, collided)
	} else {
		f.urls.put(e, url)
	}
	return e
}

// schedule (re)queues e at due; interval 0 removes it from the queue. A
// capture URL is queued with the host's polls, any other with its URLs.
func (f *frontier) schedule(e *entry, due time.Time) {
	h := f.hostOf(e)
	e.nextDue = nanos(due)
	if e.is(flagInFlight) {
		return // requeued when its result comes back
	}
	// A URL backing off is due when its backoff ends, not when a busy
	// host has a free slot: queued with the strict polls.
	strict := e.is(flagCapture) || e.is(flagBackoff)
	off := e.interval <= 0 || e.held()
	if e.index >= 0 && (e.is(flagStrict) != strict || off) {
		heap.Remove(h.heap(e.is(flagStrict)), int(e.index))
	}
	switch {
	case off:
	case e.index >= 0:
		heap.Fix(h.heap(e.is(flagStrict)), int(e.index))
	default:
		e.set(flagStrict, strict)
		h.heap(strict).push(e)
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
	e := q.top()
	heap.Pop(q)
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
	f.fixHost(f.hostOf(e))
}

// release ends e's fetch: it is no longer in flight, and its host is
// spaced from the real request time, which may be later than the dispatch
// time when the task waited in the queue.
func (f *frontier) release(e *entry, fetchedAt time.Time) {
	h := f.hostOf(e)
	if e.is(flagInFlight) {
		e.set(flagInFlight, false)
		if !e.is(flagFreeSlot) {
			h.inFlight--
		}
		e.set(flagFreeSlot, false)
	}
	if nf := fetchedAt.Add(h.gap); nf.After(h.nextFree) {
		h.nextFree = nf
	}
}

// finish ends a one-off entry: the host is spaced from its request and the
// entry forgotten (no list names a one-off entry, so its id is free).
func (f *frontier) finish(e *entry, fetchedAt time.Time) {
	h := f.hostOf(e)
	f.release(e, fetchedAt)
	if e.index >= 0 {
		heap.Remove(h.heap(e.is(flagStrict)), int(e.index))
	}
	f.urls.remove(e)
	f.ents.release(e)
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

// entryHeap is a heap of entries (by id) ordered by due time.
type entryHeap struct {
	ids  []uint32
	ents *entryStore
}

func (q entryHeap) Len() int { return len(q.ids) }
func (q entryHeap) Less(i, j int) bool {
	return q.ents.at(q.ids[i]).nextDue < q.ents.at(q.ids[j]).nextDue
}
func (q entryHeap) Swap(i, j int) {
	q.ids[i], q.ids[j] = q.ids[j], q.ids[i]
	q.ents.at(q.ids[i]).index, q.ents.at(q.ids[j]).index = int32(i), int32(j)
}

// Push is heap.Interface's; push adds an entry without boxing its id.
func (q *entryHeap) Push(x any) { q.push(q.ents.at(x.(uint32))) }

// Pop takes out the last element; its entry is top() before heap.Pop.
func (q *entryHeap) Pop() any {
	n := len(q.ids) - 1
	q.ents.at(q.ids[n]).index = -1
	q.ids = q.ids[:n]
	return nil
}

// push adds e, as heap.Push does (heap.Fix of a new last element moves
// it up as heap.Push would).
func (q *entryHeap) push(e *entry) {
	e.index = int32(len(q.ids))
	q.ids = append(q.ids, e.id)
	heap.Fix(q, len(q.ids)-1)
}

// top is the entry at the top of the heap (it must not be empty).
func (q *entryHeap) top() *entry { return q.ents.at(q.ids[0]) }

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
