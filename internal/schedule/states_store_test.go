package schedule

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/freshcrawl/freshcrawl/internal/testutil/storetest"
	"github.com/freshcrawl/freshcrawl/store"
)

// dbSource spells URLs and reads their estimator states through a store,
// as the coordinator does; reads counts the state reads.
type dbSource struct {
	db    *store.DB
	reads *int
}

func (s dbSource) URLs(ids []uint64, fn func(i int, url string)) error {
	return s.db.URLsByID(ids, fn)
}

func (s dbSource) Estimates(ids []uint64, fn func(i int, est []byte)) error {
	*s.reads++
	return s.db.EstimatesByID(ids, fn)
}

// heldStates counts the packed estimator states s holds, and the slabs
// that have a reference array for them.
func heldStates(s *Scheduler) int {
	n := 0
	for _, id := range s.list {
		if s.front.ents.ref(s.front.entry(id)) != 0 {
			n++
		}
	}
	for _, a := range s.front.ents.arenas {
		if a.refs != nil {
			n++
		}
	}
	return n
}

// TestSchedulerReadsStatesFromStore: a scheduler over a real store holds
// no estimator state, reads the refit's sample and the re-summaries from
// the store in Solve, and plans exactly as one holding the states: the
// same priors, posteriors and intervals for the same URLs, after a restart
// (every URL re-summarised) and after folds that wrote new states to the
// store (a second refit).
func TestSchedulerReadsStatesFromStore(t *testing.T) {
	db := storetest.Open(t)
	now := time.Unix(1_800_000_000, 0)
	est := NewEstimator(7*24*time.Hour, 1.0/86400)
	rng := rand.New(rand.NewPCG(3, 16))
	pool := learntHistories(&est, rng, 64, now, 1.0/86400, "https://h.example.org/p", "h.example.org")
	const n = 400
	infos := make([]URLInfo, n)
	recs := make([]store.URL, n)
	urls := make([]string, n)
	for i := range infos {
		info := URLInfo{Weight: 1}
		if i%4 != 0 {
			info = pool[rng.IntN(len(pool))]
		}
		info.Host = fmt.Sprintf("127.0.0.%d:9", 1+i%20)
		info.URL = fmt.Sprintf("http://%s/t%d/page/%d", info.Host, i%3, i)
		infos[i], urls[i] = info, info.URL
		recs[i] = store.URL{URL: info.URL, Host: info.Host, Weight: 1, Mode: "freshness", Estimate: info.Estimate, Rate: info.Rate}
	}
	if _, err := db.Upsert(recs); err != nil {
		t.Fatal(err)
	}
	ids, err := db.URLIDs(urls)
	if err != nil {
		t.Fatal(err)
	}
	reads := 0
	opts := SchedulerOptions{Budget: float64(n) / (3 * 86400), HostRate: 1}
	held := NewScheduler(opts)
	opts.URLs = dbSource{db: db, reads: &reads}
	bySource := NewScheduler(opts)
	for i, info := range infos {
		info.ID = ids[i]
		held.Add(info, now)
		bySource.Add(info, now)
	}
	if h, b := heldStates(held), heldStates(bySource); h == 0 || b != 0 {
		t.Fatalf("packed states held: %d without a source, %d with one; want some and none", h, b)
	}
	same := func(when string) {
		t.Helper()
		if h, b := held.priors.load().revision(), bySource.priors.load().revision(); h != b || h == 0 {
			t.Errorf("%s: priors revision %d holding the states, %d reading them", when, h, b)
		}
		for i, u := range urls {
			hp, bp := held.posts[i].summary(), bySource.posts[i].summary()
			if hp != bp {
				t.Errorf("%s: %s: posterior %+v holding the states, %+v reading them", when, u, hp, bp)
			}
			if h, b := held.Interval(u), bySource.Interval(u); h != b || h <= 0 {
				t.Fatalf("%s: %s: interval %v holding the states, %v reading them", when, u, h, b)
			}
		}
	}
	if _, err := held.Replan(now); err != nil {
		t.Fatal(err)
	}
	if _, err := bySource.Replan(now); err != nil {
		t.Fatal(err)
	}
	if reads != 1 || bySource.UnreadStates() != 0 {
		t.Fatalf("the first plan read states %d times (%d unread), want once", reads, bySource.UnreadStates())
	}
	same("the first plan")

	// Folds: a new observation for half of the URLs, its state written to
	// the store before Done, as the coordinator's fold does.
	at := now.Add(6 * time.Hour)
	rev := held.priors.load().revision()
	for i, u := range urls {
		if i%2 != 0 {
			continue
		}
		var fb Feedback
		if _, err := db.Fold(fmt.Sprint("task-", i), func(tx *store.Tx) error {
			rec, _, err := tx.Get(u)
			if err != nil {
				return err
			}
			var st EstimateState
			if len(rec.Estimate) > 0 {
				if err := st.UnmarshalBinary(rec.Estimate); err != nil {
					return err
				}
			}
			fb = est.Learn(&st, rec.Rate, Observation{URL: u, Host: rec.Host, Start: at, End: at.Add(time.Second), OK: true, First: infos[i].LastOK.IsZero(), Prev: infos[i].LastOK, Changed: i%3 == 0})
			rec.Rate, rec.RateSE = fb.Rate, fb.RateSE
			rec.Estimate, _ = st.MarshalBinary()
			return tx.Put(rec)
		}); err != nil {
			t.Fatal(err)
		}
		held.Done(u, fb)
		bySource.Done(u, fb)
	}
	if b := heldStates(bySource); b != 0 {
		t.Fatalf("%d packed states held after the folds, want none", b)
	}
	if _, err := held.Replan(at); err != nil {
		t.Fatal(err)
	}
	if _, err := bySource.Replan(at); err != nil {
		t.Fatal(err)
	}
	if held.priors.load().revision() == rev {
		t.Fatal("the folds did not make the second plan refit the priors")
	}
	same("after the folds")
}

// TestUnreadableStatesLoseNothing: when the source cannot read the
// states, the plan goes on with the summaries it has (every URL keeps an
// interval), counts the failure, and the next plan that can read them
// refits and re-summarises every URL.
func TestUnreadableStatesLoseNothing(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	est := NewEstimator(7*24*time.Hour, 1.0/86400)
	rng := rand.New(rand.NewPCG(4, 16))
	pool := learntHistories(&est, rng, 16, now, 1.0/86400, "https://h.example.org/p", "h.example.org")
	src := &mapSource{urls: map[uint64]string{}, estimates: map[uint64][]byte{}}
	s := NewScheduler(SchedulerOptions{Budget: 1, HostRate: 1, URLs: src})
	const n = 100
	var urls []string
	for i := range n {
		u := pool[i%len(pool)]
		u.URL, u.Host, u.ID = fmt.Sprintf("http://h%d.example/p/%d", i%5, i), fmt.Sprintf("h%d.example", i%5), uint64(10+i)
		urls = append(urls, u.URL)
		src.urls[u.ID], src.estimates[u.ID] = u.URL, u.Estimate
		s.Add(u, now)
	}
	src.failing = true
	if _, err := s.Replan(now); err != nil {
		t.Fatalf("a plan whose states cannot be read: %v", err)
	}
	if s.UnreadStates() != 1 || s.priors.load().revision() != 0 {
		t.Fatalf("unread %d, priors revision %d: want 1 and no refit", s.UnreadStates(), s.priors.load().revision())
	}
	stale := 0
	for _, id := range s.list {
		if s.front.entry(id).is(flagStale) {
			stale++
		}
	}
	for _, u := range urls {
		if s.Interval(u) <= 0 {
			t.Fatalf("%s has no interval after the unread plan", u)
		}
	}
	if s.Len() != n || stale != n {
		t.Fatalf("after the unread plan: %d URLs, %d stale; want %d and %d", s.Len(), stale, n, n)
	}
	src.failing = false
	if _, err := s.Replan(now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if s.UnreadStates() != 1 || s.priors.load().revision() == 0 {
		t.Fatalf("unread %d, priors revision %d: want 1 and a refit", s.UnreadStates(), s.priors.load().revision())
	}
	for i, id := range s.list {
		if e := s.front.entry(id); e.is(flagStale) || s.Interval(urls[i]) <= 0 {
			t.Fatalf("%s: stale %v, interval %v after the plan that read the states", urls[i], e.is(flagStale), s.Interval(urls[i]))
		}
	}
}
