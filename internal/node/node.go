// Package node assembles one freshcrawl process from its parts: the
// embedded NATS server (unless an external URL is given), the coordinator
// with its store and HTTP API, and in-process workers. `freshcrawl run`,
// `coordinator`, `worker`, `demo` and the end-to-end tests all start
// through here, so they run the same code.
package node

import (
	"context"
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

	"github.com/freshcrawl/freshcrawl/internal/broker"
	"github.com/freshcrawl/freshcrawl/internal/config"
	"github.com/freshcrawl/freshcrawl/internal/coordinator"
	"github.com/freshcrawl/freshcrawl/internal/schedule"
	"github.com/freshcrawl/freshcrawl/internal/source"
	"github.com/freshcrawl/freshcrawl/internal/store"
	"github.com/freshcrawl/freshcrawl/internal/worker"
	"github.com/freshcrawl/freshcrawl/internal/worker/fetch"
	"github.com/freshcrawl/freshcrawl/internal/worker/robots"
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
	nc, js, err := broker.Connect(n.NATSURL, name, log)
	if err != nil {
		return nil, err
	}
	n.NC, n.JS = nc, js
	settings := brokerSettings(cfg)
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
		n.Coordinator, err = coordinator.New(db, nc, js, coordinator.Options{
			Budget: cfg.Budget.PerSecond(), HostRate: cfg.HostRate.PerSecond(), MaxInFlight: cfg.MaxInFlight,
			Policy: policy, Replan: cfg.Replan, PriorRate: cfg.PriorRate.PerSecond(), HalfLife: cfg.HalfLife,
			ExploreShare: cfg.Explore, AckWait: cfg.AckWait, MaxDeliver: cfg.MaxDeliver, Log: log, DefaultIgnore: cfg.DefaultIgnore(), CaptureUniform: cfg.CaptureUniform, LMSkew: cfg.LMSkew,
			Sources: sources, ProbePolicy: cfg.ProbePolicy, ConsoleEvery: roles.ConsoleEvery, Retention: cfg.Retention(),
		})
		if err != nil {
			return nil, err
		}
		n.goRun(func() error { return n.Coordinator.Run(rctx) })
		if roles.HTTP {
			ln, err := net.Listen("tcp", cfg.Listen)
			if err != nil {
				return nil, fmt.Errorf("HTTP API: listen on %s: %w", cfg.Listen, err)
			}
			n.httpLn = ln
			n.http = &http.Server{Handler: n.Coordinator.Handler(), ReadHeaderTimeout: 10 * time.Second}
			n.goRun(func() error {
				if err := n.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
					return fmt.Errorf("HTTP API: %w", err)
				}
				return nil
			})
			log.Info("HTTP API listening", "addr", ln.Addr().String())
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
			w := worker.New(nc, js, rstore, workerOptions(cfg, id, log))
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
