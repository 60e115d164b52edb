package fold

import (
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/freshcrawl/freshcrawl/internal/schedule"
	"github.com/freshcrawl/freshcrawl/internal/testutil"
	"github.com/freshcrawl/freshcrawl/proto"
	"github.com/freshcrawl/freshcrawl/store"
)

// failed is result turned into a failure of kind k with status code: no
// content, finished a second after it started.
func failed(id, url string, at time.Time, code int, k proto.ErrorKind) proto.Result {
	r := result(id, url, at, "")
	r.Status, r.ErrKind, r.Err, r.Changed, r.Text, r.LastModified = code, k, fmt.Sprintf("http status %d", code), false, "", ""
	return r
}

// Overload signals slow or hold the host, other failures do not: 503s
// without Retry-After halve the host's rate each (Slowdown), a Retry-After
// holds it from when the answer was known (FinishedAt), and every
// RecoverAfter successes double its rate back. A failed fetch keeps the
// URL's rate and estimator state.
func TestFoldHostPoliteness(t *testing.T) {
	const u = "http://a.example/p"
	f, db := newFolder(t, store.URL{URL: u, Host: "a.example", Weight: 1, Mode: "freshness", Rate: 1e-5})
	var last Outcome
	for i := range 3 {
		r := failed(fmt.Sprintf("e%d", i), u, t0.Add(time.Duration(i)*time.Minute), 503, proto.ErrServerError)
		r.CrawlDelay = 3 * time.Second
		last = fold(t, f, Input{Result: r})[0]
	}
	host := func() store.Host {
		hosts, err := db.Hosts()
		if err != nil || len(hosts) != 1 {
			t.Fatalf("hosts %+v, %v", hosts, err)
		}
		return hosts[0]
	}
	if h := host(); h.Slowdown != 3 || h.ServerErrs != 3 || !h.BackoffTill.IsZero() || h.CrawlDelay != 3*time.Second {
		t.Errorf("host after three 503s without Retry-After: %+v, want its rate halved three times", h)
	}
	if fb := last.Feedback; fb.OK || fb.Rate != 1e-5 || fb.HostGap != 3*time.Second || fb.HostSlowdown != 3 {
		t.Errorf("feedback %+v, want the stored rate and the host's slowdown", fb)
	}
	rec, _ := db.Get(u)
	if rec.Errors != 3 || rec.ErrorKinds[string(proto.ErrServerError)] != 3 || len(rec.Estimate) != 0 || rec.Rate != 1e-5 {
		t.Errorf("record %+v: errors must not reach the estimate", rec)
	}
	limited := failed("r1", u, t0.Add(time.Hour), 429, proto.ErrRateLimited)
	limited.RetryAfter = 10 * time.Minute
	o := fold(t, f, Input{Result: limited})[0]
	if h := host(); !h.BackoffTill.Equal(limited.FinishedAt.Add(10*time.Minute)) || h.Backoff != 10*time.Minute || h.Slowdown != 3 {
		t.Errorf("host after a 429 with Retry-After: %+v, want held 10 min from the answer", h)
	}
	if !o.Feedback.HostNotBefore.Equal(limited.FinishedAt.Add(10 * time.Minute)) {
		t.Errorf("feedback holds the host until %v", o.Feedback.HostNotBefore)
	}
	for i := range 2 * DefaultOptions().RecoverAfter {
		fold(t, f, Input{Result: result(fmt.Sprintf("ok%d", i), u, t0.Add(2*time.Hour+time.Duration(i)*time.Minute), "h1")})
	}
	if h := host(); h.Slowdown != 1 || h.ServerErrs != 0 {
		t.Errorf("host after %d successes: %+v, want two halvings taken back", 2*DefaultOptions().RecoverAfter, h)
	}
	long := failed("r2", u, t0.Add(3*time.Hour), 503, proto.ErrServerError)
	long.RetryAfter = 24 * time.Hour
	fold(t, f, Input{Result: long})
	if h := host(); !h.BackoffTill.Equal(long.FinishedAt.Add(maxRetryAfter)) {
		t.Errorf("a Retry-After of a day holds the host until %v, want capped at %s", h.BackoffTill, maxRetryAfter)
	}
}

// A URL's failures back it off exponentially from when each was known:
// base max(interval, MinBackoff), doubling, capped; the streak is stored
// (and survives the store's reopening); a success ends it; a 429 leaves
// it alone; nothing of a failure reaches the estimate.
func TestFoldURLBackoff(t *testing.T) {
	const u = "http://a.example/p"
	dir := t.TempDir()
	db, err := store.OpenDir(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Upsert([]store.URL{{URL: u, Host: "a.example", Weight: 1, Mode: "freshness"}}); err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions()
	o.MinBackoff, o.MaxBackoff = 10*time.Minute, 3*time.Hour
	est := schedule.NewEstimator(90*24*time.Hour, 0.25/86400)
	f, err := New(db, est, o, testutil.QuietLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	good := fold(t, f, Input{Result: result("ok0", u, t0, "h1"), Interval: 5 * time.Minute})[0]
	before, _ := db.Get(u)
	at := t0.Add(time.Hour)
	for n, want := range []time.Duration{20 * time.Minute, 40 * time.Minute, 80 * time.Minute, 160 * time.Minute, 3 * time.Hour, 3 * time.Hour} {
		r := failed(fmt.Sprintf("e%d", n), u, at, 500, proto.ErrServerError)
		out := fold(t, f, Input{Result: r, Interval: 5 * time.Minute})[0]
		if got := out.Feedback.RetryAt.Sub(r.FinishedAt); got != want {
			t.Errorf("failure %d: next fetch %s after it was known, want %s", n+1, got, want)
		}
		rec, _ := db.Get(u)
		if rec.ErrStreak != n+1 || !rec.NextDue.Equal(out.Feedback.RetryAt) {
			t.Errorf("failure %d: streak %d next due %v, want %d and %v", n+1, rec.ErrStreak, rec.NextDue, n+1, out.Feedback.RetryAt)
		}
		if string(rec.Estimate) != string(before.Estimate) || rec.Rate != before.Rate || out.Feedback.Learnt || out.Feedback.Rate != good.Feedback.Rate {
			t.Errorf("failure %d changed the estimate: rate %v → %v", n+1, before.Rate, rec.Rate)
		}
		at = out.Feedback.RetryAt
	}
	// A 429 is the host's: the URL's streak stays, and it is not put off.
	out := fold(t, f, Input{Result: failed("r", u, at, 429, proto.ErrRateLimited)})[0]
	if rec, _ := db.Get(u); rec.ErrStreak != 6 || !out.Feedback.RetryAt.IsZero() {
		t.Errorf("after a 429: streak %d retry %v, want 6 and none", rec.ErrStreak, out.Feedback.RetryAt)
	}
	// Durable: the streak is in the bbolt file.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if db, err = store.OpenDir(dir, store.Options{}); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if rec, err := db.Get(u); err != nil || rec.ErrStreak != 6 {
		t.Fatalf("after reopening %s: streak %d (%v), want 6", filepath.Base(dir), rec.ErrStreak, err)
	}
	if f, err = New(db, est, o, testutil.QuietLogger(t)); err != nil {
		t.Fatal(err)
	}
	out = fold(t, f, Input{Result: result("ok1", u, at.Add(time.Hour), "h1"), Interval: 5 * time.Minute})[0]
	rec, _ := db.Get(u)
	if rec.ErrStreak != 0 || !out.Feedback.RetryAt.IsZero() || !rec.NextDue.Equal(at.Add(time.Hour+5*time.Minute)) {
		t.Errorf("after a success: streak %d retry %v next due %v, want the plan's interval again", rec.ErrStreak, out.Feedback.RetryAt, rec.NextDue)
	}
}

// A 410 retires its URL at once; a 404 only once it has lasted GoneAfter
// from its first, a success in between starting the count again. A gone
// URL is listed under that state.
func TestFoldGone(t *testing.T) {
	const g410, g404 = "http://a.example/410", "http://a.example/404"
	f, db := newFolder(t, store.URL{URL: g410, Host: "a.example", Weight: 1, Mode: "freshness"}, store.URL{URL: g404, Host: "a.example", Weight: 1, Mode: "freshness"})
	if o := fold(t, f, Input{Result: failed("a", g410, t0, 410, proto.ErrNotFound)})[0]; !o.Feedback.Gone {
		t.Error("a 410 did not retire its URL")
	}
	after := DefaultOptions().GoneAfter
	steps := []struct {
		at   time.Duration
		ok   bool
		gone bool
	}{{0, false, false}, {after / 2, false, false}, {after - time.Hour, true, false}, {after + time.Hour, false, false}, {2*after - 2*time.Hour, false, false}, {2*after + 2*time.Hour, false, true}}
	for i, s := range steps {
		r := failed(fmt.Sprintf("n%d", i), g404, t0.Add(s.at), 404, proto.ErrNotFound)
		if s.ok {
			r = result(fmt.Sprintf("n%d", i), g404, t0.Add(s.at), "h1")
		}
		o := fold(t, f, Input{Result: r})[0]
		if o.Feedback.Gone != s.gone {
			t.Errorf("step %d (%s): gone %v, want %v", i, s.at, o.Feedback.Gone, s.gone)
		}
		if !s.gone && !s.ok && o.Feedback.RetryAt.IsZero() {
			t.Errorf("step %d: a 404 not yet gone must back off", i)
		}
	}
	p, err := db.ListURLs(store.Query{State: store.StateGone})
	if err != nil || p.Total != 2 {
		t.Fatalf("gone listing: %+v, %v; want both URLs", p.URLs, err)
	}
}

// A page that forbids a copy keeps its hash and change statistics and no
// text, raw body or diff; a copy kept before is dropped; once the page
// allows a copy again, its text is kept from the next fetch.
func TestFoldNoArchive(t *testing.T) {
	const u = "http://a.example/p"
	f, db := newFolder(t, store.URL{URL: u, Host: "a.example", Weight: 1, Mode: "capture", KeepRaw: true})
	r := result("t1", u, t0, "h1")
	r.Raw = []byte("<p>h1</p>")
	fold(t, f, Input{Result: r})
	if text, _ := db.Content(u); text != "text h1" {
		t.Fatalf("content %q before the page forbade a copy", text)
	}
	secret := result("t2", u, t0.Add(time.Hour), "h2")
	secret.NoArchive, secret.Changed, secret.Text, secret.Diff = true, false, "", nil
	o := fold(t, f, Input{Result: secret})[0]
	if !o.Changed || o.Event == nil || o.Event.Diff.Preview != "" {
		t.Errorf("a new hash under noarchive: changed %v event %+v, want a change without a preview", o.Changed, o.Event)
	}
	rec, _ := db.Get(u)
	text, _ := db.Content(u)
	_, hasRaw, _ := db.Raw(u, false)
	if !rec.NoArchive || rec.Hash != "h2" || rec.Changes != 1 || text != "" || hasRaw {
		t.Errorf("record noarchive %v hash %q changes %d, content %q, raw kept %v: want the hash and count, no copy", rec.NoArchive, rec.Hash, rec.Changes, text, hasRaw)
	}
	if v, err := db.Version(u, 2); err != nil || v.Text != "" || v.Hash != "h2" {
		t.Errorf("capture version under noarchive: %+v %v, want the hash without text", v, err)
	}
	// Allowed again, same page: the worker sends it as a first version.
	open := result("t3", u, t0.Add(2*time.Hour), "h2")
	open.Changed, open.Text = false, "the page again"
	if o := fold(t, f, Input{Result: open})[0]; o.Changed {
		t.Error("the same hash counted as a change")
	}
	rec, _ = db.Get(u)
	if text, _ := db.Content(u); rec.NoArchive || text != "the page again" {
		t.Errorf("noarchive %v content %q, want the copy kept again", rec.NoArchive, text)
	}
}

// A truncated page is a success: its text is kept and the record says it
// was cut.
func TestFoldTruncated(t *testing.T) {
	const u = "http://a.example/p"
	f, db := newFolder(t, store.URL{URL: u, Host: "a.example", Weight: 1, Mode: "freshness"})
	r := result("t1", u, t0, "h1")
	r.Truncated, r.Bytes, r.Status = true, 4<<20, http.StatusOK
	fold(t, f, Input{Result: r})
	rec, _ := db.Get(u)
	if text, _ := db.Content(u); !rec.Truncated || rec.LastErrKind != "" || text != "text h1" {
		t.Errorf("truncated %v kind %q content %q", rec.Truncated, rec.LastErrKind, text)
	}
	fold(t, f, Input{Result: result("t2", u, t0.Add(time.Hour), "h2")})
	if rec, _ := db.Get(u); rec.Truncated {
		t.Error("still marked truncated after a whole page")
	}
}
