package schedule_test

import (
	"fmt"
	"hash/fnv"
	"testing"
	"time"

	"github.com/freshcrawl/freshcrawl/internal/schedule"
	"github.com/freshcrawl/freshcrawl/internal/testutil/storetest"
	"github.com/freshcrawl/freshcrawl/store"
)

// storeSource spells URLs and reads their estimator states through a
// store, as the coordinator does.
type storeSource struct{ db *store.DB }

func (s storeSource) URLs(ids []uint64, fn func(i int, url string)) error {
	return s.db.URLsByID(ids, fn)
}

func (s storeSource) Estimates(ids []uint64, fn func(i int, est []byte)) error {
	return s.db.EstimatesByID(ids, fn)
}

// TestSchedulerOverStoreWithCollisions: a scheduler that spells its URLs
// through a real store, with a fingerprint of 8 values (nearly every URL
// collides), dispatches every stored URL once under its own URL and folds
// each result into it; URLs removed and stored again (new ids) go out
// again under their URLs; a URL deleted from the store behind the
// scheduler's back is put back, not lost, and the others go out.
func TestSchedulerOverStoreWithCollisions(t *testing.T) {
	db := storetest.Open(t)
	const n = 200
	var urls []string
	var recs []store.URL
	for i := range n {
		u := fmt.Sprintf("http://127.0.0.%d:9/page/%d", 1+i%50, i)
		urls = append(urls, u)
		recs = append(recs, store.URL{URL: u, Host: fmt.Sprintf("127.0.0.%d:9", 1+i%50), Weight: 1, Mode: "freshness"})
	}
	if _, err := db.Upsert(recs); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := schedule.NewScheduler(schedule.SchedulerOptions{Budget: 10, HostRate: 100, URLs: storeSource{db}})
	schedule.SetFingerprint(s, func(u string) uint64 {
		h := fnv.New64a()
		h.Write([]byte(u))
		return h.Sum64() & 7 << 57
	})
	for _, r := range recs {
		s.Add(schedule.URLInfo{URL: r.URL, ID: idOf(t, db, r.URL), Host: r.Host, Weight: 1}, t0)
	}
	if s.Len() != n {
		t.Fatalf("Len %d, want %d", s.Len(), n)
	}
	// One pass: every URL once, each result folded into its own URL (it
	// leaves flight, and the fold counts it).
	now := t0.Add(time.Minute)
	got := drainWithDone(t, s, now)
	if len(got) != n {
		t.Fatalf("dispatched %d distinct URLs, want %d", len(got), n)
	}
	for _, u := range urls {
		if got[u] != 1 {
			t.Errorf("%s dispatched %d times in the first pass", u, got[u])
		}
	}

	// Removed from the schedule and the store, then stored again: new ids.
	gone := urls[:20]
	s.Remove(gone)
	if _, err := db.Delete(gone, true, now); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Upsert(recs[:20]); err != nil {
		t.Fatal(err)
	}
	for i, u := range gone {
		s.Add(schedule.URLInfo{URL: u, ID: idOf(t, db, u), Host: recs[i].Host, Weight: 1}, now)
	}
	if s.Len() != n {
		t.Fatalf("Len %d after re-adding, want %d", s.Len(), n)
	}
	// Deleted from the store only, before its first fetch: the scheduler
	// cannot spell it.
	lost := "http://127.0.0.60:9/lost"
	if _, err := db.Upsert([]store.URL{{URL: lost, Host: "127.0.0.60:9", Weight: 1, Mode: "freshness"}}); err != nil {
		t.Fatal(err)
	}
	s.Add(schedule.URLInfo{URL: lost, ID: idOf(t, db, lost), Host: "127.0.0.60:9", Weight: 1}, now)
	if _, err := db.Delete([]string{lost}, true, now); err != nil {
		t.Fatal(err)
	}
	later := now.Add(time.Second)
	again := drainWithDone(t, s, later)
	for _, u := range gone {
		if again[u] != 1 {
			t.Errorf("re-added %s dispatched %d times", u, again[u])
		}
	}
	if again[lost] != 0 || s.Unspelled() == 0 || !s.Has(lost) {
		t.Errorf("a URL the store lost: dispatched %d, unspelled %d, still scheduled %v", again[lost], s.Unspelled(), s.Has(lost))
	}
}

func idOf(t *testing.T, db *store.DB, url string) uint64 {
	t.Helper()
	ids, err := db.URLIDs([]string{url})
	if err != nil || ids[0] == 0 {
		t.Fatalf("id of %s: %v %v", url, ids, err)
	}
	return ids[0]
}

// drainWithDone dispatches what is due over 300 ms on a 10 ms clock from
// from, answering each at once, and checks each answer takes its URL out
// of flight; it counts the URLs.
func drainWithDone(t *testing.T, s *schedule.Scheduler, from time.Time) map[string]int {
	t.Helper()
	got := map[string]int{}
	for now := from; now.Before(from.Add(300 * time.Millisecond)); now = now.Add(10 * time.Millisecond) {
		var out []string
		for {
			d, ok, _ := s.Next(now)
			if !ok {
				break
			}
			out = append(out, d.URL)
		}
		for i, u := range out {
			got[u]++
			s.Done(u, schedule.Feedback{Start: now, End: now, OK: true, Changed: true})
			for _, w := range out[i+1:] {
				if v, ok := s.View(w, now); !ok || !v.InFlight {
					t.Fatalf("the result of %s took %s out of flight", u, w)
				}
			}
			if v, ok := s.View(u, now); !ok || v.InFlight {
				t.Fatalf("%s still in flight after its result", u)
			}
		}
	}
	return got
}
