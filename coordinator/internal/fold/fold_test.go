package fold

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/freshcrawl/freshcrawl/internal/schedule"
	"github.com/freshcrawl/freshcrawl/internal/source"
	"github.com/freshcrawl/freshcrawl/internal/testutil"
	"github.com/freshcrawl/freshcrawl/internal/testutil/storetest"
	"github.com/freshcrawl/freshcrawl/proto"
	"github.com/freshcrawl/freshcrawl/store"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func newFolder(t *testing.T, recs ...store.URL) (*Folder, *store.DB) {
	t.Helper()
	db := storetest.Open(t)
	if len(recs) > 0 {
		if _, err := db.Upsert(recs); err != nil {
			t.Fatal(err)
		}
	}
	est := schedule.NewEstimator(90*24*time.Hour, 0.25/86400)
	f, err := New(db, est, DefaultOptions(), testutil.QuietLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	return f, db
}

func result(id, url string, at time.Time, hash string) proto.Result {
	return proto.Result{V: proto.Version, TaskID: id, Kind: proto.KindFetch, URL: url, Host: "a.example", StartedAt: at, FinishedAt: at.Add(time.Second),
		Status: 200, Hash: hash, Changed: true, Text: "text " + hash, LastModified: at.Add(-time.Hour).Format(http.TimeFormat)}
}

func fold(t *testing.T, f *Folder, in ...Input) []Outcome {
	t.Helper()
	out, err := f.Fold(in)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// First content, a change, and a redelivery of the change: the record,
// content, change log and estimate move once per result, and the feedback
// carries the estimator's rate.
func TestFoldFetches(t *testing.T) {
	const u = "http://a.example/p"
	f, db := newFolder(t, store.URL{URL: u, Host: "a.example", Weight: 1, Mode: "freshness"})
	first := fold(t, f, Input{Result: result("t1", u, t0, "h1"), Interval: time.Hour})
	if !first[0].Applied || first[0].Changed || first[0].Event != nil {
		t.Errorf("first content: %+v, want applied, no change", first[0])
	}
	change := Input{Result: result("t2", u, t0.Add(2*time.Hour), "h2"), Interval: 30 * time.Minute}
	change.Result.Diff = &proto.DiffSummary{LinesAdded: 2}
	second := fold(t, f, change)
	o := second[0]
	if !o.Applied || !o.Changed || o.Event == nil || o.Event.PrevHash != "h1" || o.Event.Hash != "h2" || o.Event.Diff.LinesAdded != 2 {
		t.Errorf("change: %+v", o)
	}
	rec, err := db.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Fetches != 2 || rec.Changes != 1 || rec.Hash != "h2" || rec.Interval != 30*time.Minute || !rec.NextDue.Equal(t0.Add(2*time.Hour+30*time.Minute)) {
		t.Errorf("record %+v", rec)
	}
	if o.Feedback.Rate != rec.Rate || rec.Rate <= 0 || !o.Feedback.Changed || !o.Feedback.Start.Equal(t0.Add(2*time.Hour)) || !o.Feedback.End.Equal(t0.Add(2*time.Hour+time.Second)) {
		t.Errorf("feedback %+v with stored rate %v", o.Feedback, rec.Rate)
	}
	if text, _ := db.Content(u); text != "text h2" {
		t.Errorf("content %q", text)
	}
	again := fold(t, f, change)
	if again[0].Applied || again[0].Event != nil {
		t.Errorf("redelivery: %+v, want not applied", again[0])
	}
	after, _ := db.Get(u)
	changes, _ := db.Changes(0, 10)
	if after.Fetches != 2 || after.Rate != rec.Rate || string(after.Estimate) != string(rec.Estimate) || len(changes) != 1 {
		t.Errorf("redelivery changed the record (%+v) or the log (%d changes)", after, len(changes))
	}
}

// A capture URL keeps every version, dated exactly by a plausible
// Last-Modified.
func TestFoldCaptureVersions(t *testing.T) {
	const u = "http://a.example/feed"
	f, db := newFolder(t, store.URL{URL: u, Host: "a.example", Weight: 1, Mode: "capture"})
	fold(t, f, Input{Result: result("c1", u, t0, "h1")})
	o := fold(t, f, Input{Result: result("c2", u, t0.Add(3*time.Hour), "h2")})[0]
	if o.Version == nil || !o.Version.Exact || !o.Version.Before.Equal(t0.Add(2*time.Hour)) || !o.Version.After.Equal(t0) || o.Version.Text != "" {
		t.Errorf("version %+v, want exactly at Last-Modified, after the previous poll, without text", o.Version)
	}
	vs, err := db.Versions(u)
	if err != nil || len(vs) != 2 {
		t.Fatalf("versions %+v, %v", vs, err)
	}
	if v, _ := db.Version(u, 2); v.Text != "text h2" {
		t.Errorf("stored version text %q", v.Text)
	}
}

// A probe result updates the tracked items it shows, with their value,
// dissimilarity and an estimate; items not tracked and results of probes
// no longer planned are left alone.
func TestFoldProbeItems(t *testing.T) {
	f, db := newFolder(t)
	src := &source.Source{Name: "s", ValueField: "cites"}
	if _, err := db.UpsertItems([]store.Item{{Source: "s", ID: "i1", Attrs: map[string]string{"cites": "3"}, LastSync: t0}}); err != nil {
		t.Fatal(err)
	}
	probe := proto.Result{V: proto.Version, TaskID: "p1", Kind: proto.KindProbe, URL: "http://s.example/search?q=x", Host: "s.example",
		StartedAt: t0.Add(24 * time.Hour), FinishedAt: t0.Add(24*time.Hour + time.Second), Status: 200,
		Items: []proto.ProbeItem{{ID: "i1", Fields: map[string]string{"cites": "5"}}, {ID: "stranger", Fields: map[string]string{"cites": "9"}}}}
	o := fold(t, f, Input{Result: probe, Source: src})[0]
	if !o.Applied || o.Feedback.Rate != 0 || !o.Feedback.OK {
		t.Errorf("probe outcome %+v, want applied with no rate of its own", o)
	}
	items, err := db.Items("s")
	if err != nil || len(items) != 1 {
		t.Fatalf("items %+v, %v", items, err)
	}
	it := items[0]
	if it.Value != 5 || it.Changes != 1 || it.Syncs != 1 || it.Dissimilarity != 2 || it.Rate <= 0 || !it.LastSync.Equal(probe.StartedAt) {
		t.Errorf("item after the probe: %+v", it)
	}
	orphan := probe
	orphan.TaskID, orphan.Items = "p2", []proto.ProbeItem{{ID: "i1", Fields: map[string]string{"cites": "50"}}}
	fold(t, f, Input{Result: orphan}) // its request is gone: no source
	if items, _ := db.Items("s"); items[0].Value != 5 {
		t.Errorf("a probe no longer planned changed item %+v", items[0])
	}
}

// A task out of deliveries is recorded failed once, however often the
// advisory comes.
func TestFailed(t *testing.T) {
	const u = "http://a.example/p"
	f, db := newFolder(t, store.URL{URL: u, Host: "a.example", Weight: 1, Mode: "freshness"})
	task := proto.Task{V: proto.Version, ID: "t1", Kind: proto.KindFetch, URL: u}
	for i, want := range []bool{true, false} {
		applied, err := f.Failed(task, "gave up after 5 deliveries")
		if err != nil || applied != want {
			t.Fatalf("call %d: applied %v, %v; want %v", i, applied, err, want)
		}
	}
	rec, _ := db.Get(u)
	if rec.Failed != 1 || rec.LastErrKind != string(proto.ErrFailed) || rec.ErrorKinds[string(proto.ErrFailed)] != 1 {
		t.Errorf("record %+v", rec)
	}
}

// A capture version of a feed takes the item dates of its poll's
// interval as exact update times (the newest as the version's time): not
// the items from before the previous poll, not a date past this poll
// beyond the clock skew allowed, and a date within it as this poll's.
func TestFoldFeedTimes(t *testing.T) {
	const u = "http://a.example/feed"
	f, db := newFolder(t, store.URL{URL: u, Host: "a.example", Weight: 1, Mode: "capture"})
	first := result("t1", u, t0, "h1")
	first.Kind = proto.KindCapture
	fold(t, f, Input{Result: first})
	poll := t0.Add(time.Minute)
	r := result("t2", u, poll, "h2")
	r.Kind, r.LastModified = proto.KindCapture, ""
	r.FeedTimes = []time.Time{
		poll.Add(time.Hour),         // far future: not this poll's
		poll.Add(time.Second),       // within the skew: this poll's
		poll.Add(-10 * time.Second), // in the interval
		poll.Add(-40 * time.Second), // in the interval
		t0.Add(-time.Minute),        // before the previous poll: an old item
	}
	o := fold(t, f, Input{Result: r})[0]
	want := []time.Time{poll, poll.Add(-10 * time.Second), poll.Add(-40 * time.Second)}
	if len(o.UpdateTimes) != len(want) {
		t.Fatalf("update times %v, want %v", o.UpdateTimes, want)
	}
	for i := range want {
		if !o.UpdateTimes[i].Equal(want[i]) {
			t.Errorf("update time %d: %v, want %v", i, o.UpdateTimes[i], want[i])
		}
	}
	if o.Version == nil || !o.Version.Exact || !o.Version.Before.Equal(poll) || !o.Version.After.Equal(t0) {
		t.Errorf("version %+v: want exact at the newest dated update %v after %v", o.Version, poll, t0)
	}
	vs, err := db.Versions(u)
	if err != nil || len(vs) != 2 || !vs[1].Exact {
		t.Errorf("stored versions %+v (%v)", vs, err)
	}
}

// What the console reads of a fold: the rate's standard error (stored and
// in the feedback), the raw body of a URL that keeps it (and of no other),
// the fetch history in order with each outcome, and the host's counts.
func TestFoldConsoleRecords(t *testing.T) {
	const keep, plain = "http://a.example/keep", "http://a.example/plain"
	f, db := newFolder(t, store.URL{URL: keep, Host: "a.example", Weight: 1, Mode: "freshness", KeepRaw: true},
		store.URL{URL: plain, Host: "a.example", Weight: 1, Mode: "freshness"})
	withRaw := func(r proto.Result) proto.Result {
		r.Raw, r.RawTruncated, r.ContentType, r.Bytes = []byte("<p>"+r.Hash+"</p>"), true, "text/html", 4096
		return r
	}
	fold(t, f, Input{Result: withRaw(result("k1", keep, t0, "h1"))}, Input{Result: withRaw(result("p1", plain, t0, "h1"))})
	changed := fold(t, f, Input{Result: withRaw(result("k2", keep, t0.Add(time.Hour), "h2"))})[0]
	failed := result("k3", keep, t0.Add(2*time.Hour), "")
	failed.Status, failed.ErrKind, failed.Err, failed.Changed = 503, proto.ErrServerError, "503", false
	fold(t, f, Input{Result: failed})

	rec, err := db.Get(keep)
	if err != nil {
		t.Fatal(err)
	}
	if !(rec.RateSE > 0) || changed.Feedback.RateSE != rec.RateSE {
		t.Errorf("rate %v ± %v stored, feedback ± %v; want a positive error, the same in both", rec.Rate, rec.RateSE, changed.Feedback.RateSE)
	}
	raw, found, err := db.Raw(keep, true)
	if err != nil || !found || string(raw.Body) != "<p>h2</p>" || raw.Hash != "h2" || !raw.Truncated || raw.Size != 4096 || raw.ContentType != "text/html" {
		t.Errorf("raw body of a URL keeping it: %+v found %v err %v; want the second version's", raw, found, err)
	}
	if _, found, _ := db.Raw(plain, false); found {
		t.Error("raw body stored for a URL that does not keep it")
	}
	log, err := db.FetchLog(keep)
	if err != nil {
		t.Fatal(err)
	}
	var outcomes []string
	for _, e := range log {
		outcomes = append(outcomes, e.Outcome)
	}
	if len(log) != 3 || !log[0].At.Equal(t0) || outcomes[1] != store.OutcomeChanged || outcomes[2] != store.OutcomeError || log[2].Status != 503 {
		t.Errorf("fetch history %+v", log)
	}
	hosts, err := db.Hosts()
	if err != nil || len(hosts) != 1 || hosts[0].Fetches != 4 || hosts[0].Errors != 1 {
		t.Errorf("hosts %+v %v; want a.example with 4 fetches, 1 error", hosts, err)
	}
}

// A fold writes each record over the one it read (store.Tx.PutOver), which
// moves the record's index keys: after folds that change every indexed
// value (rate, next due time, changes, last change, errors, the failed
// state), each sort lists every URL once, in the order of its stored
// value, and the failed state lists exactly the URLs whose last fetch
// failed.
func TestFoldMovesIndexKeys(t *testing.T) {
	urls := []string{"http://a.example/1", "http://a.example/2", "http://a.example/3", "http://a.example/4"}
	var recs []store.URL
	for _, u := range urls {
		recs = append(recs, store.URL{URL: u, Host: "a.example", Weight: 1, Mode: "freshness"})
	}
	f, db := newFolder(t, recs...)
	id := 0
	at := t0
	step := func(i int, hash string, fail bool) Input {
		id++
		at = at.Add(time.Duration(1+i) * 7 * time.Minute)
		r := result(fmt.Sprintf("t%d", id), urls[i], at, hash)
		if fail {
			r.Status, r.ErrKind, r.Err, r.Changed, r.Hash, r.Text = 503, proto.ErrServerError, "503", false, "", ""
		}
		return Input{Result: r, Interval: time.Duration(1+(id*5)%7) * time.Hour}
	}
	for round := range 4 {
		var batch []Input
		for i := range urls {
			batch = append(batch, step(i, fmt.Sprintf("h%d-%d", i, round/(i+1)), (round+i)%3 == 2))
		}
		fold(t, f, batch...)
	}
	stored := map[string]store.URL{}
	for _, u := range urls {
		rec, err := db.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		stored[u] = rec
	}
	value := map[string]func(u store.URL) float64{
		store.SortRate:       func(u store.URL) float64 { return u.Rate },
		store.SortNextDue:    func(u store.URL) float64 { return float64(u.NextDue.UnixNano()) },
		store.SortChanges:    func(u store.URL) float64 { return float64(u.Changes) },
		store.SortLastChange: func(u store.URL) float64 { return float64(u.LastChange.UnixNano()) },
		store.SortErrors:     func(u store.URL) float64 { return float64(u.Errors) },
	}
	for sort, val := range value {
		page, err := db.ListURLs(store.Query{Sort: sort, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.URLs) != len(urls) {
			t.Errorf("sort %s lists %d URLs, want %d", sort, len(page.URLs), len(urls))
		}
		seen := map[string]bool{}
		for k, u := range page.URLs {
			if seen[u.URL] {
				t.Errorf("sort %s lists %s twice", sort, u.URL)
			}
			seen[u.URL] = true
			if k > 0 && val(stored[page.URLs[k-1].URL]) > val(stored[u.URL]) {
				t.Errorf("sort %s: %s (%v) before %s (%v)", sort, page.URLs[k-1].URL, val(stored[page.URLs[k-1].URL]), u.URL, val(stored[u.URL]))
			}
		}
	}
	page, err := db.ListURLs(store.Query{State: store.StateFailed, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var failed, want []string
	for _, u := range page.URLs {
		failed = append(failed, u.URL)
	}
	for _, u := range urls {
		if store.RecordState(new(stored[u])) == store.StateFailed {
			want = append(want, u)
		}
	}
	slices.Sort(failed)
	if !slices.Equal(failed, want) || len(want) == 0 || len(want) == len(urls) {
		t.Errorf("failed state lists %v, want %v (some URLs, not all)", failed, want)
	}
}
