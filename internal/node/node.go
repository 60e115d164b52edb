// Package node assembles one freshcrawl process from its parts: the
// embedded NATS server (unless an external URL is given), the coordinator
// with its store, lease and HTTP API, and in-process workers. `freshcrawl
// run`, `coordinator`, `worker`, `demo` and the end-to-end tests all start
// through here, so they run the same code.
//
// A process starts whether or not NATS is up: it connects when NATS comes
// and reconnects, forever, when it goes. Its state is on /healthz (the
// coordinator's API address, or a worker's --health-listen).
package node

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/freshcrawl/freshcrawl/config"
	"github.com/freshcrawl/freshcrawl/coordinator"
	"github.com/freshcrawl/freshcrawl/internal/api"
	"github.com/freshcrawl/freshcrawl/internal/broker"
	"github.com/freshcrawl/freshcrawl/internal/notify"
	"github.com/freshcrawl/freshcrawl/internal/schedule"
	"github.com/freshcrawl/freshcrawl/internal/source"
	"github.com/freshcrawl/freshcrawl/internal/version"
	"github.com/freshcrawl/freshcrawl/store"
	"github.com/freshcrawl/freshcrawl/worker"
	"github.com/freshcrawl/freshcrawl/worker/probeparse"
	"github.com/freshcrawl/freshcrawl/worker/robots"
)

// Roles says what a process runs.
type Roles struct {
	Coordinator bool
	Workers     int  // in-process workers
	HTTP        bool // serve the API on cfg.Listen (coordinator only)
	// ConsoleEvery is the sampling period of the console's charts (0:
	// the default); tests shorten it.
	ConsoleEvery time.Duration
}

// Node is a started process.
type Node struct {
	Cfg     config.Config
	Log     *slog.Logger
	NATSURL string
	NC      *nats.Conn
	JS      jetstream.JetStream
	Link    *broker.Link
	DB      *store.DB
	// lease is the coordinator lease held now (nil: none yet, or not a
	// coordinator); it changes when the lease is lost and taken back.
	lease atomic.Pointer[broker.Lease]
	// Coordinator is the coordinator the node started with; after a
	// takeover of its lease by another coordinator and back, the node runs
	// a new one on the reopened store.
	Coordinator *coordinator.Coordinator
	coord       atomic.Pointer[coordinator.Coordinator]
	leaseKV     jetstream.KeyValue
	holder      string
	Workers     []*worker.Worker
	srv         *server.Server
	http        *http.Server
	httpLn      net.Listener
	handler     atomic.Pointer[http.Handler]
	phase       atomic.Pointer[string] // what a coordinator not yet active is doing
	cancel      context.CancelFunc
	wg          sync.WaitGroup
	errc        chan error
	stopOnce    sync.Once
	// workerReg holds the in-process workers' series (nil without
	// workers); workerMetrics feeds it.
	workerReg     *prometheus.Registry
	workerMetrics *worker.Metrics
	// tls is set when the HTTP server serves TLS (--tls-cert).
	tls bool
}

// Options say what a process runs and how.
type Options struct {
	// Config is the process's configuration.
	Config config.Config
	// Roles are the parts it runs.
	Roles Roles
	// Policy overrides the configured policy (benchmarks); nil uses
	// Config.Policy and Config.Objective.
	Policy schedule.Policy
	// Log receives structured logs (default slog.Default()).
	Log *slog.Logger
	// Sources are keyword-search sources added to those of the config
	// file (benchmarks, tests).
	Sources []source.Source
}

// ErrWrongStore is matched by the error of a coordinator that would take
// over a crawl with a store that is not the crawl's.
var ErrWrongStore = errors.New("the store is not the crawl's")

// Start starts the roles and returns once everything is up: for a
// coordinator, once it holds the lease and runs (a standby waits in Start
// until the active coordinator stops; ctx ends the wait). The process then
// runs until ctx is done or Stop is called; Wait returns the first error.
func Start(ctx context.Context, o Options) (*Node, error) {
	cfg, roles := o.Config, o.Roles
	if o.Log == nil {
		o.Log = slog.Default()
	}
	n := &Node{Cfg: cfg, Log: o.Log, errc: make(chan error, 8)}
	n.setPhase("starting")
	ok := false
	defer func() {
		if !ok {
			n.Stop()
		}
	}()
	rctx := n.runContext(ctx)
	if err := n.startNATS(roles); err != nil {
		return nil, err
	}
	if err := n.dial(roles); err != nil {
		return nil, err
	}
	if roles.Workers > 0 {
		n.newWorkerMetrics(roles)
	}
	if err := n.startHTTP(roles); err != nil {
		return nil, err
	}
	if err := n.waitNATS(ctx, rctx); err != nil {
		return nil, err
	}
	settings := cfg.BrokerSettings()
	if roles.Coordinator {
		if err := n.startCoordinator(ctx, rctx, o, settings); err != nil {
			return nil, err
		}
	}
	if roles.Workers > 0 {
		if err := n.startWorkers(ctx, rctx, roles, settings); err != nil {
			return nil, err
		}
	}
	ok = true
	return n, nil
}

// runContext returns the context the node's parts run under: it ends with
// ctx or with Stop, whichever comes first.
func (n *Node) runContext(ctx context.Context) context.Context {
	rctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	n.goRun(func() error {
		select {
		case <-ctx.Done():
			cancel()
		case <-rctx.Done():
		}
		return nil
	})
	return rctx
}

// startNATS starts the embedded NATS server unless the config names an
// external one.
func (n *Node) startNATS(roles Roles) error {
	cfg := n.Cfg
	n.NATSURL = cfg.NATS
	if n.NATSURL != "" {
		return nil
	}
	if roles.Coordinator {
		// The store's lock first: a second process on this data
		// directory must fail on it before it starts a NATS server on
		// the JetStream files of the first.
		db, err := store.OpenDir(cfg.Data, store.Options{})
		if err != nil {
			return err
		}
		n.DB = db
	}
	dir := filepath.Join(cfg.Data, "nats")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	srv, err := broker.StartEmbedded(broker.EmbeddedOptions{Dir: dir, Listen: cfg.NATSListen, SyncAlways: cfg.SyncAlways})
	if err != nil {
		return err
	}
	n.srv = srv
	n.NATSURL = srv.ClientURL()
	n.Log.Info("embedded NATS started", "url", n.NATSURL, "dir", dir)
	return nil
}

// dial makes the node's connection to NATS; it need not be up yet.
func (n *Node) dial(roles Roles) error {
	cfg := n.Cfg
	name := "freshcrawl"
	if roles.Coordinator {
		name += "-coordinator"
	} else {
		name += "-worker"
	}
	var natsOpts []nats.Option
	var err error
	if cfg.NATS != "" {
		// The embedded server runs on loopback without authentication;
		// an external one may require any of these.
		if natsOpts, err = cfg.NATSAuth().Options(); err != nil {
			return err
		}
	}
	if n.srv != nil {
		// This process's own connection to its embedded server goes
		// through memory: over loopback TCP, every task, result,
		// acknowledgement and stream reply costs a system call on each
		// side (the largest single share of the coordinator's CPU at
		// its ceiling, docs/benchmarks.md "Coordinator ceiling"). Other
		// processes still reach the server on its listen address.
		natsOpts = append(natsOpts, nats.InProcessServer(n.srv))
	}
	link, err := broker.Dial(n.NATSURL, name, n.Log, natsOpts...)
	if err != nil {
		return err
	}
	n.Link, n.NC, n.JS = link, link.NC, link.JS
	return nil
}

// newWorkerMetrics makes one registry for the process's workers, with
// the Go runtime and process collectors when no coordinator's registry
// has them.
func (n *Node) newWorkerMetrics(roles Roles) {
	n.workerReg = prometheus.NewRegistry()
	n.workerMetrics = worker.NewMetrics(n.workerReg)
	if !roles.Coordinator {
		n.workerReg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
}

// startHTTP serves a coordinator's API, or a worker's /healthz and
// /metrics, if the roles and config ask for it.
func (n *Node) startHTTP(roles Roles) error {
	cfg := n.Cfg
	if roles.Coordinator && roles.HTTP {
		// Up before anything waits, so that /healthz says what it waits
		// for. Every route but /healthz needs a token once any is set.
		tokens := api.NewTokens(cfg.APITokens, cfg.APIReadTokens)
		wrap := func(h http.Handler) http.Handler {
			// Without a token, the Host names of the API are what keeps a
			// rebinding page off it; a token is what a page cannot have.
			var hosts *api.HostList
			if !tokens.Enabled() {
				hosts = api.NewHostList(n.httpLn.Addr(), cfg.Listen, cfg.APIHosts)
			}
			return tokens.Wrap(api.NewGuard(hosts).Wrap(h))
		}
		if err := n.listen(cfg, cfg.Listen, "HTTP API", wrap); err != nil {
			return err
		}
		n.setHandler(http.HandlerFunc(n.serveStarting))
		if !tokens.Enabled() && !loopback(n.httpLn.Addr()) {
			n.Log.Warn("the HTTP API listens beyond loopback without a token: anyone who reaches it can add seeds, delete URLs and read everything; set --api-token (and --tls-cert/--tls-key)", "addr", n.httpLn.Addr().String())
		}
	}
	if !roles.Coordinator {
		// A worker process serves /metrics and /healthz on --listen, or
		// /healthz alone on --health-listen.
		addr := cfg.HealthListen
		if roles.HTTP {
			if addr != "" && addr != cfg.Listen {
				return fmt.Errorf("worker: --listen %s and --health-listen %s: give one (--listen serves /healthz too)", cfg.Listen, addr)
			}
			addr = cfg.Listen
		}
		if addr != "" {
			if err := n.listen(cfg, addr, "worker health and metrics", nil); err != nil {
				return err
			}
			n.setHandler(http.HandlerFunc(n.serveWorkerHealth))
		}
	}
	return nil
}

// waitNATS waits until NATS is reachable, then watches the connection
// until rctx ends.
func (n *Node) waitNATS(ctx, rctx context.Context) error {
	link := n.Link
	if !link.NC.IsConnected() {
		n.setPhase("waiting for NATS at " + n.NATSURL)
		n.Log.Warn("NATS is not reachable yet; waiting for it", "url", n.NATSURL)
	}
	if err := link.WaitConnected(ctx); err != nil {
		return err
	}
	// A connection nats.go closes for good (credentials refused after a
	// server restart or a revocation) cannot come back: stop the process
	// with the reason rather than run on without NATS.
	n.goRun(func() error {
		select {
		case <-rctx.Done():
			return nil
		case <-link.Closed():
			if rctx.Err() != nil {
				return nil
			}
			if err := link.Err(); err != nil {
				return err
			}
			return fmt.Errorf("%w: the connection to %s was closed", broker.ErrNATSRefused, n.NATSURL)
		}
	})
	return nil
}

// startWorkers starts the in-process workers, once the streams and the
// robots.txt bucket they use exist.
func (n *Node) startWorkers(ctx, rctx context.Context, roles Roles, settings broker.Settings) error {
	cfg, log := n.Cfg, n.Log
	if !roles.Coordinator {
		if err := broker.Retry(ctx, log, "streams and consumers", func(c context.Context) error { return broker.EnsureExisting(c, n.JS, settings) }); err != nil {
			return err
		}
	}
	var kv jetstream.KeyValue
	err := broker.Retry(ctx, log, "robots.txt bucket", func(c context.Context) error {
		var err error
		kv, err = broker.RobotsKV(c, n.JS, settings)
		return err
	})
	if err != nil {
		return err
	}
	rstore := robots.NewKVStore(kv)
	for i := range roles.Workers {
		id := cfg.WorkerID
		if id == "" {
			h, _ := os.Hostname()
			id = fmt.Sprintf("%s-%d", h, os.Getpid())
		}
		if roles.Workers > 1 {
			id = fmt.Sprintf("%s-w%d", id, i)
		}
		wo := cfg.WorkerOptions(id, log)
		wo.Metrics = n.workerMetrics
		w, err := worker.New(n.NC, n.JS, rstore, wo)
		if err != nil {
			return err
		}
		n.Workers = append(n.Workers, w)
		n.goRun(func() error { return w.Run(rctx) })
	}
	return nil
}

// startCoordinator takes the lease (waiting as a standby, or refusing),
// opens the store if it is not open yet, checks it is the crawl's, and
// starts the coordinator and its API. The coordinator then runs for as
// long as it holds the lease (coordinatorLoop).
func (n *Node) startCoordinator(ctx, rctx context.Context, o Options, settings broker.Settings) error {
	cfg, log := n.Cfg, n.Log
	n.setPhase("creating streams")
	if err := broker.Retry(ctx, log, "streams and consumers", func(c context.Context) error { return broker.Ensure(c, n.JS, settings) }); err != nil {
		return err
	}
	err := broker.Retry(ctx, log, "lease bucket", func(c context.Context) error {
		var err error
		n.leaseKV, err = broker.LeaseKV(c, n.JS, settings.Replicas)
		return err
	})
	if err != nil {
		return err
	}
	host, _ := os.Hostname()
	n.holder = fmt.Sprintf("%s-%d", host, os.Getpid())
	// A store we can open at once is ours: no running coordinator holds
	// it, and a lease its last holder left is free for us (that holder
	// cannot be running: it would hold the store). One we cannot open is
	// held by the active coordinator on this volume, and we are its
	// standby.
	if n.DB == nil {
		db, err := store.OpenDir(cfg.Data, store.Options{Timeout: 300 * time.Millisecond})
		switch {
		case err == nil:
			n.DB = db
		case errors.Is(err, store.ErrLocked):
			log.Info("the store is held by another coordinator: it will be opened on takeover", "data", cfg.Data)
		default:
			return err
		}
	}
	if err := n.takeLease(ctx, cfg.Standby, "taking the coordinator lease", func(li broker.LeaseInfo, myID string) bool { return myID != "" && li.StoreID == myID }); err != nil {
		return err
	}
	n.renewLease(rctx)
	if err := writeOwner(cfg.Data, Owner{PID: os.Getpid(), API: n.apiURL(), NATS: n.NATSURL, Started: time.Now()}); err != nil {
		log.Warn("record the coordinator in the data directory", "err", err)
	}
	if err := n.newCoordinator(o); err != nil {
		return err
	}
	// The API serves the coordinator before Start returns, as Start
	// promises: a request made just after it must not find the node still
	// "taking the coordinator lease".
	n.serveActive(n.coord.Load())
	n.goRun(func() error { return n.coordinatorLoop(rctx, o) })
	return nil
}

// renewLease keeps the lease held now renewed until rctx ends or the
// lease is lost; Stop waits for it before it releases the lease.
func (n *Node) renewLease(rctx context.Context) {
	l := n.currentLease()
	n.goRun(func() error {
		l.Run(rctx)
		return nil
	})
}

// serveActive makes the API serve coordinator c and says the node is active.
func (n *Node) serveActive(c *coordinator.Coordinator) {
	if n.httpLn != nil {
		n.setHandler(c.Handler())
	}
	n.setPhase("active")
}

// takeLease takes the lease, waiting as a standby if standby, then opens
// the store if the node does not hold it yet and checks it is the crawl's.
// mine says whether a lease found held is in fact free for us.
func (n *Node) takeLease(ctx context.Context, standby bool, phase string, mine func(li broker.LeaseInfo, myID string) bool) error {
	cfg, log := n.Cfg, n.Log
	var myID string
	if n.DB != nil {
		var err error
		if myID, _, err = n.DB.Identity(); err != nil {
			return err
		}
	}
	info := broker.LeaseInfo{Holder: n.holder, API: n.apiURL(), StoreID: myID}
	n.setPhase(phase)
	var lease *broker.Lease
	err := broker.Retry(ctx, log, "take the coordinator lease", func(c context.Context) error {
		var err error
		// Acquire waits as long as ctx allows, not one attempt's time.
		lease, err = broker.Acquire(ctx, n.leaseKV, info, broker.LeaseOptions{
			TTL: cfg.LeaseTTL, Standby: standby, Log: log,
			Mine: func(li broker.LeaseInfo) bool { return mine(li, myID) },
			Waiting: func(h broker.LeaseInfo) {
				n.setPhase(fmt.Sprintf("standby: the active coordinator is %s (API %s); taking over when its lease lapses", h.Holder, h.API))
			},
		})
		if errors.Is(err, broker.ErrLeaseHeld) || ctx.Err() != nil {
			return broker.Fatal(err)
		}
		return err
	})
	if err != nil {
		return err
	}
	n.lease.Store(lease)
	if n.DB == nil {
		// The previous holder has stopped (or stepped down) but may still
		// be closing the store.
		n.setPhase("opening the store")
		err := broker.Retry(ctx, log, "open the store after takeover", func(context.Context) error {
			db, err := store.OpenDir(cfg.Data, store.Options{Timeout: time.Second})
			if err == nil {
				n.DB = db
			}
			if err != nil && !errors.Is(err, store.ErrLocked) {
				return broker.Fatal(err)
			}
			return err
		})
		if err != nil {
			_ = lease.Release(ctx)
			return err
		}
	}
	return n.checkStore(ctx)
}

// newCoordinator builds the coordinator on the node's store.
func (n *Node) newCoordinator(o Options) error {
	cfg := n.Cfg
	var sources []source.Source
	var err error
	if cfg.ConfigFile != "" {
		if sources, err = source.Load(cfg.ConfigFile, probeparse.CheckSelector); err != nil {
			return err
		}
	}
	sources = append(sources, o.Sources...)
	co, err := cfg.CoordinatorOptions()
	if o.Policy != nil {
		co.Policy, err = o.Policy, nil
	}
	if err != nil {
		return err
	}
	if cfg.ConfigFile != "" {
		if co.Webhooks.Webhooks, err = notify.LoadWebhooks(cfg.ConfigFile, os.Getenv); err != nil {
			return err
		}
	}
	co.Webhooks.UserAgent = "freshcrawl-webhook/" + version.String()
	co.Sources, co.Log, co.Link, co.Lease = sources, n.Log, n.Link, n.currentLease()
	if o.Roles.ConsoleEvery > 0 {
		co.ConsoleEvery = o.Roles.ConsoleEvery
	}
	if n.workerReg != nil {
		co.Metrics = n.workerReg
	}
	c, err := coordinator.New(n.DB, n.NC, n.JS, co)
	if err != nil {
		return err
	}
	n.coord.Store(c)
	if n.Coordinator == nil {
		n.Coordinator = c
	}
	return nil
}

// coordinatorLoop runs the coordinator while it holds the lease. When the
// lease is lost it stops the coordinator (which finishes the fold under
// way) and takes the lease back: at once if no other coordinator took it
// meanwhile (NATS was unreachable for half the TTL: a leader election, an
// outage), or, if one did, as its standby, after letting go of the store
// so that it can open it (same volume). Without --standby a coordinator
// whose lease was taken over stops with an error.
func (n *Node) coordinatorLoop(rctx context.Context, o Options) error {
	for {
		c := n.coord.Load()
		cctx, stop := context.WithCancel(rctx)
		done := make(chan error, 1)
		go func() { done <- c.Run(cctx) }()
		n.serveActive(c)
		n.Log.Info("coordinator active", "fence", n.currentLease().Fence())
		var err error
		select {
		case err = <-done:
		case <-n.currentLease().Lost():
			stop()
			err = <-done
		case <-rctx.Done():
		}
		stop()
		if rctx.Err() != nil {
			if err == nil {
				err = <-done
			}
			return err
		}
		lost := n.currentLease().Err()
		switch {
		case errors.Is(err, store.ErrFenced):
			lost = err
		case err != nil:
			return err
		}
		n.setHandler(http.HandlerFunc(n.serveStarting))
		takenOver := errors.Is(lost, broker.ErrLeaseTakenOver) || errors.Is(lost, store.ErrFenced)
		n.Log.Warn("coordinator stepped down: no dispatching, no folding until it holds the lease again", "reason", lost)
		if takenOver {
			if !n.Cfg.Standby {
				return fmt.Errorf("coordinator stopped: %w", lost)
			}
			// Let the new holder have the store.
			removeOwner(n.Cfg.Data)
			_ = n.DB.Close()
			n.DB = nil
		}
		err = n.takeLease(rctx, true, "stepped down ("+lost.Error()+"): taking the lease back", func(li broker.LeaseInfo, myID string) bool {
			// Ours again only if no one else wrote it since.
			return li.Holder == n.holder && li.StoreID == myID
		})
		if err != nil {
			if rctx.Err() != nil {
				return nil
			}
			return err
		}
		n.renewLease(rctx)
		if takenOver {
			if err := writeOwner(n.Cfg.Data, Owner{PID: os.Getpid(), API: n.apiURL(), NATS: n.NATSURL, Started: time.Now()}); err != nil {
				n.Log.Warn("record the coordinator in the data directory", "err", err)
			}
			if err := n.newCoordinator(o); err != nil {
				return err
			}
		} else {
			c.SetLease(n.currentLease())
		}
	}
}

// wrongStoreError says why a coordinator refused to take over a crawl.
type wrongStoreError struct {
	Path, Have, Want, Holder string
}

func (e *wrongStoreError) Error() string {
	return fmt.Sprintf("the store %s (id %s) is not this crawl's: its last coordinator, %s, wrote store %s. A coordinator that takes over must use the same volume as the one before it, or a restored backup of its store (`freshcrawl backup FILE`). To start this crawl over with this store, pass --adopt-crawl", e.Path, e.Have, e.Holder, e.Want)
}

func (e *wrongStoreError) Is(target error) bool { return target == ErrWrongStore }

// checkStore compares the store with the one the previous holder of the
// lease wrote, then records the new lease's fence in it: from then on a
// write fails if a newer coordinator has taken the store over.
func (n *Node) checkStore(ctx context.Context) error {
	id, fence, err := n.DB.Identity()
	if err != nil {
		return err
	}
	if prev := n.currentLease().Previous(); prev != nil && prev.StoreID != "" {
		switch {
		case prev.StoreID != id && !n.Cfg.AdoptCrawl:
			_ = n.currentLease().Refuse(ctx)
			return &wrongStoreError{Path: n.DB.Path(), Have: id, Want: prev.StoreID, Holder: prev.Holder}
		case prev.StoreID != id:
			n.Log.Warn("adopting a crawl whose last coordinator wrote another store (--adopt-crawl)", "store", id, "previous_store", prev.StoreID, "previous_holder", prev.Holder)
		case fence < prev.Fence:
			n.Log.Warn("the store is a copy from before the last coordinator's takeover (a restored backup): what was folded since is not in it, and its URLs will be fetched again", "store_fence", fence, "last_fence", prev.Fence)
		}
	}
	if err := n.DB.TakeFence(n.currentLease().Fence()); err != nil {
		return err
	}
	return n.currentLease().Update(ctx, func(li *broker.LeaseInfo) { li.StoreID = id })
}

// listen binds addr for the process's HTTP server, failing at once with a
// clear message when it is taken.
func (n *Node) listen(cfg config.Config, addr, what string, wrap func(http.Handler) http.Handler) error {
	var tlsCfg *tls.Config
	if cfg.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey)
		if err != nil {
			return fmt.Errorf("%s: TLS certificate: %w", what, err)
		}
		tlsCfg = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("%s: listen on %s: %w", what, addr, err)
	}
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
		n.tls = true
	}
	n.httpLn = ln
	n.setHandler(http.NotFoundHandler())
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*n.handler.Load()).ServeHTTP(w, r) })
	if wrap != nil {
		h = wrap(h)
	}
	// Outermost, so that every answer the process serves (the token
	// guard's 401s and the standby's 503s too) carries the headers.
	h = api.SecureHeaders(h)
	// The server's own complaints (a TLS handshake a client got wrong)
	// go to the process log at debug level, not to stderr raw.
	n.http = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(n.Log.Handler(), slog.LevelDebug)}
	n.Log.Info(what+" listening", "addr", ln.Addr().String(), "tls", tlsCfg != nil)
	n.goRun(func() error {
		if err := n.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	})
	return nil
}

func (n *Node) setHandler(h http.Handler) { n.handler.Store(&h) }

func (n *Node) setPhase(p string) { n.phase.Store(&p) }

// currentLease is the coordinator lease the process holds now (nil if none).
func (n *Node) currentLease() *broker.Lease { return n.lease.Load() }

// currentPhase says what the process is doing: "active" once it runs, otherwise
// what it waits for.
func (n *Node) currentPhase() string { return *n.phase.Load() }

// apiURL is the coordinator's API base URL as the lease and the data
// directory record it.
func (n *Node) apiURL() string {
	if n.httpLn == nil {
		return ""
	}
	if n.tls {
		return "https://" + n.httpLn.Addr().String()
	}
	return "http://" + n.httpLn.Addr().String()
}

// serveStarting answers while the coordinator is not active yet: /healthz
// and /api/status say what it waits for (NATS, the lease: a standby), and
// every other request is refused with the same.
func (n *Node) serveStarting(w http.ResponseWriter, r *http.Request) {
	ls := n.Link.State()
	phase := n.currentPhase()
	lines := []string{"role: " + phase, fmt.Sprintf("nats: %s (%s)", ls.State, ls.URL)}
	switch r.URL.Path {
	case "/healthz":
		coordinator.ServeHealth(w, false, lines)
	case "/api/status":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_ = json.NewEncoder(w).Encode(map[string]any{"role": "standby", "phase": phase, "nats": ls})
	default:
		http.Error(w, "this coordinator is not active: "+phase, http.StatusServiceUnavailable)
	}
}

// serveWorkerHealth answers a worker process's /healthz: 200 while
// connected to NATS, 503 otherwise, and the tasks of each worker.
func (n *Node) serveWorkerHealth(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/metrics" && n.workerReg != nil && n.Cfg.Listen != "" {
		promhttp.HandlerFor(n.workerReg, promhttp.HandlerOpts{}).ServeHTTP(w, r)
		return
	}
	if r.URL.Path != "/healthz" {
		http.NotFound(w, r)
		return
	}
	ls := n.Link.State()
	lines := []string{fmt.Sprintf("nats: %s (%s) since %s", ls.State, ls.URL, ls.Since.Format(time.RFC3339))}
	if ls.LastError != "" && !ls.Connected() {
		lines = append(lines, "nats last error: "+ls.LastError)
	}
	for _, wk := range n.Workers {
		lines = append(lines, fmt.Sprintf("worker %s: %d tasks held, %d done, %d handed back", wk.ID(), wk.Active(), wk.Processed(), wk.HandedBack()))
	}
	coordinator.ServeHealth(w, ls.Connected(), lines)
}

func (n *Node) goRun(fn func() error) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		if err := fn(); err != nil {
			n.errc <- err
		}
	}()
}

// HTTPAddr is the address the API listens on ("" if none).
func (n *Node) HTTPAddr() string {
	if n.httpLn == nil {
		return ""
	}
	return n.httpLn.Addr().String()
}

// Wait blocks until ctx is done or a part fails, then stops everything.
func (n *Node) Wait(ctx context.Context) error {
	var err error
	select {
	case <-ctx.Done():
	case err = <-n.errc:
	}
	n.Stop()
	return err
}

// Stop shuts everything down in order: the loops (a coordinator finishes
// its fold under way, workers finish or hand back their tasks), HTTP, the
// store, the lease (released, so a standby takes over at once), NATS.
func (n *Node) Stop() {
	n.stopOnce.Do(n.stop)
}

func (n *Node) stop() {
	if n.cancel != nil {
		n.cancel()
	}
	if n.http != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = n.http.Shutdown(sctx)
		cancel()
	}
	n.wg.Wait()
	if n.DB != nil {
		if n.currentLease() != nil {
			removeOwner(n.Cfg.Data)
		}
		_ = n.DB.Close()
		n.DB = nil
	}
	if n.currentLease() != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := n.currentLease().Release(ctx); err != nil {
			n.Log.Warn("release the coordinator lease", "err", err)
		}
		cancel()
	}
	if n.NC != nil {
		_ = n.NC.Drain()
		n.NC.Close()
		n.NC = nil
	}
	if n.srv != nil {
		n.srv.Shutdown()
		n.srv.WaitForShutdown()
		n.srv = nil
	}
}

// loopback reports whether addr is a loopback address.
func loopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}
