package schedule

import (
	"math/rand/v2"
	"sort"
	"testing"
	"time"
)

// TestCaptureLearnsPhases drives the real Scheduler on a virtual clock
// against a source that updates at 5 s and 15 s (±1 s) past every minute,
// with 2 polls a minute (Ashish, Kulkarni & Wang's example, scaled): while it learns it
// polls uniformly and captures about half the versions; once it has learnt
// the phases it captures nearly all of them.
func TestCaptureLearnsPhases(t *testing.T) {
	const T = 60.0
	rng := rand.New(rand.NewPCG(1, 2))
	base := time.Unix(1_700_000_040, 0) // a multiple of 60 s
	var updates []time.Time
	for k := 0; k < 400; k++ {
		for _, ph := range []float64{5, 15} {
			at := float64(k)*T + ph + (rng.Float64()*2 - 1)
			updates = append(updates, base.Add(time.Duration(at*float64(time.Second))))
		}
	}
	sort.Slice(updates, func(i, j int) bool { return updates[i].Before(updates[j]) })

	s := NewScheduler(SchedulerOptions{Budget: 10, HostRate: 10})
	s.Add(URLInfo{URL: "http://h/feed", Host: "h", Weight: 1, Capture: true, Period: time.Minute, Polls: 2, Rate: 2.0 / 60}, base)

	versionAt := func(at time.Time) int {
		return sort.Search(len(updates), func(i int) bool { return updates[i].After(at) })
	}
	captured := map[int]bool{}
	var lastPoll time.Time
	lastVersion := -1
	now := base
	end := base.Add(400 * time.Minute)
	learnedAt := time.Time{}
	polls := 0
	for now.Before(end) {
		d, ok, next := s.Next(now)
		if !ok {
			now = next
			continue
		}
		polls++
		v := versionAt(now)
		captured[v] = true
		if v != lastVersion && lastVersion >= 0 && v > 0 {
			lm := updates[v-1].Truncate(time.Second)
			s.observeCapture(d.URL, lastPoll, earliest(lm.Add(time.Second), now), true)
		}
		s.Done(d.URL, Feedback{Start: now, End: now, OK: true, Changed: v != lastVersion})
		lastPoll, lastVersion = now, v
		if learnedAt.IsZero() && !s.CaptureStatus(1)[0].Learning {
			learnedAt = now
		}
	}
	if learnedAt.IsZero() {
		t.Fatal("never learnt the phases")
	}
	recall := func(from, to time.Time) (float64, int) {
		n, c := 0, 0
		for i, u := range updates {
			if u.After(from) && u.Before(to) {
				n++
				if captured[i+1] {
					c++
				}
			}
		}
		return float64(c) / float64(n), n
	}
	before, nb := recall(base, learnedAt)
	after, na := recall(learnedAt.Add(2*time.Minute), end.Add(-2*time.Minute))
	st := s.CaptureStatus(1)[0]
	t.Logf("learnt after %s (%d updates): recall while learning %.3f, after %.3f (%d updates); phases %v, expected %.3f, polls %d",
		learnedAt.Sub(base), nb, before, after, na, st.Phases, st.ExpectedRecall, polls)
	if after < 0.9 {
		t.Errorf("recall after learning %.3f < 0.9", after)
	}
	if before > 0.7 {
		t.Errorf("recall while polling uniformly %.3f; expected about 0.5", before)
	}
	if got := float64(polls) / 400; got < 1.9 || got > 2.2 {
		t.Errorf("%.2f polls a period, want 2", got)
	}
}
