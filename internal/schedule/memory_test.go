package schedule

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/freshcrawl/freshcrawl/estimate"
)

// memoryURLs are n URLs as `freshcrawl bench scale` restarts them: 60 to
// 100 bytes on 10 000 hosts, a share `fetched` of them (half, as the bench
// seeds them) fetched 2 to 21 times, with the estimator state, rate,
// interval, next due time and last fetch a fold leaves.
func memoryURLs(n int, fetched float64, now time.Time) []URLInfo {
	rng := rand.New(rand.NewPCG(1, 16))
	est := NewEstimator(7*24*time.Hour, 1.0/86400)
	// Learning is slow next to the rest: 1 024 fetch histories are
	// learnt once and shared out.
	pool := learntHistories(&est, rng, 1024, now, 1.0/86400, "https://h.example.org/p", "h.example.org")
	out := make([]URLInfo, n)
	for i := range out {
		host := fmt.Sprintf("h%04d.example.org", rng.IntN(10_000))
		u := fmt.Sprintf("https://%s/section-%d/item-%d", host, rng.IntN(100), i)
		if pad := 60 + rng.IntN(41) - len(u); pad > 0 {
			u += "?" + strings.Repeat("q", pad-1)
		}
		info := URLInfo{Weight: 1}
		if rng.Float64() < fetched {
			info = pool[rng.IntN(len(pool))]
		}
		info.URL, info.Host = u, host
		out[i] = info
	}
	return out
}

var (
	memoryURLCount = flag.Int("memory-urls", 1_000_000, "BenchmarkSchedulerMemory: URLs in the schedule")
	memoryFetched  = flag.Float64("memory-fetched", 0.5, "BenchmarkSchedulerMemory: share of the URLs fetched (1: a long-running crawl)")
	memoryProfile  = flag.String("memory-profile", "", "BenchmarkSchedulerMemory: write a heap profile of the loaded schedule to this file")
)

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkSchedulerMemory reports the live heap the schedule holds per
// URL (B/URL) after loading -memory-urls URLs (a million) and planning
// once, as a coordinator restart does (sized by Grow first, then each
// URL added). The URL strings are copied before the
// measurement starts so that they count, as they do when the store
// decodes them. Run it with -benchtime=1x.
//
// The source-N run is what a coordinator holds: the scheduler spells URLs
// through a URL source (SchedulerOptions.URLs), here one over the
// benchmark's own URLs by their index, whose strings are made before
// the measurement and not counted (a coordinator's source is its store,
// which holds nothing on the heap); each URL is added with its id.
func BenchmarkSchedulerMemory(b *testing.B) {
	for _, name := range []string{fmt.Sprint(*memoryURLCount), fmt.Sprint("source-", *memoryURLCount)} {
		n := *memoryURLCount
		b.Run(name, func(b *testing.B) {
			now := time.Unix(1_800_000_000, 0)
			infos := memoryURLs(n, *memoryFetched, now)
			var src URLSource
			if strings.HasPrefix(name, "source-") {
				src = sliceSource(infos)
				for i := range infos {
					infos[i].ID = uint64(i + 1)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				h0 := liveHeap()
				b.StartTimer()
				s := newTestScheduler(b, func(o *SchedulerOptions) { o.Budget, o.HostRate, o.URLs = float64(n)/(30*86400), 1, src })
				// As the restart does: the schedule sized for the
				// store's URL count before the load.
				s.Grow(n)
				for _, u := range infos {
					if src == nil {
						// A fresh copy of the URL, which the schedule keeps.
						u.URL = string([]byte(u.URL))
					}
					s.Add(u, now)
				}
				if _, err := s.Replan(now); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				h1 := liveHeap()
				if s.Len() != n {
					b.Fatalf("%d URLs in the schedule, want %d", s.Len(), n)
				}
				b.ReportMetric(float64(int64(h1)-int64(h0))/float64(n), "B/URL")
				if *memoryProfile != "" {
					writeHeapProfile(b, *memoryProfile)
				}
				runtime.KeepAlive(s)
				b.StartTimer()
			}
		})
	}
}

// sliceSource spells the URL of id i+1 as the URL of infos[i], and reads
// its estimator state there.
type sliceSource []URLInfo

func (s sliceSource) URLs(ids []uint64, fn func(i int, url string)) error {
	for i, id := range ids {
		if id >= 1 && id <= uint64(len(s)) {
			fn(i, s[id-1].URL)
		}
	}
	return nil
}

// Estimates reads the state of id i+1 from infos[i], as a store holds it.
func (s sliceSource) Estimates(ids []uint64, fn func(i int, est []byte)) error {
	for i, id := range ids {
		if id >= 1 && id <= uint64(len(s)) {
			fn(i, s[id-1].Estimate)
		}
	}
	return nil
}

// TestEntrySize keeps an entry, held once per URL in the slabs of
// entryStore, within 56 bytes: a slab has no size classes, so every byte
// counts.
func TestEntrySize(t *testing.T) {
	if n := unsafe.Sizeof(entry{}); n > 56 {
		t.Fatalf("an entry takes %d bytes, want at most 56", n)
	}
	// Numbers only: a slab with no pointer is never scanned by the
	// garbage collector.
	ty := reflect.TypeFor[entry]()
	for i := range ty.NumField() {
		switch f := ty.Field(i); f.Type.Kind() {
		case reflect.Int32, reflect.Int64, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		default:
			t.Fatalf("entry.%s is a %s: an entry holds numbers only", f.Name, f.Type)
		}
	}
}

// entriesOf is the entries of ids.
func entriesOf(s *Scheduler, ids []uint32) []*entry {
	out := make([]*entry, len(ids))
	for i, id := range ids {
		out[i] = s.front.entry(id)
	}
	return out
}

// writeHeapProfile writes a heap profile (in use after the last GC) to
// path.
func writeHeapProfile(b *testing.B, path string) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}

// TestPackedStateRoundTrips: an estimator state packed and unpacked is the
// state, for the zero state and the states of learnt histories at every
// step, and its packed form is smaller than the state. packState reads a
// state's bytes, which is all there is to it only while it holds no
// pointers: the test fails if a field that may hold one is added.
func TestPackedStateRoundTrips(t *testing.T) {
	var hasPointers func(reflect.Type) bool
	hasPointers = func(ty reflect.Type) bool {
		switch ty.Kind() {
		case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
			return false
		case reflect.Array:
			return hasPointers(ty.Elem())
		case reflect.Struct:
			for i := range ty.NumField() {
				if hasPointers(ty.Field(i).Type) {
					return true
				}
			}
			return false
		}
		return true
	}
	if hasPointers(reflect.TypeFor[estimate.State]()) {
		t.Fatal("estimate.State holds a field that may be a pointer: packState cannot pack it as bytes")
	}
	check := func(st estimate.State) {
		t.Helper()
		if got := unpackState(&packState(&st)[0]); got != st {
			t.Fatalf("state %+v unpacked as %+v", st, got)
		}
	}
	check(estimate.State{})
	rng := rand.New(rand.NewPCG(3, 5))
	d := DefaultSchedulerOptions()
	est := NewEstimator(d.HalfLife, d.PriorRate)
	now := time.Unix(1_800_000_000, 0)
	packed, states := 0, 0
	ents := &entryStore{}
	for range 50 {
		var st EstimateState
		iv := time.Duration(1+rng.Int64N(14*24)) * time.Hour
		at, rate := now, d.PriorRate
		var prev time.Time
		for range 2 + rng.IntN(30) {
			fb := est.Learn(&st, rate, Observation{URL: "http://h.example/p", Host: "h.example", Start: at, End: at.Add(time.Second), OK: true, First: prev.IsZero(), Prev: prev, Changed: rng.IntN(3) == 0, LastModified: at.Add(-time.Duration(rng.IntN(2)) * time.Hour)})
			check(fb.State)
			e := ents.alloc()
			ents.setState(e, fb.State)
			if ents.state(e) != fb.State || e.observed() != (fb.State.Observations() > 0) {
				t.Fatalf("entry state %+v (observed %v), want %+v", ents.state(e), e.observed(), fb.State)
			}
			packed += len(packState(&fb.State))
			states++
			rate, prev = fb.Rate, at
			at = at.Add(iv + time.Duration(rng.Int64N(int64(iv))))
		}
	}
	if packed >= states*stateSize {
		t.Fatalf("packed states take %d bytes on average, unpacked %d", packed/states, stateSize)
	}
	t.Logf("%d states packed into %.1f bytes on average (%d unpacked)", states, float64(packed)/float64(states), stateSize)
}

// TestStateArenaKeepsStates: states set, replaced (by longer, shorter
// and zero ones) and released at random over three slabs of entries
// read back as set, through the arenas' compactions; each arena's live
// bytes are its entries' packed states, and its dead bytes stay within
// a block or an eighth of the live ones.
func TestStateArenaKeepsStates(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 4))
	now := time.Unix(1_800_000_000, 0)
	est := NewEstimator(7*24*time.Hour, 1.0/86400)
	pool := learntHistories(&est, rng, 64, now, 1.0/86400, "https://h.example.org/p", "h.example.org")
	states := []estimate.State{{}}
	for _, u := range pool {
		var st EstimateState
		if len(u.Estimate) > 0 && st.UnmarshalBinary(u.Estimate) == nil {
			states = append(states, st.State)
		}
	}
	ents := &entryStore{}
	live := map[*entry]estimate.State{}
	var order []*entry
	compactions := 0
	for op := range 60_000 {
		switch {
		case len(order) < 2*entryChunk+100 || rng.IntN(10) < 6:
			var e *entry
			if len(order) < 2*entryChunk+100 || rng.IntN(4) == 0 {
				e = ents.alloc()
				order = append(order, e)
			} else {
				e = order[rng.IntN(len(order))]
			}
			st := states[rng.IntN(len(states))]
			dead := ents.arenas[e.id>>entryChunkBits].dead
			ents.setState(e, st)
			live[e] = st
			if ents.arenas[e.id>>entryChunkBits].dead < dead {
				compactions++
			}
		default:
			k := rng.IntN(len(order))
			e := order[k]
			ents.release(e)
			delete(live, e)
			order[k] = order[len(order)-1]
			order = order[:len(order)-1]
		}
		if op%5000 != 0 {
			continue
		}
		for e, st := range live {
			if ents.state(e) != st {
				t.Fatalf("op %d: entry %d has state %+v, want %+v", op, e.id, ents.state(e), st)
			}
		}
		for c, a := range ents.arenas {
			sum := 0
			for i := range ents.chunks[c] {
				if r := ents.ref(&ents.chunks[c][i]); r != 0 {
					sum += packedLen(a.at(r))
				}
			}
			if a.live != sum {
				t.Fatalf("op %d: slab %d counts %d live bytes, its states take %d", op, c, a.live, sum)
			}
			if a.dead > stateBlock && a.dead > a.live/8 {
				t.Fatalf("op %d: slab %d has %d dead bytes for %d live", op, c, a.dead, a.live)
			}
		}
	}
	if compactions == 0 {
		t.Fatal("no arena was ever compacted")
	}
}

// TestEntryIDsReused: the id of a removed URL is not given to a new URL
// while a plan made before the removal may still be applied (its list
// names the id), and is once a plan made after it has taken effect; a
// one-off request's id is free as soon as it is done. Throughout, every
// URL keeps its own entry.
func TestEntryIDsReused(t *testing.T) {
	s, now := randomScheduler(t, 300, 7, 3, DefaultSchedulerOptions().Policy)
	if _, err := s.Replan(now); err != nil {
		t.Fatal(err)
	}
	j := s.Snapshot(now) // made before the removal, applied after it
	var removed []string
	gone := map[uint32]bool{}
	for i := 0; i < len(s.list); i += 10 {
		e := s.front.entry(s.list[i])
		removed = append(removed, s.front.url(e))
		gone[e.id] = true
	}
	if n := s.Remove(removed); n != len(removed) {
		t.Fatalf("removed %d of %d", n, len(removed))
	}
	add := func(prefix string, k int) {
		t.Helper()
		for i := range k {
			u := fmt.Sprintf("http://new/%s%d", prefix, i)
			s.Add(URLInfo{URL: u, Host: "new", Weight: 1, Rate: 1.0 / 3600}, now)
			e, ok := s.front.urls.get(u)
			if !ok || s.front.url(e) != u {
				t.Fatalf("%s lost", u)
			}
			if gone[e.id] {
				t.Fatalf("%s took the id %d of a removed URL a pending plan names", u, e.id)
			}
		}
	}
	add("a", 50)
	if err := j.Solve(); err != nil {
		t.Fatal(err)
	}
	for !s.Apply(j, now, 64) {
	}
	checkInvariants(t, s)
	add("b", 50) // the plan applied was made before the removal
	if _, err := s.Replan(now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if len(s.front.ents.free) != len(removed) || len(s.retired) != 0 {
		t.Fatalf("%d ids free and %d retired after a plan made after the removal of %d URLs", len(s.front.ents.free), len(s.retired), len(removed))
	}
	next := s.front.ents.next
	for i := range len(removed) {
		s.Add(URLInfo{URL: fmt.Sprintf("http://new/c%d", i), Host: "new", Weight: 1, Rate: 1.0 / 3600}, now)
	}
	if s.front.ents.next != next || len(s.front.ents.free) != 0 {
		t.Fatalf("new URLs took fresh ids (next %d, was %d; %d free) instead of the removed URLs'", s.front.ents.next, next, len(s.front.ents.free))
	}
	if !s.Enqueue("http://new/once", "new", now) {
		t.Fatal("one-off request refused")
	}
	d, ok, _ := s.Next(now.Add(48 * time.Hour))
	for ok && d.URL != "http://new/once" {
		s.Done(d.URL, Feedback{Start: now, End: now, OK: true})
		d, ok, _ = s.Next(now.Add(48 * time.Hour))
	}
	if !ok {
		t.Fatal("the one-off request was never handed out")
	}
	s.Done(d.URL, Feedback{Start: now, End: now, OK: true})
	if len(s.front.ents.free) != 1 || s.Has("http://new/once") {
		t.Fatalf("one-off request done: %d ids free, still known %v", len(s.front.ents.free), s.Has("http://new/once"))
	}
	for _, u := range removed {
		if s.Has(u) {
			t.Fatalf("removed %s is known", u)
		}
	}
	checkInvariants(t, s)
}
