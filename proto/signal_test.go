package proto

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/freshcrawl/freshcrawl/internal/testutil"
)

// goldenSignalTask is a sitemap task: it has no field of its own, but
// its kind is on the wire.
func goldenSignalTask() Task {
	return Task{V: Version, ID: "s-000042", Kind: KindSitemap, URL: "https://news.example/sitemap.xml", Host: "news.example",
		IssuedAt: goldenTime, MinGap: time.Second, ETag: `"sm3"`, LastModified: "Sun, 01 Mar 2026 11:00:00 GMT"}
}

// goldenSignalResult sets every field of its Signal, so that every
// signal field number is in testdata/golden/signal_result.bin.
func goldenSignalResult() Result {
	return Result{V: Version, TaskID: "s-000042", Kind: KindSitemap, URL: "https://news.example/sitemap.xml", Host: "news.example",
		WorkerID: "w-3", Attempt: 1, StartedAt: goldenTime, FinishedAt: goldenTime.Add(time.Second), Duration: time.Second, Status: 200,
		Signal: &SignalResult{
			Format: "urlset", Seq: 2, Last: true, Total: 20003,
			Entries: []SignalEntry{
				{URL: "https://news.example/a", LastMod: goldenTime, LastModSpan: time.Second, ChangeFreq: "daily", Priority: 0.8},
				{URL: "https://news.example/b", Priority: 0},
				{URL: "https://news.example/c", LastMod: time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC), LastModSpan: 24 * time.Hour, Priority: -1},
			},
			Sitemaps:  []SignalEntry{{URL: "https://news.example/s2.xml.gz", LastMod: goldenTime, LastModSpan: time.Second, ChangeFreq: "hourly", Priority: 1}},
			Skipped:   map[string]int{"other host": 2, "no loc": 1},
			Ignored:   map[string]int{"lastmod": 4},
			Truncated: "over 50000 entries",
			Updated:   goldenTime.Add(-time.Hour),
			Cache:     &CacheClaim{Lifetime: time.Hour, Age: time.Minute, From: "max-age", NoStore: true, NoCache: true, MustRevalidate: true},
			Robots:    []string{"https://news.example/sitemap.xml", "https://news.example/news.xml"},
		},
	}
}

// TestGoldenSignal is TestGoldenMessages for the signal kinds and
// Result.Signal, in files of their own.
func TestGoldenSignal(t *testing.T) {
	jsonOf := func(v any) ([]byte, error) { return json.Marshal(v) }
	for _, c := range []struct {
		file   string
		want   any
		encode func(any) ([]byte, error)
		decode func([]byte) (any, error)
	}{
		{"signal_task.bin", goldenSignalTask(), Encode, func(b []byte) (any, error) { return DecodeTask(b) }},
		{"signal_task.json", goldenSignalTask(), jsonOf, func(b []byte) (any, error) { return DecodeTask(b) }},
		{"signal_result.bin", goldenSignalResult(), Encode, func(b []byte) (any, error) { return DecodeResult(b) }},
		{"signal_result.json", goldenSignalResult(), jsonOf, func(b []byte) (any, error) { return DecodeResult(b) }},
	} {
		t.Run(c.file, func(t *testing.T) {
			if r, ok := c.want.(Result); ok {
				testutil.AllSet(t, r.Signal)
			}
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

// The signal kinds are valid and have their subjects; only they are
// signals.
func TestSignalKinds(t *testing.T) {
	for _, k := range []Kind{KindSitemap, KindFeed} {
		if !k.valid() || !k.IsSignal() || TaskSubject(k) != "freshcrawl.tasks."+string(k) || ResultSubject(k) != "freshcrawl.results."+string(k) {
			t.Errorf("%q: valid %v, signal %v, %s, %s", k, k.valid(), k.IsSignal(), TaskSubject(k), ResultSubject(k))
		}
	}
	for _, k := range []Kind{KindFetch, KindCapture, KindProbe, ""} {
		if k.IsSignal() {
			t.Errorf("%q is a signal", k)
		}
	}
}

// A priority of 0 is kept apart from none, and any other value a decoder
// cannot use reads as none.
func TestSignalPriority(t *testing.T) {
	r := goldenSignalResult()
	r.Signal.Entries = []SignalEntry{{URL: "u0", Priority: 0}, {URL: "u1", Priority: -1}, {URL: "u2", Priority: 0.5}}
	b, _ := Encode(r)
	got, err := DecodeResult(b)
	if err != nil {
		t.Fatal(err)
	}
	if p := []float64{got.Signal.Entries[0].Priority, got.Signal.Entries[1].Priority, got.Signal.Entries[2].Priority}; !slices.Equal(p, []float64{0, -1, 0.5}) {
		t.Errorf("priorities %v", p)
	}
}

// sitemapResult is the result of a sitemap of n URLs, each with a lastmod.
func sitemapResult(n int) Result {
	r := goldenSignalResult()
	r.Signal.Seq, r.Signal.Last, r.Signal.Total, r.Signal.Sitemaps = 0, false, 0, nil
	r.Signal.Entries = make([]SignalEntry, n)
	for i := range r.Signal.Entries {
		r.Signal.Entries[i] = SignalEntry{URL: fmt.Sprintf("https://news.example/%s/article-%d", strings.Repeat("section/", i%4), i),
			LastMod: goldenTime.Add(-time.Duration(i) * time.Minute), LastModSpan: time.Second, ChangeFreq: "weekly", Priority: 0.5}
	}
	return r
}

// A 50 000-URL sitemap's result splits into chunks that each encode to
// under 1 MiB (NATS's default max payload) and decode back, in order, to
// every entry; the file's counts go on chunk 0 only; the last chunk says
// so.
func TestSplitSignal(t *testing.T) {
	const maxPayload = 1 << 20
	r := sitemapResult(50_000)
	whole, _ := Encode(r)
	chunks := SplitSignal(r, maxPayload-4096)
	if len(whole) <= maxPayload || len(chunks) < 2 {
		t.Fatalf("%d bytes whole, %d chunks: the test needs a result over the limit", len(whole), len(chunks))
	}
	var got []SignalEntry
	for i, c := range chunks {
		b, err := Encode(c)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > maxPayload-4096 {
			t.Errorf("chunk %d: %d bytes", i, len(b))
		}
		d, err := DecodeResult(b)
		if err != nil {
			t.Fatal(err)
		}
		s := d.Signal
		if s.Seq != i || s.Last != (i == len(chunks)-1) || s.Total != 50_000 || d.TaskID != r.TaskID || d.URL != r.URL || s.Format != "urlset" {
			t.Errorf("chunk %d: seq %d last %v total %d task %s", i, s.Seq, s.Last, s.Total, d.TaskID)
		}
		if meta := s.Skipped != nil || s.Ignored != nil || s.Truncated != "" || s.Cache != nil || s.Robots != nil; meta != (i == 0) {
			t.Errorf("chunk %d: the file's counts present %v", i, meta)
		}
		got = append(got, s.Entries...)
	}
	if !reflect.DeepEqual(got, r.Signal.Entries) {
		t.Fatalf("reassembled %d entries, want %d in order", len(got), len(r.Signal.Entries))
	}
	t.Logf("50 000 entries: %d bytes whole, %d chunks", len(whole), len(chunks))
}

// Entries and sitemaps keep their lists across a chunk boundary; a
// result that fits, or has no entries, is one chunk; a page result
// without Signal is left alone.
func TestSplitSignalEdges(t *testing.T) {
	r := sitemapResult(30)
	r.Signal.Sitemaps = r.Signal.Entries[20:]
	r.Signal.Entries = r.Signal.Entries[:20]
	bare := r
	bare.Signal = &SignalResult{Total: 30, Seq: 1 << 30, Last: true, Skipped: r.Signal.Skipped, Ignored: r.Signal.Ignored,
		Truncated: r.Signal.Truncated, Updated: r.Signal.Updated, Cache: r.Signal.Cache, Robots: r.Signal.Robots, Format: r.Signal.Format}
	head, _ := Encode(bare)
	// Room for about 8 entries a chunk.
	chunks := SplitSignal(r, len(head)+16+8*entrySize(&r.Signal.Entries[0]))
	var entries, sitemaps []SignalEntry
	for _, c := range chunks {
		entries, sitemaps = append(entries, c.Signal.Entries...), append(sitemaps, c.Signal.Sitemaps...)
	}
	if len(chunks) < 3 || !reflect.DeepEqual(entries, r.Signal.Entries) || !reflect.DeepEqual(sitemaps, r.Signal.Sitemaps) {
		t.Errorf("%d chunks: %d entries, %d sitemaps", len(chunks), len(entries), len(sitemaps))
	}
	for _, c := range []Result{sitemapResult(3), {V: Version, TaskID: "s", URL: "u", Signal: &SignalResult{Format: "atom"}}} {
		got := SplitSignal(c, 1<<20)
		if len(got) != 1 || !got[0].Signal.Last || got[0].Signal.Seq != 0 || len(got[0].Signal.Entries) != len(c.Signal.Entries) {
			t.Errorf("one chunk: %+v", got)
		}
	}
	page := Result{V: Version, TaskID: "p", URL: "u", Text: "x"}
	if got := SplitSignal(page, 10); len(got) != 1 || got[0].Signal != nil {
		t.Errorf("page result: %+v", got)
	}
	// An entry larger than a chunk's room still goes, alone.
	big := sitemapResult(2)
	big.Signal.Entries[0].URL = strings.Repeat("x", 5000)
	if got := SplitSignal(big, 1000); len(got) != 2 || len(got[0].Signal.Entries) != 1 {
		t.Errorf("oversized entry: %d chunks", len(got))
	}
}

// FuzzDecodeSignal: any bytes that decode as a result with a Signal
// re-encode to a result that decodes the same.
func FuzzDecodeSignal(f *testing.F) {
	for _, r := range []Result{goldenSignalResult(), sitemapResult(3)} {
		b, _ := Encode(r)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeResult(b)
		if err != nil {
			return
		}
		again, _ := Encode(r)
		if r2, err := DecodeResult(again); err != nil || !reflect.DeepEqual(r2, r) {
			t.Fatalf("re-encoded result differs: %v\n%+v\n%+v", err, r2, r)
		}
	})
}
