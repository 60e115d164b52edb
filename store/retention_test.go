package store

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// prune applies r to the whole store at now, step by step, as the
// coordinator does over successive ticks, and returns what it deleted.
func prune(db *DB, r Retention, now time.Time) (Pruned, error) {
	p := NewPruner(db, r)
	var total Pruned
	for {
		n, done, err := p.Step(now)
		total.Versions += n.Versions
		total.Changes += n.Changes
		if err != nil || done {
			return total, err
		}
	}
}

// history is what a test wrote: every URL's version capture times, oldest
// first, and every change-log entry's time.
type history struct {
	versions map[string][]time.Time
	changes  []time.Time
}

// writeHistory stores h in db in folds of a few hundred entries, as the
// coordinator would, the change log in time order.
func writeHistory(t *testing.T, db *DB, h history) {
	t.Helper()
	type op struct {
		url string
		at  time.Time
	}
	var ops []op
	for u, ts := range h.versions {
		for _, at := range ts {
			ops = append(ops, op{u, at})
		}
	}
	for _, at := range h.changes {
		ops = append(ops, op{"", at})
	}
	for i := 0; i < len(ops); i += 500 {
		batch := ops[i:min(i+500, len(ops))]
		if _, err := db.Fold(fmt.Sprintf("fold-%d", i), func(tx *Tx) error {
			for _, o := range batch {
				if o.url == "" {
					if _, err := tx.AddChange(Change{URL: "http://c/", At: o.at, Hash: "h"}); err != nil {
						return err
					}
					continue
				}
				if _, err := tx.AddVersion(Version{URL: o.url, CapturedAt: o.at, Before: o.at, Text: strings.Repeat("text ", 20)}); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// kept is what the store holds: every URL's version capture times and
// sequence numbers, and the change log's times.
func kept(t *testing.T, db *DB, urls []string) (map[string][]time.Time, map[string][]uint64, []time.Time) {
	t.Helper()
	vs, seqs := map[string][]time.Time{}, map[string][]uint64{}
	for _, u := range urls {
		list, err := db.Versions(u)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range list {
			vs[u] = append(vs[u], v.CapturedAt)
			seqs[u] = append(seqs[u], v.Seq)
		}
	}
	var chs []time.Time
	for after := uint64(0); ; {
		page, err := db.Changes(after, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, c := range page {
			chs = append(chs, c.At)
		}
		after = page[len(page)-1].Seq
	}
	return vs, seqs, chs
}

// want is the retention rule written plainly: per URL, the newest
// r.Versions versions, of which those older than the age bound go except
// the newest; the newest r.Changes entries of the log, of which those
// older than the age bound go.
func want(h history, r Retention, now time.Time) (map[string][]time.Time, []time.Time) {
	vs := map[string][]time.Time{}
	for u, ts := range h.versions {
		keep := ts
		if r.Versions > 0 && len(keep) > r.Versions {
			keep = keep[len(keep)-r.Versions:]
		}
		if r.VersionsAge > 0 {
			i := 0
			for i < len(keep)-1 && keep[i].Before(now.Add(-r.VersionsAge)) {
				i++
			}
			keep = keep[i:]
		}
		if len(keep) > 0 {
			vs[u] = slices.Clone(keep)
		}
	}
	chs := h.changes
	if r.Changes > 0 && len(chs) > r.Changes {
		chs = chs[len(chs)-r.Changes:]
	}
	if r.ChangesAge > 0 {
		i := 0
		for i < len(chs) && chs[i].Before(now.Add(-r.ChangesAge)) {
			i++
		}
		chs = chs[i:]
	}
	return vs, slices.Clone(chs)
}

func randomHistory(rng *rand.Rand, start time.Time, urls []string, maxVersions, changes int) history {
	h := history{versions: map[string][]time.Time{}}
	for _, u := range urls {
		at := start
		for range rng.IntN(maxVersions + 1) {
			at = at.Add(time.Duration(1+rng.IntN(120)) * time.Minute)
			h.versions[u] = append(h.versions[u], at)
		}
	}
	at := start
	for range changes {
		at = at.Add(time.Duration(rng.IntN(10)) * time.Minute)
		h.changes = append(h.changes, at)
	}
	return h
}

// Prune keeps exactly what the rule says, on random histories and random
// bounds, checked against the rule written plainly.
func TestPruneMatchesTheRule(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 2))
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for trial := range 40 {
		urls := make([]string, 1+rng.IntN(12))
		for i := range urls {
			// Prefixes of each other, so one URL's keys sort right next
			// to another's.
			urls[i] = "http://a.com/" + strings.Repeat("x", i)
		}
		h := randomHistory(rng, start, urls, 30, rng.IntN(300))
		now := start.Add(time.Duration(rng.IntN(48)) * time.Hour)
		r := Retention{}
		if rng.IntN(2) == 0 {
			r.Versions = 1 + rng.IntN(10)
		}
		if rng.IntN(2) == 0 {
			r.VersionsAge = time.Duration(1+rng.IntN(30)) * time.Hour
		}
		if rng.IntN(2) == 0 {
			r.Changes = 1 + rng.IntN(200)
		}
		if rng.IntN(2) == 0 {
			r.ChangesAge = time.Duration(1+rng.IntN(30)) * time.Hour
		}
		t.Run(fmt.Sprint(trial), func(t *testing.T) {
			db := open(t, t.TempDir())
			defer db.Close()
			writeHistory(t, db, h)
			if _, err := prune(db, r, now); err != nil {
				t.Fatal(err)
			}
			gotV, _, gotC := kept(t, db, urls)
			wantV, wantC := want(h, r, now)
			for _, u := range urls {
				if !slices.EqualFunc(gotV[u], wantV[u], time.Time.Equal) {
					t.Errorf("%+v: %s keeps %d versions %v, want %d %v", r, u, len(gotV[u]), gotV[u], len(wantV[u]), wantV[u])
				}
			}
			if !slices.EqualFunc(gotC, wantC, time.Time.Equal) {
				t.Errorf("%+v: change log keeps %d, want %d", r, len(gotC), len(wantC))
			}
			// The change log's URL index keeps a key for each entry kept,
			// and none for an entry deleted.
			if err := db.bolt.View(func(tx *bolt.Tx) error {
				if n := tx.Bucket(bucketIxChanges).Stats().KeyN; n != len(gotC) {
					t.Errorf("%+v: the change log's index has %d keys for %d entries", r, n, len(gotC))
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A step deletes at most its bound, so folds never wait long; successive
// steps work off a backlog, resuming inside one URL's versions, and the
// sequence of the versions goes on where it was.
func TestPrunerStepsAreBounded(t *testing.T) {
	db := open(t, t.TempDir())
	defer db.Close()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const n = 2*pruneDeletes + 100
	h := history{versions: map[string][]time.Time{}}
	for i := range n {
		at := start.Add(time.Duration(i) * time.Second)
		h.versions["http://big/"] = append(h.versions["http://big/"], at)
		h.changes = append(h.changes, at)
	}
	writeHistory(t, db, h)
	r := Retention{Versions: 10, Changes: 10}
	p := NewPruner(db, r)
	now := start.Add(time.Hour)
	var total Pruned
	for step := 0; ; step++ {
		got, done, err := p.Step(now)
		if err != nil {
			t.Fatal(err)
		}
		if got.Versions > pruneDeletes || got.Changes > pruneDeletes {
			t.Fatalf("step %d deleted %+v, more than %d of a kind", step, got, pruneDeletes)
		}
		total.Versions += got.Versions
		total.Changes += got.Changes
		if done {
			break
		}
		if step > 10 {
			t.Fatal("no end after 10 steps")
		}
	}
	if total != (Pruned{Versions: n - 10, Changes: n - 10}) {
		t.Fatalf("deleted %+v, want %d of each", total, n-10)
	}
	if got, _, _ := p.Step(now); got != (Pruned{}) {
		t.Fatalf("a step after the backlog deleted %+v", got)
	}
	_, seqs, _ := kept(t, db, []string{"http://big/"})
	if s := seqs["http://big/"]; len(s) != 10 || s[0] != n-9 || s[9] != n {
		t.Fatalf("kept seqs %v, want %d..%d", s, n-9, n)
	}
	if _, err := db.Fold("more", func(tx *Tx) error {
		seq, err := tx.AddVersion(Version{URL: "http://big/", CapturedAt: now})
		if err == nil && seq != n+1 {
			err = fmt.Errorf("next version seq %d, want %d", seq, n+1)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

// The age bound never takes a URL's newest version, however old.
func TestAgeKeepsTheNewestVersion(t *testing.T) {
	db := open(t, t.TempDir())
	defer db.Close()
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	h := history{versions: map[string][]time.Time{"http://quiet/": {old, old.Add(time.Hour)}}}
	writeHistory(t, db, h)
	pr, err := prune(db, Retention{VersionsAge: time.Hour}, old.AddDate(5, 0, 0))
	if err != nil || pr.Versions != 1 {
		t.Fatalf("pruned %+v, %v: want the older of two", pr, err)
	}
	vs, _, _ := kept(t, db, []string{"http://quiet/"})
	if got := vs["http://quiet/"]; len(got) != 1 || !got[0].Equal(old.Add(time.Hour)) {
		t.Fatalf("kept %v, want only the newest", got)
	}
}

func TestCapturedAtStopsBeforeTheText(t *testing.T) {
	at := time.Date(2026, 5, 4, 3, 2, 1, 0, time.UTC)
	raw, err := json.Marshal(Version{Seq: 7, URL: "http://a/", CapturedAt: at, Text: strings.Repeat("x", 1000)})
	if err != nil {
		t.Fatal(err)
	}
	got, err := capturedAt(raw)
	if err != nil || !got.Equal(at) {
		t.Fatalf("capturedAt = %v, %v", got, err)
	}
	// Cut inside the text: the time was read before it.
	if got, err := capturedAt(raw[:len(raw)-500]); err != nil || !got.Equal(at) {
		t.Fatalf("capturedAt of a cut record = %v, %v", got, err)
	}
	if _, err := capturedAt([]byte(`{"seq":1}`)); err == nil {
		t.Fatal("no captured_at: want an error")
	}
}

// PruneFolded deletes exactly the marks older than the cutoff, across
// several chunks of its scan, and keeps the rest.
func TestPruneFoldedInChunks(t *testing.T) {
	db := open(t, t.TempDir())
	defer db.Close()
	now := time.Now()
	const n = 2*foldScanChunk + 1000
	wantOld := 0
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketFolded)
		for i := range n {
			at := now
			if i%3 == 0 {
				at, wantOld = now.Add(-48*time.Hour), wantOld+1
			}
			if err := b.Put([]byte(fmt.Sprintf("task-%06d", i)), u64(uint64(at.UnixNano()))); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := db.PruneFolded(now.Add(-24 * time.Hour))
	if err != nil || got != wantOld {
		t.Fatalf("pruned %d (%v), want %d", got, err, wantOld)
	}
	for i := range n {
		ok, err := db.folded(fmt.Sprintf("task-%06d", i))
		if err != nil {
			t.Fatal(err)
		}
		if ok == (i%3 == 0) {
			t.Fatalf("task-%06d: marked %v after the prune", i, ok)
		}
	}
}

// Validate names each field out of range; zero bounds (keep all) are
// valid, a zero fold-mark age is not.
func TestRetentionValidate(t *testing.T) {
	if err := DefaultRetention().Validate(); err != nil {
		t.Fatalf("the defaults refused: %v", err)
	}
	for _, c := range []struct {
		field string
		set   func(*Retention)
	}{
		{"Versions", func(r *Retention) { r.Versions = -1 }},
		{"VersionsAge", func(r *Retention) { r.VersionsAge = -time.Hour }},
		{"Changes", func(r *Retention) { r.Changes = -1 }},
		{"ChangesAge", func(r *Retention) { r.ChangesAge = -time.Hour }},
		{"FoldMarksAge", func(r *Retention) { r.FoldMarksAge = 0 }},
		{"FoldMarksAge", func(r *Retention) { r.FoldMarksAge = time.Minute }},
	} {
		r := DefaultRetention()
		c.set(&r)
		if err := r.Validate(); err == nil || !strings.Contains(err.Error(), c.field+":") {
			t.Errorf("%s: Validate = %v, want an error naming the field", c.field, err)
		}
	}
}
