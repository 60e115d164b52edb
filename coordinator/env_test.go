package coordinator

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/freshcrawl/freshcrawl/internal/broker"
	"github.com/freshcrawl/freshcrawl/internal/testutil"
	"github.com/freshcrawl/freshcrawl/proto"
	"github.com/freshcrawl/freshcrawl/store"
)

// env is what a coordinator runs on in a test: an embedded nats-server
// with JetStream and a bbolt file, both in a temporary directory.
type env struct {
	srv      *server.Server
	nc       *nats.Conn
	js       jetstream.JetStream
	settings broker.Settings
	dbPath   string
	db       *store.DB
}

func newEnv(tb testing.TB, s broker.Settings) *env {
	tb.Helper()
	srv := testutil.StartNATS(tb)
	e := &env{srv: srv, settings: s, dbPath: filepath.Join(tb.TempDir(), store.FileName)}
	tb.Cleanup(func() {
		if e.db != nil {
			_ = e.db.Close()
		}
		if e.nc != nil {
			e.nc.Close()
		}
	})
	var err error
	if e.nc, e.js, err = broker.Connect(srv.ClientURL(), "test", testutil.QuietLogger(tb)); err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := broker.Ensure(ctx, e.js, s); err != nil {
		tb.Fatal(err)
	}
	e.openStore(tb)
	return e
}

func (e *env) openStore(tb testing.TB) {
	tb.Helper()
	db, err := store.Open(e.dbPath, store.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	e.db = db
}

// testOptions are the defaults with a quiet log, then set's changes.
func testOptions(tb testing.TB, set func(o *Options)) Options {
	o := DefaultOptions()
	o.Log = testutil.QuietLogger(tb)
	set(&o)
	return o
}

// coordinator builds a coordinator on the environment with testOptions
// (AckWait and MaxDeliver from the broker settings).
func (e *env) coordinator(tb testing.TB, set func(o *Options)) *Coordinator {
	tb.Helper()
	opts := testOptions(tb, set)
	opts.AckWait, opts.MaxDeliver = e.settings.AckWait, e.settings.MaxDeliver
	c, err := New(e.db, e.nc, e.js, opts)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// run runs c until the returned stop is called (or the test ends); stop
// waits for Run to return and fails the test on its error.
func run(tb testing.TB, c *Coordinator) (stop func()) {
	tb.Helper()
	return testutil.Run(tb, "coordinator", c.Run)
}

// takeTask is a worker's pull of one task from the task stream: the task
// and its message (not acknowledged).
func (e *env) takeTask(tb testing.TB, within time.Duration) (proto.Task, jetstream.Msg) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	cons, err := e.js.Consumer(ctx, proto.TaskStream, proto.TaskConsumer)
	if err != nil {
		tb.Fatal(err)
	}
	for ctx.Err() == nil {
		batch, err := cons.Fetch(1, jetstream.FetchMaxWait(200*time.Millisecond))
		if err != nil {
			continue
		}
		for m := range batch.Messages() {
			t, err := proto.DecodeTask(m.Data())
			if err != nil {
				tb.Fatal(err)
			}
			return t, m
		}
	}
	tb.Fatalf("no task within %s", within)
	return proto.Task{}, nil
}

// sendResult publishes r on the result stream, as a worker does.
func (e *env) sendResult(tb testing.TB, r proto.Result) {
	tb.Helper()
	r.V = proto.Version
	if r.Kind == "" {
		r.Kind = proto.KindFetch
	}
	b, err := proto.Encode(r)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := e.js.Publish(ctx, proto.ResultSubject(r.Kind), b); err != nil {
		tb.Fatal(err)
	}
}
