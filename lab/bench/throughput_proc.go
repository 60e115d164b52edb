package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"time"
)

// pageHello is the line a page-server process prints once it listens.
type pageHello struct {
	URLs []string `json:"urls"`
}

// ServePages runs the site until in reaches EOF (the parent closed the
// pipe or died) or ctx ends. It first writes one JSON line with every URL
// to out. It is the body of the hidden page-server mode of `freshcrawl
// bench throughput`, which runs the site in a child process so that its
// CPU time is not charged to the crawler being measured.
func ServePages(ctx context.Context, o PageOptions, in io.Reader, out io.Writer) error {
	site, err := startPages(o)
	if err != nil {
		return err
	}
	defer site.close()
	if err := json.NewEncoder(out).Encode(pageHello{URLs: site.urls()}); err != nil {
		return fmt.Errorf("page server: announce URLs: %w", err)
	}
	eof := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, in)
		close(eof)
	}()
	select {
	case <-ctx.Done():
	case <-eof:
	}
	return nil
}

// PageProcess is a page server running as a child process.
type PageProcess struct {
	URLs  []string
	PID   int
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// StartPageProcess starts argv (a command running ServePages) and waits
// for its URL list.
func StartPageProcess(ctx context.Context, argv []string) (*PageProcess, error) {
	p, line, err := startChild(ctx, argv)
	if err != nil {
		return nil, fmt.Errorf("page server: %w", err)
	}
	var hello pageHello
	if err := json.Unmarshal(line, &hello); err != nil || len(hello.URLs) == 0 {
		p.Close()
		return nil, fmt.Errorf("page server: no URL list from %s (%v)", argv[0], err)
	}
	p.URLs = hello.URLs
	return p, nil
}

// startChild starts argv with pipes on its stdin and stdout and returns
// the first line it prints. Closing the process closes its stdin, which
// the child takes as the signal to stop.
func startChild(ctx context.Context, argv []string) (*PageProcess, []byte, error) {
	if len(argv) == 0 {
		return nil, nil, errors.New("no command")
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.WaitDelay = 5 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	p := &PageProcess{PID: cmd.Process.Pid, cmd: cmd, stdin: stdin}
	line, err := bufio.NewReaderSize(stdout, 1<<20).ReadBytes('\n')
	if err != nil {
		p.Close()
		return nil, nil, fmt.Errorf("%s printed no first line: %w", argv[0], err)
	}
	return p, line, nil
}

// Close ends the child by closing its stdin and waits for it.
func (p *PageProcess) Close() error {
	_ = p.stdin.Close()
	err := p.cmd.Wait()
	if err != nil {
		return fmt.Errorf("page server: %w", err)
	}
	return nil
}
