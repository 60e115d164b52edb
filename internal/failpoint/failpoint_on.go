//go:build failpoints

package failpoint

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Enabled says whether the binary was built with the failpoints tag.
const Enabled = true

// errInjected is wrapped by the error of a point armed with error.
var errInjected = errors.New("injected by a failpoint")

// exitCode is the status of a process ended by an exit point.
const exitCode = 3

// armed are the points of the environment, read once when the binary
// starts: a bad spec stops it there rather than at the point, perhaps
// never reached. The map is not changed after; a point counts its hits.
var armed = mustParse(os.Getenv(Env))

// points are armed points by name.
type points map[string]*point

type point struct {
	action string
	// left is the hits still to act on; negative: every hit.
	left atomic.Int64
}

// Hit acts as the point name is armed to (package doc); it returns nil
// if the point is not armed or its count is spent.
func Hit(name string) error { return armed.hit(name) }

func (ps points) hit(name string) error {
	p := ps[name]
	if p == nil || !p.take() {
		return nil
	}
	fmt.Fprintf(os.Stderr, "%s %s reached\n", Marker, name)
	switch p.action {
	case "pause":
		// A sleep, not an empty select: the runtime would call a process
		// with nothing else to run deadlocked and end it.
		for {
			time.Sleep(time.Hour)
		}
	case "exit":
		os.Exit(exitCode)
	}
	return fmt.Errorf("failpoint %s: %w", name, errInjected)
}

// take reports whether this hit is to be acted on.
func (p *point) take() bool {
	for {
		n := p.left.Load()
		switch {
		case n < 0:
			return true
		case n == 0:
			return false
		case p.left.CompareAndSwap(n, n-1):
			return true
		}
	}
}

func mustParse(spec string) points {
	m, err := parse(spec)
	if err != nil {
		panic(fmt.Sprintf("%s=%q: %v", Env, spec, err))
	}
	return m
}

// parse reads "name=[N*]action;…".
func parse(spec string) (points, error) {
	m := points{}
	for term := range strings.SplitSeq(spec, ";") {
		term = strings.TrimSpace(term)
		if term == "" {
			continue
		}
		name, action, ok := strings.Cut(term, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("%q: want name=action", term)
		}
		if !known(name) {
			return nil, fmt.Errorf("%q: no point %q (points: %s, %s)", term, name, FoldBeforeCommit, FoldAfterCommit)
		}
		if m[name] != nil {
			return nil, fmt.Errorf("%q: point %q armed twice", term, name)
		}
		p := &point{}
		p.left.Store(-1)
		if count, rest, ok := strings.Cut(action, "*"); ok {
			n, err := strconv.ParseInt(count, 10, 64)
			if err != nil || n <= 0 {
				return nil, fmt.Errorf("%q: the count %q is not a positive integer", term, count)
			}
			p.left.Store(n)
			action = rest
		}
		switch action {
		case "pause", "exit", "error":
		default:
			return nil, fmt.Errorf("%q: unknown action %q (pause, exit, error)", term, action)
		}
		p.action = action
		m[name] = p
	}
	return m, nil
}

// known reports whether name is one of the points.
func known(name string) bool {
	switch name {
	case FoldBeforeCommit, FoldAfterCommit:
		return true
	}
	return false
}
