package proto

import (
	"bytes"
	"testing"
	"time"
)

// wireSeeds are messages as they travel, and a few broken ones.
func wireSeeds(f *testing.F) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 123, time.UTC)
	for _, v := range []any{
		Task{V: Version, ID: "abc-1", Kind: KindFetch, URL: "http://a.com/", Host: "a.com", IssuedAt: now, MinGap: time.Second,
			Selector: "p", Ignore: IgnoreRules{Selectors: []string{".ad"}, Patterns: []string{`\d+`}, MinChange: 0.1}, ETag: `"e"`, PrevHash: "h"},
		Task{V: Version, ID: "p-1", Kind: KindProbe, URL: "http://s/?q=x", Probe: &ProbeSpec{Source: "s", Def: []byte(`{"name": "s"}`), Query: []string{"x"}, Page: 2}},
		Result{V: Version, TaskID: "abc-1", Kind: KindCapture, URL: "http://a.com/", StartedAt: now, FinishedAt: now.Add(time.Second), Status: 200,
			Hash: "h2", Changed: true, Text: "héllo\n\uFFFD", Diff: &DiffSummary{LinesAdded: 1, Magnitude: 0.5, Preview: "+ x"}, RetryAfter: time.Minute},
		Result{V: Version, TaskID: "p-1", Kind: KindProbe, URL: "http://s/", Items: []ProbeItem{{ID: "1", Fields: map[string]string{"a": "b"}}}, Total: -1},
		Result{V: Version, TaskID: "e", URL: "http://a.com/", ErrKind: ErrTimeout, Err: "fetch: timeout"},
	} {
		b, err := Encode(v)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{"", "{}", "null", "[]", `{"v":2,"id":"x","url":"u","kind":"fetch"}`, `{"v":1,"id":"x","url":"u","kind":"crawl"}`,
		`{"v":1,"id":"x","url":"u","kind":"fetch","issued_at":"yesterday"}`, `{"v":1,"task_id":"x","url":"\xff"}`,
		`{"v":1,"id":"x","url":"u","kind":"probe","probe":{"def":[1,2}}`, `{"v":1e400}`} {
		f.Add([]byte(s))
	}
}

// roundTrip checks that a decoded message survives encoding: encoding it,
// decoding that and encoding again gives the same bytes, so what a worker
// sends is what the coordinator reads.
func roundTrip[T any](t *testing.T, msg T, decode func([]byte) (T, error)) {
	t.Helper()
	b1, err := Encode(msg)
	if err != nil {
		t.Fatalf("a decoded message does not encode: %v", err)
	}
	again, err := decode(b1)
	if err != nil {
		t.Fatalf("a re-encoded message does not decode: %v\n%s", err, b1)
	}
	b2, err := Encode(again)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b1, b2) {
		t.Fatalf("round trip changed the message:\n%s\n%s", b1, b2)
	}
}

func FuzzDecodeTask(f *testing.F) {
	wireSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		task, err := DecodeTask(b)
		if err != nil {
			return
		}
		if task.V != Version || task.ID == "" || task.URL == "" || !task.Kind.valid() {
			t.Fatalf("accepted an invalid task: %+v", task)
		}
		roundTrip(t, task, DecodeTask)
	})
}

func FuzzDecodeResult(f *testing.F) {
	wireSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeResult(b)
		if err != nil {
			return
		}
		if r.V != Version || r.TaskID == "" || r.URL == "" {
			t.Fatalf("accepted an invalid result: %+v", r)
		}
		roundTrip(t, r, DecodeResult)
	})
}
