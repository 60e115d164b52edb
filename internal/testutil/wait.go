package testutil

import (
	"testing"
	"time"
)

// WaitFor checks cond every 10 ms until it holds, and fails the test if
// it still does not when within has passed. within bounds a broken run;
// the test must not rely on it as a timing. cond is checked at least
// once, so a condition that already holds passes even with within ≤ 0.
func WaitFor(tb testing.TB, within time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			if cond() {
				return
			}
			tb.Fatalf("timed out after %s waiting for %s", within, what)
		case <-tick.C:
		}
	}
}
