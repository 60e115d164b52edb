package faults

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/freshcrawl/freshcrawl/coordinator"
	"github.com/freshcrawl/freshcrawl/internal/broker"
	"github.com/freshcrawl/freshcrawl/internal/failpoint"
	"github.com/freshcrawl/freshcrawl/lab/sim"
	"github.com/freshcrawl/freshcrawl/proto"
)

// Settings of the crawl the suite runs: short AckWait and timeouts so that
// a fault's consequences play out in seconds.
const (
	ackWait     = 3 * time.Second
	fetchTime   = 5 * time.Second // --timeout
	stopGrace   = 5 * time.Second
	simDelay    = 150 * time.Millisecond // every page response: workers are caught mid-fetch
	workerCount = 3
	concurrency = 4
	budget      = 12 // fetches per second: 4 hosts of at most 1/(0.1 s + simDelay) each
)

// node is one NATS server process of the cluster.
type natsNode struct {
	name          string
	port, cluster int
	dir           string
	p             *proc
}

func (n *natsNode) url() string { return fmt.Sprintf("nats://127.0.0.1:%d", n.port) }

// workerProc is one worker process; inst names this start of it in the
// User-Agent, so the sim's log tells which process made each request.
type workerProc struct {
	id, inst string
	health   string
	viaProxy bool
	p        *proc
}

// window is a span in which requests of some worker starts (or all: nil)
// may have been made without their result being folded: a fault's doing.
type window struct {
	insts    map[string]bool // nil: every worker
	from, to time.Time
}

// env is the system under test: a sim web in this process, a 3-node NATS
// JetStream cluster, a coordinator and workers, each a separate process.
type env struct {
	o       Options
	dir     string
	sim     *sim.Sim
	nodes   []*natsNode
	natsURL string // all three
	coord   *proc
	api     string
	data    string
	workers []*workerProc
	proxy   *proxy
	watch   *watcher
	js      jetstream.JetStream
	nc      *nats.Conn
	seq     int // worker starts
	windows []window
	seeded  time.Time
	log     io.Writer
	tmpfs   bool // the store is on a size-limited tmpfs (disk-full)

	foldBase int64 // folds before the current coordinator (status restarts at 0)
	foldLast int64
	pollMu   sync.Mutex
}

func (e *env) logf(format string, args ...any) {
	fmt.Fprintf(e.log, "%s  %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

// startEnv starts everything and seeds the crawl.
func startEnv(ctx context.Context, o Options) (*env, error) {
	e := &env{o: o, dir: o.Dir, log: o.Progress}
	s, err := sim.New(sim.Config{Hosts: o.Hosts, Pages: o.Pages, Day: 10 * time.Second, Seed: 7, Delay: simDelay})
	if err != nil {
		return nil, err
	}
	if err := s.Start(ctx); err != nil {
		return nil, err
	}
	e.sim = s
	ok := false
	defer func() {
		if !ok {
			e.close()
		}
	}()
	if err := e.startCluster(ctx); err != nil {
		return nil, err
	}
	if e.nc, e.js, err = broker.Connect(e.natsURL, "fault-suite", quietLog()); err != nil {
		return nil, err
	}
	if e.watch, err = newWatcher(e.nodes); err != nil {
		return nil, err
	}
	e.data = o.Data
	if e.data == "" {
		e.data = filepath.Join(e.dir, "coordinator")
	}
	if err := e.startCoordinator(ctx, ""); err != nil {
		return nil, err
	}
	var ups []string
	for _, n := range e.nodes {
		ups = append(ups, fmt.Sprintf("127.0.0.1:%d", n.port))
	}
	if e.proxy, err = newProxy(ups); err != nil {
		return nil, err
	}
	for i := range workerCount {
		if err := e.startWorker(ctx, fmt.Sprintf("w%d", i+1), i == workerCount-1); err != nil {
			return nil, err
		}
	}
	seeds := strings.Join(s.URLs(), "\n") + "\n"
	resp, err := http.Post(e.api+"/api/seeds?name=sim", "application/x-ndjson", strings.NewReader(seeds))
	if err != nil {
		return nil, fmt.Errorf("seed: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("seed: %s", resp.Status)
	}
	e.seeded = time.Now()
	ok = true
	return e, nil
}

func (e *env) startCluster(ctx context.Context) error {
	var routes []string
	for i := range 3 {
		port, err := freePort("127.0.0.1")
		if err != nil {
			return err
		}
		cport, err := freePort("127.0.0.1")
		if err != nil {
			return err
		}
		n := &natsNode{name: fmt.Sprintf("n%d", i+1), port: port, cluster: cport, dir: filepath.Join(e.dir, "nats", fmt.Sprintf("n%d", i+1))}
		e.nodes = append(e.nodes, n)
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", cport))
	}
	var urls []string
	for _, n := range e.nodes {
		urls = append(urls, n.url())
		if err := e.startNode(ctx, n, strings.Join(routes, ",")); err != nil {
			return err
		}
	}
	e.natsURL = strings.Join(urls, ",")
	return nil
}

func (e *env) routes() string {
	var r []string
	for _, n := range e.nodes {
		r = append(r, fmt.Sprintf("nats://127.0.0.1:%d", n.cluster))
	}
	return strings.Join(r, ",")
}

func (e *env) startNode(ctx context.Context, n *natsNode, routes string) error {
	p, err := startProc("nats "+n.name, filepath.Join(e.dir, "nats-"+n.name+".log"), e.o.Binary, nil, "nats-server",
		"--name", n.name, "--listen", fmt.Sprintf("127.0.0.1:%d", n.port), "--cluster", fmt.Sprintf("127.0.0.1:%d", n.cluster),
		"--routes", routes, "--store-dir", n.dir, "--no-advertise")
	if err != nil {
		return err
	}
	n.p = p
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return waitTCP(wctx, fmt.Sprintf("127.0.0.1:%d", n.port), p)
}

// startCoordinator starts the coordinator process, with the failpoint
// named armed to pause its first hit if one is given, and waits for its
// API.
func (e *env) startCoordinator(ctx context.Context, faultPoint string) error {
	port, err := freePort("127.0.0.1")
	if err != nil {
		return err
	}
	args := []string{"coordinator", "--nats", e.natsURL, "--replicas", "3", "--data", e.data,
		"--listen", fmt.Sprintf("127.0.0.1:%d", port), "--budget", strconv.Itoa(budget) + "/s", "--host-rate", "10/s",
		"--policy", "uniform", "--max-in-flight", "32", "--ack-wait", ackWait.String(), "--max-deliver", "5",
		"--replan", "5s",
		// Debug: the check reads every task whose publish failed from
		// the log (publishFailed).
		"--log-level", "debug"}
	var env []string
	if faultPoint != "" {
		env = append(env, failpoint.Env+"="+faultPoint+"=1*pause")
	}
	p, err := startProc("coordinator", filepath.Join(e.dir, "coordinator.log"), e.o.Binary, env, args...)
	if err != nil {
		return err
	}
	e.pollMu.Lock()
	e.coord, e.api = p, fmt.Sprintf("http://127.0.0.1:%d", port)
	e.foldBase += e.foldLast
	e.foldLast = 0
	e.pollMu.Unlock()
	wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	return e.waitActive(wctx)
}

// waitActive waits until the coordinator's /healthz says it is active.
func (e *env) waitActive(ctx context.Context) error {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		if _, err := e.status(); err == nil {
			return nil
		}
		if !e.coord.running() {
			return fmt.Errorf("the coordinator exited: %w", e.coord.exitErr())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("coordinator not active: %w (log %s)", ctx.Err(), e.coord.log)
		case <-t.C:
		}
	}
}

// startWorker starts a worker process named id; viaProxy connects it
// through the proxy that can cut it off.
func (e *env) startWorker(ctx context.Context, id string, viaProxy bool) error {
	e.seq++
	inst := fmt.Sprintf("%s.%d", id, e.seq)
	hport, err := freePort("127.0.0.1")
	if err != nil {
		return err
	}
	natsURL := e.natsURL
	if viaProxy {
		natsURL = "nats://" + e.proxy.addr()
	}
	w := &workerProc{id: id, inst: inst, viaProxy: viaProxy, health: fmt.Sprintf("127.0.0.1:%d", hport)}
	w.p, err = startProc("worker "+inst, filepath.Join(e.dir, "worker-"+id+".log"), e.o.Binary, nil, "worker",
		"--nats", natsURL, "--replicas", "3", "--ack-wait", ackWait.String(), "--max-deliver", "5",
		"--concurrency", strconv.Itoa(concurrency), "--timeout", fetchTime.String(), "--stop-grace", stopGrace.String(),
		"--allow-private", "--worker-id", inst, "--user-agent", "freshcrawl-fault/1 (+inst="+inst+")",
		"--health-listen", w.health, "--log-level", "info")
	if err != nil {
		return err
	}
	replaced := false
	for i, old := range e.workers {
		if old.id == id {
			e.workers[i], replaced = w, true
		}
	}
	if !replaced {
		e.workers = append(e.workers, w)
	}
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	return waitTCP(wctx, w.health, w.p)
}

// held returns how many tasks worker w holds now, from its /healthz.
func (w *workerProc) held() int {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get("http://" + w.health + "/healthz")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := heldRe.FindStringSubmatch(string(b))
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

var heldRe = regexp.MustCompile(`: (\d+) tasks held`)

// status reads the coordinator's status.
func (e *env) status() (coordinator.Status, error) {
	var s coordinator.Status
	e.pollMu.Lock()
	api := e.api
	e.pollMu.Unlock()
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(api + "/api/status")
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return s, fmt.Errorf("status: %s", resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return s, err
	}
	e.pollMu.Lock()
	if s.Fetches > e.foldLast {
		e.foldLast = s.Fetches
	}
	e.pollMu.Unlock()
	return s, nil
}

// folds is the number of results folded since the suite started, summed
// over coordinator restarts, as of the last status read.
func (e *env) folds() int64 {
	e.pollMu.Lock()
	defer e.pollMu.Unlock()
	return e.foldBase + e.foldLast
}

// addWindow records that requests of insts (nil: all workers) between from
// and to may be unfolded.
func (e *env) addWindow(insts []string, from, to time.Time) {
	w := window{from: from.Add(-fetchTime - time.Second), to: to}
	if insts != nil {
		w.insts = map[string]bool{}
		for _, i := range insts {
			w.insts[i] = true
		}
	}
	e.windows = append(e.windows, w)
}

func (e *env) close() {
	for _, w := range e.workers {
		if w.p != nil {
			w.p.kill()
		}
	}
	if e.coord != nil {
		e.coord.kill()
	}
	if e.watch != nil {
		e.watch.close()
	}
	if e.nc != nil {
		e.nc.Close()
	}
	for _, n := range e.nodes {
		if n.p != nil {
			n.p.kill()
		}
	}
	if e.proxy != nil {
		e.proxy.close()
	}
	if e.sim != nil {
		e.sim.Close()
	}
}

// watcher sees every task and result published, through one plain
// subscription on each NATS node (a node that is down leaves two).
type watcher struct {
	mu      sync.Mutex
	tasks   map[string]time.Time // task id → first seen
	results map[string]time.Time // task id of a result → first seen
	conns   []*nats.Conn
}

func newWatcher(nodes []*natsNode) (*watcher, error) {
	w := &watcher{tasks: map[string]time.Time{}, results: map[string]time.Time{}}
	for _, n := range nodes {
		nc, err := nats.Connect(n.url(), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond), nats.DontRandomize(), nats.RetryOnFailedConnect(true))
		if err != nil {
			w.close()
			return nil, err
		}
		w.conns = append(w.conns, nc)
		if _, err := nc.Subscribe(proto.TaskSubjectPrefix+">", func(m *nats.Msg) {
			if t, err := proto.DecodeTask(m.Data); err == nil {
				w.see(w.tasks, t.ID)
			}
		}); err != nil {
			w.close()
			return nil, err
		}
		if _, err := nc.Subscribe(proto.ResultSubjectPrefix+">", func(m *nats.Msg) {
			if r, err := proto.DecodeResult(m.Data); err == nil {
				w.see(w.results, r.TaskID)
			}
		}); err != nil {
			w.close()
			return nil, err
		}
		if err := nc.Flush(); err != nil {
			w.close()
			return nil, err
		}
	}
	return w, nil
}

func (w *watcher) see(m map[string]time.Time, id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := m[id]; !ok {
		m[id] = time.Now()
	}
}

// outstanding returns the tasks seen before t with no result seen before t.
func (w *watcher) outstanding(t time.Time) map[string]bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]bool{}
	for id, at := range w.tasks {
		if at.Before(t) {
			if r, ok := w.results[id]; !ok || !r.Before(t) {
				out[id] = true
			}
		}
	}
	return out
}

// answered reports how many of ids have a result seen.
func (w *watcher) answered(ids map[string]bool) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for id := range ids {
		if _, ok := w.results[id]; ok {
			n++
		}
	}
	return n
}

// has reports whether a result of task id was seen.
func (w *watcher) has(id string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.results[id]
	return ok
}

func (w *watcher) allTasks() map[string]time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]time.Time, len(w.tasks))
	for k, v := range w.tasks {
		out[k] = v
	}
	return out
}

func (w *watcher) close() {
	for _, c := range w.conns {
		c.Close()
	}
}

// publishFailed lists the task ids whose publish the coordinator's log
// says failed: seen on the wire, maybe never stored by JetStream, and
// released by the coordinator (their URLs get new tasks).
func publishFailed(logPath string) (map[string]bool, error) {
	b, err := os.ReadFile(logPath)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	out := map[string]bool{}
	for _, m := range publishFailedRe.FindAllStringSubmatch(string(b), -1) {
		out[m[1]] = true
	}
	return out, nil
}

var publishFailedRe = regexp.MustCompile(`publish task failed[^\n]*publish task ([0-9a-f]+-[0-9a-f]+):`)
