package proto

import (
	"encoding/json"
	"flag"
	"path/filepath"
	"testing"
	"time"

	"github.com/freshcrawl/freshcrawl/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// goldenTime has nanoseconds, so both fields of an encoded time are in
// the files.
var goldenTime = time.Date(2026, 3, 1, 12, 30, 45, 123456789, time.UTC)

// goldenTask sets every field, so that every task field number is in
// testdata/golden/task.bin.
func goldenTask() Task {
	return Task{
		V: Version, ID: "t-000123", Kind: KindProbe, URL: "https://shop.example/search?q=lamp", Host: "shop.example",
		NotBefore: goldenTime.Add(2 * time.Second), IssuedAt: goldenTime, MinGap: 1500 * time.Millisecond,
		Selector: "main .price",
		Ignore:   IgnoreRules{Selectors: []string{".ad", "#clock"}, Patterns: []string{`\d{2}:\d{2}`}, MinChange: 0.05},
		ETag:     `"v7"`, LastModified: "Sun, 01 Mar 2026 12:00:00 GMT",
		PrevHash: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", PrevText: "the previous text\nline two",
		Probe:   &ProbeSpec{Source: "shop", Def: json.RawMessage(`{"name":"shop"}`), Query: []string{"lamp", "brass"}, Page: 2, Item: "sku-9"},
		KeepRaw: true, NeedRaw: true,
	}
}

// goldenResult sets every field, so that every result field number is in
// testdata/golden/result.bin.
func goldenResult() Result {
	return Result{
		V: Version, TaskID: "t-000123", Kind: KindCapture, URL: "https://news.example/feed", Host: "news.example",
		WorkerID: "w-3", Attempt: 2, StartedAt: goldenTime, FinishedAt: goldenTime.Add(40 * time.Millisecond), Duration: 40 * time.Millisecond,
		Status: 503, ErrKind: ErrServerError, Err: "503 Service Unavailable", FinalURL: "https://news.example/feed.xml",
		Bytes: 31000, Truncated: true, NoArchive: true, NotModified: true, ETag: `W/"e1"`, LastModified: "Sun, 01 Mar 2026 11:00:00 GMT",
		ContentType: "application/atom+xml", Hash: "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae",
		Changed: true, Text: "héllo\nworld",
		Diff:       &DiffSummary{LinesAdded: 3, LinesRemoved: 2, CharsChanged: 120, Magnitude: 0.25, Numeric: true, Preview: "+ new\n- old"},
		RetryAfter: 2 * time.Minute, CrawlDelay: 10 * time.Second, Disallowed: true,
		FeedTimes: []time.Time{goldenTime, {}, time.Date(1969, 7, 20, 20, 17, 40, 0, time.UTC)},
		Raw:       []byte{0, 1, 0xfe, 0xff}, RawTruncated: true,
		Items: []ProbeItem{{ID: "sku-9", Fields: map[string]string{"title": "Brass lamp", "price": "49.90"}}, {ID: "sku-10", Fields: map[string]string{}}},
		Total: -1,
	}
}

// goldenChange sets every field of a change event, which other programs
// read as JSON.
func goldenChange() ChangeEvent {
	return ChangeEvent{
		V: Version, ID: "c-17", Seq: 17, URL: "https://news.example/", Host: "news.example", TaskID: "t-000123",
		At: goldenTime, Hash: "h2", PrevHash: "h1",
		Diff: DiffSummary{LinesAdded: 1, LinesRemoved: 1, CharsChanged: 9, Magnitude: 0.5, Numeric: true, Preview: "+ a\n- b"},
	}
}

func goldenHeartbeat() Heartbeat {
	return Heartbeat{V: Version, WorkerID: "w-3", At: goldenTime, Active: 4}
}

// TestGoldenMessages decodes the messages under testdata/golden, encoded
// by earlier code, and compares them field by field with the values that
// made them; then it encodes the values and compares the bytes. A field
// renumbered, a flag moved or a JSON name changed fails one or the
// other. The binary task and result are what workers and coordinators of
// different releases exchange; the JSON task and result are what releases
// before the binary encoding sent; change events and heartbeats are JSON
// for any subscriber.
func TestGoldenMessages(t *testing.T) {
	jsonOf := func(v any) ([]byte, error) { return json.Marshal(v) }
	for _, c := range []struct {
		file   string
		want   any
		encode func(any) ([]byte, error)
		decode func([]byte) (any, error)
	}{
		{"task.bin", goldenTask(), Encode, func(b []byte) (any, error) { return DecodeTask(b) }},
		{"result.bin", goldenResult(), Encode, func(b []byte) (any, error) { return DecodeResult(b) }},
		{"task.json", goldenTask(), jsonOf, func(b []byte) (any, error) { return DecodeTask(b) }},
		{"result.json", goldenResult(), jsonOf, func(b []byte) (any, error) { return DecodeResult(b) }},
		{"change_event.json", goldenChange(), Encode, func(b []byte) (any, error) {
			var e ChangeEvent
			err := json.Unmarshal(b, &e)
			return e, err
		}},
		{"heartbeat.json", goldenHeartbeat(), Encode, func(b []byte) (any, error) {
			var h Heartbeat
			err := json.Unmarshal(b, &h)
			return h, err
		}},
	} {
		t.Run(c.file, func(t *testing.T) {
			// A result's Signal has golden files of its own
			// (signal_result.*, TestGoldenSignal).
			testutil.AllSet(t, c.want, "proto.Result.Signal")
			path := filepath.Join("testdata", "golden", c.file)
			b, err := c.encode(c.want)
			if err != nil {
				t.Fatal(err)
			}
			testutil.Golden(t, path, b, *update)
			got, err := c.decode(testutil.ReadGolden(t, path))
			if err != nil {
				t.Fatalf("decode %s: %v", path, err)
			}
			testutil.SameFields(t, got, c.want)
		})
	}
}

// TestGoldenResultBeforeNoArchive decodes the results written before
// NoArchive existed (and before a 503 was a server-error): a result of
// an older worker reads as one whose page allowed archiving.
func TestGoldenResultBeforeNoArchive(t *testing.T) {
	want := goldenResult()
	want.NoArchive, want.ErrKind = false, ErrHTTPStatus
	for _, file := range []string{"result_before_no_archive.bin", "result_before_no_archive.json"} {
		t.Run(file, func(t *testing.T) {
			got, err := DecodeResult(testutil.ReadGolden(t, filepath.Join("testdata", "golden", file)))
			if err != nil {
				t.Fatal(err)
			}
			testutil.SameFields(t, got, want)
		})
	}
}
