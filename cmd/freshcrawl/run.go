package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/freshcrawl/freshcrawl/config"
	"github.com/freshcrawl/freshcrawl/coordinator"
	"github.com/freshcrawl/freshcrawl/node"
	"github.com/freshcrawl/freshcrawl/store"
)

// Keys each role reads.
var (
	natsKeys        = []string{"data", "nats", "nats-listen", "ack-wait", "max-deliver", "replicas", "sync-always", "log-level"}
	coordinatorKeys = []string{"listen", "budget", "host-rate", "max-in-flight", "policy", "objective", "replan", "prior-rate", "half-life", "explore", "capture-uniform", "probe-policy", "ignore-selector", "ignore-pattern", "min-change"}
	workerKeys      = []string{"concurrency", "user-agent", "timeout", "max-body", "max-redirects", "allow-private", "worker-id"}
)

func runCmd() *cobra.Command {
	cfg := config.Default()
	var seeds string
	cmd := &cobra.Command{
		Use:   "run [--seeds FILE]",
		Short: "Run everything in one process: embedded NATS, coordinator, workers and the HTTP API",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := setup(cmd, &cfg)
			if err != nil {
				return err
			}
			if err := cfg.Validate(); err != nil {
				return err
			}
			if seeds != "" {
				if err := seedOffline(cmd, cfg, seeds); err != nil {
					return err
				}
			}
			n, err := node.Start(cmd.Context(), cfg, node.Roles{Coordinator: true, Workers: cfg.Workers, HTTP: true}, nil, log)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "freshcrawl running: API http://%s  NATS %s  data %s  (Ctrl-C to stop)\n", n.HTTPAddr(), n.NATSURL, cfg.Data)
			return n.Wait(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&seeds, "seeds", "", "seed FILE (or - for stdin) before starting")
	withConfig(cmd, &cfg, append(append(append([]string{}, natsKeys...), coordinatorKeys...), append(workerKeys, "workers")...)...)
	return cmd
}

func coordinatorCmd() *cobra.Command {
	cfg := config.Default()
	cmd := &cobra.Command{
		Use:   "coordinator",
		Short: "Run the coordinator alone (against --nats, or an embedded server when none is given)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := setup(cmd, &cfg)
			if err != nil {
				return err
			}
			if err := cfg.Validate(); err != nil {
				return err
			}
			n, err := node.Start(cmd.Context(), cfg, node.Roles{Coordinator: true, HTTP: true}, nil, log)
			if err != nil {
				return err
			}
			return n.Wait(cmd.Context())
		},
	}
	withConfig(cmd, &cfg, append(append([]string{}, natsKeys...), coordinatorKeys...)...)
	return cmd
}

func workerCmd() *cobra.Command {
	cfg := config.Default()
	cmd := &cobra.Command{
		Use:   "worker --nats URL",
		Short: "Run a stateless worker against a NATS server; start as many as you like",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := setup(cmd, &cfg)
			if err != nil {
				return err
			}
			if cfg.NATS == "" {
				return fmt.Errorf("worker needs --nats URL (or FRESHCRAWL_NATS): the coordinator's NATS server")
			}
			if err := cfg.Validate(); err != nil {
				return err
			}
			n, err := node.Start(cmd.Context(), cfg, node.Roles{Workers: 1}, nil, log)
			if err != nil {
				return err
			}
			return n.Wait(cmd.Context())
		},
	}
	withConfig(cmd, &cfg, append([]string{"nats", "ack-wait", "max-deliver", "replicas", "log-level"}, workerKeys...)...)
	return cmd
}

// openStore opens the store of cfg's data directory for a one-off command.
func openStore(cfg config.Config, readOnly bool) (*store.DB, error) {
	if readOnly {
		if _, err := os.Stat(cfg.Data); err != nil {
			return nil, fmt.Errorf("data directory %s: %w", cfg.Data, err)
		}
	}
	return store.OpenDir(cfg.Data, store.Options{ReadOnly: readOnly})
}

var _ = coordinator.MaxSeedErrors
