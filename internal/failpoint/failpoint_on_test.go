//go:build failpoints

package failpoint

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	ps, err := parse(" fold-before-commit=2*error ; fold-after-commit=pause;")
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 || ps[FoldBeforeCommit].action != "error" || ps[FoldBeforeCommit].left.Load() != 2 ||
		ps[FoldAfterCommit].action != "pause" || ps[FoldAfterCommit].left.Load() != -1 {
		t.Errorf("parsed %+v", ps)
	}
	for _, bad := range []string{"fold-before-commit", "=error", "no-such-point=error", "fold-before-commit=crash",
		"fold-before-commit=0*error", "fold-before-commit=x*error", "fold-before-commit=error;fold-before-commit=exit"} {
		if _, err := parse(bad); err == nil {
			t.Errorf("parse(%q): no error", bad)
		}
	}
}

func TestHitError(t *testing.T) {
	ps, err := parse(FoldBeforeCommit + "=2*error")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := ps.hit(FoldBeforeCommit); !errors.Is(err, errInjected) {
			t.Fatalf("hit %d: %v, want errInjected", i+1, err)
		}
	}
	if err := ps.hit(FoldBeforeCommit); err != nil {
		t.Errorf("third hit, the count spent: %v", err)
	}
	if err := ps.hit(FoldAfterCommit); err != nil {
		t.Errorf("a point not armed: %v", err)
	}
}

// TestHelperProcess is the process the tests below start: it hits the
// point its environment arms.
func TestHelperProcess(t *testing.T) {
	name := os.Getenv("FAILPOINT_TEST_HIT")
	if name == "" {
		t.Skip("started by the tests of pause and exit only")
	}
	_ = Hit(name)
	os.Exit(0)
}

// startHelper runs the test binary as a process that arms point with
// action and hits it; it returns the process and its standard error.
func startHelper(t *testing.T, point, action string) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), Env+"="+point+"="+action, "FAILPOINT_TEST_HIT="+point)
	// A pipe of our own, not StderrPipe: it is read to its end, the
	// process's exit, whenever the test waits for the process.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	cmd.Stderr = w
	err = cmd.Start()
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	return cmd, bufio.NewScanner(r)
}

func TestExit(t *testing.T) {
	cmd, sc := startHelper(t, FoldAfterCommit, "exit")
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	err := cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitCode {
		t.Errorf("the process ended with %v, want exit status %d", err, exitCode)
	}
	if want := Marker + " " + FoldAfterCommit + " reached"; !strings.Contains(strings.Join(lines, "\n"), want) {
		t.Errorf("stderr %q lacks %q", lines, want)
	}
}

func TestPause(t *testing.T) {
	cmd, sc := startHelper(t, FoldBeforeCommit, "pause")
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	found := false
	for !found && sc.Scan() {
		found = strings.Contains(sc.Text(), Marker+" "+FoldBeforeCommit+" reached")
	}
	if !found {
		t.Fatalf("the process ended without the mark: %v", <-exited)
	}
	// Paused, the process does not end by itself.
	select {
	case err := <-exited:
		t.Fatalf("the process went on past the pause: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-exited
}
