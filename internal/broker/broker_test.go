package broker

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/freshcrawl/freshcrawl/internal/testutil"
	"github.com/freshcrawl/freshcrawl/proto"
)

func start(t *testing.T) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	srv, err := StartEmbedded(EmbeddedOptions{Dir: filepath.Join(t.TempDir(), "nats"), Listen: "127.0.0.1:-1"})
	if err != nil {
		t.Fatal(err)
	}
	nc, js, err := Connect(srv.ClientURL(), "test", testutil.QuietLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		nc.Close()
		srv.Shutdown()
		srv.WaitForShutdown()
	})
	return nc, js
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func settings(ackWait time.Duration, maxDeliver, maxAckPending int) Settings {
	s := DefaultSettings()
	s.AckWait, s.MaxDeliver, s.MaxAckPending, s.Duplicates = ackWait, maxDeliver, maxAckPending, 90*time.Second
	return s
}

func consumerConfig(t *testing.T, js jetstream.JetStream, stream, name string) jetstream.ConsumerConfig {
	t.Helper()
	c, err := js.Consumer(ctx(t), stream, name)
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	return info.Config
}

// Ensure creates the work-queue streams and the durable consumers with
// the settings, and a second Ensure updates them.
func TestEnsureCreatesWithSettings(t *testing.T) {
	_, js := start(t)
	if err := Ensure(ctx(t), js, settings(7*time.Second, 4, 33)); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{proto.TaskStream, proto.ResultStream} {
		st, err := js.Stream(ctx(t), name)
		if err != nil {
			t.Fatal(err)
		}
		info, err := st.Info(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		cfg := info.Config
		if cfg.Retention != jetstream.WorkQueuePolicy || cfg.Storage != jetstream.FileStorage || cfg.Replicas != 1 || cfg.Duplicates != 90*time.Second {
			t.Errorf("stream %s: %+v", name, cfg)
		}
	}
	task := consumerConfig(t, js, proto.TaskStream, proto.TaskConsumer)
	if task.AckPolicy != jetstream.AckExplicitPolicy || task.AckWait != 7*time.Second || task.MaxDeliver != 4 || task.MaxAckPending != 33 || task.FilterSubject != proto.TaskSubjectPrefix+">" {
		t.Errorf("task consumer: %+v", task)
	}
	res := consumerConfig(t, js, proto.ResultStream, proto.ResultConsumer)
	if res.AckPolicy != jetstream.AckExplicitPolicy || res.MaxDeliver != -1 {
		t.Errorf("result consumer: %+v (a result must be redelivered until folded)", res)
	}
	if err := Ensure(ctx(t), js, settings(9*time.Second, 4, 50)); err != nil {
		t.Fatal(err)
	}
	if task := consumerConfig(t, js, proto.TaskStream, proto.TaskConsumer); task.AckWait != 9*time.Second || task.MaxAckPending != 50 {
		t.Errorf("after a second Ensure the task consumer has AckWait %v, MaxAckPending %d; want 9s and 50", task.AckWait, task.MaxAckPending)
	}
}

// A worker's EnsureExisting leaves the coordinator's settings alone, and
// creates everything when it comes first.
func TestEnsureExisting(t *testing.T) {
	_, js := start(t)
	if err := EnsureExisting(ctx(t), js, settings(5*time.Second, 3, 8)); err != nil {
		t.Fatal(err)
	}
	if task := consumerConfig(t, js, proto.TaskStream, proto.TaskConsumer); task.MaxAckPending != 8 || task.AckWait != 5*time.Second {
		t.Errorf("created by a worker first: %+v, want its settings", task)
	}
	if err := Ensure(ctx(t), js, settings(60*time.Second, 5, 256)); err != nil {
		t.Fatal(err)
	}
	if err := EnsureExisting(ctx(t), js, settings(5*time.Second, 3, 8)); err != nil {
		t.Fatal(err)
	}
	if task := consumerConfig(t, js, proto.TaskStream, proto.TaskConsumer); task.MaxAckPending != 256 || task.AckWait != 60*time.Second || task.MaxDeliver != 5 {
		t.Errorf("a worker changed the coordinator's settings: %+v", task)
	}
}

// Queue reports tasks pending, delivered and unacknowledged, and results
// awaiting their fold.
func TestQueue(t *testing.T) {
	_, js := start(t)
	if err := Ensure(ctx(t), js, settings(time.Minute, 5, 64)); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := js.Publish(ctx(t), proto.TaskSubject(proto.KindFetch), []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if _, err := js.Publish(ctx(t), proto.ResultSubject(proto.KindFetch), []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	cons, err := js.Consumer(ctx(t), proto.TaskStream, proto.TaskConsumer)
	if err != nil {
		t.Fatal(err)
	}
	b, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for range b.Messages() {
		got++
	}
	if got != 1 {
		t.Fatalf("fetched %d tasks, want 1", got)
	}
	q, err := Queue(ctx(t), js)
	if err != nil {
		t.Fatal(err)
	}
	want := QueueInfo{Pending: 2, AckPending: 1, Messages: 3, Results: 2}
	if q != want {
		t.Errorf("queue %+v, want %+v", q, want)
	}
}

// A task that runs out of deliveries (after the shortest AckWait allowed)
// raises the advisory, and ParseMaxDeliveries finds the task in it.
func TestMaxDeliveriesAdvisory(t *testing.T) {
	nc, js := start(t)
	if err := Ensure(ctx(t), js, settings(time.Second, 1, 64)); err != nil {
		t.Fatal(err)
	}
	advisories := make(chan *nats.Msg, 4)
	sub, err := nc.ChanSubscribe(MaxDeliveriesSubject(), advisories)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	ack, err := js.Publish(ctx(t), proto.TaskSubject(proto.KindFetch), []byte("{}"))
	if err != nil {
		t.Fatal(err)
	}
	cons, err := js.Consumer(ctx(t), proto.TaskStream, proto.TaskConsumer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second)); err != nil { // taken, never acknowledged
		t.Fatal(err)
	}
	select {
	case m := <-advisories:
		adv, err := ParseMaxDeliveries(m.Data)
		if err != nil {
			t.Fatal(err)
		}
		if adv.StreamSeq != ack.Sequence || adv.Deliveries != 1 || adv.Stream != proto.TaskStream || adv.Consumer != proto.TaskConsumer {
			t.Errorf("advisory %+v, want task %d after 1 delivery", adv, ack.Sequence)
		}
	case <-ctx(t).Done():
		t.Fatal("no max-deliveries advisory")
	}
}

func TestParseMaxDeliveriesRefuses(t *testing.T) {
	for _, b := range []string{"", "{", `{"stream":"S","deliveries":3}`, `{"stream_seq":"x"}`} {
		if a, err := ParseMaxDeliveries([]byte(b)); err == nil {
			t.Errorf("%q parsed as %+v", b, a)
		}
	}
}

func TestStartEmbeddedBadAddress(t *testing.T) {
	for _, addr := range []string{"nowhere", "127.0.0.1:http"} {
		if _, err := StartEmbedded(EmbeddedOptions{Dir: t.TempDir(), Listen: addr}); err == nil {
			t.Errorf("listen %q: started", addr)
		}
	}
}

// OldestResult is the zero time on an empty results stream, then the time
// the first result still there was stored, and it moves on once that
// result is acknowledged (a work queue deletes it).
func TestOldestResult(t *testing.T) {
	_, js := start(t)
	if err := Ensure(ctx(t), js, settings(time.Minute, 5, 64)); err != nil {
		t.Fatal(err)
	}
	if got, err := OldestResult(ctx(t), js); err != nil || !got.IsZero() {
		t.Fatalf("empty stream: %v, %v; want the zero time", got, err)
	}
	before := time.Now()
	for range 2 {
		if _, err := js.Publish(ctx(t), proto.ResultSubject(proto.KindFetch), []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	first, err := OldestResult(ctx(t), js)
	if err != nil {
		t.Fatal(err)
	}
	if first.Before(before.Add(-time.Second)) || first.After(time.Now().Add(time.Second)) {
		t.Fatalf("oldest result stored at %v, published after %v", first, before)
	}
	cons, err := js.Consumer(ctx(t), proto.ResultStream, proto.ResultConsumer)
	if err != nil {
		t.Fatal(err)
	}
	b, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for m := range b.Messages() {
		if err := m.DoubleAck(ctx(t)); err != nil {
			t.Fatal(err)
		}
	}
	second, err := OldestResult(ctx(t), js)
	if err != nil {
		t.Fatal(err)
	}
	if second.IsZero() || second.Before(first) {
		t.Fatalf("after the first result was acknowledged the oldest is %v, want the second's time (≥ %v)", second, first)
	}
}

// Validate names each setting out of range; the defaults pass.
func TestSettingsValidate(t *testing.T) {
	if err := DefaultSettings().Validate(); err != nil {
		t.Fatalf("the defaults refused: %v", err)
	}
	for _, c := range []struct {
		field string
		set   func(*Settings)
	}{
		{"Replicas", func(s *Settings) { s.Replicas = 0 }},
		{"Replicas", func(s *Settings) { s.Replicas = 6 }},
		{"AckWait", func(s *Settings) { s.AckWait = 500 * time.Millisecond }},
		{"MaxDeliver", func(s *Settings) { s.MaxDeliver = 0 }},
		{"MaxAckPending", func(s *Settings) { s.MaxAckPending = 0 }},
		{"Duplicates", func(s *Settings) { s.Duplicates = 0 }},
		{"RobotsTTL", func(s *Settings) { s.RobotsTTL = 0 }},
		{"Changes.MaxAge", func(s *Settings) { s.Changes.MaxAge = time.Second }},
		{"Changes.MaxBytes", func(s *Settings) { s.Changes.MaxBytes = 0 }},
		{"Changes.MaxMsgs", func(s *Settings) { s.Changes.MaxMsgs = -2 }},
	} {
		s := DefaultSettings()
		c.set(&s)
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), c.field+":") {
			t.Errorf("%s: Validate = %v, want an error naming the field", c.field, err)
		}
	}
	if err := (LeaseOptions{TTL: time.Second}).Validate(); err == nil || !strings.Contains(err.Error(), "TTL:") {
		t.Errorf("a 1s lease TTL: Validate = %v", err)
	}
	if err := DefaultLeaseOptions().Validate(); err != nil {
		t.Errorf("the default lease options refused: %v", err)
	}
}
