package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/freshcrawl/freshcrawl/internal/broker"
	"github.com/freshcrawl/freshcrawl/internal/testutil"
	"github.com/freshcrawl/freshcrawl/internal/testutil/storetest"
	"github.com/freshcrawl/freshcrawl/proto"
)

// TestPublishToCoreAndStream publishes the change log and checks that a
// core NATS subscriber gets every event live, and that the change stream
// keeps them for a subscriber that was away, to replay from a sequence or
// a time; a change published twice (a restart before the cursor was
// saved) is kept once.
func TestPublishToCoreAndStream(t *testing.T) {
	srv := testutil.StartNATS(t)
	nc, js, err := broker.Connect(srv.ClientURL(), "test", testutil.QuietLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := broker.DefaultSettings()
	s.Changes.MaxAge = time.Hour
	if err := broker.Ensure(ctx, js, s); err != nil {
		t.Fatal(err)
	}
	stream, err := js.Stream(ctx, proto.ChangeStream)
	if err != nil {
		t.Fatal(err)
	}
	if cfg := stream.CachedInfo().Config; cfg.MaxAge != time.Hour || cfg.Retention != jetstream.LimitsPolicy {
		t.Fatalf("change stream config: max age %s, retention %v", cfg.MaxAge, cfg.Retention)
	}

	live, err := nc.SubscribeSync(proto.ChangeSubjectPrefix + ">")
	if err != nil {
		t.Fatal(err)
	}
	db := storetest.Open(t)
	p, err := NewPublisher(db, js, testutil.QuietLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	pctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(pctx) }()
	defer func() { stop(); <-done }()

	for i := 1; i <= 5; i++ {
		addChange(t, db, fmt.Sprintf("t%d", i), fmt.Sprintf("http://h%d.example/", i%2), 0.5)
	}
	p.Wake()
	var ids []string
	for range 5 {
		m, err := live.NextMsg(10 * time.Second)
		if err != nil {
			t.Fatalf("core subscriber: %v", err)
		}
		var ev proto.ChangeEvent
		if err := json.Unmarshal(m.Data, &ev); err != nil {
			t.Fatal(err)
		}
		if m.Subject != proto.ChangeSubject(ev.Host) {
			t.Errorf("event of %s on %s", ev.Host, m.Subject)
		}
		ids = append(ids, ev.ID)
	}
	if fmt.Sprint(ids) != "[t1 t2 t3 t4 t5]" {
		t.Fatalf("core subscriber got %v", ids)
	}
	testutil.WaitFor(t, 10*time.Second, "the stream to hold 5 events", func() bool {
		info, err := stream.Info(ctx)
		return err == nil && info.State.Msgs == 5
	})

	// A publish of an event already published (same id) is dropped.
	b, _ := json.Marshal(proto.ChangeEvent{ID: "t3", Host: "h1.example"})
	ack, err := js.Publish(ctx, proto.ChangeSubject("h1.example"), b, jetstream.WithMsgID("t3"))
	if err != nil || !ack.Duplicate {
		t.Fatalf("republish of t3: ack %+v, err %v: want a duplicate", ack, err)
	}

	// Replay from stream sequence 3, and by time from the start.
	replay := func(cfg jetstream.OrderedConsumerConfig) []string {
		c, err := js.OrderedConsumer(ctx, proto.ChangeStream, cfg)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for {
			m, err := c.Next(jetstream.FetchMaxWait(time.Second))
			if err != nil {
				break
			}
			var ev proto.ChangeEvent
			if err := json.Unmarshal(m.Data(), &ev); err != nil {
				t.Fatal(err)
			}
			got = append(got, ev.ID)
		}
		return got
	}
	if got := replay(jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: 3}); fmt.Sprint(got) != "[t3 t4 t5]" {
		t.Fatalf("replay from sequence 3: %v", got)
	}
	start := time.Now().Add(-time.Minute)
	if got := replay(jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverByStartTimePolicy, OptStartTime: &start, FilterSubjects: []string{proto.ChangeSubject("h1.example")}}); fmt.Sprint(got) != "[t1 t3 t5]" {
		t.Fatalf("replay by time of h1.example: %v", got)
	}
}
