// Package storetest opens a store for a test. It is apart from testutil
// because it imports store: store's and proto's own tests can then use
// testutil without an import cycle.
package storetest

import (
	"testing"

	"github.com/freshcrawl/freshcrawl/store"
)

// Open opens a new store (a real bbolt file) in a temporary directory
// and closes it when the test ends.
func Open(tb testing.TB) *store.DB {
	tb.Helper()
	db, err := store.OpenDir(tb.TempDir(), store.Options{})
	if err != nil {
		tb.Fatalf("open store: %v", err)
	}
	tb.Cleanup(func() {
		if err := db.Close(); err != nil {
			tb.Errorf("close store: %v", err)
		}
	})
	return db
}
