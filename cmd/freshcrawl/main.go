// Command freshcrawl keeps a local copy of chosen web content as fresh as a
// fetch budget allows. See README.md for the subcommands.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/freshcrawl/freshcrawl/internal/config"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRoot(os.Stdout, os.Stderr)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "freshcrawl:", err)
		var ec exitCode
		if errors.As(err, &ec) {
			os.Exit(int(ec))
		}
		os.Exit(1)
	}
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
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(
		runCmd(), coordinatorCmd(), workerCmd(),
		seedCmd(), statusCmd(), versionsCmd(),
		simCmd(), demoCmd(), planCmd(), benchCmd(), itemsCmd(),
		urlsCmd(), urlCmd(), getCmd(), exportCmd(), importCmd(),
	)
	return root
}

// setup resolves the config of a command (flags > env > file > defaults)
// and builds its logger.
func setup(cmd *cobra.Command, cfg *config.Config) (*slog.Logger, error) {
	if err := config.Resolve(cmd.Flags(), os.Environ()); err != nil {
		return nil, err
	}
	lvl, err := cfg.Level()
	if err != nil {
		return nil, err
	}
	return slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: lvl})), nil
}

// withConfig registers cfg's flags for keys on cmd.
func withConfig(cmd *cobra.Command, cfg *config.Config, keys ...string) {
	cfg.Register(cmd.Flags(), keys...)
	cmd.Flags().SortFlags = false
}
