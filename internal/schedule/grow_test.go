package schedule

import (
	"reflect"
	"testing"
	"time"

	"github.com/freshcrawl/freshcrawl/internal/testutil"
)

// TestGrowPlansAlike loads the same URLs into a scheduler grown before
// (and part-way through) the load and into one never grown, and checks
// that both plan identically and hand out the same fetches in the same
// order, with the same due times, over a simulated hour of fetches.
func TestGrowPlansAlike(t *testing.T) {
	testutil.Slow(t)
	now := time.Unix(1_790_000_000, 0)
	urls := memoryURLs(3000, 0.5, now)
	build := func(grow bool) *Scheduler {
		// Each its own priors: a plan refits the ones it is given.
		est := NewEstimator(7*24*time.Hour, 1.0/86400)
		s := NewScheduler(SchedulerOptions{Budget: 1, HostRate: 1, Priors: est.Priors, HalfLife: 7 * 24 * time.Hour})
		if grow {
			s.Grow(1000)
		}
		for i, u := range urls {
			if grow && i == 500 {
				// A second hint on a non-empty scheduler rehashes the
				// URLs already in the index.
				s.Grow(len(urls) - i)
			}
			s.Add(u, now)
		}
		return s
	}
	plain, grown := build(false), build(true)
	if cap(grown.list) < len(urls) || cap(grown.rates) < len(urls) {
		t.Fatalf("grown scheduler's arrays hold %d and %d, want at least %d", cap(grown.list), cap(grown.rates), len(urls))
	}
	if (len(urls)+1)*4 > len(grown.front.urls.slots)*3 {
		t.Fatalf("grown index has %d slots, too few for %d URLs without a rehash", len(grown.front.urls.slots), len(urls))
	}
	p1, err := plain.Replan(now)
	if err != nil {
		t.Fatal(err)
	}
	p2, err := grown.Replan(now)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p1, p2) {
		t.Fatalf("plans differ: ungrown freshness %v, grown %v", p1.Freshness, p2.Freshness)
	}
	handed := 0
	for at := now; at.Before(now.Add(time.Hour)); at = at.Add(time.Second) {
		for {
			d1, ok1, next1 := plain.Next(at)
			d2, ok2, next2 := grown.Next(at)
			if ok1 != ok2 || d1 != d2 || !next1.Equal(next2) {
				t.Fatalf("at %v: ungrown hands out %+v (%v, next %v), grown %+v (%v, next %v)", at, d1, ok1, next1, d2, ok2, next2)
			}
			if !ok1 {
				break
			}
			handed++
			fb := Feedback{Start: at, End: at.Add(200 * time.Millisecond), OK: true, Changed: handed%3 == 0}
			plain.Done(d1.URL, fb)
			grown.Done(d2.URL, fb)
		}
	}
	if handed == 0 {
		t.Fatal("no fetch handed out in an hour")
	}
	p1, _ = plain.Replan(now.Add(time.Hour))
	p2, _ = grown.Replan(now.Add(time.Hour))
	if !reflect.DeepEqual(p1, p2) {
		t.Fatalf("re-plans differ: ungrown freshness %v, grown %v", p1.Freshness, p2.Freshness)
	}
}
