package notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/freshcrawl/freshcrawl/internal/testutil"
	"github.com/freshcrawl/freshcrawl/internal/testutil/storetest"
	"github.com/freshcrawl/freshcrawl/proto"
	"github.com/freshcrawl/freshcrawl/store"
)

// addChange logs a change of u as the fold of task id does.
func addChange(t *testing.T, db *store.DB, id, u string, magnitude float64) {
	t.Helper()
	host := strings.SplitN(strings.TrimPrefix(strings.TrimPrefix(u, "https://"), "http://"), "/", 2)[0]
	_, err := db.Fold(id, func(tx *store.Tx) error {
		_, err := tx.AddChange(store.Change{URL: u, Host: host, At: time.Now(), TaskID: id, Hash: "h-" + id,
			Diff: store.DiffSummary{Magnitude: magnitude, LinesAdded: 1}})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// receiver is a webhook endpoint that records what it is sent, checking
// each request's signature and event id header.
type receiver struct {
	t      *testing.T
	secret string
	fail   func() bool // answer 500 while it says so

	mu     sync.Mutex
	events []proto.ChangeEvent // in arrival order, duplicates included
	bad    []string            // what was wrong with a request
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if rc.fail != nil && rc.fail() {
		http.Error(w, "down for maintenance", http.StatusInternalServerError)
		return
	}
	var ev proto.ChangeEvent
	rc.mu.Lock()
	defer rc.mu.Unlock()
	switch {
	case json.Unmarshal(body, &ev) != nil:
		rc.bad = append(rc.bad, "body is not a change event: "+string(body))
	case rc.secret != "" && !verify(rc.secret, body, r.Header.Get(signatureHeader)):
		rc.bad = append(rc.bad, "bad signature "+r.Header.Get(signatureHeader))
	case r.Header.Get(eventIDHeader) != ev.ID || ev.ID == "":
		rc.bad = append(rc.bad, fmt.Sprintf("event id header %q, body %q", r.Header.Get(eventIDHeader), ev.ID))
	case r.Header.Get("Content-Type") != "application/json":
		rc.bad = append(rc.bad, "content type "+r.Header.Get("Content-Type"))
	}
	rc.events = append(rc.events, ev)
}

// distinct returns the event ids received, each once, in order of first
// arrival.
func (rc *receiver) distinct() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	seen := map[string]bool{}
	var out []string
	for _, ev := range rc.events {
		if !seen[ev.ID] {
			seen[ev.ID] = true
			out = append(out, ev.ID)
		}
	}
	return out
}

func (rc *receiver) problems() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]string(nil), rc.bad...)
}

// run starts d until the returned stop is called or the test ends.
func run(t *testing.T, d *Deliverer) (stop func()) {
	t.Helper()
	return testutil.Run(t, "Run", d.Run)
}

// TestWebhookReceiverDown30s takes the receiver down for 30 s while
// changes keep coming, and checks that every change arrives, once it is
// back, in the order of the change log, each signed and with its id.
func TestWebhookReceiverDown30s(t *testing.T) {
	testutil.Slow(t)
	if testing.Short() {
		t.Skip("30 s of receiver downtime")
	}
	const downtime = 30 * time.Second
	db := storetest.Open(t)
	rc := &receiver{t: t, secret: "s3cret-shared-with-the-receiver"}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	serve := func(ln net.Listener) *http.Server {
		srv := &http.Server{Handler: rc, ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		return srv
	}
	srv := serve(ln)

	o := DefaultOptions()
	o.AllowPrivate = true // the receivers are on loopback
	o.Webhooks = []Webhook{{Name: "down", URL: "http://" + addr + "/hook", Secret: rc.secret}}
	// Enough attempts for 30 s at a backoff of at most 1 s: nothing may
	// become a dead letter.
	o.Attempts, o.Backoff, o.MaxBackoff, o.Timeout, o.Log = 1000, 50*time.Millisecond, time.Second, 2*time.Second, testutil.QuietLogger(t)
	d, err := NewDeliverer(db, o)
	if err != nil {
		t.Fatal(err)
	}
	run(t, d)

	var ids []string
	n := 0
	add := func() {
		n++
		id := fmt.Sprintf("task-%04d", n)
		addChange(t, db, id, fmt.Sprintf("http://a.example/p%d", n%7), 0.5)
		d.Wake()
		ids = append(ids, id)
	}
	// A stream of changes: one every 100 ms before, during and after the
	// outage.
	stream := func(dt time.Duration) {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		end := time.After(dt)
		for {
			select {
			case <-end:
				return
			case <-tick.C:
				add()
			}
		}
	}
	stream(time.Second)
	testutil.WaitFor(t, 10*time.Second, "the first changes to arrive", func() bool { return len(rc.distinct()) > 0 })

	// Down: the port refuses connections.
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	downFrom := len(ids)
	stream(downtime)
	t.Logf("%d changes before the outage, %d during it", downFrom, len(ids)-downFrom)

	// Back on the same address.
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen again on %s: %v", addr, err)
	}
	srv = serve(ln)
	t.Cleanup(func() { _ = srv.Close() })
	stream(time.Second)

	testutil.WaitFor(t, 30*time.Second, "every change to arrive", func() bool { return len(rc.distinct()) == len(ids) })
	got := rc.distinct()
	for i := range ids {
		if got[i] != ids[i] {
			t.Fatalf("event %d: got %s, want %s (out of order)", i, got[i], ids[i])
		}
	}
	if p := rc.problems(); len(p) > 0 {
		t.Fatalf("bad requests: %q", p)
	}
	if _, failed, dead := d.Counts(); failed == 0 || dead != 0 {
		t.Fatalf("failed attempts %d, dead letters %d: want some failures (the outage) and no dead letter", failed, dead)
	}
	// The last delivery leaves its queue once its answer is in, just
	// after the receiver counted it.
	var st Status
	testutil.WaitFor(t, 10*time.Second, "the queue to empty", func() bool {
		var err error
		st, err = d.Status(10)
		return err == nil && st.Queued[d.o.Webhooks[0].URL] == 0
	})
	if st.Dead != 0 {
		t.Fatalf("after delivery: %d dead letters", st.Dead)
	}
}

// TestWebhookFilters routes changes by host, URL prefix and magnitude, and
// to a seed's own webhook, and signs with the global secret when a webhook
// has none.
func TestWebhookFilters(t *testing.T) {
	db := storetest.Open(t)
	const global = "global-secret-0123456789"
	hosts, prefixes, big, all, perSeed := &receiver{secret: global}, &receiver{secret: "own"}, &receiver{secret: global}, &receiver{secret: global}, &receiver{secret: global}
	urlOf := map[*receiver]string{}
	for _, rc := range []*receiver{hosts, prefixes, big, all, perSeed} {
		srv := httptest.NewServer(rc)
		t.Cleanup(srv.Close)
		urlOf[rc] = srv.URL + "/hook"
	}
	if _, err := db.Upsert([]store.URL{{URL: "http://c.example/x", Host: "c.example", Weight: 1, Webhook: urlOf[perSeed]}}); err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions()
	o.AllowPrivate = true // the receivers are on loopback
	o.Secret, o.Log, o.Webhooks = global, testutil.QuietLogger(t), []Webhook{
		{URL: urlOf[hosts], Hosts: []string{"A.example"}},
		{URL: urlOf[prefixes], Secret: "own", Prefixes: []string{"http://b.example/news/"}},
		{URL: urlOf[big], MinMagnitude: 0.5},
		{URL: urlOf[all]},
	}
	d, err := NewDeliverer(db, o)
	if err != nil {
		t.Fatal(err)
	}
	run(t, d)
	addChange(t, db, "1", "http://a.example/", 0.1)
	addChange(t, db, "2", "http://b.example/news/today", 0.9)
	addChange(t, db, "3", "http://b.example/other", 0.2)
	addChange(t, db, "4", "http://c.example/x", 0.6)
	d.Wake()
	want := map[*receiver][]string{hosts: {"1"}, prefixes: {"2"}, big: {"2", "4"}, all: {"1", "2", "3", "4"}, perSeed: {"4"}}
	testutil.WaitFor(t, 10*time.Second, "the deliveries", func() bool {
		return len(all.distinct()) == 4 && len(perSeed.distinct()) == 1 && len(big.distinct()) == 2
	})
	for rc, ids := range want {
		if got := rc.distinct(); strings.Join(got, ",") != strings.Join(ids, ",") {
			t.Errorf("%s got %v, want %v", urlOf[rc], got, ids)
		}
		if p := rc.problems(); len(p) > 0 {
			t.Errorf("%s: %q", urlOf[rc], p)
		}
	}
}

// TestWebhookDeadLetters: a receiver that keeps failing sends the event to
// the dead-letter list after Attempts; later events still go out; retry
// puts it back and it is delivered; drop deletes.
func TestWebhookDeadLetters(t *testing.T) {
	db := storetest.Open(t)
	var mu sync.Mutex
	failing := map[string]bool{"bad": true}
	rc := &receiver{}
	rc.fail = func() bool { mu.Lock(); defer mu.Unlock(); return failing["bad"] }
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	hook := srv.URL + "/hook"
	o := DefaultOptions()
	o.AllowPrivate = true // the receivers are on loopback
	o.Webhooks, o.Attempts, o.Backoff, o.MaxBackoff, o.Log = []Webhook{{URL: hook}}, 3, time.Millisecond, 5*time.Millisecond, testutil.QuietLogger(t)
	d, err := NewDeliverer(db, o)
	if err != nil {
		t.Fatal(err)
	}
	run(t, d)
	addChange(t, db, "a", "http://a.example/1", 1)
	addChange(t, db, "b", "http://a.example/2", 1)
	d.Wake()
	testutil.WaitFor(t, 10*time.Second, "two dead letters", func() bool { _, _, n := d.Counts(); return n == 2 })
	st, err := d.Status(10)
	if err != nil {
		t.Fatal(err)
	}
	if st.Dead != 2 || len(st.DeadLetters) != 2 || st.DeadLetters[0].Attempts != 3 || !strings.Contains(st.DeadLetters[0].LastErr, "500") {
		t.Fatalf("dead letters: %+v", st)
	}
	mu.Lock()
	failing["bad"] = false
	mu.Unlock()

	// Drop the second, retry the first: only the first arrives.
	if n, err := d.Drop([]string{st.DeadLetters[1].ID}); err != nil || n != 1 {
		t.Fatalf("drop: %d, %v", n, err)
	}
	if n, err := d.Retry(nil); err != nil || n != 1 {
		t.Fatalf("retry all: %d, %v", n, err)
	}
	addChange(t, db, "c", "http://a.example/3", 1)
	d.Wake()
	testutil.WaitFor(t, 10*time.Second, "the retried and the new event", func() bool { return len(rc.distinct()) == 2 })
	if got := strings.Join(rc.distinct(), ","); got != "a,c" {
		t.Fatalf("received %s, want a,c", got)
	}
	if _, err := d.Retry([]string{"zz"}); !errors.Is(err, store.ErrBadID) {
		t.Fatalf("retry of a bad id: %v, want ErrBadID", err)
	}
	if st, _ := d.Status(10); st.Dead != 0 {
		t.Fatalf("dead letters left: %+v", st.DeadLetters)
	}
}

// TestWebhookResumesAfterRestart: deliveries queued when the deliverer
// stops go out when a new one runs on the same store, and changes logged
// while none ran are routed then; changes from before the first run are
// not replayed as new.
func TestWebhookResumesAfterRestart(t *testing.T) {
	db := storetest.Open(t)
	addChange(t, db, "old", "http://a.example/", 1) // before any deliverer: history
	rc := &receiver{}
	var mu sync.Mutex
	down := true
	rc.fail = func() bool { mu.Lock(); defer mu.Unlock(); return down }
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	o := DefaultOptions()
	o.AllowPrivate = true // the receivers are on loopback
	o.Webhooks, o.Attempts, o.Backoff, o.MaxBackoff, o.Log = []Webhook{{URL: srv.URL}}, 100, time.Millisecond, 10*time.Millisecond, testutil.QuietLogger(t)

	d1, err := NewDeliverer(db, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d1.Run(ctx) }()
	addChange(t, db, "1", "http://a.example/", 1)
	d1.Wake()
	testutil.WaitFor(t, 10*time.Second, "a failed attempt", func() bool { _, f, _ := d1.Counts(); return f > 0 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	addChange(t, db, "2", "http://a.example/", 1) // while no deliverer runs

	mu.Lock()
	down = false
	mu.Unlock()
	d2, err := NewDeliverer(db, o)
	if err != nil {
		t.Fatal(err)
	}
	run(t, d2)
	testutil.WaitFor(t, 10*time.Second, "both events", func() bool { return len(rc.distinct()) == 2 })
	if got := strings.Join(rc.distinct(), ","); got != "1,2" {
		t.Fatalf("received %s, want 1,2", got)
	}
}

// NewDeliverer refuses what Validate refuses, naming the field.
func TestNewDelivererValidates(t *testing.T) {
	db := storetest.Open(t)
	for _, c := range []struct {
		field string
		set   func(*Options)
	}{
		{"Attempts", func(o *Options) { o.Attempts = 0 }},
		{"Backoff", func(o *Options) { o.Backoff = 0 }},
		{"MaxBackoff", func(o *Options) { o.MaxBackoff = 0 }},
		{"MaxBackoff", func(o *Options) { o.Backoff, o.MaxBackoff = time.Minute, time.Second }},
		{"Timeout", func(o *Options) { o.Timeout = -time.Second }},
		{"UserAgent", func(o *Options) { o.UserAgent = "" }},
		{"Webhooks[1].URL", func(o *Options) {
			o.Webhooks = []Webhook{{URL: "https://hooks.example/"}, {URL: "http://169.254.169.254/latest/meta-data/"}}
		}},
	} {
		o := DefaultOptions()
		c.set(&o)
		if _, err := NewDeliverer(db, o); err == nil || !strings.Contains(err.Error(), c.field+":") {
			t.Errorf("%s: NewDeliverer = %v, want an error naming the field", c.field, err)
		}
	}
}

func TestBackoffGrowsAndIsCapped(t *testing.T) {
	d := &Deliverer{o: Options{Backoff: time.Second, MaxBackoff: 10 * time.Second}}
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 4: 8 * time.Second, 5: 10 * time.Second, 40: 10 * time.Second} {
		for range 50 {
			if b := d.backoff(n); b < want/2 || b > want {
				t.Fatalf("backoff(%d) = %s, want in [%s, %s]", n, b, want/2, want)
			}
		}
	}
}

func TestSignVerify(t *testing.T) {
	body := []byte(`{"id":"x"}`)
	// The HMAC-SHA256 of body under "key", as `openssl dgst -sha256 -hmac key` prints it.
	const want = "sha256=9ceaa4a60fd94e663e15900ab1b5d7c00781640620d1414798d6ed63ed6ff2d7"
	got := sign("key", body)
	if got != want {
		t.Fatalf("Sign = %q, want %q", got, want)
	}
	if !verify("key", body, got) || verify("other", body, got) || verify("key", []byte(`{"id":"y"}`), got) {
		t.Fatal("Verify accepts a wrong secret or body, or rejects the right one")
	}
}

func TestParseWebhooks(t *testing.T) {
	env := map[string]string{"HOOK_SECRET": "from-env"}
	getenv := func(k string) string { return env[k] }
	good := `
budget: 5/s
webhooks:
  - url: https://hooks.example/a
    hosts: [a.example]
    min_magnitude: 0.2
  - name: b
    url: http://hooks.example/b
    secret_env: HOOK_SECRET
    prefixes: ["https://b.example/news/"]
`
	ws, err := parseWebhooks([]byte(good), "c.yaml", getenv)
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 2 || ws[0].Name != "https://hooks.example/a" || ws[1].Secret != "from-env" || ws[0].MinMagnitude != 0.2 {
		t.Fatalf("got %+v", ws)
	}
	if ws, err := parseWebhooks([]byte("budget: 5/s\n"), "c.yaml", getenv); err != nil || ws != nil {
		t.Fatalf("no webhooks: %v, %v", ws, err)
	}
	for _, c := range []struct{ yaml, want string }{
		{"webhooks:\n  - url: https://h.example/\n    prefix: [x]\n", "c.yaml line 2: webhooks[0]"},
		{"webhooks:\n  - url: ftp://h.example/\n", "want http:// or https://"},
		{"webhooks:\n  - hosts: [a]\n", "url: missing"},
		{"webhooks:\n  - url: https://h.example/\n    secret_env: NOPE\n", "NOPE is not set"},
		{"webhooks:\n  - url: https://h.example/\n    min_magnitude: -1\n", "min_magnitude"},
		{"webhooks: 3\n", "want a list"},
	} {
		_, err := parseWebhooks([]byte(c.yaml), "c.yaml", getenv)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want it to mention %q", c.yaml, err, c.want)
		}
	}
}
