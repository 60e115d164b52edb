package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/freshcrawl/freshcrawl/config"
	"github.com/freshcrawl/freshcrawl/coordinator"
	"github.com/freshcrawl/freshcrawl/internal/node"
	"github.com/freshcrawl/freshcrawl/internal/testutil"
	"github.com/freshcrawl/freshcrawl/proto"
	"github.com/freshcrawl/freshcrawl/store"
)

// site is a test web site whose pages change when the test says so, with a
// /slow page that blocks its first request until released.
type site struct {
	mu        sync.Mutex
	version   map[string]int
	slowHits  atomic.Int32
	slowHeld  chan struct{} // closed when the first /slow request arrives
	slowGate  chan struct{} // closed to release it
	heldOnce  sync.Once
	requests  atomic.Int64
	userAgent atomic.Value
}

func newSite() *site {
	return &site{version: map[string]int{}, slowHeld: make(chan struct{}), slowGate: make(chan struct{})}
}

func (s *site) bump(path string) {
	s.mu.Lock()
	s.version[path]++
	s.mu.Unlock()
}

func (s *site) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	s.userAgent.Store(r.UserAgent())
	switch {
	case r.URL.Path == "/robots.txt":
		fmt.Fprint(w, "User-agent: *\nDisallow: /private/\n")
		return
	case r.URL.Path == "/slow":
		if s.slowHits.Add(1) == 1 {
			s.heldOnce.Do(func() { close(s.slowHeld) })
			select {
			case <-s.slowGate:
			case <-r.Context().Done():
				return
			}
		}
	}
	s.mu.Lock()
	v := s.version[r.URL.Path]
	s.mu.Unlock()
	etag := fmt.Sprintf(`"%s-%d"`, r.URL.Path, v)
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("ETag", etag)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, "<html><head><style>p{}</style><script>var x=%d</script></head><body><h1>Page %s</h1><p>version %d</p><p>static text</p></body></html>", time.Now().UnixNano(), r.URL.Path, v)
}

func testConfig(t *testing.T, dir string) config.Config {
	cfg := config.Default()
	cfg.Data = dir
	cfg.NATSListen = "127.0.0.1:-1"
	cfg.Budget = 40
	cfg.HostRate = 40
	cfg.MaxInFlight = 16
	cfg.AckWait = 2 * time.Second
	cfg.MaxDeliver = 5
	cfg.Replan = time.Second
	cfg.PriorRate = 1
	cfg.AllowPrivate = true
	cfg.Concurrency = 2
	cfg.Policy = "uniform"
	cfg.UserAgent = "freshcrawl-test/1.0"
	return cfg
}

func TestEndToEnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	web := newSite()
	srv := httptest.NewServer(web)
	defer srv.Close()
	defer func() {
		select {
		case <-web.slowGate:
		default:
			close(web.slowGate)
		}
	}()

	cfg := testConfig(t, t.TempDir())
	coord, err := node.Start(ctx, node.Options{Config: cfg, Roles: node.Roles{Coordinator: true}, Log: testutil.QuietLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer coord.Stop()

	// Change events arrive on core NATS.
	var events []proto.ChangeEvent
	var evMu sync.Mutex
	sub, err := coord.NC.Subscribe(proto.ChangeSubjectPrefix+">", func(m *nats.Msg) {
		var ev proto.ChangeEvent
		if json.Unmarshal(m.Data, &ev) == nil {
			evMu.Lock()
			events = append(events, ev)
			evMu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()

	// Worker A starts alone, so it is the one that takes /slow.
	wcfg := cfg
	wcfg.NATS = coord.NATSURL
	wcfg.WorkerID = "A"
	workerA, err := node.Start(ctx, node.Options{Config: wcfg, Roles: node.Roles{Workers: 1}, Log: testutil.QuietLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	var lines, paths []string
	for i := range 8 {
		paths = append(paths, fmt.Sprintf("/p/%d", i))
		lines = append(lines, srv.URL+paths[i])
	}
	paths = append(paths, "/slow", "/cap", "/sel")
	lines = append(lines, srv.URL+"/slow")
	lines = append(lines, fmt.Sprintf(`{"url":"%s/cap","mode":"capture"}`, srv.URL))
	lines = append(lines, fmt.Sprintf(`{"url":"%s/sel","selector":"h1"}`, srv.URL))
	sum, err := coord.Coordinator.AddSeeds(strings.NewReader(strings.Join(lines, "\n")), "test")
	if err != nil || sum.Added != 11 || sum.Bad != 0 {
		t.Fatalf("seed: %+v %v", sum, err)
	}

	select {
	case <-web.slowHeld:
	case <-ctx.Done():
		t.Fatal("worker A never fetched /slow")
	}
	// Kill worker A abruptly while it holds /slow: its connection goes
	// away without an ack or a nak, as when a process dies.
	workerA.NC.Close()
	workerA.Stop()

	wcfg.WorkerID = "B"
	workerB, err := node.Start(ctx, node.Options{Config: wcfg, Roles: node.Roles{Workers: 1}, Log: testutil.QuietLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer workerB.Stop()

	db := coord.DB
	get := func(path string) store.URL {
		u, err := db.Get(srv.URL + path)
		if err != nil {
			t.Fatalf("get %s: %v", path, err)
		}
		return u
	}
	// The task A held is redelivered after AckWait and fetched by B.
	testutil.WaitFor(t, 60*time.Second, "the /slow task to be redelivered and folded", func() bool {
		return !get("/slow").LastOK.IsZero()
	})
	if web.slowHits.Load() < 2 {
		t.Errorf("/slow was requested %d times; the redelivery should have requested it again", web.slowHits.Load())
	}
	// Every page's first version must be stored before any page changes:
	// a page first fetched after its change has nothing to differ from,
	// and (answered with 304 from then on) would never show a change.
	testutil.WaitFor(t, 60*time.Second, "every page to be fetched", func() bool {
		for _, p := range paths {
			if get(p).Hash == "" {
				return false
			}
		}
		return true
	})
	if ua, _ := web.userAgent.Load().(string); ua != cfg.UserAgent {
		t.Errorf("User-Agent %q, want %q", ua, cfg.UserAgent)
	}

	// Change some pages; the crawler must notice, store and announce.
	web.bump("/p/3")
	web.bump("/cap")
	testutil.WaitFor(t, 60*time.Second, "changes to be detected", func() bool {
		return get("/p/3").Changes >= 1 && get("/cap").Changes >= 1
	})
	web.bump("/cap")
	testutil.WaitFor(t, 60*time.Second, "a second capture version", func() bool { return get("/cap").Changes >= 2 })

	text, err := db.Content(srv.URL + "/p/3")
	if err != nil || !strings.Contains(text, "version 1") || strings.Contains(text, "var x") {
		t.Errorf("stored content %q (%v): want the new visible text without script", text, err)
	}
	sel, _ := db.Content(srv.URL + "/sel")
	if strings.TrimSpace(sel) != "Page /sel" {
		t.Errorf("selector content %q, want the h1 only", sel)
	}
	vs, err := db.Versions(srv.URL + "/cap")
	if err != nil || len(vs) < 3 {
		t.Fatalf("capture versions: %d (%v), want the first and two changes", len(vs), err)
	}
	if vs[0].Seq != 1 || vs[2].Seq != 3 || !vs[1].CapturedAt.After(vs[0].CapturedAt) {
		t.Errorf("versions out of order: %+v", vs)
	}
	if n, _ := db.Versions(srv.URL + "/p/3"); len(n) != 0 {
		t.Errorf("a freshness URL kept %d versions; only capture URLs keep every version", len(n))
	}
	// Pages whose script changes on every request but whose text does not
	// are not reported as changed.
	// The changes above may be seen before /p/0's first revisit on a
	// loaded machine, so wait for the revisit rather than assume it.
	testutil.WaitFor(t, 60*time.Second, "/p/0 to be revisited", func() bool { return get("/p/0").Fetches >= 2 })
	if p0 := get("/p/0"); p0.Changes != 0 {
		t.Errorf("/p/0 never changed but %d changes were detected", p0.Changes)
	} else if p0.NotModified < 1 {
		t.Errorf("/p/0: %d fetches, %d not modified; want revisits answered with 304", p0.Fetches, p0.NotModified)
	}
	testutil.WaitFor(t, 10*time.Second, "change events", func() bool {
		evMu.Lock()
		defer evMu.Unlock()
		seen := map[string]bool{}
		for _, ev := range events {
			seen[ev.URL] = true
			if ev.Diff.LinesAdded == 0 && ev.Diff.LinesRemoved == 0 {
				t.Errorf("change event without a diff: %+v", ev)
			}
		}
		return seen[srv.URL+"/p/3"] && seen[srv.URL+"/cap"]
	})
	changes, err := db.Changes(0, 100)
	if err != nil || len(changes) < 3 {
		t.Errorf("change log has %d entries (%v), want ≥ 3", len(changes), err)
	}
	// The coordinator counts a fold just after committing it, so the
	// status may trail the store by a moment: wait for it.
	var st coordinator.Status
	testutil.WaitFor(t, 10*time.Second, "status to count the three changes", func() bool {
		st = coord.Coordinator.Status()
		return st.Changes >= 3
	})
	if st.Fetches == 0 || st.URLs != 11 {
		t.Errorf("status %+v", st)
	}
	if st.InFlight > cfg.MaxInFlight {
		t.Errorf("in flight %d > max %d", st.InFlight, cfg.MaxInFlight)
	}
}
