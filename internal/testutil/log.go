package testutil

import (
	"bytes"
	"log/slog"
	"sync"
	"testing"
)

// QuietLogger is a logger for the code under test that keeps a passing
// run's output clean: it writes warnings and errors to the test's log
// (shown when the test fails or runs with -v) and drops the rest.
//
// Records logged after the test has ended (by a goroutine still winding
// down) are dropped, since the testing package panics on a Log then.
func QuietLogger(tb testing.TB) *slog.Logger {
	w := &tbWriter{tb: tb}
	tb.Cleanup(w.close)
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// tbWriter passes each record, which slog's handler writes in one call,
// to tb.Log until close.
type tbWriter struct {
	mu     sync.Mutex
	tb     testing.TB
	closed bool
}

func (w *tbWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.tb.Log(string(bytes.TrimSuffix(p, []byte("\n"))))
	}
	return len(p), nil
}

func (w *tbWriter) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
}
