package schedule

import (
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"testing"
	"time"
)

// mapSource is a URLSource over maps, as a store's id → URL bucket and
// its records' estimator states; failing makes every read fail, and a
// deleted id is not held.
type mapSource struct {
	urls      map[uint64]string
	estimates map[uint64][]byte // the estimator states, as a store holds them
	failing   bool
	reads     int
}

func (m *mapSource) URLs(ids []uint64, fn func(i int, url string)) error {
	m.reads++
	if m.failing {
		return errors.New("store unreadable")
	}
	for i, id := range ids {
		if u, ok := m.urls[id]; ok {
			fn(i, u)
		}
	}
	return nil
}

func (m *mapSource) Estimates(ids []uint64, fn func(i int, est []byte)) error {
	m.reads++
	if m.failing {
		return errors.New("store unreadable")
	}
	for i, id := range ids {
		if _, ok := m.urls[id]; ok {
			fn(i, m.estimates[id])
		}
	}
	return nil
}

// weakFingerprint has 4 values: among a few dozen URLs most collide.
func weakFingerprint(url string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(url))
	return h.Sum64() & 3 << 60 // the tag and slot bits both collide
}

// sourceScheds builds a scheduler holding URLs and one spelling them
// through a source with a weak fingerprint, both given the same n URLs,
// each on a host of its own (so all go out at once), all due at once.
func sourceScheds(t *testing.T, n int) (held, bySource *Scheduler, src *mapSource) {
	t.Helper()
	src = &mapSource{urls: map[uint64]string{}}
	held = newTestScheduler(t, func(o *SchedulerOptions) { o.Budget, o.HostRate = 10, 100 })
	bySource = newTestScheduler(t, func(o *SchedulerOptions) { o.Budget, o.HostRate, o.URLs = 10, 100, src })
	bySource.front.urls.src.fingerprintOf = weakFingerprint
	for i := range n {
		u := URLInfo{URL: fmt.Sprintf("http://h%d.example/page/%d", i%3, i), ID: uint64(1000 + 7*i), Host: fmt.Sprintf("h%d.example:%d", i%3, i), Weight: 1, Rate: 0.01}
		src.urls[u.ID] = u.URL
		if !held.Add(u, t0) || !bySource.Add(u, t0) {
			t.Fatalf("%s not added", u.URL)
		}
	}
	return held, bySource, src
}

// TestSourceSchedulerDispatchesAsHeld: a scheduler spelling its URLs
// through a source, with a fingerprint so weak that most URLs collide,
// knows every URL, dispatches the same URLs in the same order as one
// holding them, and folds each result into its own URL.
func TestSourceSchedulerDispatchesAsHeld(t *testing.T) {
	held, bySource, _ := sourceScheds(t, 40)
	if len(bySource.front.urls.src.collided) < 30 {
		t.Fatalf("%d URLs collided; the weak fingerprint should make most collide", len(bySource.front.urls.src.collided))
	}
	if bySource.Len() != 40 {
		t.Fatalf("Len %d, want 40", bySource.Len())
	}
	now := t0.Add(time.Hour)
	var out []string
	for step := 0; step < 100; step++ {
		for {
			a, okA, _ := held.Next(now)
			b, okB, _ := bySource.Next(now)
			if okA != okB || a != b {
				t.Fatalf("after %v: held %+v %v, by source %+v %v", out, a, okA, b, okB)
			}
			if !okA {
				break
			}
			out = append(out, b.URL)
		}
		now = now.Add(10 * time.Millisecond)
	}
	if len(out) != 40 {
		t.Fatalf("dispatched %d URLs, want 40", len(out))
	}
	// Each result lands on its own URL: the URLs not folded yet stay in
	// flight.
	for i, u := range out {
		bySource.Done(u, Feedback{Start: now, End: now, OK: true, Changed: true})
		for j, w := range out {
			v, ok := bySource.View(w, now)
			if !ok {
				t.Fatalf("%s unknown", w)
			}
			if v.InFlight != (j > i) {
				t.Fatalf("after Done(%s): %s in flight %v", u, w, v.InFlight)
			}
		}
	}
	want := held.URLsIn(StateScheduled, now)
	if got := bySource.URLsIn(StateScheduled, now); !slices.Equal(got, want) || len(got) != 40 {
		t.Errorf("URLsIn: %d URLs, want the held scheduler's %d", len(got), len(want))
	}
}

// TestSourceSchedulerRemoveReadd: a URL removed and added again with a
// new store id (as the store gives it) is dispatched under its URL, and a
// colliding URL removed leaves the others found.
func TestSourceSchedulerRemoveReadd(t *testing.T) {
	_, s, src := sourceScheds(t, 12)
	gone := []string{"http://h0.example/page/0", "http://h1.example/page/4", "http://h2.example/page/5"}
	if n := s.Remove(gone); n != 3 {
		t.Fatalf("removed %d, want 3", n)
	}
	// (Has of a removed URL is true here when a kept one has its weak
	// fingerprint: a lookup of a URL not held matches by fingerprint.)
	for i := range 12 {
		if u := fmt.Sprintf("http://h%d.example/page/%d", i%3, i); !slices.Contains(gone, u) && !s.Has(u) {
			t.Errorf("%s not known", u)
		}
	}
	if s.Len() != 9 {
		t.Errorf("Len %d, want 9", s.Len())
	}
	src.urls[5000] = gone[1]
	delete(src.urls, uint64(1000+7*4))
	if !s.Add(URLInfo{URL: gone[1], ID: 5000, Host: "h1.example:4", Weight: 1, Rate: 0.01}, t0) {
		t.Fatal("re-added URL not added")
	}
	if s.Add(URLInfo{URL: gone[1], ID: 5000, Host: "h1.example:4", Weight: 2}, t0) {
		t.Error("a known URL added twice")
	}
	got := drainOnce(s, t0.Add(time.Hour))
	if len(got) != 10 || got[gone[1]] != 1 || got[gone[0]] != 0 {
		t.Errorf("dispatched %v: want the 9 kept and the re-added one, once each", got)
	}
}

// TestSourceSchedulerUnreadableSource: a URL the source cannot spell is
// not dispatched, not lost, and goes out once the source reads again.
func TestSourceSchedulerUnreadableSource(t *testing.T) {
	_, s, src := sourceScheds(t, 6)
	src.failing = true
	now := t0.Add(time.Hour)
	if d, ok, wait := s.Next(now); ok || wait.IsZero() {
		t.Fatalf("dispatched %+v from an unreadable source (wait %v)", d, wait)
	}
	for range 50 {
		now = now.Add(10 * time.Millisecond)
		if d, ok, _ := s.Next(now); ok {
			t.Fatalf("dispatched %+v from an unreadable source", d)
		}
	}
	if s.Unspelled() != 6 || s.Len() != 6 {
		t.Fatalf("unspelled %d, Len %d: want 6 and 6", s.Unspelled(), s.Len())
	}
	src.failing = false
	if got := drainOnce(s, now); len(got) != 0 {
		t.Fatalf("retried before its time: %v", got)
	}
	got := drainOnce(s, now.Add(unspelledRetry))
	if len(got) != 6 {
		t.Errorf("dispatched %v after the source recovered, want the 6 URLs", got)
	}
}

// TestSourceSchedulerOneOffCollides: a one-off request (no store id, so
// held) whose fingerprint a stored URL has is queued apart from it, and a
// URL added without an id is told from a stored one by the source.
func TestSourceSchedulerOneOffCollides(t *testing.T) {
	_, s, src := sourceScheds(t, 4)
	probe := "http://h0.example/search?q=x"
	var stored string
	for i := range 4 {
		if u := fmt.Sprintf("http://h%d.example/page/%d", i%3, i); weakFingerprint(u) == weakFingerprint(probe) {
			stored = u
		}
	}
	if stored == "" {
		t.Skip("no stored URL shares the probe's fingerprint") // the fingerprint is fixed: does not happen
	}
	if !s.Enqueue(probe, "probe.example", t0) {
		t.Fatal("probe not queued")
	}
	if s.Enqueue(probe, "probe.example", t0) {
		t.Error("probe queued twice")
	}
	if s.Enqueue(stored, "probe.example", t0) {
		t.Error("a stored URL queued as a one-off request")
	}
	got := drainOnce(s, t0.Add(time.Hour))
	for u := range got {
		s.Done(u, Feedback{Start: t0.Add(time.Hour), End: t0.Add(time.Hour), OK: true})
	}
	if len(got) != 5 || got[probe] != 1 || got[stored] != 1 {
		t.Errorf("dispatched %v: want the 4 URLs and the probe once each", got)
	}
	if len(s.front.urls.src.held) != 0 || !s.Has(stored) || s.Len() != 4 {
		t.Errorf("after the probe's result: %d URLs held, %s known %v, Len %d", len(s.front.urls.src.held), stored, s.Has(stored), s.Len())
	}
	src.urls[9999] = probe
	if !s.Add(URLInfo{URL: probe, ID: 9999, Host: "probe.example", Weight: 1}, t0) || s.Len() != 5 {
		t.Errorf("the probe's URL, stored since, not added (Len %d)", s.Len())
	}
}

// drainOnce dispatches, over one second on a 10 ms clock from from, what
// is due, once each (no result), and counts each URL.
func drainOnce(s *Scheduler, from time.Time) map[string]int {
	got := map[string]int{}
	for now := from; now.Before(from.Add(time.Second)); now = now.Add(10 * time.Millisecond) {
		for {
			d, ok, _ := s.Next(now)
			if !ok {
				break
			}
			got[d.URL]++
		}
	}
	return got
}

// TestSourceIndexUnknownURL: with the real fingerprint a URL never added
// is not known, and every added one is.
func TestSourceIndexUnknownURL(t *testing.T) {
	src := &mapSource{urls: map[uint64]string{}}
	s := newTestScheduler(t, func(o *SchedulerOptions) { o.URLs = src })
	for i := range 1000 {
		u := fmt.Sprintf("http://h%d.example/%d", i%7, i)
		src.urls[uint64(i+1)] = u
		s.Add(URLInfo{URL: u, ID: uint64(i + 1), Host: fmt.Sprintf("h%d.example", i%7), Weight: 1}, t0)
	}
	for i := range 1000 {
		if !s.Has(fmt.Sprintf("http://h%d.example/%d", i%7, i)) || s.Has(fmt.Sprintf("http://h%d.example/%d", i%7, i+1000)) {
			t.Fatalf("URL %d: known wrong", i)
		}
	}
	if len(s.front.urls.src.collided) != 0 || len(s.front.urls.src.held) != 0 || src.reads != 0 {
		t.Errorf("collided %d, held %d, source reads %d: want none", len(s.front.urls.src.collided), len(s.front.urls.src.held), src.reads)
	}
}

// TestFracIDSpreads: the phase of store ids is spread over [0,1).
func TestFracIDSpreads(t *testing.T) {
	var bins [10]int
	for id := uint64(1); id <= 10000; id++ {
		f := fracID(id)
		if f < 0 || f >= 1 {
			t.Fatalf("fracID(%d) = %v", id, f)
		}
		bins[int(f*10)]++
	}
	for i, n := range bins {
		if n < 900 || n > 1100 {
			t.Errorf("bin %d holds %d of 10000", i, n)
		}
	}
}

// TestSourceSchedulerLearnsID: a URL added without a store id is held;
// added again with its id, it is no longer held and is spelled by the
// source.
func TestSourceSchedulerLearnsID(t *testing.T) {
	src := &mapSource{urls: map[uint64]string{7: "http://a.example/x"}}
	s := newTestScheduler(t, func(o *SchedulerOptions) { o.URLs = src })
	s.Add(URLInfo{URL: "http://a.example/x", Host: "a.example", Weight: 1}, t0)
	if len(s.front.urls.src.held) != 1 {
		t.Fatalf("%d URLs held, want 1", len(s.front.urls.src.held))
	}
	if s.Add(URLInfo{URL: "http://a.example/x", ID: 7, Host: "a.example", Weight: 2}, t0) {
		t.Error("added twice")
	}
	if len(s.front.urls.src.held) != 0 || s.Len() != 1 {
		t.Fatalf("%d URLs held, Len %d: want 0 and 1", len(s.front.urls.src.held), s.Len())
	}
	if got := drainOnce(s, t0.Add(time.Hour)); got["http://a.example/x"] != 1 || len(got) != 1 || src.reads == 0 {
		t.Errorf("dispatched %v (%d source reads)", got, src.reads)
	}
}

// TestSourceSchedulerWideIDs: store ids past 32 bits (and one whose low
// 32 bits are 0) are kept whole, and forgotten with their URL.
func TestSourceSchedulerWideIDs(t *testing.T) {
	ids := []uint64{1 << 32, 1<<32 + 5, 5, 1<<63 + 1}
	src := &mapSource{urls: map[uint64]string{}}
	s := newTestScheduler(t, func(o *SchedulerOptions) { o.URLs = src })
	for i, id := range ids {
		u := fmt.Sprintf("http://h%d.example/", i)
		src.urls[id] = u
		s.Add(URLInfo{URL: u, ID: id, Host: fmt.Sprintf("h%d.example", i), Weight: 1}, t0)
	}
	if len(s.front.urls.src.wide) != 3 {
		t.Errorf("%d ids kept wide, want 3", len(s.front.urls.src.wide))
	}
	if got := drainOnce(s, t0.Add(time.Hour)); len(got) != len(ids) {
		t.Errorf("dispatched %v, want the %d URLs", got, len(ids))
	}
	s.Remove([]string{"http://h0.example/", "http://h3.example/"})
	if len(s.front.urls.src.wide) != 1 {
		t.Errorf("%d ids kept wide after removing two, want 1", len(s.front.urls.src.wide))
	}
}
