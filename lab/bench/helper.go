package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"time"

	"github.com/freshcrawl/freshcrawl/config"
	"github.com/freshcrawl/freshcrawl/internal/node"
)

// startBenchNode validates cfg and starts its node with roles, its
// embedded NATS server on a free loopback port so that benchmarks never
// collide with each other or with a crawler already running.
func startBenchNode(ctx context.Context, cfg config.Config, roles node.Roles, log *slog.Logger) (*node.Node, error) {
	cfg.NATSListen = "127.0.0.1:-1"
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n, err := node.Start(ctx, node.Options{Config: cfg, Roles: roles, Log: log})
	if err != nil {
		return nil, fmt.Errorf("start node: %w", err)
	}
	return n, nil
}

// helperProcess is a helper process of a benchmark (a worker, a no-op
// responder) whose CPU is measured apart from the process under test.
type helperProcess struct {
	PID   int
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// startHelper starts argv with a pipe on its stdin; its output goes to this
// process's stderr.
func startHelper(ctx context.Context, argv []string) (*helperProcess, error) {
	if len(argv) == 0 {
		return nil, errors.New("child process: no command")
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.WaitDelay = 10 * time.Second
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("child process: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("child process: start %s: %w", argv[0], err)
	}
	return &helperProcess{PID: cmd.Process.Pid, cmd: cmd, stdin: stdin}, nil
}

// Close asks the child to stop — an interrupt, and the end of its stdin
// for modes that watch it — and waits for it; a child still running after
// 10 s is killed.
func (c *helperProcess) Close() error {
	_ = c.cmd.Process.Signal(os.Interrupt)
	_ = c.stdin.Close()
	done := make(chan struct{})
	go func() {
		// WaitDelay only starts counting once the context is done, so
		// bound a child that ignores the interrupt here.
		t := time.NewTimer(10 * time.Second)
		defer t.Stop()
		select {
		case <-t.C:
			_ = c.cmd.Process.Kill()
		case <-done:
		}
	}()
	err := c.cmd.Wait()
	close(done)
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) && !exit.Exited() {
			return nil // ended by the signal we sent
		}
		return fmt.Errorf("child process %d: %w", c.PID, err)
	}
	return nil
}

// UntilEOF returns a context that ends with ctx or when in reaches EOF:
// a hidden child mode stops when its parent closes the pipe or dies.
func UntilEOF(ctx context.Context, in io.Reader) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		_, _ = io.Copy(io.Discard, in)
		cancel()
	}()
	return ctx, cancel
}
