package testutil_test

import (
	"context"
	"go/build"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/freshcrawl/freshcrawl/internal/testutil"
)

// testutil must import nothing of the module's, or the tests of what it
// imported could not use it (an import cycle).
func TestImportsNothingOfTheModule(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range pkg.Imports {
		if strings.HasPrefix(imp, "github.com/freshcrawl/freshcrawl/") {
			t.Errorf("testutil imports %s; keep it to the standard library and nats-server", imp)
		}
	}
}

func TestStartNATSServesJetStream(t *testing.T) {
	srv := testutil.StartNATS(t)
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.AccountInfo(ctx); err != nil {
		t.Fatalf("JetStream account info: %v", err)
	}
}

func TestWaitForReturnsOnceTheConditionHolds(t *testing.T) {
	var n atomic.Int32
	testutil.WaitFor(t, 10*time.Second, "three checks", func() bool { return n.Add(1) >= 3 })
	if got := n.Load(); got != 3 {
		t.Errorf("cond checked %d times, want 3 (stop as soon as it holds)", got)
	}
	testutil.WaitFor(t, -time.Second, "a condition that already holds", func() bool { return true })
}

func TestQuietLoggerDropsInfo(t *testing.T) {
	log := testutil.QuietLogger(t)
	if log.Enabled(context.Background(), slog.LevelInfo) {
		t.Error("info enabled; want warnings and errors only")
	}
	if !log.Enabled(context.Background(), slog.LevelWarn) {
		t.Error("warnings disabled")
	}
}
