// Command freshcrawl keeps a local copy of chosen web content as fresh as a
// fetch budget allows. docs/cli.md lists the subcommands (gen-docs writes it).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/freshcrawl/freshcrawl/config"
	"github.com/freshcrawl/freshcrawl/internal/broker"
	"github.com/freshcrawl/freshcrawl/internal/node"
	"github.com/freshcrawl/freshcrawl/internal/version"
	"github.com/freshcrawl/freshcrawl/store"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRoot(os.Stdout, os.Stderr)
	if err := root.ExecuteContext(ctx); err != nil {
		var ec exitCode
		if errors.As(err, &ec) {
			// The command has said what went wrong.
			os.Exit(int(ec))
		}
		msg := err.Error()
		var ce *store.CorruptError
		if errors.Is(err, store.ErrCorrupt) && !errors.As(err, &ce) && !errors.As(err, new(checkFailed)) {
			msg += ". The store is damaged: stop every process using this data directory and restore a backup (freshcrawl backup FILE makes one); freshcrawl store check shows what is wrong"
		}
		fmt.Fprintln(os.Stderr, "freshcrawl:", msg)
		os.Exit(exitStatus(err))
	}
}

// Exit statuses other than 0 and 1, documented in docs/operations.md.
const (
	exitBadInput   = 2 // some seed or item lines were bad
	exitDamaged    = 3 // the store is damaged
	exitInUse      = 4 // held by another process: the store's lock, the coordinator lease, a listen address
	exitWrongStore = 5 // a coordinator would take over a crawl with a store that is not the crawl's
	exitNewerStore = 6 // the store was written by a newer freshcrawl
)

// exitStatus maps an error to the process's exit status.
func exitStatus(err error) int {
	switch {
	case errors.Is(err, store.ErrCorrupt):
		return exitDamaged
	case errors.Is(err, store.ErrLocked), errors.Is(err, broker.ErrLeaseHeld), errors.Is(err, broker.ErrAddrInUse), errors.Is(err, syscall.EADDRINUSE):
		return exitInUse
	case errors.Is(err, node.ErrWrongStore):
		return exitWrongStore
	case errors.Is(err, store.ErrNewerFormat):
		return exitNewerStore
	}
	return 1
}

// exitCode lets a command choose its exit status (e.g. 2 for bad seed lines).
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// newRoot builds the command tree; tests call it with buffers.
func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "freshcrawl",
		Short:         "A distributed crawler that keeps a copy of web content as fresh as a budget allows",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.String(),
	}
	root.SetVersionTemplate("freshcrawl {{.Version}}\n")
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(
		runCmd(), coordinatorCmd(), workerCmd(),
		seedCmd(), statusCmd(), versionsCmd(),
		simCmd(), demoCmd(), planCmd(), benchCmd(), itemsCmd(),
		storeCmd(), backupCmd(), natsServerCmd(),
		urlsCmd(), urlCmd(), getCmd(), exportCmd(), importCmd(),
		genDocsCmd(),
	)
	addExamples(root)
	return root
}

// setup resolves the config of a command (flags > env > file > defaults)
// and builds its logger.
func setup(cmd *cobra.Command, cfg *config.Config) (*slog.Logger, error) {
	if err := config.Resolve(cmd.Flags(), os.Environ()); err != nil {
		return nil, err
	}
	return cfg.Logger(cmd.ErrOrStderr())
}

// withConfig registers cfg's flags for keys on cmd; a command that logs
// (log-level) also takes log-format.
func withConfig(cmd *cobra.Command, cfg *config.Config, keys ...string) {
	if slices.Contains(keys, "log-level") && !slices.Contains(keys, "log-format") {
		keys = append(slices.Clone(keys), "log-format")
	}
	cfg.Register(cmd.Flags(), keys...)
	cmd.Flags().SortFlags = false
}
