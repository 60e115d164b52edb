package coordinator

import (
	"fmt"
	"testing"
	"time"

	"github.com/freshcrawl/freshcrawl/internal/testutil"
	"github.com/freshcrawl/freshcrawl/store"
)

// The retention is applied while the coordinator runs: history written
// before it started is cut to the bounds, and so is history its own folds
// add.
func TestRetentionAppliedWhileRunning(t *testing.T) {
	e := newEnv(t, testSettings())
	const capURL = "http://127.0.0.1:9/feed"
	past := time.Now().Add(-time.Hour)
	if _, err := e.db.Upsert([]store.URL{{URL: capURL, Host: testHost, Weight: 1, Mode: "capture"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.Fold("history", func(tx *store.Tx) error {
		for i := range 50 {
			at := past.Add(time.Duration(i) * time.Second)
			if _, err := tx.AddChange(store.Change{URL: capURL, Host: testHost, At: at, Hash: fmt.Sprint(i)}); err != nil {
				return err
			}
			if _, err := tx.AddVersion(store.Version{URL: capURL, CapturedAt: at, Before: at, Hash: fmt.Sprint(i)}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	c := e.coordinator(t, func(o *Options) { o.Budget, o.HostRate, o.Retention.Versions, o.Retention.Changes = 5, 20, 3, 5 })
	addSeeds(t, c, testURL)
	run(t, c)

	changes := func() []store.Change {
		chs, err := e.db.Changes(0, 100)
		if err != nil {
			t.Fatal(err)
		}
		return chs
	}
	versions := func() []store.Version {
		vs, err := e.db.Versions(capURL)
		if err != nil {
			t.Fatal(err)
		}
		return vs
	}
	testutil.WaitFor(t, 20*time.Second, "the old history cut to its bounds", func() bool { return len(changes()) == 5 && len(versions()) == 3 })
	if chs := changes(); chs[0].Seq != 46 || chs[4].Seq != 50 {
		t.Fatalf("kept changes %d..%d, want the newest, 46..50", chs[0].Seq, chs[4].Seq)
	}
	if vs := versions(); vs[0].Seq != 48 || vs[2].Seq != 50 {
		t.Fatalf("kept versions %d..%d, want the newest, 48..50", vs[0].Seq, vs[2].Seq)
	}

	// New changes from the running crawl push the oldest out.
	var last string
	for i := range 6 {
		task, m := e.takeTask(t, 10*time.Second)
		_ = m.Ack()
		e.sendResult(t, ok(task, fmt.Sprintf("new-%d", i)))
		last = task.ID
		testutil.WaitFor(t, 10*time.Second, "the result folded", func() bool { return c.fetches() == int64(i+1) })
	}
	testutil.WaitFor(t, 20*time.Second, "the log cut again", func() bool {
		chs := changes()
		return len(chs) == 5 && chs[4].TaskID == last
	})
}
