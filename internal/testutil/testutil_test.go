package testutil_test

import (
	"context"
	"fmt"
	"go/build"
	"log/slog"
	"runtime"
	"strings"
	"sync"
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

// recordTB records what a helper reports instead of reporting it; its
// Fatalf ends the goroutine as the real one does.
type recordTB struct {
	testing.TB
	mu   sync.Mutex
	logs []string
}

func (r *recordTB) Log(args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, fmt.Sprint(args...))
}

func (r *recordTB) Fatalf(format string, args ...any) {
	r.Log(fmt.Sprintf(format, args...))
	runtime.Goexit()
}

func (r *recordTB) recorded() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.logs...)
}

func TestWaitForFailsNamingWhatItWaitedFor(t *testing.T) {
	rec := &recordTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		testutil.WaitFor(rec, 50*time.Millisecond, "the impossible", func() bool { return false })
	}()
	<-done
	if logs := rec.recorded(); len(logs) != 1 || !strings.Contains(logs[0], "waiting for the impossible") {
		t.Errorf("reported %q, want one failure naming the impossible", logs)
	}
}

func TestQuietLoggerKeepsWarnings(t *testing.T) {
	var rec *recordTB
	var log *slog.Logger
	t.Run("test", func(t *testing.T) {
		rec = &recordTB{TB: t}
		log = testutil.QuietLogger(rec)
		log.Info("routine")
		log.Warn("odd", "n", 1)
	})
	// The test has ended: a goroutine still logging must not reach it.
	log.Warn("late")
	logs := rec.recorded()
	if len(logs) != 1 || !strings.Contains(logs[0], "level=WARN msg=odd n=1") {
		t.Errorf("logged %q, want the warning alone", logs)
	}
}
