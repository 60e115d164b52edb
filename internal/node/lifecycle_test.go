package node_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/freshcrawl/freshcrawl/config"
	"github.com/freshcrawl/freshcrawl/internal/broker"
	"github.com/freshcrawl/freshcrawl/internal/node"
	"github.com/freshcrawl/freshcrawl/internal/testutil"
	"github.com/freshcrawl/freshcrawl/proto"
	"github.com/freshcrawl/freshcrawl/store"
)

// slowSite serves pages on several loopback hosts, each response taking
// delay, and counts the page requests it served per URL.
type slowSite struct {
	delay  time.Duration
	mu     sync.Mutex
	served map[string]int
	urls   []string
	srvs   []*http.Server
}

func newSlowSite(t *testing.T, hosts, pages int, delay time.Duration) *slowSite {
	t.Helper()
	s := &slowSite{delay: delay, served: map[string]int{}}
	for h := range hosts {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.%d:0", 20+h))
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: s, ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		s.srvs = append(s.srvs, srv)
		for p := range pages {
			s.urls = append(s.urls, fmt.Sprintf("http://%s/p/%d", ln.Addr(), p))
		}
	}
	t.Cleanup(func() {
		for _, srv := range s.srvs {
			srv.Close()
		}
	})
	return s
}

func (s *slowSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/robots.txt" {
		http.NotFound(w, r)
		return
	}
	s.mu.Lock()
	s.served["http://"+r.Host+r.URL.Path]++
	s.mu.Unlock()
	select {
	case <-time.After(s.delay):
	case <-r.Context().Done():
	}
	fmt.Fprintf(w, "<p>%s %d</p>", r.URL.Path, time.Now().UnixNano()/int64(time.Second))
}

func (s *slowSite) total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, v := range s.served {
		n += v
	}
	return n
}

// dispatched records every task id published, from a plain subscription
// on the task subjects (the single embedded server delivers each).
type dispatched struct {
	mu  sync.Mutex
	ids map[string]bool
	sub *nats.Subscription
}

func watchTasks(t *testing.T, url string) *dispatched {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	d := &dispatched{ids: map[string]bool{}}
	d.sub, err = nc.Subscribe(proto.TaskSubjectPrefix+">", func(m *nats.Msg) {
		if task, err := proto.DecodeTask(m.Data); err == nil {
			d.mu.Lock()
			d.ids[task.ID] = true
			d.mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return d
}

func (d *dispatched) all() map[string]bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[string]bool, len(d.ids))
	for k := range d.ids {
		out[k] = true
	}
	return out
}

// inStream returns the task ids in the task stream.
func inStream(t *testing.T, js jetstream.JetStream) map[string]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, proto.TaskStream)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for seq := uint64(1); ; {
		m, err := st.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(proto.TaskSubjectPrefix+">"))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if task, err := proto.DecodeTask(m.Data); err == nil {
			out[task.ID] = true
		}
		seq = m.Sequence + 1
	}
}

func startWorker(t *testing.T, ctx context.Context, natsURL string, grace time.Duration, id string) *node.Node {
	t.Helper()
	cfg := testConfig(t, t.TempDir())
	cfg.NATS = natsURL
	cfg.StopGrace = grace
	cfg.WorkerID = id
	cfg.AckWait = 5 * time.Second
	cfg.MaxDeliver = 2
	n, err := node.Start(ctx, node.Options{Config: cfg, Roles: node.Roles{Workers: 1}, Log: testutil.QuietLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Rolling restarts of every worker under load, each stopped as on SIGTERM
// with a grace period shorter than some fetches: no task ends as failed
// although MaxDeliver is 2 (a task handed back is not a delivery), every
// task dispatched is folded or still queued, and the requests the site
// served match the folded fetches but for the fetches abandoned when the
// grace ran out.
func TestRollingWorkerRestartsLoseNothing(t *testing.T) {
	rounds := 20
	if testing.Short() {
		rounds = 5
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	site := newSlowSite(t, 6, 4, 150*time.Millisecond)
	cfg := testConfig(t, t.TempDir())
	cfg.Budget, cfg.HostRate = 60, 20
	cfg.AckWait, cfg.MaxDeliver = 5*time.Second, 2
	cfg.MaxInFlight = 32
	coord, err := node.Start(ctx, node.Options{Config: cfg, Roles: node.Roles{Coordinator: true}, Log: testutil.QuietLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer coord.Stop()
	tasks := watchTasks(t, coord.NATSURL)
	if _, err := coord.Coordinator.AddSeeds(strings.NewReader(strings.Join(site.urls, "\n")), "t"); err != nil {
		t.Fatal(err)
	}
	// A grace of 100 ms against fetches of 150 ms: some are abandoned
	// and handed back, the rest finish.
	const grace = 100 * time.Millisecond
	workers := []*node.Node{startWorker(t, ctx, coord.NATSURL, grace, "w0-0"), startWorker(t, ctx, coord.NATSURL, grace, "w1-0")}
	var handedBack, abandoned int64
	retire := func(n *node.Node) {
		n.Stop()
		for _, w := range n.Workers {
			handedBack += w.HandedBack()
			abandoned += w.Abandoned()
		}
	}
	for r := 1; r <= rounds; r++ {
		for i := range workers {
			before := coord.Coordinator.Status().Fetches
			testutil.WaitFor(t, 30*time.Second, "the crawl to make progress", func() bool { return coord.Coordinator.Status().Fetches >= before+2 })
			retire(workers[i])
			workers[i] = startWorker(t, ctx, coord.NATSURL, grace, fmt.Sprintf("w%d-%d", i, r))
		}
	}
	for _, w := range workers {
		retire(w)
	}
	t.Logf("%d rounds: %d tasks handed back, %d of them abandoned mid-fetch; %d requests served", rounds, handedBack, abandoned, site.total())
	if handedBack == 0 {
		t.Error("no task was handed back: the test did not exercise stopping with tasks held")
	}
	testutil.WaitFor(t, 30*time.Second, "every result folded", func() bool {
		st := coord.Coordinator.Status()
		return st.Queue.Results == 0 && st.Queue.AckPending == 0
	})
	st := coord.Coordinator.Status()
	if st.Failed != 0 {
		t.Errorf("%d tasks failed", st.Failed)
	}
	// Every dispatched task is folded, or still queued for the next worker.
	// The dispatched set is read first: the coordinator goes on
	// dispatching into the queue as folds free slots, and a task published
	// after the stream was read would look lost.
	dispatched := tasks.all()
	folded := map[string]bool{}
	stored := 0
	failed := int64(0)
	if err := coord.DB.FoldMarks(func(id string, _ time.Time) error { folded[id] = true; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := coord.DB.ForEach(func(u store.URL) error { stored += int(u.Fetches); failed += u.Failed; return nil }); err != nil {
		t.Fatal(err)
	}
	queued := inStream(t, coord.JS)
	lost := 0
	for id := range dispatched {
		if !folded[id] && !queued[id] {
			lost++
			t.Errorf("task %s was dispatched and is neither folded nor queued", id)
		}
	}
	if failed != 0 {
		t.Errorf("%d failures recorded in the store", failed)
	}
	served := site.total()
	if d := served - stored; d < 0 || int64(d) > abandoned {
		t.Errorf("served %d requests, folded %d fetches: the difference must be the requests abandoned mid-fetch (at most %d)", served, stored, abandoned)
	}
	t.Logf("dispatched %d tasks, folded %d, queued %d, lost %d", len(dispatched), len(folded), len(queued), lost)
}

// A second coordinator on the same NATS refuses to start with
// --standby=false, naming the active one; as a standby on the same data
// directory it takes over when the active one stops, and the tasks in
// flight are kept, not purged. A standby with another store refuses the
// takeover.
func TestSecondCoordinatorStandbyAndTakeover(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv := testutil.StartNATS(t)
	data := t.TempDir()
	mk := func(dir string, standby bool) config.Config {
		cfg := testConfig(t, dir)
		cfg.NATS = srv.ClientURL()
		cfg.Listen = "127.0.0.1:0"
		cfg.Standby = standby
		cfg.LeaseTTL = 3 * time.Second
		cfg.Budget = 5
		return cfg
	}
	a, err := node.Start(ctx, node.Options{Config: mk(data, true), Roles: node.Roles{Coordinator: true, HTTP: true}, Log: testutil.QuietLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Coordinator.AddSeeds(strings.NewReader("http://127.0.0.1:9/a\nhttp://127.0.0.2:9/b\nhttp://127.0.0.3:9/c"), "t"); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 20*time.Second, "tasks dispatched", func() bool { return len(inStream(t, a.JS)) == 3 })
	queued := inStream(t, a.JS)

	_, err = node.Start(ctx, node.Options{Config: mk(t.TempDir(), false), Roles: node.Roles{Coordinator: true}, Log: testutil.QuietLogger(t)})
	if !errors.Is(err, broker.ErrLeaseHeld) || !strings.Contains(err.Error(), a.HTTPAddr()) {
		t.Fatalf("second coordinator with --standby=false: %v, want ErrLeaseHeld naming the active one's API", err)
	}

	// A standby on the same data directory (the same volume).
	type started struct {
		n   *node.Node
		err error
	}
	bc := make(chan started, 1)
	go func() {
		n, err := node.Start(ctx, node.Options{Config: mk(data, true), Roles: node.Roles{Coordinator: true, HTTP: true}, Log: testutil.QuietLogger(t)})
		bc <- started{n, err}
	}()
	// A standby with a store of its own.
	cc := make(chan started, 1)
	go func() {
		n, err := node.Start(ctx, node.Options{Config: mk(t.TempDir(), true), Roles: node.Roles{Coordinator: true}, Log: testutil.QuietLogger(t)})
		cc <- started{n, err}
	}()
	select {
	case r := <-bc:
		t.Fatalf("standby started while the active coordinator runs: %v", r.err)
	case <-time.After(2 * time.Second):
	}
	a.Stop() // releases the lease
	// Both standbys race for it. The one with another store refuses when
	// it wins (and lets the lease go); the one on the same volume takes
	// over.
	var b *node.Node
	var cErr error
	cDone := false
	for b == nil {
		select {
		case r := <-bc:
			if r.err != nil {
				t.Fatalf("standby on the same volume: %v", r.err)
			}
			b = r.n
		case r := <-cc:
			if r.n != nil {
				r.n.Stop()
				t.Fatal("a coordinator with another store took over the crawl")
			}
			cErr, cDone = r.err, true
		case <-time.After(60 * time.Second):
			t.Fatal("no takeover")
		}
	}
	defer b.Stop()
	// The previous coordinator's tasks are still there, adopted.
	now := inStream(t, b.JS)
	for id := range queued {
		if !now[id] {
			t.Errorf("task %s of the previous coordinator was dropped at takeover", id)
		}
	}
	resp, err := http.Get("http://" + b.HTTPAddr() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "role: active coordinator") {
		t.Errorf("/healthz of the new active: %d %q", resp.StatusCode, body)
	}
	if !cDone {
		// It is still waiting: b's clean stop hands it the lease.
		b.Stop()
		select {
		case r := <-cc:
			if r.n != nil {
				r.n.Stop()
			}
			cErr = r.err
		case <-time.After(60 * time.Second):
			t.Fatal("the standby with another store neither took over nor refused")
		}
	}
	if !errors.Is(cErr, node.ErrWrongStore) || !strings.Contains(cErr.Error(), "--adopt-crawl") {
		t.Errorf("standby with another store: %v, want ErrWrongStore with the way out", cErr)
	}
}

// Processes start before NATS is up: a worker and a coordinator wait,
// say so on /healthz, and connect once NATS comes.
func TestStartBeforeNATS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	natsAddr := ln.Addr().String()
	ln.Close()
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	healthAddr := hl.Addr().String()
	hl.Close()

	wcfg := testConfig(t, t.TempDir())
	wcfg.NATS = "nats://" + natsAddr
	wcfg.HealthListen = healthAddr
	ccfg := testConfig(t, t.TempDir())
	ccfg.NATS = "nats://" + natsAddr
	ccfg.Listen = "127.0.0.1:0"
	type started struct {
		n   *node.Node
		err error
	}
	wc, cc := make(chan started, 1), make(chan started, 1)
	go func() {
		n, err := node.Start(ctx, node.Options{Config: wcfg, Roles: node.Roles{Workers: 1}, Log: testutil.QuietLogger(t)})
		wc <- started{n, err}
	}()
	go func() {
		n, err := node.Start(ctx, node.Options{Config: ccfg, Roles: node.Roles{Coordinator: true, HTTP: true}, Log: testutil.QuietLogger(t)})
		cc <- started{n, err}
	}()
	var body string
	testutil.WaitFor(t, 20*time.Second, "the worker's /healthz to say it waits for NATS", func() bool {
		resp, err := http.Get("http://" + healthAddr + "/healthz")
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = string(b)
		return resp.StatusCode == http.StatusServiceUnavailable && strings.Contains(body, "nats: connecting")
	})
	srv, err := broker.StartEmbedded(broker.EmbeddedOptions{Dir: filepath.Join(t.TempDir(), "nats"), Listen: natsAddr})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		srv.Shutdown()
		srv.WaitForShutdown()
	}()
	for _, ch := range []chan started{wc, cc} {
		select {
		case r := <-ch:
			if r.err != nil {
				t.Fatal(r.err)
			}
			defer r.n.Stop()
		case <-time.After(60 * time.Second):
			t.Fatal("a process did not connect once NATS came up")
		}
	}
	testutil.WaitFor(t, 20*time.Second, "the worker's /healthz to say connected", func() bool {
		resp, err := http.Get("http://" + healthAddr + "/healthz")
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK && strings.Contains(string(b), "nats: connected")
	})
}

// A second run on a data directory in use fails on the store's lock, not
// on the NATS port it would share: the lock is taken before NATS starts
// on the first run's JetStream files.
func TestSecondRunFailsOnLockFirst(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	natsAddr := ln.Addr().String()
	ln.Close()
	cfg := testConfig(t, dir)
	cfg.NATSListen = natsAddr
	a, err := node.Start(ctx, node.Options{Config: cfg, Roles: node.Roles{Coordinator: true}, Log: testutil.QuietLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Stop()
	_, err = node.Start(ctx, node.Options{Config: cfg, Roles: node.Roles{Coordinator: true}, Log: testutil.QuietLogger(t)})
	if !errors.Is(err, store.ErrLocked) {
		t.Fatalf("second run on the same data directory: %v, want the store's lock error", err)
	}
	if errors.Is(err, broker.ErrAddrInUse) {
		t.Errorf("the second run reached the NATS port before the lock: %v", err)
	}
}

// A process with the embedded server connects to it through memory, not
// loopback TCP (system calls on both sides of every message, all in this
// process), while other processes still reach it on its listen address.
func TestEmbeddedServerConnectsInProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := node.Start(ctx, node.Options{Config: testConfig(t, t.TempDir()), Roles: node.Roles{Coordinator: true}, Log: testutil.QuietLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	if addr := n.NC.ConnectedAddr(); addr != "pipe" {
		t.Errorf("the coordinator's connection goes to %q, want the in-memory pipe", addr)
	}
	nc, err := nats.Connect(n.NATSURL)
	if err != nil {
		t.Fatalf("another client on %s: %v", n.NATSURL, err)
	}
	defer nc.Close()
	if err := nc.FlushTimeout(10 * time.Second); err != nil {
		t.Errorf("another client on %s: %v", n.NATSURL, err)
	}
}

// A coordinator that cannot reach NATS for longer than half its lease's
// TTL steps down (no dispatching, no folding), and takes its lease back
// when NATS returns: the crawl goes on in the same process.
func TestCoordinatorStepsDownAndResumesAfterNATSOutage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	natsAddr := ln.Addr().String()
	ln.Close()
	natsDir := filepath.Join(t.TempDir(), "nats")
	srv, err := broker.StartEmbedded(broker.EmbeddedOptions{Dir: natsDir, Listen: natsAddr})
	if err != nil {
		t.Fatal(err)
	}
	site := newSlowSite(t, 2, 3, 10*time.Millisecond)
	cfg := testConfig(t, t.TempDir())
	cfg.NATS = "nats://" + natsAddr
	cfg.LeaseTTL = 3 * time.Second
	cfg.Listen = "127.0.0.1:0"
	n, err := node.Start(ctx, node.Options{Config: cfg, Roles: node.Roles{Coordinator: true, Workers: 1, HTTP: true}, Log: testutil.QuietLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	if _, err := n.Coordinator.AddSeeds(strings.NewReader(strings.Join(site.urls, "\n")), "t"); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 30*time.Second, "fetches", func() bool { return site.total() >= 3 })
	storeFence := func() uint64 {
		_, f, err := n.DB.Identity()
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	fence := storeFence()
	srv.Shutdown()
	srv.WaitForShutdown()
	health := func() (int, string) {
		resp, err := http.Get("http://" + n.HTTPAddr() + "/healthz")
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	var last string
	defer func() { t.Logf("last /healthz: %s", last) }()
	testutil.WaitFor(t, 30*time.Second, "the coordinator to step down", func() bool {
		code, body := health()
		last = body
		return code == http.StatusServiceUnavailable && strings.Contains(body, "stepped down")
	})
	srv, err = broker.StartEmbedded(broker.EmbeddedOptions{Dir: natsDir, Listen: natsAddr})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		srv.Shutdown()
		srv.WaitForShutdown()
	}()
	testutil.WaitFor(t, 60*time.Second, "the coordinator active again", func() bool {
		code, body := health()
		return code == http.StatusOK && strings.Contains(body, "role: active coordinator")
	})
	if f := storeFence(); f <= fence {
		t.Errorf("store fence %d after taking the lease back, want above %d", f, fence)
	}
	before := site.total()
	testutil.WaitFor(t, 30*time.Second, "the crawl to go on", func() bool { return site.total() >= before+3 })
}
