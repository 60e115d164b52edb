package proto

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

func sampleTask() Task {
	return Task{
		V: Version, ID: "t-000123", Kind: KindFetch, URL: "http://127.0.0.2:8080/h1/p3", Host: "127.0.0.2:8080",
		NotBefore: at, IssuedAt: at.Add(-time.Second), MinGap: time.Millisecond,
		ETag: `"v7"`, LastModified: "Sat, 01 Mar 2025 12:00:00 GMT",
		PrevHash: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
	}
}

func sampleResult() Result {
	return Result{
		V: Version, TaskID: "t-000123", Kind: KindFetch, URL: "http://127.0.0.2:8080/h1/p3", Host: "127.0.0.2:8080",
		WorkerID: "w-1", Attempt: 1, StartedAt: at, FinishedAt: at.Add(3 * time.Millisecond), Duration: 3 * time.Millisecond,
		Status: 200, Bytes: 31000, ContentType: "text/html",
		Hash:    "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae",
		Changed: true, Text: strings.Repeat("A line of the page's text, one block per line.\n", 300),
		Diff: &DiffSummary{LinesAdded: 3, LinesRemoved: 2, CharsChanged: 120, Magnitude: 0.01, Preview: "+ new\n- old"},
	}
}

// TestOldJSONMessagesStillRead checks messages from releases that sent JSON
// decode as before.
func TestOldJSONMessagesStillRead(t *testing.T) {
	task := sampleTask()
	b, err := json.Marshal(task)
	if err != nil {
		t.Fatal(err)
	}
	if isBinary(b) {
		t.Fatal("JSON taken for binary")
	}
	got, err := DecodeTask(b)
	if err != nil || !reflect.DeepEqual(got, task) {
		t.Fatalf("JSON task: %v\n got %+v\nwant %+v", err, got, task)
	}
	res := sampleResult()
	if b, err = json.Marshal(res); err != nil {
		t.Fatal(err)
	}
	gotR, err := DecodeResult(b)
	if err != nil || !reflect.DeepEqual(gotR, res) {
		t.Fatalf("JSON result: %v\n got %+v\nwant %+v", err, gotR, res)
	}
}

func TestBinaryIsSmallerAndTagged(t *testing.T) {
	for _, m := range []any{sampleTask(), sampleResult()} {
		bin, err := Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		js, _ := json.Marshal(m)
		if !isBinary(bin) {
			t.Fatalf("%T not encoded binary", m)
		}
		if len(bin) >= len(js) {
			t.Errorf("%T: binary %d bytes, JSON %d", m, len(bin), len(js))
		}
		t.Logf("%T: binary %d bytes, JSON %d", m, len(bin), len(js))
	}
	// Messages other programs read stay JSON.
	b, err := Encode(Heartbeat{V: Version, WorkerID: "w"})
	if err != nil || isBinary(b) || b[0] != '{' {
		t.Fatalf("heartbeat encoded as %q (%v)", b, err)
	}
}

func TestBinaryRoundTripEdges(t *testing.T) {
	res := sampleResult()
	res.Total = -1
	res.FeedTimes = []time.Time{at, {}, time.Date(1500, 1, 1, 0, 0, 0, 1, time.UTC), time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)}
	res.Diff = &DiffSummary{} // present though empty
	res.Raw = []byte{0, 1, 2, 0xff}
	res.ErrKind, res.Err = ErrHTTPStatus, "503"
	res.RetryAfter = -time.Second
	res.Items = []ProbeItem{{ID: "i1", Fields: map[string]string{"title": "t", "price": "3", "year": "2025", "": "empty key"}}, {ID: "i2", Fields: map[string]string{}}}
	b, err := Encode(&res)
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		// Map order varies from one range to the next; the bytes must not.
		if again, _ := Encode(&res); !bytes.Equal(again, b) {
			t.Fatal("the same result encoded to different bytes")
		}
	}
	got, err := DecodeResult(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, res) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, res)
	}

	task := sampleTask()
	task.Probe = &ProbeSpec{} // present though empty
	task.Ignore.MinChange = 0.25
	b, _ = Encode(&task)
	gotT, err := DecodeTask(b)
	if err != nil || !reflect.DeepEqual(gotT, task) {
		t.Fatalf("task round trip: %v\n got %+v\nwant %+v", err, gotT, task)
	}
}

// TestBinarySkipsUnknownFields is what lets a later release add fields.
func TestBinarySkipsUnknownFields(t *testing.T) {
	task := sampleTask()
	b, _ := Encode(task)
	b = protowire.AppendTag(b, 99, protowire.BytesType)
	b = protowire.AppendString(b, "from the future")
	b = protowire.AppendTag(b, 100, protowire.VarintType)
	b = protowire.AppendVarint(b, 7)
	got, err := DecodeTask(b)
	if err != nil || !reflect.DeepEqual(got, task) {
		t.Fatalf("with unknown fields: %v\n got %+v", err, got)
	}
}

func TestBinaryRefusesBadMessages(t *testing.T) {
	task, _ := Encode(sampleTask())
	res, _ := Encode(sampleResult())
	wrongType := append([]byte{binaryMagic, binaryTask}, protowire.AppendTag(nil, tfID, protowire.VarintType)...)
	wrongType = protowire.AppendVarint(wrongType, 5)
	for name, b := range map[string][]byte{
		"result as task": res,
		"truncated":      task[:len(task)-3],
		"magic only":     {binaryMagic},
		"wrong wire":     wrongType,
		"huge length":    append([]byte{binaryMagic, binaryTask}, 0x12, 0xff, 0xff, 0xff, 0xff, 0x0f),
	} {
		if _, err := DecodeTask(b); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
	if _, err := DecodeResult(task); err == nil {
		t.Error("task decoded as a result")
	}
}

func FuzzDecodeBinary(f *testing.F) {
	task, _ := Encode(sampleTask())
	res, _ := Encode(sampleResult())
	f.Add(task)
	f.Add(res)
	f.Add([]byte{binaryMagic, binaryResult})
	f.Fuzz(func(t *testing.T, b []byte) {
		if r, err := DecodeResult(b); err == nil {
			again, err := Encode(r)
			if err != nil {
				t.Fatal(err)
			}
			if r2, err := DecodeResult(again); err != nil || !reflect.DeepEqual(r2, r) {
				t.Fatalf("re-encoded result differs: %v\n%+v\n%+v", err, r2, r)
			}
		}
		if tk, err := DecodeTask(b); err == nil {
			again, _ := Encode(tk)
			if t2, err := DecodeTask(again); err != nil || !reflect.DeepEqual(t2, tk) {
				t.Fatalf("re-encoded task differs: %v\n%+v\n%+v", err, t2, tk)
			}
		}
	})
}

func BenchmarkCodec(b *testing.B) {
	task, res := sampleTask(), sampleResult()
	for _, c := range []struct {
		name   string
		encode func(any) ([]byte, error)
	}{
		{"binary", Encode},
		{"json", func(v any) ([]byte, error) { return json.Marshal(v) }},
	} {
		taskB, _ := c.encode(task)
		resB, _ := c.encode(res)
		b.Run("encode-task/"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.encode(&task); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(taskB)), "bytes/msg")
		})
		b.Run("decode-task/"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := DecodeTask(taskB); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("encode-result/"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.encode(&res); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(resB)), "bytes/msg")
		})
		b.Run("decode-result/"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := DecodeResult(resB); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
