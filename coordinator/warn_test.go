package coordinator

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/freshcrawl/freshcrawl/internal/broker"
	"github.com/freshcrawl/freshcrawl/internal/schedule"
)

// syncBuffer is a log sink safe for the coordinator's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// TestBudgetWarningLoggedOnce: a budget no host can take is warned about
// once however often the plan is re-solved (it was 769 of 783 log lines
// of a 27-minute run), again only when the shortfall moves materially,
// and the end of the condition is said once.
func TestBudgetWarningLoggedOnce(t *testing.T) {
	e := newEnv(t, broker.DefaultSettings())
	var logs syncBuffer
	uniform, err := schedule.PolicyByName("uniform", "")
	if err != nil {
		t.Fatal(err)
	}
	c := e.coordinator(t, func(o *Options) {
		o.Budget, o.HostRate, o.Policy, o.Replan, o.Log = 100, 1, uniform, time.Hour, slog.New(slog.NewTextHandler(&logs, nil))
	})
	if _, err := c.AddSeeds(strings.NewReader("http://one.example/\n"), "t"); err != nil {
		t.Fatal(err)
	}
	const warning = "budget exceeds what the hosts can take"
	for range 769 {
		c.replan()
	}
	if n := strings.Count(logs.String(), warning); n != 1 {
		t.Fatalf("769 re-plans logged the warning %d times:\n%s", n, logs.String())
	}
	// A host more moves the shortfall (99/s) by 1 %: not material.
	// Twenty more move it by a fifth: logged again, once.
	addHosts := func(from, to int) {
		t.Helper()
		var seeds strings.Builder
		for i := from; i < to; i++ {
			fmt.Fprintf(&seeds, "http://m%d.example/\n", i)
		}
		if _, err := c.AddSeeds(strings.NewReader(seeds.String()), "t"); err != nil {
			t.Fatal(err)
		}
		for range 50 {
			c.replan()
		}
	}
	addHosts(0, 1)
	if n := strings.Count(logs.String(), warning); n != 1 {
		t.Fatalf("a shortfall 1 %% smaller logged the warning again (%d in all):\n%s", n, logs.String())
	}
	addHosts(1, 21)
	if n := strings.Count(logs.String(), warning); n != 2 {
		t.Fatalf("a shortfall a fifth smaller logged the warning %d times in all, want 2:\n%s", n, logs.String())
	}
	// Enough hosts to take the whole budget: the condition ends, once.
	var seeds strings.Builder
	for i := range 150 {
		fmt.Fprintf(&seeds, "http://h%d.example/\n", i)
	}
	if _, err := c.AddSeeds(strings.NewReader(seeds.String()), "t"); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		c.replan()
	}
	if st := c.Status(); st.Unabsorbed != 0 {
		t.Fatalf("unabsorbed %v with 172 hosts at 1/s for a budget of 100/s", st.Unabsorbed)
	}
	if n := strings.Count(logs.String(), "the hosts take the whole budget again"); n != 1 {
		t.Fatalf("the end of the condition logged %d times:\n%s", n, logs.String())
	}
	if n := strings.Count(logs.String(), warning); n != 2 {
		t.Fatalf("warning logged %d times in all, want 2", n)
	}
}

// TestFoldFailureLoggedOnce: a store that refuses every fold (the results
// come back every second) is logged once, again when the failure turns
// into a full disk, and not again while the disk stays full.
func TestFoldFailureLoggedOnce(t *testing.T) {
	e := newEnv(t, broker.DefaultSettings())
	var logs syncBuffer
	c := e.coordinator(t, func(o *Options) { o.Log = slog.New(slog.NewTextHandler(&logs, nil)) })
	for i := range 100 {
		c.foldFailed(fmt.Errorf("write batch %d: database not open", i))
	}
	for i := range 100 {
		c.foldFailed(fmt.Errorf("write batch %d: %w", i, syscall.ENOSPC))
	}
	if n := strings.Count(logs.String(), "level=ERROR"); n != 2 {
		t.Fatalf("200 failed folds of two kinds logged %d errors, want 2:\n%s", n, logs.String())
	}
	if n := strings.Count(logs.String(), "disk of the store is full"); n != 1 {
		t.Fatalf("the full disk logged %d times:\n%s", n, logs.String())
	}
}
