package node_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/freshcrawl/freshcrawl/internal/node"
	"github.com/freshcrawl/freshcrawl/internal/testutil"
	"github.com/freshcrawl/freshcrawl/proto"
	"github.com/freshcrawl/freshcrawl/store"
)

// A task whose worker never finishes it is delivered MaxDeliver times and
// then recorded as failed, and removed from the work queue.
func TestFailedAfterMaxDeliver(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg := testConfig(t, t.TempDir())
	cfg.MaxDeliver = 2
	cfg.AckWait = time.Second
	coord, err := node.Start(ctx, node.Options{Config: cfg, Roles: node.Roles{Coordinator: true}, Log: testutil.QuietLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer coord.Stop()
	url := "http://127.0.0.1:9/never"
	if _, err := coord.Coordinator.AddSeeds(strings.NewReader(url), "t"); err != nil {
		t.Fatal(err)
	}
	// A worker that takes tasks and dies before answering, every time.
	cons, err := coord.JS.Consumer(ctx, proto.TaskStream, proto.TaskConsumer)
	if err != nil {
		t.Fatal(err)
	}
	deliveries := 0
	testutil.WaitFor(t, 40*time.Second, "the task to be recorded as failed", func() bool {
		if b, err := cons.Fetch(1, jetstream.FetchMaxWait(200*time.Millisecond)); err == nil {
			for range b.Messages() {
				deliveries++
			}
		}
		u, err := coord.DB.Get(url)
		return err == nil && u.Failed >= 1
	})
	u, _ := coord.DB.Get(url)
	if u.LastErrKind != string(proto.ErrFailed) || u.ErrorKinds[string(proto.ErrFailed)] < 1 {
		t.Errorf("record %+v: want the failure recorded with kind %q", u, proto.ErrFailed)
	}
	if deliveries < cfg.MaxDeliver {
		t.Errorf("%d deliveries before failing, want %d", deliveries, cfg.MaxDeliver)
	}
	// The coordinator counts the failure just after it is stored: wait for
	// the count rather than read it at the moment the record shows it.
	testutil.WaitFor(t, 10*time.Second, "status to count the failed task", func() bool {
		st := coord.Coordinator.Status()
		return st.Failed >= 1 && st.Errors[string(proto.ErrFailed)] >= 1
	})
}

// 503 with Retry-After slows the host down for every worker, and the host
// recovers its rate once it answers again.
func TestRetryAfterSlowsHostForAllWorkers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var mu sync.Mutex
	var times []time.Time
	var codes []int
	served := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		served++
		n := served
		code := http.StatusOK
		if n == 3 || n == 4 {
			code = http.StatusServiceUnavailable
		}
		times, codes = append(times, time.Now()), append(codes, code)
		mu.Unlock()
		if code != http.StatusOK {
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(code)
			return
		}
		fmt.Fprintf(w, "<p>page %s</p>", r.URL.Path)
	}))
	defer srv.Close()

	cfg := testConfig(t, t.TempDir())
	cfg.HostRate = 20 // 50 ms between requests when healthy
	cfg.Budget = 20
	n, err := node.Start(ctx, node.Options{Config: cfg, Roles: node.Roles{Coordinator: true, Workers: 2}, Log: testutil.QuietLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	var seeds []string
	for i := range 4 {
		seeds = append(seeds, fmt.Sprintf("%s/p/%d", srv.URL, i))
	}
	if _, err := n.Coordinator.AddSeeds(strings.NewReader(strings.Join(seeds, "\n")), "t"); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 40*time.Second, "the two 503s", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return served >= 4
	})
	mu.Lock()
	retryEnd := times[3].Add(2 * time.Second) // the second 503's Retry-After
	mu.Unlock()
	// Recovery: once the Retry-After has passed the host is fetched at its
	// normal rate (20/s) again. Ten more requests then come within a
	// deadline of 10 s; a host still held at one request per Retry-After
	// would need 20 s.
	testutil.WaitFor(t, time.Until(retryEnd.Add(10*time.Second)), "ten requests after the Retry-After expired (the host did not recover its rate)", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return served >= 14
	})
	mu.Lock()
	defer mu.Unlock()
	for i := 1; i < len(times); i++ {
		gap := times[i].Sub(times[i-1])
		if codes[i-1] == http.StatusServiceUnavailable && gap < 1900*time.Millisecond {
			t.Errorf("request %d came %s after a 503 with Retry-After: 2", i, gap)
		}
	}
	// The durable politeness state has recovered too: no error streak, no
	// halving of its rate, and no hold beyond the last Retry-After, which
	// counts from when the worker had the answer, a moment after the
	// server sent it.
	h := hostRecord(t, n, "127.0.0.1")
	if h.ServerErrs != 0 || h.Slowdown != 0 || h.BackoffTill.After(retryEnd.Add(500*time.Millisecond)) {
		t.Errorf("host after recovery: %+v, want no errors or slowdown and a hold until %s at the latest", h, retryEnd)
	}
}

// A page that answers 500 backs off on its own: its next fetch is put off
// by twice its base (a minute at least) from when the failure was known,
// durably, while the healthy page of the same host keeps its rate and the
// host is neither slowed nor held.
func TestServerErrorsBackOffTheURLNotItsHost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var mu sync.Mutex
	served := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		served[r.URL.Path]++
		mu.Unlock()
		if r.URL.Path == "/broken" {
			http.Error(w, "broken", http.StatusInternalServerError)
			return
		}
		fmt.Fprint(w, "<p>ok</p>")
	}))
	defer srv.Close()
	cfg := testConfig(t, t.TempDir())
	cfg.HostRate, cfg.Budget = 20, 20
	n, err := node.Start(ctx, node.Options{Config: cfg, Roles: node.Roles{Coordinator: true, Workers: 2}, Log: testutil.QuietLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	if _, err := n.Coordinator.AddSeeds(strings.NewReader(srv.URL+"/broken\n"+srv.URL+"/ok"), "t"); err != nil {
		t.Fatal(err)
	}
	// Twenty requests of the healthy page take a second or two at its
	// rate; the broken one's next fetch is two minutes away.
	testutil.WaitFor(t, 40*time.Second, "the healthy page's requests", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return served["/ok"] >= 20
	})
	mu.Lock()
	broken := served["/broken"]
	mu.Unlock()
	if broken != 1 {
		t.Errorf("the 500 page got %d requests while its neighbour got 20, want 1", broken)
	}
	u, err := n.DB.Get(srv.URL + "/broken")
	if err != nil {
		t.Fatal(err)
	}
	if u.ErrStreak != 1 || u.LastErrKind != string(proto.ErrServerError) || u.NextDue.Sub(u.LastFetch) < 2*time.Minute-time.Second {
		t.Errorf("record of the 500 page: streak %d kind %q next fetch %s after the last; want 1, server-error, 2 min", u.ErrStreak, u.LastErrKind, u.NextDue.Sub(u.LastFetch))
	}
	if h := hostRecord(t, n, "127.0.0.1"); h.Slowdown != 0 || !h.BackoffTill.IsZero() {
		t.Errorf("host %+v: a 500 of one page must not slow or hold its host", h)
	}
}

// hostRecord is the stored politeness state of host.
func hostRecord(t *testing.T, n *node.Node, host string) store.Host {
	t.Helper()
	hosts, err := n.DB.Hosts()
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hosts {
		if h.Host == host {
			return h
		}
	}
	t.Fatalf("no politeness state stored for host %s (have %+v)", host, hosts)
	return store.Host{}
}

// A restarted coordinator gets its URLs, their history and their schedule
// back from bbolt.
func TestRestartKeepsEverything(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	web := newSite()
	srv := httptest.NewServer(web)
	defer srv.Close()
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	n, err := node.Start(ctx, node.Options{Config: cfg, Roles: node.Roles{Coordinator: true, Workers: 1}, Log: testutil.QuietLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	urls := []string{srv.URL + "/a", srv.URL + "/b", srv.URL + "/c"}
	if _, err := n.Coordinator.AddSeeds(strings.NewReader(strings.Join(urls, "\n")), "t"); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 30*time.Second, "two fetches of every URL", func() bool {
		for _, u := range urls {
			if r, err := n.DB.Get(u); err != nil || r.Fetches < 2 {
				return false
			}
		}
		return true
	})
	n.Stop()
	n2, err := node.Start(ctx, node.Options{Config: cfg, Roles: node.Roles{Coordinator: true}, Log: testutil.QuietLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer n2.Stop()
	for _, u := range urls {
		r, err := n2.DB.Get(u)
		if err != nil || r.Fetches < 2 || r.Hash == "" || r.NextDue.IsZero() || r.Interval <= 0 {
			t.Errorf("%s after restart: %+v (%v)", u, r, err)
		}
	}
	testutil.WaitFor(t, 10*time.Second, "the schedule to be loaded", func() bool { return n2.Coordinator.Status().URLs == len(urls) })
}
