package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/freshcrawl/freshcrawl/config"
	"github.com/freshcrawl/freshcrawl/internal/node"
	"github.com/freshcrawl/freshcrawl/store"
)

// Keys each role reads.
var (
	// natsAuthKeys authenticate to an external NATS server.
	natsAuthKeys    = []string{"nats-user", "nats-password", "nats-token", "nats-nkey", "nats-creds", "nats-ca", "nats-cert", "nats-key"}
	natsKeys        = slices.Concat([]string{"data", "nats"}, natsAuthKeys, []string{"nats-listen", "ack-wait", "max-deliver", "replicas", "sync-always", "log-level"})
	coordinatorKeys = []string{"listen", "api-token", "api-read-token", "api-host", "tls-cert", "tls-key", "budget", "host-rate", "max-in-flight", "policy", "objective", "replan", "prior-rate", "half-life", "explore", "lm-skew", "capture-uniform", "co-change", "probe-policy", "ignore-selector", "ignore-pattern", "min-change",
		"keep-versions", "keep-versions-for", "keep-changes", "keep-changes-for", "keep-fold-marks-for", "gone-after", "standby", "lease-ttl", "adopt-crawl",
		"change-stream-max-age", "change-stream-max-bytes", "change-stream-max-msgs", "webhook-secret", "webhook-attempts", "webhook-backoff", "webhook-max-backoff", "webhook-timeout", "allow-private-webhooks"}
	workerKeys = []string{"concurrency", "user-agent", "timeout", "max-body", "max-redirects", "allow-private", "worker-id", "stop-grace"}
	// A worker keeps no data and never starts a NATS server of its own.
	workerNATSKeys = slices.Concat([]string{"nats"}, natsAuthKeys, []string{"ack-wait", "max-deliver", "replicas", "log-level", "health-listen"})
	// clientKeys are the keys of the commands that talk to the API.
	clientKeys = []string{"data", "listen", "api", "api-token", "api-read-token", "tls-cert", "log-level"}
)

// role describes one of the long-running subcommands.
type role struct {
	use, short string
	keys       []string
	// defaults changes the defaults of the command's settings.
	defaults func(*config.Config)
	roles    func(config.Config) node.Roles
	// before runs after the config is resolved and validated.
	before func(*cobra.Command, config.Config) error
	// started is printed once everything is up.
	started func(*cobra.Command, *node.Node)
}

// roleCmd builds a subcommand that starts a node with some roles and runs
// until interrupted.
func roleCmd(r role) *cobra.Command {
	cfg := config.Default()
	if r.defaults != nil {
		r.defaults(&cfg)
	}
	cmd := &cobra.Command{
		Use:   r.use,
		Short: r.short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := setup(cmd, &cfg)
			if err != nil {
				return err
			}
			if err := cfg.Validate(); err != nil {
				return err
			}
			if r.before != nil {
				if err := r.before(cmd, cfg); err != nil {
					return err
				}
			}
			n, err := node.Start(cmd.Context(), node.Options{Config: cfg, Roles: r.roles(cfg), Log: log})
			if err != nil {
				if cmd.Context().Err() != nil {
					// Stopped while waiting (for NATS, or as a standby).
					return nil
				}
				return err
			}
			if r.started != nil {
				r.started(cmd, n)
			}
			return n.Wait(cmd.Context())
		},
	}
	withConfig(cmd, &cfg, r.keys...)
	return cmd
}

func runCmd() *cobra.Command {
	var seeds string
	cmd := roleCmd(role{
		use:   "run [--seeds FILE]",
		short: "Run everything in one process: embedded NATS, coordinator, workers and the HTTP API",
		keys:  slices.Concat(natsKeys, coordinatorKeys, workerKeys, []string{"workers"}),
		roles: func(cfg config.Config) node.Roles {
			return node.Roles{Coordinator: true, Workers: cfg.Workers, HTTP: true}
		},
		before: func(cmd *cobra.Command, cfg config.Config) error {
			if seeds == "" {
				return nil
			}
			return seedOffline(cmd, cfg, seeds)
		},
		started: func(cmd *cobra.Command, n *node.Node) {
			fmt.Fprintf(cmd.ErrOrStderr(), "freshcrawl running: API http://%s  NATS %s  data %s  (Ctrl-C to stop)\n", n.HTTPAddr(), n.NATSURL, n.Cfg.Data)
		},
	})
	cmd.Flags().StringVar(&seeds, "seeds", "", "seed FILE (or - for stdin) before starting")
	return cmd
}

func coordinatorCmd() *cobra.Command {
	return roleCmd(role{
		use:   "coordinator",
		short: "Run the coordinator alone (against --nats, or an embedded server when none is given)",
		keys:  slices.Concat(natsKeys, coordinatorKeys),
		roles: func(config.Config) node.Roles { return node.Roles{Coordinator: true, HTTP: true} },
	})
}

func workerCmd() *cobra.Command {
	return roleCmd(role{
		use:   "worker --nats URL",
		short: "Run a stateless worker against a NATS server; start as many as you like",
		keys:  slices.Concat(workerNATSKeys, workerKeys, []string{"listen"}),
		// A worker serves /metrics and /healthz only when asked to.
		defaults: func(cfg *config.Config) { cfg.Listen = "" },
		roles:    func(cfg config.Config) node.Roles { return node.Roles{Workers: 1, HTTP: cfg.Listen != ""} },
		before: func(_ *cobra.Command, cfg config.Config) error {
			if cfg.NATS == "" {
				return errors.New("worker needs --nats URL (or FRESHCRAWL_NATS): the coordinator's NATS server")
			}
			return nil
		},
	})
}

// openStore opens the store of cfg's data directory for a one-off command.
func openStore(cfg config.Config, readOnly bool) (*store.DB, error) {
	if readOnly {
		if _, err := os.Stat(cfg.Data); err != nil {
			return nil, fmt.Errorf("data directory %s: %w", cfg.Data, err)
		}
	}
	// A coordinator holding the store is found out quickly: the command
	// then goes through its API.
	return store.OpenDir(cfg.Data, store.Options{ReadOnly: readOnly, Timeout: 300 * time.Millisecond})
}
