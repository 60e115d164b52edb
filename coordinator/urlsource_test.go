package coordinator

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/freshcrawl/freshcrawl/internal/schedule"
	"github.com/freshcrawl/freshcrawl/internal/testutil"
	"github.com/freshcrawl/freshcrawl/proto"
)

// answer takes tasks from the stream and answers each with a result until
// done says it has seen enough; it returns the URLs of the tasks taken.
func (e *env) answer(t *testing.T, done func(seen map[string]int) bool) map[string]int {
	t.Helper()
	seen := map[string]int{}
	deadline := time.Now().Add(30 * time.Second)
	for !done(seen) {
		if time.Now().After(deadline) {
			t.Fatalf("tasks taken %v: not what was waited for", seen)
		}
		task, m := e.takeTask(t, 20*time.Second)
		seen[task.URL]++
		e.sendResult(t, ok(task, "h-"+task.ID))
		if err := m.Ack(); err != nil {
			t.Fatal(err)
		}
	}
	return seen
}

// TestScheduleSpellsURLsFromStore: the coordinator's schedule names URLs
// by their store ids and spells them through the store. Seeded URLs are
// dispatched under their URLs and their results folded into their
// records; a URL deleted and seeded again (a new id) is dispatched under
// its URL; a coordinator restarted over the store dispatches every stored
// URL under its own URL, and none deleted, and its plans read the
// estimator states from the store.
func TestScheduleSpellsURLsFromStore(t *testing.T) {
	e := newEnv(t, testSettings())
	var urls []string
	for i := range 6 {
		urls = append(urls, fmt.Sprintf("http://127.0.0.%d:9/page/%d", 10+i, i))
	}
	c1 := e.coordinator(t, func(o *Options) { o.Budget, o.HostRate = 50, 20 })
	addSeeds(t, c1, urls...)
	ids, err := e.db.URLIDs(urls)
	if err != nil || slices.Contains(ids, 0) {
		t.Fatalf("store ids %v, %v", ids, err)
	}
	stop1 := run(t, c1)
	seen := e.answer(t, func(seen map[string]int) bool { return len(seen) == len(urls) })
	for u := range seen {
		if !slices.Contains(urls, u) {
			t.Errorf("dispatched %q, not a seeded URL", u)
		}
	}
	testutil.WaitFor(t, 20*time.Second, "the results folded", func() bool { return c1.fetches() >= int64(len(urls)) })
	for _, u := range urls {
		if rec, err := e.db.Get(u); err != nil || rec.Fetches < 1 {
			t.Errorf("%s: %d fetches folded, %v", u, rec.Fetches, err)
		}
	}

	// Deleted and seeded again: a new id.
	if n, err := (console{c1}).Delete(context.Background(), urls[:1], false); err != nil || n != 1 {
		t.Fatalf("deleted %d, %v", n, err)
	}
	addSeeds(t, c1, urls[0])
	again, err := e.db.URLIDs(urls[:1])
	if err != nil || again[0] == 0 || again[0] == ids[0] {
		t.Fatalf("id of the re-seeded URL %v (was %d), %v", again, ids[0], err)
	}
	e.answer(t, func(seen map[string]int) bool { return seen[urls[0]] > 0 })
	var unspelled int
	c1.disp.Do(func(s *schedule.Scheduler) { unspelled = s.Unspelled() })
	if unspelled != 0 {
		t.Errorf("%d URLs could not be spelled", unspelled)
	}
	stop1()
	// No task of the first coordinator is left: every task after the
	// restart is the second's.
	st, err := e.js.Stream(context.Background(), proto.TaskStream)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Purge(context.Background()); err != nil {
		t.Fatal(err)
	}

	// The restart: one URL deleted from the store, one added, then a new
	// coordinator loads the store.
	if _, err := e.db.Delete(urls[5:], true, time.Now()); err != nil {
		t.Fatal(err)
	}
	kept := urls[:5]
	c2 := e.coordinator(t, func(o *Options) { o.Budget, o.HostRate = 50, 20 })
	extra := "http://127.0.0.30:9/new"
	addSeeds(t, c2, extra)
	kept = append(kept, extra)
	run(t, c2)
	// Some of the URLs are due at once (the new one), others when their
	// stored plan says: every one listed is spelled from its store id, and
	// every task is for a stored URL.
	testutil.WaitFor(t, 20*time.Second, "the store loaded", func() bool {
		n := 0
		c2.disp.Do(func(s *schedule.Scheduler) { n = s.Len() })
		return n == len(kept)
	})
	var listed []string
	c2.disp.Do(func(s *schedule.Scheduler) {
		for _, st := range []string{schedule.StateDue, schedule.StateScheduled, schedule.StateGivenUp} {
			listed = append(listed, s.URLsIn(st, time.Now())...)
		}
	})
	slices.Sort(listed)
	if want := slices.Sorted(slices.Values(kept)); !slices.Equal(listed, want) {
		t.Errorf("the restarted schedule lists %v, want %v", listed, want)
	}
	seen = e.answer(t, func(seen map[string]int) bool {
		n := 0
		for _, c := range seen {
			n += c
		}
		return seen[extra] > 0 && n >= 10
	})
	for u := range seen {
		if !slices.Contains(kept, u) {
			t.Errorf("dispatched %q, not a stored URL", u)
		}
	}
	var unread int
	c2.disp.Do(func(s *schedule.Scheduler) { unspelled, unread = s.Unspelled(), s.UnreadStates() })
	if unspelled != 0 {
		t.Errorf("%d URLs could not be spelled after the restart", unspelled)
	}
	// The restart's plans refit the priors and re-summarised the folded
	// URLs from the estimator states in the store.
	if unread != 0 {
		t.Errorf("%d plans could not read the estimator states from the store", unread)
	}
}
