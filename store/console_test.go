package store

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// randomStore fills db with n URLs on a few hosts with random counters,
// states and schedules, written through the same paths the coordinator
// uses (Upsert, then Tx.Put).
func randomStore(t *testing.T, db *DB, n int, rng *rand.Rand) {
	t.Helper()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var recs []URL
	for i := range n {
		host := fmt.Sprintf("h%d.example", rng.IntN(5))
		mode := "freshness"
		if rng.IntN(4) == 0 {
			mode = "capture"
		}
		recs = append(recs, URL{URL: fmt.Sprintf("http://%s/p/%04d", host, i), Host: host, Weight: float64(1 + rng.IntN(4)), Mode: mode})
	}
	if _, err := db.Upsert(recs); err != nil {
		t.Fatal(err)
	}
	// One transaction: the records go through Tx.Put, as a fold writes
	// them, without a commit each.
	if err := db.writeTx(func(tx *Tx) error {
		for _, r := range recs {
			u, _, _ := tx.Get(r.URL)
			u.Rate = rng.Float64()
			u.Changes = int64(rng.IntN(5))
			u.Errors = int64(rng.IntN(3))
			if rng.IntN(2) == 0 {
				u.NextDue = base.Add(time.Duration(rng.IntN(1000)) * time.Second)
			}
			if u.Changes > 0 {
				u.LastChange = base.Add(time.Duration(rng.IntN(1000)) * time.Second)
			}
			switch rng.IntN(6) {
			case 0:
				u.Paused = true
			case 1:
				u.Disallowed, u.LastErrKind = true, "robots"
			case 2:
				u.LastErrKind = "timeout"
			case 3:
				u.Gone, u.LastErrKind, u.ErrStreak = true, "not-found", 3
			}
			if err := tx.Put(u); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// bruteForce answers q by reading every record and sorting in memory.
func bruteForce(t *testing.T, db *DB, q Query) []string {
	t.Helper()
	var all []URL
	if err := db.ForEach(func(u URL) error { all = append(all, u); return nil }); err != nil {
		t.Fatal(err)
	}
	ids := map[string]uint64{}
	if err := db.bolt.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketURLs).ForEach(func(k, v []byte) error {
			ids[string(k)] = metaOf(v).id
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
	var out []URL
	for _, u := range all {
		st := RecordState(&u)
		switch {
		case q.Host != "" && u.Host != q.Host,
			q.Prefix != "" && !strings.HasPrefix(u.URL, q.Prefix),
			q.Search != "" && !strings.Contains(strings.ToLower(u.URL), strings.ToLower(q.Search)),
			q.Mode != "" && u.Mode != q.Mode,
			q.State == StateActive && st != "",
			q.State != "" && q.State != StateActive && st != q.State:
			continue
		}
		if q.Only != nil {
			if _, ok := slices.BinarySearch(q.Only, u.URL); !ok {
				continue
			}
		}
		if q.Match != nil && !q.Match(u.URL) {
			continue
		}
		out = append(out, u)
	}
	key := func(u URL) (uint64, string) {
		v := ixOf(&u)
		switch q.Sort {
		case "", SortURL:
			return 0, u.URL
		case SortHost:
			return 0, u.Host + "\x00" + u.URL
		}
		// Equal values: in the order the URLs were added (their ids).
		return v.sorts[slices.Index(sortOrder[:], q.Sort)], fmt.Sprintf("%020d", ids[u.URL])
	}
	sort.Slice(out, func(i, j int) bool {
		a, as := key(out[i])
		b, bs := key(out[j])
		if a != b {
			return a < b
		}
		return as < bs
	})
	urls := make([]string, len(out))
	for i, u := range out {
		urls[i] = u.URL
	}
	if q.Desc {
		slices.Reverse(urls)
	}
	return urls
}

// pageAll follows the cursors of q to the end.
func pageAll(t *testing.T, db *DB, q Query) ([]string, int) {
	t.Helper()
	var got []string
	total := -2
	for range 10000 {
		p, err := db.ListURLs(q)
		if err != nil {
			t.Fatalf("%+v: %v", q, err)
		}
		if len(p.URLs) > q.Limit {
			t.Fatalf("page of %d, limit %d", len(p.URLs), q.Limit)
		}
		if total == -2 {
			total = p.Total
		}
		for _, u := range p.URLs {
			got = append(got, u.URL)
		}
		if p.Next == "" {
			return got, total
		}
		q.After = p.Next
	}
	t.Fatal("paging never ended")
	return nil, 0
}

func TestListURLsMatchesBruteForce(t *testing.T) {
	db := open(t, t.TempDir())
	defer db.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	randomStore(t, db, 400, rng)
	var all []string
	_ = db.ForEach(func(u URL) error { all = append(all, u.URL); return nil })
	only := []string{}
	for _, u := range all {
		if rng.IntN(3) == 0 {
			only = append(only, u)
		}
	}
	pick := func(vs ...string) string { return vs[rng.IntN(len(vs))] }
	for trial := range 150 {
		q := Query{Limit: 3 + rng.IntN(60), Desc: rng.IntN(2) == 0, Sort: pick(Sorts...)}
		if rng.IntN(3) == 0 {
			q.Host = pick("h0.example", "h3.example", "nosuch")
		}
		if rng.IntN(4) == 0 {
			q.Prefix = pick("http://h1.example/p/0", "http://h2.example/", "http://h4")
		}
		if rng.IntN(4) == 0 {
			q.Search = pick("P/01", "h2", "7")
		}
		if rng.IntN(3) == 0 {
			q.Mode = pick("freshness", "capture")
		}
		if rng.IntN(3) == 0 {
			q.State = pick(StatePaused, StateGone, StateDisallowed, StateFailed, StateActive)
		}
		if rng.IntN(5) == 0 {
			q.Only = only
		}
		if rng.IntN(6) == 0 {
			q.Match = func(u string) bool { return strings.HasSuffix(u, "1") || strings.HasSuffix(u, "2") }
		}
		want := bruteForce(t, db, q)
		got, total := pageAll(t, db, q)
		if !slices.Equal(got, want) {
			n := len(q.Only)
			q.Only = nil
			t.Fatalf("trial %d: %+v (only: %d URLs)\n got %d URLs %v\nwant %d URLs %v", trial, q, n, len(got), head(got), len(want), head(want))
		}
		if total != -1 && total != len(want) {
			t.Errorf("trial %d: %+v: total %d, want %d", trial, q, total, len(want))
		}
	}
}

func head(s []string) []string { return s[:min(len(s), 8)] }

func TestListURLsErrors(t *testing.T) {
	db := open(t, t.TempDir())
	defer db.Close()
	if _, err := db.ListURLs(Query{Sort: "colour"}); err == nil || !strings.Contains(err.Error(), "unknown sort") {
		t.Errorf("unknown sort: %v", err)
	}
	if _, err := db.ListURLs(Query{State: "sleepy"}); err == nil || !strings.Contains(err.Error(), "unknown state") {
		t.Errorf("unknown state: %v", err)
	}
	if _, err := db.ListURLs(Query{After: "!!"}); err == nil || !strings.Contains(err.Error(), "bad cursor") {
		t.Errorf("bad cursor: %v", err)
	}
}

func TestIndexesBuiltForOldStore(t *testing.T) {
	dir := t.TempDir()
	db := open(t, dir)
	rng := rand.New(rand.NewPCG(5, 6))
	randomStore(t, db, 50, rng)
	if err := db.writeTx(func(tx *Tx) error {
		_, err := tx.AddChange(Change{URL: "http://h1.example/p/0001", At: time.Now()})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	want := bruteForce(t, db, Query{Sort: SortRate, Desc: true})
	// Make it look like a store written before the indexes existed.
	if err := db.bolt.Update(func(tx *bolt.Tx) error {
		for _, b := range indexBuckets {
			if err := tx.DeleteBucket(b); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketMeta).Delete(metaIndexed)
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	ro, err := OpenDir(dir, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ro.ListURLs(Query{Sort: SortRate}); !errors.Is(err, errNotIndexed) {
		t.Errorf("read-only store without indexes: %v, want errNotIndexed", err)
	}
	if _, err := ro.ListURLs(Query{}); err != nil {
		t.Errorf("plain listing needs no index: %v", err)
	}
	ro.Close()
	db = open(t, dir)
	defer db.Close()
	if p, _ := db.ListURLs(Query{}); p.Total != 50 {
		t.Errorf("total %d after re-index, want 50", p.Total)
	}
	got, _ := pageAll(t, db, Query{Sort: SortRate, Desc: true, Limit: 7})
	if !slices.Equal(got, want) {
		t.Errorf("after re-index: %v, want %v", head(got), head(want))
	}
	if ch, err := db.ChangesOf("http://h1.example/p/0001", 0, 10); err != nil || len(ch) != 1 {
		t.Errorf("change log by URL after re-index: %v %v", ch, err)
	}
}

func TestDeleteKeepsHistoryUnlessPurged(t *testing.T) {
	db := open(t, t.TempDir())
	defer db.Close()
	a, b := "http://a.example/", "http://b.example/"
	if _, err := db.Upsert([]URL{{URL: a, Host: "a.example", Weight: 1, Mode: "capture"}, {URL: b, Host: "b.example", Weight: 1}}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, u := range []string{a, b} {
		if _, err := db.Fold("f-"+u, func(tx *Tx) error {
			rec, _, _ := tx.Get(u)
			rec.Changes = 1
			if err := tx.SetContent(u, "text of "+u); err != nil {
				return err
			}
			if err := tx.SetRaw(u, Raw{ContentType: "text/html", Body: []byte("<p>" + u), Size: 3}); err != nil {
				return err
			}
			if err := tx.AddFetch(u, Fetch{At: now, Status: 200, Outcome: OutcomeChanged}); err != nil {
				return err
			}
			if _, err := tx.AddChange(Change{URL: u, At: now, Hash: "x"}); err != nil {
				return err
			}
			if _, err := tx.AddVersion(Version{URL: u, CapturedAt: now, Text: "v"}); err != nil {
				return err
			}
			return tx.Put(rec)
		}); err != nil {
			t.Fatal(err)
		}
	}
	gone, err := db.Delete([]string{a, "http://nosuch.example/"}, false, now)
	if err != nil || !slices.Equal(gone, []string{a}) {
		t.Fatalf("delete: %v %v", gone, err)
	}
	if _, err := db.Get(a); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleted URL still live: %v", err)
	}
	if d, err := db.Deleted(a); err != nil || d.DeletedAt.IsZero() || d.Changes != 1 {
		t.Errorf("tombstone %+v %v", d, err)
	}
	if p, _ := db.ListURLs(Query{}); p.Total != 1 {
		t.Errorf("total %d after deleting one of two URLs", p.Total)
	}
	if p, _ := db.ListURLs(Query{Host: "a.example"}); len(p.URLs) != 0 {
		t.Errorf("deleted URL still listed: %v", p.URLs)
	}
	if p, _ := db.ListURLs(Query{Sort: SortChanges}); len(p.URLs) != 1 || p.URLs[0].URL != b {
		t.Errorf("sort index still holds the deleted URL: %v", p.URLs)
	}
	text, _ := db.Content(a)
	raw, found, _ := db.Raw(a, true)
	fl, _ := db.FetchLog(a)
	ch, _ := db.ChangesOf(a, 0, 10)
	vs, _ := db.Versions(a)
	if text == "" || !found || string(raw.Body) != "<p>"+a || len(fl) != 1 || len(ch) != 1 || len(vs) != 1 {
		t.Errorf("history of a deleted URL: text %q raw %v fetches %d changes %d versions %d", text, found, len(fl), len(ch), len(vs))
	}
	// Purge a URL deleted before, and a live one.
	gone, err = db.Delete([]string{a, b}, true, now)
	if err != nil || len(gone) != 2 {
		t.Fatalf("purge: %v %v", gone, err)
	}
	for _, u := range []string{a, b} {
		text, _ := db.Content(u)
		_, found, _ := db.Raw(u, false)
		fl, _ := db.FetchLog(u)
		ch, _ := db.ChangesOf(u, 0, 10)
		vs, _ := db.Versions(u)
		_, derr := db.Deleted(u)
		if text != "" || found || len(fl) != 0 || len(ch) != 0 || len(vs) != 0 || !errors.Is(derr, ErrNotFound) {
			t.Errorf("%s after purge: text %q raw %v fetches %d changes %d versions %d tombstone %v", u, text, found, len(fl), len(ch), len(vs), derr)
		}
	}
	if all, _ := db.Changes(0, 100); len(all) != 0 {
		t.Errorf("change log after purge: %v", all)
	}
	// Seeding a deleted URL again brings it back with a fresh record and
	// no tombstone.
	if _, err := db.Delete([]string{}, false, now); err != nil {
		t.Fatal(err)
	}
	c := "http://c.example/"
	if _, err := db.Upsert([]URL{{URL: c, Host: "c.example", Weight: 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Delete([]string{c}, false, now); err != nil {
		t.Fatal(err)
	}
	if added, err := db.Upsert([]URL{{URL: c, Host: "c.example", Weight: 2}}); err != nil || added != 1 {
		t.Fatalf("re-seed: %d %v", added, err)
	}
	if _, err := db.Deleted(c); !errors.Is(err, ErrNotFound) {
		t.Errorf("tombstone after re-seed: %v", err)
	}
	if u, err := db.Get(c); err != nil || u.Weight != 2 {
		t.Errorf("re-seeded %+v %v", u, err)
	}
}

func TestPauseAndSetSeed(t *testing.T) {
	db := open(t, t.TempDir())
	defer db.Close()
	urls := []string{"http://a.example/1", "http://a.example/2", "http://b.example/1"}
	var recs []URL
	for _, u := range urls {
		recs = append(recs, URL{URL: u, Host: u[7:16], Weight: 1, Mode: "freshness"})
	}
	if _, err := db.Upsert(recs); err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	changed, err := db.SetPaused(urls[:2], true, at)
	if err != nil || len(changed) != 2 || !changed[0].Paused {
		t.Fatalf("pause: %v %v", changed, err)
	}
	if again, _ := db.SetPaused(urls[:1], true, at); len(again) != 0 {
		t.Errorf("pausing a paused URL changed %d", len(again))
	}
	p, _ := db.ListURLs(Query{State: StatePaused})
	if len(p.URLs) != 2 || p.Total != 2 {
		t.Errorf("paused listing %v total %d", p.URLs, p.Total)
	}
	if _, err := db.SetPaused(urls[1:2], false, at); err != nil {
		t.Fatal(err)
	}
	p, _ = db.ListURLs(Query{State: StateActive})
	if len(p.URLs) != 2 {
		t.Errorf("active after resume: %v", p.URLs)
	}
	w, mode, sel, keep := 3.5, "capture", "h1", true
	out, err := db.SetSeed(urls, SeedChange{Weight: &w, Mode: &mode, Selector: &sel, KeepRaw: &keep})
	if err != nil || len(out) != 3 {
		t.Fatalf("set: %v %v", out, err)
	}
	u, _ := db.Get(urls[2])
	if u.Weight != 3.5 || u.Mode != "capture" || u.Selector != "h1" || !u.KeepRaw {
		t.Errorf("set fields: %+v", u)
	}
	if p, _ := db.ListURLs(Query{Mode: "capture"}); len(p.URLs) != 3 {
		t.Errorf("mode index after set: %d", len(p.URLs))
	}
	if p, _ := db.ListURLs(Query{Mode: "freshness"}); len(p.URLs) != 0 {
		t.Errorf("old mode still indexed: %v", p.URLs)
	}
	// Turning keep_raw off drops the body kept so far.
	if err := db.writeTx(func(tx *Tx) error { return tx.SetRaw(urls[0], Raw{Body: []byte("x")}) }); err != nil {
		t.Fatal(err)
	}
	keep = false
	if _, err := db.SetSeed(urls[:1], SeedChange{KeepRaw: &keep}); err != nil {
		t.Fatal(err)
	}
	if _, found, _ := db.Raw(urls[0], false); found {
		t.Error("raw body kept after keep_raw was turned off")
	}
}

// A gone URL is listed under its state (before disallowed and failed,
// which it may also be), and comes back, its failures forgotten, when it
// is seeded again or resumed.
func TestGoneUntilSeededOrResumed(t *testing.T) {
	db := open(t, t.TempDir())
	defer db.Close()
	urls := []string{"http://a.example/1", "http://a.example/2", "http://a.example/3"}
	var recs []URL
	for _, u := range urls {
		recs = append(recs, URL{URL: u, Host: "a.example", Weight: 1, Mode: "freshness"})
	}
	if _, err := db.Upsert(recs); err != nil {
		t.Fatal(err)
	}
	since := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := db.writeTx(func(tx *Tx) error {
		for _, url := range urls[:2] {
			u, _, _ := tx.Get(url)
			u.Gone, u.LastErrKind, u.ErrStreak, u.NotFoundSince = true, "not-found", 5, since
			if err := tx.Put(u); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	listed := func(state string) []string {
		t.Helper()
		p, err := db.ListURLs(Query{State: state})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, u := range p.URLs {
			out = append(out, u.URL)
		}
		return out
	}
	if got := listed(StateGone); !slices.Equal(got, urls[:2]) {
		t.Fatalf("gone: %v, want %v", got, urls[:2])
	}
	if got := listed(StateFailed); len(got) != 0 {
		t.Errorf("failed: %v, want none (gone comes first)", got)
	}
	if _, err := db.Upsert(recs[:1]); err != nil {
		t.Fatal(err)
	}
	if _, err := db.SetPaused(urls[1:2], false, time.Now()); err != nil {
		t.Fatal(err)
	}
	if got := listed(StateGone); len(got) != 0 {
		t.Fatalf("gone after seeding and resuming: %v", got)
	}
	for _, url := range urls[:2] {
		u, err := db.Get(url)
		if err != nil || u.Gone || u.ErrStreak != 0 || !u.NotFoundSince.IsZero() {
			t.Errorf("%s: gone %v streak %d not found since %v (%v): want it back with its failures forgotten", url, u.Gone, u.ErrStreak, u.NotFoundSince, err)
		}
	}
}

func TestFetchLogKeepsTheLast(t *testing.T) {
	db := open(t, t.TempDir())
	defer db.Close()
	base := time.Unix(1_700_000_000, 0)
	for i := range fetchLogLen + 5 {
		if err := db.writeTx(func(tx *Tx) error {
			return tx.AddFetch("http://a/", Fetch{At: base.Add(time.Duration(i) * time.Second), Duration: time.Duration(i) * time.Millisecond, Status: 200 + i, Outcome: outcomeCodes[i%4], ErrKind: strings.Repeat("x", i%3), Bytes: int64(i * 100)})
		}); err != nil {
			t.Fatal(err)
		}
	}
	fl, err := db.FetchLog("http://a/")
	if err != nil || len(fl) != fetchLogLen {
		t.Fatalf("%d fetches, %v", len(fl), err)
	}
	first := fl[0]
	if !first.At.Equal(base.Add(5*time.Second)) || first.Status != 205 || first.Outcome != outcomeCodes[1] || first.ErrKind != "xx" || first.Bytes != 500 || first.Duration != 5*time.Millisecond {
		t.Errorf("oldest kept fetch %+v", first)
	}
	// A damaged history is an error, never a panic.
	good := encodeFetchLog(fl)
	for cut := 1; cut < len(good); cut++ {
		if out, err := decodeFetchLog(good[:cut]); err == nil && len(out) >= len(fl) {
			t.Fatalf("cut at %d decoded everything", cut)
		}
	}
	if _, err := decodeFetchLog([]byte{9, 1, 2}); err == nil {
		t.Error("unknown encoding accepted")
	}
}

// A fold appends to a history without decoding it (fetchLogTail): on
// every history, intact, cut short or with a byte changed, the tail is
// readable exactly when the history decodes, and then it is the history's
// last fetches.
func TestFetchLogTailAgreesWithDecode(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	base := time.Unix(1_700_000_000, 0)
	check := func(b []byte, n int) {
		t.Helper()
		tail, ok := fetchLogTail(b, n)
		all, err := decodeFetchLog(b)
		if ok != (err == nil) {
			t.Fatalf("history % x: tail readable %v, decode error %v", b, ok, err)
		}
		if !ok || len(b) == 0 {
			return
		}
		got, err := decodeFetchLog(append([]byte{1}, tail...))
		if err != nil {
			t.Fatalf("tail of % x does not decode: %v", b, err)
		}
		want := all[max(len(all)-n, 0):]
		if len(got) != len(want) || len(want) > 0 && !reflect.DeepEqual(got, want) {
			t.Fatalf("last %d of % x: got %+v, want %+v", n, b, got, want)
		}
	}
	for range 200 {
		fs := make([]Fetch, rng.IntN(fetchLogLen+3))
		for i := range fs {
			fs[i] = Fetch{At: base.Add(time.Duration(rng.Int64N(1e15))), Duration: time.Duration(rng.Int64N(1e10)), Status: rng.IntN(600),
				Outcome: outcomeCodes[rng.IntN(len(outcomeCodes))], ErrKind: strings.Repeat("e", rng.IntN(4)), Bytes: rng.Int64N(1 << 40)}
		}
		good := encodeFetchLog(fs)
		n := rng.IntN(fetchLogLen + 1)
		check(good, n)
		for cut := range len(good) {
			check(good[:cut], n)
		}
		bad := bytes.Clone(good)
		bad[rng.IntN(len(bad))] = byte(rng.IntN(256))
		check(bad, n)
	}
}

func TestRawEnvelope(t *testing.T) {
	r := Raw{ContentType: "text/html", Hash: "h", Size: 10, Truncated: true, Body: []byte("0123\x00\xff")}
	b, err := rawEnvelope(r)
	if err != nil {
		t.Fatal(err)
	}
	got, err := openRawEnvelope(b, true)
	if err != nil || got.ContentType != r.ContentType || !bytes.Equal(got.Body, r.Body) || !got.Truncated || got.Size != 10 {
		t.Errorf("round trip %+v %v", got, err)
	}
	for _, bad := range [][]byte{nil, {0, 0}, {0, 0, 0, 99, '{'}, {0, 0, 0, 1, '{'}} {
		if _, err := openRawEnvelope(bad, true); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestExportImportRoundTrip(t *testing.T) {
	src := open(t, t.TempDir())
	defer src.Close()
	rng := rand.New(rand.NewPCG(9, 9))
	randomStore(t, src, 30, rng)
	var all []URL
	_ = src.ForEach(func(u URL) error { all = append(all, u); return nil })
	if err := src.writeTx(func(tx *Tx) error {
		if err := tx.SetContent(all[0].URL, "latest text"); err != nil {
			return err
		}
		return tx.SetRaw(all[0].URL, Raw{ContentType: "text/html", Body: []byte("<b>raw</b>"), Size: 10})
	}); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	n, err := src.Export(&buf)
	if err != nil || n != 30 {
		t.Fatalf("exported %d, %v", n, err)
	}
	dst := open(t, t.TempDir())
	defer dst.Close()
	// One URL is already stored in the destination, with its own data.
	keep := all[1]
	keep.Weight, keep.Changes = 42, 99
	if _, err := dst.Upsert([]URL{keep}); err != nil {
		t.Fatal(err)
	}
	if err := dst.writeTx(func(tx *Tx) error { return tx.Put(keep) }); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	// A bad line in the middle, and one with an unknown field.
	lines = append(lines[:5], append([]string{`{"url": 3}`, `{"url":"http://x/","wieght":2}`}, lines[5:]...)...)
	var bad []string
	var batches int
	sum, err := dst.Import(strings.NewReader(strings.Join(lines, "\n")), "backup.jsonl", func(l *Line) error {
		if l.Weight <= 0 {
			return errors.New(`field "weight": must be > 0`)
		}
		return nil
	}, func(msg string) { bad = append(bad, msg) }, func(added []URL) { batches += len(added) })
	if err != nil {
		t.Fatal(err)
	}
	if sum.Good != 30 || sum.Added != 29 || sum.Kept != 1 || sum.Bad != 2 || batches != 29 {
		t.Errorf("summary %+v, %d added through onBatch", sum, batches)
	}
	if len(bad) != 2 || !strings.HasPrefix(bad[0], "backup.jsonl:6: bad JSON") || !strings.HasPrefix(bad[1], "backup.jsonl:7: bad JSON") || !strings.Contains(bad[1], "wieght") {
		t.Errorf("bad lines %q", bad)
	}
	got, _ := dst.Get(keep.URL)
	if got.Weight != 42 || got.Changes != 99 {
		t.Errorf("import overwrote a stored URL: %+v", got)
	}
	for _, u := range all[2:] {
		g, err := dst.Get(u.URL)
		if err != nil || g.Rate != u.Rate || g.Changes != u.Changes || g.Paused != u.Paused || !g.NextDue.Equal(u.NextDue) || g.LastErrKind != u.LastErrKind {
			t.Errorf("imported %+v, exported %+v (%v)", g, u, err)
		}
	}
	if text, _ := dst.Content(all[0].URL); text != "latest text" {
		t.Errorf("content %q", text)
	}
	if r, ok, _ := dst.Raw(all[0].URL, true); !ok || string(r.Body) != "<b>raw</b>" {
		t.Errorf("raw %+v %v", r, ok)
	}
	// The imported records are indexed like any other.
	want := bruteForce(t, dst, Query{Sort: SortRate})
	if got, _ := pageAll(t, dst, Query{Sort: SortRate, Limit: 9}); !slices.Equal(got, want) {
		t.Errorf("rate order after import %v, want %v", head(got), head(want))
	}
}

func TestChangesOfURL(t *testing.T) {
	db := open(t, t.TempDir())
	defer db.Close()
	if err := db.writeTx(func(tx *Tx) error {
		for i := range 30 {
			u := "http://a/"
			if i%3 == 0 {
				u = "http://b/"
			}
			if _, err := tx.AddChange(Change{URL: u, Hash: fmt.Sprint(i)}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	a, err := db.ChangesOf("http://a/", 0, 100)
	if err != nil || len(a) != 20 {
		t.Fatalf("%d changes of a, %v", len(a), err)
	}
	for i := 1; i < len(a); i++ {
		if a[i].Seq <= a[i-1].Seq || a[i].URL != "http://a/" {
			t.Fatalf("changes out of order or of another URL: %+v", a)
		}
	}
	after, _ := db.ChangesOf("http://a/", a[9].Seq, 5)
	if len(after) != 5 || after[0].Seq != a[10].Seq {
		t.Errorf("after %d: %+v", a[9].Seq, after)
	}
	last, _ := db.LastChangesOf("http://a/", 3)
	if len(last) != 3 || last[0].Seq != a[19].Seq || last[2].Seq != a[17].Seq {
		t.Errorf("newest three: %+v", last)
	}
	if none, _ := db.ChangesOf("http://a", 0, 10); len(none) != 0 {
		t.Errorf("a URL prefix matched another URL's changes: %v", none)
	}
}

// writeTx runs fn in one read-write transaction, as a fold's writes run,
// without marking a task folded.
func (db *DB) writeTx(fn func(*Tx) error) error {
	return db.bolt.Update(func(tx *bolt.Tx) error { return fn(&Tx{tx: tx}) })
}
