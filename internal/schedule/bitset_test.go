package schedule

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestBitsetMatchesBools: a bitset extended, set, cleared, truncated and
// picked from at random reads as a []bool doing the same does, and never
// holds a bit past its last element.
func TestBitsetMatchesBools(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 7))
	var b bitset
	var want []bool
	check := func(op int) {
		t.Helper()
		if len(b) != bitWords(len(want)) {
			t.Fatalf("op %d: %d words for %d elements", op, len(b), len(want))
		}
		for i, v := range want {
			if b.has(i) != v {
				t.Fatalf("op %d: element %d is %v, want %v", op, i, b.has(i), v)
			}
		}
		for i := len(want); i < len(b)*64; i++ {
			if b.has(i) {
				t.Fatalf("op %d: bit %d set past the %d elements", op, i, len(want))
			}
		}
	}
	for op := range 3000 {
		switch r := rng.IntN(10); {
		case r < 4:
			n := len(want) + 1 + rng.IntN(100)
			b = b.extend(n)
			for len(want) < n {
				want = append(want, false)
			}
		case r < 8 && len(want) > 0:
			i, v := rng.IntN(len(want)), rng.IntN(2) == 0
			b.set(i, v)
			want[i] = v
		case r == 8 && len(want) > 0:
			n := rng.IntN(len(want) + 1)
			b, want = b.truncate(n), want[:n]
		case len(want) > 0:
			keep := make([]int, rng.IntN(len(want)+1))
			for k := range keep {
				keep[k] = rng.IntN(len(want))
			}
			p := b.pick(keep)
			for k, i := range keep {
				if p.has(k) != want[i] {
					t.Fatalf("op %d: picked element %d (of %d) is %v, want %v", op, k, i, p.has(k), want[i])
				}
			}
		}
		check(op)
	}
	var none bitset
	if none.has(0) || none.has(1000) {
		t.Fatal("a nil bitset holds an element")
	}
}

// TestFlagBitsFollowURLs: the blocked, probing and dated bits follow their
// URLs through Pause, Resume, robots.txt's disallow and allow, Remove
// (which moves the elements after a removed one down) and new URLs added
// after it, and a snapshot reads what the scheduler holds.
func TestFlagBitsFollowURLs(t *testing.T) {
	s, now := randomScheduler(t, 300, 7, 5, DefaultSchedulerOptions().Policy)
	rng := rand.New(rand.NewPCG(5, 16))
	urls := make([]string, len(s.list))
	for i, e := range entriesOf(s, s.list) {
		urls[i] = s.front.url(e)
	}
	// What each URL's bits must read, by URL: dated and probing are set
	// directly (Done and Apply set them from a fetch and a plan).
	dated, probing := map[string]bool{}, map[string]bool{}
	for i, u := range urls {
		dated[u], probing[u] = rng.IntN(3) == 0, rng.IntN(4) == 0
		s.dated.set(i, dated[u])
		s.probing.set(i, probing[u])
	}
	check := func(step string) {
		t.Helper()
		checkInvariants(t, s)
		j := s.Snapshot(now)
		for i, e := range entriesOf(s, s.list) {
			u := s.front.url(e)
			off := e.is(flagDisallowed) || e.is(flagPaused)
			if s.blocked.has(i) != off || j.blocked.has(i) != off {
				t.Fatalf("%s: %s blocked %v (snapshot %v), paused %v disallowed %v", step, u, s.blocked.has(i), j.blocked.has(i), e.is(flagPaused), e.is(flagDisallowed))
			}
			if s.dated.has(i) != dated[u] || j.dated.has(i) != dated[u] {
				t.Fatalf("%s: %s dated %v (snapshot %v), want %v", step, u, s.dated.has(i), j.dated.has(i), dated[u])
			}
			if s.probing.has(i) != probing[u] || j.probing.has(i) != probing[u] {
				t.Fatalf("%s: %s probing %v (snapshot %v), want %v", step, u, s.probing.has(i), j.probing.has(i), probing[u])
			}
			if off && j.in.Weights[i] != 0 {
				t.Fatalf("%s: %s blocked with weight %v in the plan", step, u, j.in.Weights[i])
			}
		}
	}
	check("loaded")
	var paused, removed []string
	for i, u := range urls {
		switch i % 7 {
		case 1, 4:
			paused = append(paused, u)
		case 3:
			removed = append(removed, u)
		}
	}
	if n := s.Pause(paused); n != len(paused) {
		t.Fatalf("paused %d of %d", n, len(paused))
	}
	check("paused")
	for _, u := range urls[:40] {
		s.Done(u, Feedback{Start: now, End: now, Disallowed: true})
	}
	if s.Disallowed() == 0 {
		t.Fatal("no URL disallowed")
	}
	check("disallowed")
	if n := s.Remove(removed); n != len(removed) {
		t.Fatalf("removed %d of %d", n, len(removed))
	}
	check("removed")
	if n := s.Resume(paused[:len(paused)/2], now); n != len(paused)/2 {
		t.Fatalf("resumed %d of %d", n, len(paused)/2)
	}
	for _, u := range urls[:20] {
		s.Done(u, Feedback{Start: now, End: now, OK: true})
	}
	check("resumed and allowed")
	for i := range 70 {
		u := "http://new.example/" + string(rune('a'+i%26)) + time.Duration(i).String()
		s.Add(URLInfo{URL: u, Host: "new.example", Weight: 1, Rate: 1.0 / 3600, Paused: i%3 == 0}, now)
	}
	check("added")
}
