package schedule

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"
)

func TestCoRing(t *testing.T) {
	var r coRing
	for id := uint32(1); id <= 5; id++ {
		r.set(id, 7)
	}
	r.set(6, 9)
	holders := func(key uint64, skip uint32) []uint32 {
		var ids []uint32
		r.holders(key, skip, 10, func(id uint32) { ids = append(ids, id) })
		slices.Sort(ids)
		return ids
	}
	if got := holders(7, 3); !slices.Equal(got, []uint32{1, 2, 4, 5}) {
		t.Fatalf("holders of 7 but 3: %v", got)
	}
	if old := r.set(3, 9); old != 7 {
		t.Errorf("set returned %d, want the old key 7", old)
	}
	r.set(1, 0)
	if got := holders(7, 0); !slices.Equal(got, []uint32{2, 4, 5}) {
		t.Errorf("holders of 7 after moves: %v", got)
	}
	if got := holders(9, 0); !slices.Equal(got, []uint32{3, 6}) {
		t.Errorf("holders of 9: %v", got)
	}
	for _, id := range []uint32{2, 4, 5} {
		r.unlink(id)
	}
	if _, ok := r.head[7]; ok {
		t.Error("an empty key keeps its head")
	}
	if r.holders(9, 0, 1, func(uint32) { t.Error("called past the limit") }) {
		t.Error("two holders reported within a limit of one")
	}
}

// mirrorWeb is a web of pairs of mirrors: both pages of a pair change at
// the same moments (a Poisson process per pair) and serve the same
// content.
type mirrorWeb struct {
	changes [][]time.Duration // per pair, offsets from t0
}

func newMirrorWeb(pairs int, rate func(i int) float64, end time.Duration, seed uint64) mirrorWeb {
	rng := rand.New(rand.NewPCG(seed, 1))
	w := mirrorWeb{changes: make([][]time.Duration, pairs)}
	for i := range pairs {
		day := 24 * time.Hour
		for at := time.Duration(0); ; {
			at += time.Duration(rng.ExpFloat64() / rate(i) * float64(day))
			if at >= end {
				break
			}
			w.changes[i] = append(w.changes[i], at)
		}
	}
	return w
}

func (w mirrorWeb) version(pair int, off time.Duration) int {
	ch := w.changes[pair]
	return sort.Search(len(ch), func(k int) bool { return ch[k] > off })
}

// runMirrors crawls the mirror web at budget fetches a day (no
// Last-Modified) and returns the true freshness over the second half, the
// hints sent and how many fetches learnt a rate while hinted.
func runMirrors(t *testing.T, w mirrorWeb, budget float64, coChange bool, days int) (fresh float64, stats []CoChangeStats, hintedLearnt int) {
	t.Helper()
	day := 24 * time.Hour
	est := NewEstimator(90*day, 0.25/86400)
	pol, err := PolicyByName("optimal", "freshness")
	if err != nil {
		t.Fatal(err)
	}
	s := newTestScheduler(t, func(o *SchedulerOptions) {
		o.Budget, o.HostRate, o.Policy, o.Priors, o.CoChange = budget/86400, 100*budget/86400, pol, est.Priors, coChange
	})
	pairs := len(w.changes)
	type page struct {
		st      EstimateState
		rate    float64
		copyVer int
		lastOK  time.Time
	}
	pages := make([]page, 2*pairs)
	url := func(i int) string { return fmt.Sprintf("http://h%d/p/%d", i%4, i) }
	byURL := map[string]int{}
	for i := range pages {
		pages[i].copyVer = -1
		byURL[url(i)] = i
		s.Add(URLInfo{URL: url(i), Host: fmt.Sprintf("h%d", i%4), Weight: 1, NextDue: t0}, t0)
	}
	end := time.Duration(days) * day
	freshSum, samples := 0.0, 0
	for now := t0; now.Sub(t0) < end; {
		if s.ReplanDue(now) || now.Sub(t0)%day == 0 {
			if _, err := s.Replan(now); err != nil {
				t.Fatal(err)
			}
		}
		for {
			d, ok, _ := s.Next(now)
			if !ok {
				break
			}
			i := byURL[d.URL]
			p := &pages[i]
			ver := w.version(i/2, now.Sub(t0))
			hinted := s.Hinted(d.URL)
			o := Observation{URL: d.URL, Host: d.Host, Start: now, End: now.Add(time.Second), OK: true, First: p.copyVer < 0, Prev: p.lastOK,
				Changed: p.copyVer >= 0 && ver != p.copyVer, NotModified: p.copyVer == ver,
				Content: uint64(i/2)<<32 | uint64(ver) + 1, Hinted: hinted}
			fb := est.Learn(&p.st, p.rate, o)
			if hinted && fb.Learnt {
				hintedLearnt++
			}
			p.rate, p.copyVer, p.lastOK = fb.Rate, ver, now
			s.Done(d.URL, fb)
		}
		now = now.Add(time.Hour)
		if off := now.Sub(t0); off > end/2 && off%(6*time.Hour) == 0 {
			for i := range pages {
				if pages[i].copyVer == w.version(i/2, off) {
					freshSum++
				}
			}
			samples += len(pages)
		}
	}
	return freshSum / float64(samples), s.CoChange(), hintedLearnt
}

// TestCoChangeMirrors: on a web of mirrored pairs, a change seen at one
// mirror refetches the other, which is worth more than the fetch the plan
// would make at its margin: the true freshness rises, the hints are
// confirmed, and no hinted fetch is learnt as a draw of the change
// process.
func TestCoChangeMirrors(t *testing.T) {
	const pairs, days = 60, 900
	end := time.Duration(days) * 24 * time.Hour
	rates := func(i int) float64 { return []float64{1.0 / 7, 1.0 / 30, 1.0 / 90}[i%3] }
	w := newMirrorWeb(pairs, rates, end, 3)
	budget := float64(2*pairs) / 20 // each page once in 20 days
	off, statsOff, _ := runMirrors(t, w, budget, false, days)
	on, stats, learnt := runMirrors(t, w, budget, true, days)
	t.Logf("freshness without ties %.3f, with %.3f; hints %+v", off, on, stats)
	if statsOff != nil {
		t.Errorf("ties off, yet stats %+v", statsOff)
	}
	if on < off+0.015 {
		t.Errorf("freshness with co-change %.3f, without %.3f: want at least 0.015 more", on, off)
	}
	c := stats[tieContent]
	if c.Sent == 0 || float64(c.Confirmed) < 0.9*float64(c.Confirmed+c.Refuted) {
		t.Errorf("content hints %+v: want hints sent and nearly all confirmed", c)
	}
	if learnt != 0 {
		t.Errorf("%d hinted fetches learnt a rate", learnt)
	}
}

func TestCoGroups(t *testing.T) {
	var g coGroups
	members := func(id uint32) []uint32 {
		out := []uint32{id}
		g.members(id, func(m uint32) { out = append(out, m) })
		slices.Sort(out)
		return out
	}
	g.union(1, 2, tieContent)
	g.union(3, 4, tieDate)
	g.union(2, 3, tieContent)
	if got := members(4); !slices.Equal(got, []uint32{1, 2, 3, 4}) {
		t.Fatalf("group of 4: %v", got)
	}
	if r := g.rootOf(1); g.size[r] != 4 || g.rootOf(4) != r {
		t.Errorf("root %d size %d, 4's root %d", r, g.size[r], g.rootOf(4))
	}
	g.remove(g.rootOf(1)) // the root leaves: the others keep a group
	for _, id := range []uint32{1, 2, 3, 4} {
		if g.rootOf(id) == 0 {
			continue
		}
		if got := members(id); len(got) != 3 {
			t.Errorf("after the root left, %d's group %v", id, got)
		}
	}
	// A group never grows past maxCoGroup.
	var big coGroups
	for id := uint32(2); id <= maxCoGroup+10; id++ {
		big.union(1, id, tieContent)
	}
	if n := big.size[big.rootOf(1)]; n != maxCoGroup {
		t.Errorf("group of %d, want at most %d", n, maxCoGroup)
	}
	// The last two members: removing one leaves the other alone.
	var two coGroups
	two.union(5, 6, tieDate)
	two.remove(5)
	if two.rootOf(6) != 0 || len(two.size) != 0 {
		t.Errorf("a group of one is kept: root %d, sizes %v", two.rootOf(6), two.size)
	}
}
