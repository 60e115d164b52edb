// Package testutil holds what the module's tests share: starting NATS,
// waiting for a condition, a quiet logger, and the switch that keeps the
// slow integration and fault cases out of the quick run. Opening a store
// is in the storetest package beneath it.
package testutil

import "testing"

// Slow skips t unless the tests were built with the slow tag. The slow
// cases are the long integration and fault runs: `go test -race ./...`
// leaves them out so that it stays a quick loop, and `go test -race -tags
// slow ./...` (what .ci/run runs) includes them.
func Slow(t testing.TB) {
	t.Helper()
	if !slowTests {
		t.Skip("slow: run with -tags slow")
	}
}
