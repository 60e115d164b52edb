package testutil

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// StartNATS starts an embedded nats-server with JetStream on a free
// loopback port, its streams in a temporary directory, and shuts it down
// when the test ends. Clients connect to its ClientURL; a test that stops
// the server itself (to see a client cope) may call Shutdown first.
//
// It starts the server from nats-server directly, not through
// internal/broker, so that broker's own tests can use it too.
func StartNATS(tb testing.TB) *server.Server {
	tb.Helper()
	srv, err := server.NewServer(&server.Options{
		Host:      "127.0.0.1",
		Port:      -1,
		JetStream: true,
		StoreDir:  filepath.Join(tb.TempDir(), "nats"),
		// What freshcrawl's embedded server allows, so that a large
		// result published in a test is not refused by the test server
		// alone.
		MaxPayload: 8 << 20,
		NoSigs:     true,
	})
	if err != nil {
		tb.Fatalf("embedded nats-server: %v", err)
	}
	// Start returns once the server runs; Shutdown ends its goroutines.
	srv.Start()
	tb.Cleanup(func() {
		srv.Shutdown()
		srv.WaitForShutdown()
	})
	if !srv.ReadyForConnections(15 * time.Second) {
		tb.Fatal("embedded nats-server did not accept connections within 15s")
	}
	return srv
}
