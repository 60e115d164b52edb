package faults

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/freshcrawl/freshcrawl/internal/failpoint"
)

// proc is one OS process of the suite (a NATS node, the coordinator, a
// worker), its output kept in a log file.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error // set when done is closed

	mu      sync.Mutex
	markers map[string]chan struct{} // a line containing the key was printed
	marked  []string                 // lines with markerPrefix printed so far
}

// markerPrefix starts the lines a process prints for the suite (the
// coordinator's failpoints): they are kept, so that a marker asked for
// after it was printed is found.
const markerPrefix = failpoint.Marker

// startProc starts bin with args and, besides the suite's own
// environment, env; output to logPath (appended).
func startProc(name, logPath, bin string, env []string, args ...string) (*proc, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(f, "==== %s start %s: %s %s\n", time.Now().Format(time.RFC3339Nano), name, bin, strings.Join(args, " "))
	p := &proc{name: name, log: logPath, done: make(chan struct{}), markers: map[string]chan struct{}{}}
	cmd := exec.Command(bin, args...)
	// The points the suite arms, none from its own environment.
	inherited := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, failpoint.Env+"=") })
	cmd.Env = append(inherited, env...)
	cmd.Stdout = f
	stderr, err := cmd.StderrPipe()
	if err != nil {
		f.Close()
		return nil, err
	}
	// Not in the test's process group: a Ctrl-C of the suite is its own
	// to handle, processes are stopped by the suite.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p.cmd = cmd
	lines := make(chan struct{})
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(f, line)
			p.mu.Lock()
			if strings.Contains(line, markerPrefix) {
				p.marked = append(p.marked, line)
			}
			for k, ch := range p.markers {
				if strings.Contains(line, k) {
					close(ch)
					delete(p.markers, k)
				}
			}
			p.mu.Unlock()
		}
		_, _ = io.Copy(f, stderr)
	}()
	go func() {
		<-lines
		p.err = cmd.Wait()
		fmt.Fprintf(f, "==== %s exit %s: %v\n", time.Now().Format(time.RFC3339Nano), name, p.err)
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// marker returns a channel closed when the process prints (or has
// printed) a line with s, which starts with markerPrefix.
func (p *proc) marker(s string) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	ch := make(chan struct{})
	for _, l := range p.marked {
		if strings.Contains(l, s) {
			close(ch)
			return ch
		}
	}
	p.markers[s] = ch
	return ch
}

func (p *proc) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *proc) kill() {
	if p.running() {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
	}
	<-p.done
}

// stop sends SIGTERM and waits up to grace for a clean exit, then kills.
// It returns the exit error of a process that did not stop cleanly.
func (p *proc) stop(grace time.Duration) error {
	if !p.running() {
		return p.exitErr()
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
		return p.exitErr()
	case <-t.C:
		p.kill()
		return fmt.Errorf("%s did not stop within %s of SIGTERM; killed (log %s)", p.name, grace, p.log)
	}
}

func (p *proc) exitErr() error {
	if p.err != nil {
		return fmt.Errorf("%s: %w (log %s)", p.name, p.err, p.log)
	}
	return nil
}

// freePort returns a TCP port free on host now.
func freePort(host string) (int, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// waitTCP waits until addr accepts connections or ctx ends.
func waitTCP(ctx context.Context, addr string, p *proc) error {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if p != nil && !p.running() {
			return fmt.Errorf("%s exited before it listened on %s: %w", p.name, addr, errors.Join(p.exitErr(), errors.New("see its log")))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", addr, ctx.Err())
		case <-t.C:
		}
	}
}
