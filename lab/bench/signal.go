package bench

import (
	"cmp"
	"container/heap"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/freshcrawl/freshcrawl/lab/sim"
)

// The signal oracle is the limit a crawler told of every change reaches
// (issue 30): the moment a page changes it knows, and it refetches the
// changed pages as its budget allows, the slowest-changing first (a
// refreshed slow page stays fresh longest), the earliest stale first among
// equals, under the same host caps. It has no scheduler: it is its own
// small simulation on the truth's change times.

// signalInput is what the signal oracle is simulated on. Times are
// offsets on the truth's clock.
type signalInput struct {
	// changes are each page's change offsets, increasing.
	changes [][]time.Duration
	// hosts are each page's host, an index into gaps.
	hosts []int
	// gaps are the least time between two fetches of each host (0: none).
	gaps []time.Duration
	// keys orders the stale pages: the smallest key is fetched first. A
	// segment's keys hold from its from on (the first segment from the
	// start); each page's key is its true rate over its importance.
	keys []signalKeys
	// slot is the time between two fetch opportunities (1 / budget):
	// there is one at start + k·slot for every k ≥ 0 before end.
	slot       time.Duration
	start, end time.Duration
}

// signalKeys are the pages' keys from a time on.
type signalKeys struct {
	from time.Duration
	key  []float64
}

// signalOracleFetches runs the signal oracle: at each fetch opportunity
// it fetches, among the stale pages (never fetched, or changed since the
// copy) whose host may be fetched then, the one of least key (ties: stale
// the earliest, then the lowest index), or leaves the opportunity idle
// when there is none. It returns each page's fetches.
func signalOracleFetches(in signalInput) [][]sim.Fetch {
	n := len(in.changes)
	st := &signalState{key: in.keys[0].key, since: make([]time.Duration, n)}
	ver := make([]int, n)
	stale := make([]bool, n)
	st.heaps = make([]pageHeap, len(in.gaps))
	for h := range st.heaps {
		st.heaps[h].st = st
	}
	for i := range n {
		stale[i], st.since[i] = true, in.start
		st.heaps[in.hosts[i]].pages = append(st.heaps[in.hosts[i]].pages, i)
	}
	for h := range st.heaps {
		heap.Init(&st.heaps[h])
	}
	// Every change in time order, and the next one to apply.
	events := changeEvents(in.changes)
	next := 0
	for next < len(events) && events[next].at <= in.start {
		ver[events[next].page]++
		next++
	}
	seg := 1
	free := make([]time.Duration, len(in.gaps)) // when each host may be fetched
	fetches := make([][]sim.Fetch, n)
	staleCount := n
	for k := int64(0); ; k++ {
		t := in.start + time.Duration(k)*in.slot
		if t >= in.end {
			break
		}
		if staleCount == 0 && next == len(events) {
			break // nothing is stale, and nothing will change again
		}
		if staleCount == 0 && events[next].at > t {
			// Nothing to do before the next change: skip to the first
			// opportunity at or after it.
			k = int64((events[next].at - in.start + in.slot - 1) / in.slot)
			t = in.start + time.Duration(k)*in.slot
			if t >= in.end {
				break
			}
		}
		for seg < len(in.keys) && in.keys[seg].from <= t {
			st.key = in.keys[seg].key
			for h := range st.heaps {
				heap.Init(&st.heaps[h])
			}
			seg++
		}
		for ; next < len(events) && events[next].at <= t; next++ {
			i := events[next].page
			ver[i]++
			if !stale[i] {
				stale[i], st.since[i] = true, events[next].at
				heap.Push(&st.heaps[in.hosts[i]], i)
				staleCount++
			}
		}
		best := -1
		for h := range st.heaps {
			if len(st.heaps[h].pages) == 0 || free[h] > t {
				continue
			}
			if i := st.heaps[h].pages[0]; best < 0 || st.less(i, best) {
				best = i
			}
		}
		if best < 0 {
			continue
		}
		h := in.hosts[best]
		heap.Pop(&st.heaps[h])
		stale[best] = false
		staleCount--
		free[h] = t + in.gaps[h]
		fetches[best] = append(fetches[best], sim.Fetch{At: t, Version: ver[best]})
	}
	return fetches
}

// signalState is what the stale pages are ordered by.
type signalState struct {
	key   []float64
	since []time.Duration // when each stale page went stale
	heaps []pageHeap      // the stale pages of each host
}

// less orders page a before page b: the smaller key, then stale the
// earlier, then the lower index.
func (st *signalState) less(a, b int) bool {
	switch {
	case st.key[a] != st.key[b]:
		return st.key[a] < st.key[b]
	case st.since[a] != st.since[b]:
		return st.since[a] < st.since[b]
	}
	return a < b
}

// pageHeap is one host's stale pages, least first (container/heap).
type pageHeap struct {
	st    *signalState
	pages []int
}

func (h *pageHeap) Len() int           { return len(h.pages) }
func (h *pageHeap) Less(a, b int) bool { return h.st.less(h.pages[a], h.pages[b]) }
func (h *pageHeap) Swap(a, b int)      { h.pages[a], h.pages[b] = h.pages[b], h.pages[a] }
func (h *pageHeap) Push(x any)         { h.pages = append(h.pages, x.(int)) }
func (h *pageHeap) Pop() any {
	x := h.pages[len(h.pages)-1]
	h.pages = h.pages[:len(h.pages)-1]
	return x
}

// changeEvent is one change of one page.
type changeEvent struct {
	at   time.Duration
	page int
}

// changeEvents merges every page's changes into one list in time order
// (ties by page).
func changeEvents(changes [][]time.Duration) []changeEvent {
	total := 0
	for _, ch := range changes {
		total += len(ch)
	}
	out := make([]changeEvent, 0, total)
	for i, ch := range changes {
		for _, c := range ch {
			out = append(out, changeEvent{c, i})
		}
	}
	slices.SortFunc(out, func(a, b changeEvent) int {
		if c := cmp.Compare(a.at, b.at); c != 0 {
			return c
		}
		return cmp.Compare(a.page, b.page)
	})
	return out
}

// SignalOracle is the signal oracle's figures over a measured window.
type SignalOracle struct {
	// Freshness is its true freshness, integrated as a policy's is
	// (weighted by importance where the workload has weights).
	Freshness float64
	// FetchesPerDay are the fetches it made in the window, a simulated
	// day at a time: at most the budget, fewer when nothing was stale.
	FetchesPerDay float64
}

// signalOracle runs the signal oracle on the truth of a virtual run at
// o's budget and host caps, from the start of the run, and measures it
// over [from, end) as measure measures a policy.
func signalOracle(w Workload, ts *truthSet, o Options, from, end time.Duration) (SignalOracle, error) {
	changes := make([][]time.Duration, len(ts.pages))
	for i := range ts.pages {
		changes[i] = ts.pages[i].changes
	}
	var keys []signalKeys
	for si, sg := range ts.segments {
		k := signalKeys{from: sg.from, key: make([]float64, len(ts.pages))}
		for i := range k.key {
			k.key[i] = ts.pages[i].rates[si] / w.weight(i)
		}
		keys = append(keys, k)
	}
	return runSignalOracle(w, o, o.Day, changes, ts.hosts, keys, 0, from, end)
}

// runSignalOracle runs the signal oracle from start on the given truth,
// at o's budget and host caps, a simulated day lasting day, and measures
// it over [from, end).
func runSignalOracle(w Workload, o Options, day time.Duration, changes [][]time.Duration, hosts []int, keys []signalKeys, start, from, end time.Duration) (SignalOracle, error) {
	if !(o.Budget > 0) {
		return SignalOracle{}, fmt.Errorf("bench: signal oracle: budget %v", o.Budget)
	}
	caps := hostCapsPerDay(w, o)
	gaps := make([]time.Duration, len(caps))
	for h, c := range caps {
		if c > 0 && !math.IsInf(c, 1) {
			gaps[h] = time.Duration(float64(day) / c)
		}
	}
	in := signalInput{changes: changes, hosts: hosts, gaps: gaps, keys: keys, slot: max(time.Duration(float64(day)/o.Budget), 1), start: start, end: end}
	fetches := signalOracleFetches(in)
	var fresh, wsum float64
	count := 0
	for i := range changes {
		pt := sim.IntegratePage(changes[i], fetches[i], from, end, nil)
		fresh += w.weight(i) * pt.Freshness
		wsum += w.weight(i)
		count += pt.Fetches
	}
	window := (end - from).Seconds()
	if !(wsum > 0) || !(window > 0) {
		return SignalOracle{}, fmt.Errorf("bench: signal oracle: total importance %v over %v", wsum, end-from)
	}
	return SignalOracle{Freshness: fresh / wsum / window, FetchesPerDay: float64(count) / (window / day.Seconds())}, nil
}
