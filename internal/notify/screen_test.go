package notify

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/freshcrawl/freshcrawl/internal/testutil"
	"github.com/freshcrawl/freshcrawl/internal/testutil/storetest"
	"github.com/freshcrawl/freshcrawl/store"
)

// hits counts the requests of a server by path.
type hits struct {
	mu sync.Mutex
	n  map[string]int
}

func (h *hits) add(path string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == nil {
		h.n = map[string]int{}
	}
	h.n[path]++
}

func (h *hits) get(path string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n[path]
}

// TestWebhookPrivateReceiver: per-seed webhooks on loopback, one by its
// address and one by a name that resolves there (stored as they are, as
// a seed line allowed then would have left them), are refused at connect
// without AllowPrivate: the receiver hears nothing, and each event goes
// to the dead-letter list at once, with the reason. With AllowPrivate
// both are delivered.
func TestWebhookPrivateReceiver(t *testing.T) {
	for _, allow := range []bool{false, true} {
		db := storetest.Open(t)
		var h hits
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.add(r.URL.Path) }))
		_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
		byAddr, byName := srv.URL+"/by-addr", "http://"+net.JoinHostPort("localhost", port)+"/by-name"
		if _, err := db.Upsert([]store.URL{
			{URL: "http://a.example/1", Host: "a.example", Weight: 1, Webhook: byAddr},
			{URL: "http://a.example/2", Host: "a.example", Weight: 1, Webhook: byName},
		}); err != nil {
			t.Fatal(err)
		}
		o := DefaultOptions()
		o.AllowPrivate, o.Backoff, o.MaxBackoff, o.Log = allow, time.Millisecond, time.Millisecond, testutil.QuietLogger(t)
		d, err := NewDeliverer(db, o)
		if err != nil {
			t.Fatal(err)
		}
		cancel := run(t, d)
		addChange(t, db, "1", "http://a.example/1", 1)
		addChange(t, db, "2", "http://a.example/2", 1)
		d.Wake()
		if allow {
			testutil.WaitFor(t, 10*time.Second, "both delivered", func() bool { n, _, _ := d.Counts(); return n == 2 })
			if h.get("/by-addr") != 1 || h.get("/by-name") != 1 {
				t.Fatalf("allowed: receiver got %v, want one request on each path", h.n)
			}
		} else {
			testutil.WaitFor(t, 10*time.Second, "two dead letters", func() bool { _, _, n := d.Counts(); return n == 2 })
			st, err := d.Status(10)
			if err != nil {
				t.Fatal(err)
			}
			for _, dl := range st.DeadLetters {
				if dl.Attempts != 1 || !strings.Contains(dl.LastErr, "refused") || !strings.Contains(dl.LastErr, "not a public address") {
					t.Errorf("dead letter %+v: want one attempt, refused as not public", dl)
				}
			}
			if len(st.DeadLetters) != 2 || h.get("/by-addr")+h.get("/by-name") != 0 {
				t.Fatalf("refused: dead letters %+v, receiver got %v", st.DeadLetters, h.n)
			}
		}
		cancel()
		srv.Close()
	}
}

// TestWebhookRedirectNotFollowed: a receiver answering 302 or 307 to
// another path gets the one request; the target gets none, and the
// answer is a failed delivery that says why.
func TestWebhookRedirectNotFollowed(t *testing.T) {
	for _, code := range []int{http.StatusFound, http.StatusTemporaryRedirect} {
		db := storetest.Open(t)
		var h hits
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.add(r.URL.Path)
			if r.URL.Path == "/hook" {
				http.Redirect(w, r, "/internal-admin/delete-everything", code)
			}
		}))
		o := DefaultOptions()
		o.AllowPrivate = true // the receiver is on loopback
		o.Webhooks, o.Attempts, o.Log = []Webhook{{URL: srv.URL + "/hook"}}, 1, testutil.QuietLogger(t)
		d, err := NewDeliverer(db, o)
		if err != nil {
			t.Fatal(err)
		}
		cancel := run(t, d)
		addChange(t, db, "x", "http://a.example/", 1)
		d.Wake()
		testutil.WaitFor(t, 10*time.Second, "a dead letter", func() bool { _, _, n := d.Counts(); return n == 1 })
		st, err := d.Status(10)
		if err != nil {
			t.Fatal(err)
		}
		if len(st.DeadLetters) != 1 || !strings.Contains(st.DeadLetters[0].LastErr, "redirects are not followed") || !strings.Contains(st.DeadLetters[0].LastErr, http.StatusText(code)) {
			t.Errorf("%d: dead letters %+v, want the redirect as the reason", code, st.DeadLetters)
		}
		cancel()
		srv.Close()
		if h.get("/hook") != 1 || h.get("/internal-admin/delete-everything") != 0 {
			t.Fatalf("%d: requests by path %v, want one to /hook and none to the target", code, h.n)
		}
	}
}
