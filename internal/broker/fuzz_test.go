package broker

import "testing"

// FuzzParseMaxDeliveries: the advisory JetStream sends when a task ran out
// of deliveries, as the coordinator reads it. Whatever arrives on the
// advisory subject, the parse does not panic, and what it accepts names a
// stream message.
func FuzzParseMaxDeliveries(f *testing.F) {
	for _, s := range []string{
		`{"type":"io.nats.jetstream.advisory.v1.max_deliver","id":"x","timestamp":"2026-01-01T00:00:00Z","stream":"FRESHCRAWL_TASKS","consumer":"workers","stream_seq":42,"deliveries":5}`,
		`{"stream_seq":0}`, `{"stream_seq":-1}`, `{"stream_seq":1e30}`, `{"stream_seq":"7"}`, `null`, ``, `[`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := ParseMaxDeliveries(b)
		if err == nil && a.StreamSeq == 0 {
			t.Fatalf("accepted an advisory without a stream sequence: %q", b)
		}
	})
}
