// Package node assembles one freshcrawl process from its parts: the
// embedded NATS server (unless an external URL is given), the coordinator
// with its store and HTTP API, and in-process workers. `freshcrawl run`,
// `coordinator`, `worker`, `demo` and the end-to-end tests all start
// through here, so they run the same code.
package node

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/freshcrawl/freshcrawl/internal/api"
	"github.com/freshcrawl/freshcrawl/internal/broker"
	"github.com/freshcrawl/freshcrawl/internal/config"
	"github.com/freshcrawl/freshcrawl/internal/coordinator"
	"github.com/freshcrawl/freshcrawl/internal/notify"
	"github.com/freshcrawl/freshcrawl/internal/schedule"
	"github.com/freshcrawl/freshcrawl/internal/source"
	"github.com/freshcrawl/freshcrawl/internal/store"
	"github.com/freshcrawl/freshcrawl/internal/version"
	"github.com/freshcrawl/freshcrawl/internal/worker"
	"github.com/freshcrawl/freshcrawl/internal/worker/fetch"
	"github.com/freshcrawl/freshcrawl/internal/worker/robots"
)

// Roles says what a process runs.
type Roles struct {
	Coordinator bool
	Workers     int // in-process workers
	// HTTP serves on cfg.Listen: the API, the console and /metrics with a
	// coordinator; /metrics and /healthz of the workers without one.
	HTTP bool
	// ConsoleEvery is the sampling period of the console's charts (0:
	// the default); tests shorten it.
	ConsoleEvery time.Duration
}

// Node is a started process.
type Node struct {
	Cfg         config.Config
	Log         *slog.Logger
	NATSURL     string
	NC          *nats.Conn
	JS          jetstream.JetStream
	DB          *store.DB
	Coordinator *coordinator.Coordinator
	Workers     []*worker.Worker
	srv         *server.Server
	http        *http.Server
	httpLn      net.Listener
	cancel      context.CancelFunc
	wg          sync.WaitGroup
	errc        chan error
}

// brokerSettings are the NATS settings cfg implies.
func brokerSettings(cfg config.Config) broker.Settings {
	s := broker.DefaultSettings()
	s.Replicas = cfg.Replicas
	s.AckWait = cfg.AckWait
	s.MaxDeliver = cfg.MaxDeliver
	s.MaxAckPending = max(cfg.MaxInFlight, cfg.Workers*cfg.Concurrency, 1)
	s.Changes = broker.ChangeRetention{MaxAge: cfg.ChangeMaxAge, MaxBytes: cfg.ChangeMaxBytes, MaxMsgs: cfg.ChangeMaxMsgs}
	return s
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

// Start starts the roles and returns once everything is up. The process
// then runs until ctx is done or Stop is called; Wait returns the first
// error.
func Start(ctx context.Context, o Options) (*Node, error) {
	cfg, roles, policy, log := o.Config, o.Roles, o.Policy, o.Log
	if log == nil {
		log = slog.Default()
	}
	n := &Node{Cfg: cfg, Log: log, errc: make(chan error, 8)}
	ok := false
	defer func() {
		if !ok {
			n.Stop()
		}
	}()
	n.NATSURL = cfg.NATS
	if n.NATSURL == "" {
		dir := filepath.Join(cfg.Data, "nats")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("create %s: %w", dir, err)
		}
		srv, err := broker.StartEmbedded(broker.EmbeddedOptions{Dir: dir, Listen: cfg.NATSListen, SyncAlways: cfg.SyncAlways})
		if err != nil {
			return nil, err
		}
		n.srv = srv
		n.NATSURL = srv.ClientURL()
		log.Info("embedded NATS started", "url", n.NATSURL, "dir", dir)
	}
	name := "freshcrawl"
	if roles.Coordinator {
		name += "-coordinator"
	} else {
		name += "-worker"
	}
	var natsOpts []nats.Option
	if cfg.NATS != "" {
		// The embedded server runs on loopback without authentication;
		// an external one may require any of these.
		opts, err := cfg.NATSAuth().Options()
		if err != nil {
			return nil, err
		}
		natsOpts = opts
	}
	nc, js, err := broker.Connect(n.NATSURL, name, log, natsOpts...)
	if err != nil {
		return nil, err
	}
	n.NC, n.JS = nc, js
	settings := brokerSettings(cfg)
	// One registry for the process's workers, with the Go runtime and
	// process collectors when no coordinator's registry has them.
	var workerReg *prometheus.Registry
	var workerMetrics *worker.Metrics
	if roles.Workers > 0 {
		workerReg = prometheus.NewRegistry()
		workerMetrics = worker.NewMetrics(workerReg)
		if !roles.Coordinator {
			workerReg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		}
	}
	ectx, cancel := context.WithTimeout(ctx, 30*time.Second)
	if roles.Coordinator {
		err = broker.Ensure(ectx, js, settings)
	} else {
		err = broker.EnsureExisting(ectx, js, settings)
	}
	cancel()
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	go func() {
		select {
		case <-ctx.Done():
			cancel()
		case <-rctx.Done():
		}
	}()

	if roles.Coordinator {
		db, err := store.OpenDir(cfg.Data, store.Options{})
		if err != nil {
			return nil, err
		}
		n.DB = db
		var sources []source.Source
		if cfg.ConfigFile != "" {
			if sources, err = source.Load(cfg.ConfigFile); err != nil {
				return nil, err
			}
		}
		sources = append(sources, o.Sources...)
		if policy == nil {
			policy, err = schedule.PolicyByName(cfg.Policy, cfg.Objective)
			if err != nil {
				return nil, err
			}
		}
		var hooks []notify.Webhook
		if cfg.ConfigFile != "" {
			if hooks, err = notify.LoadWebhooks(cfg.ConfigFile, os.Getenv); err != nil {
				return nil, err
			}
		}
		var extra prometheus.Gatherer
		if workerReg != nil {
			extra = workerReg
		}
		n.Coordinator, err = coordinator.New(db, nc, js, coordinator.Options{
			Budget: cfg.Budget.PerSecond(), HostRate: cfg.HostRate.PerSecond(), MaxInFlight: cfg.MaxInFlight,
			Policy: policy, Replan: cfg.Replan, PriorRate: cfg.PriorRate.PerSecond(), HalfLife: cfg.HalfLife,
			ExploreShare: cfg.Explore, AckWait: cfg.AckWait, MaxDeliver: cfg.MaxDeliver, Log: log, DefaultIgnore: cfg.DefaultIgnore(), CaptureUniform: cfg.CaptureUniform, LMSkew: cfg.LMSkew,
			Sources: sources, ProbePolicy: cfg.ProbePolicy, ConsoleEvery: roles.ConsoleEvery, Metrics: extra, Retention: cfg.Retention(),
			Webhooks: notify.Options{Webhooks: hooks, Secret: cfg.WebhookSecret, Attempts: cfg.WebhookAttempts, Backoff: cfg.WebhookBackoff,
				MaxBackoff: cfg.WebhookMaxBackoff, Timeout: cfg.WebhookTimeout, UserAgent: "freshcrawl-webhook/" + version.String()},
		})
		if err != nil {
			return nil, err
		}
		n.goRun(func() error { return n.Coordinator.Run(rctx) })
		if roles.HTTP {
			tokens := api.NewTokens(cfg.APITokens, cfg.APIReadTokens)
			if err := n.serveHTTP(cfg, tokens.Wrap(n.Coordinator.Handler()), "HTTP API"); err != nil {
				return nil, err
			}
			if !tokens.Enabled() && !loopback(n.httpLn.Addr()) {
				log.Warn("the HTTP API listens beyond loopback without a token: anyone who reaches it can add seeds, delete URLs and read everything; set --api-token (and --tls-cert/--tls-key)", "addr", n.httpLn.Addr().String())
			}
		}
	} else if roles.Workers > 0 && roles.HTTP {
		// A worker process serves its metrics and liveness only.
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", promhttp.HandlerFor(workerReg, promhttp.HandlerOpts{}))
		mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
		if err := n.serveHTTP(cfg, mux, "worker metrics"); err != nil {
			return nil, err
		}
	}
	if roles.Workers > 0 {
		kctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		kv, err := broker.RobotsKV(kctx, js, settings)
		cancel()
		if err != nil {
			return nil, err
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
			wo := workerOptions(cfg, id, log)
			wo.Metrics = workerMetrics
			w := worker.New(nc, js, rstore, wo)
			n.Workers = append(n.Workers, w)
			n.goRun(func() error { return w.Run(rctx) })
		}
	}
	ok = true
	return n, nil
}

// workerOptions are the options of an in-process worker named id.
func workerOptions(cfg config.Config, id string, log *slog.Logger) worker.Options {
	return worker.Options{
		ID: id, Concurrency: cfg.Concurrency, Log: log,
		Fetch: fetch.Options{UserAgent: cfg.UserAgent, Timeout: cfg.Timeout, MaxBody: cfg.MaxBody, MaxRedirects: zeroAs(cfg.MaxRedirects, fetch.NoRedirects), AllowPrivate: cfg.AllowPrivate},
	}
}

// zeroAs passes a setting whose 0 means "none" (--max-redirects 0) to an
// Options field whose zero value means the owner's default: 0 becomes the
// owner's sentinel for none.
func zeroAs[T int | float64](v, none T) T {
	if v == 0 {
		return none
	}
	return v
}

// serveHTTP serves h on cfg.Listen, over TLS when cfg has a certificate.
func (n *Node) serveHTTP(cfg config.Config, h http.Handler, what string) error {
	var tlsCfg *tls.Config
	if cfg.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey)
		if err != nil {
			return fmt.Errorf("%s: TLS certificate: %w", what, err)
		}
		tlsCfg = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("%s: listen on %s: %w", what, cfg.Listen, err)
	}
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
	}
	n.httpLn = ln
	// The server's own complaints (a TLS handshake a client got wrong)
	// go to the process log at debug level, not to stderr raw.
	n.http = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(n.Log.Handler(), slog.LevelDebug)}
	n.goRun(func() error {
		if err := n.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	})
	n.Log.Info(what+" listening", "addr", ln.Addr().String(), "tls", tlsCfg != nil)
	return nil
}

// loopback reports whether addr is a loopback address.
func loopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
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

// Stop shuts everything down in order: loops, HTTP, store, NATS.
func (n *Node) Stop() {
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
		_ = n.DB.Close()
		n.DB = nil
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
