package broker

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/freshcrawl/freshcrawl/proto"
)

// TestChangeStream: Ensure creates the change stream with the configured
// retention and updates it when the retention changes; a stream of
// someone else's on the same subjects stops Ensure with a clear error.
func TestChangeStream(t *testing.T) {
	_, js := start(t)
	s := settings(time.Minute, 5, 100)
	s.Changes = ChangeRetention{MaxAge: 48 * time.Hour, MaxBytes: 1 << 20, MaxMsgs: 1000}
	if err := Ensure(ctx(t), js, s); err != nil {
		t.Fatal(err)
	}
	info := func() jetstream.StreamConfig {
		st, err := js.Stream(ctx(t), proto.ChangeStream)
		if err != nil {
			t.Fatal(err)
		}
		return st.CachedInfo().Config
	}
	if c := info(); c.MaxAge != 48*time.Hour || c.MaxBytes != 1<<20 || c.MaxMsgs != 1000 || c.Retention != jetstream.LimitsPolicy || c.Subjects[0] != proto.ChangeSubjectPrefix+">" {
		t.Fatalf("change stream: %+v", c)
	}
	s.Changes = ChangeRetention{MaxAge: time.Hour, MaxBytes: -1, MaxMsgs: -1}
	if err := Ensure(ctx(t), js, s); err != nil {
		t.Fatal(err)
	}
	if c := info(); c.MaxAge != time.Hour || c.MaxBytes != -1 || c.MaxMsgs != -1 {
		t.Fatalf("updated change stream: %+v", c)
	}

	_, js2 := start(t)
	if _, err := js2.CreateStream(ctx(t), jetstream.StreamConfig{Name: "MINE", Subjects: []string{"freshcrawl.changes.>"}}); err != nil {
		t.Fatal(err)
	}
	err := Ensure(ctx(t), js2, s)
	if err == nil || !strings.Contains(err.Error(), proto.ChangeStream) || !strings.Contains(err.Error(), "subjects overlap") {
		t.Fatalf("Ensure beside an overlapping stream: %v", err)
	}
}
