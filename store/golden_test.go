package store

import (
	"encoding/json"
	"flag"
	"path/filepath"
	"testing"
	"time"

	"github.com/freshcrawl/freshcrawl/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

var goldenAt = time.Date(2026, 3, 1, 12, 30, 45, 123456789, time.UTC)

// goldenURL sets every field in the compact forms, so that every flag bit
// of a binary URL record is set in testdata/golden/url.bin: its host is
// the URL's authority, its hash hex, its Last-Modified an HTTP date, its
// estimator state long enough to pack, its floats short, its LastOK its
// LastFetch.
func goldenURL() URL {
	return URL{
		URL: "https://www.example.com/articles/2026/lamp", ID: 4242, Host: "www.example.com", Weight: 1.5,
		Selector: "main article", Mode: "capture",
		Ignore: IgnoreRules{Selectors: []string{".ad", "#clock"}, Patterns: []string{`\d{2}:\d{2}`}, MinChange: 0.05},
		Period: "daily", Polls: 3, KeepRaw: true, Webhook: "https://hooks.example/lamp", AddedAt: goldenAt.Add(-72 * time.Hour),
		Paused: true, PausedAt: goldenAt.Add(time.Hour), DeletedAt: goldenAt.Add(2 * time.Hour),
		Fetches: 12, Changes: 3, NotModified: 4, Errors: 2, ErrorKinds: map[string]int64{"timeout": 1, "dns": 1}, Failed: 1, Versions: 3,
		LastFetch: goldenAt, LastOK: goldenAt, LastChange: goldenAt.Add(-10 * time.Minute), LastStatus: 200,
		LastErrKind: "timeout", LastErr: "i/o timeout", ETag: `"5e1a-61c3b2a4f1e80"`, LastMod: "Sun, 01 Mar 2026 11:50:00 GMT",
		Hash: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", Disallowed: true,
		Estimate: []byte{2, 0, 0, 0, 0, 0, 0, 0x20, 0x40, 0, 0, 0, 0, 0, 0, 0, 0x10, 0x40, 0, 0, 0x80, 0x3f, 0, 0, 0, 0, 7},
		Rate:     0.5, RateSE: 0.25, Interval: 36 * time.Hour, NextDue: goldenAt.Add(36 * time.Hour),
		Gone: true, Truncated: true, NoArchive: true, ErrStreak: 4, NotFoundSince: goldenAt.Add(-48 * time.Hour),
	}
}

// beforeFailures is u as a record written before the failure fields
// existed holds it.
func beforeFailures(u URL) URL {
	u.Gone, u.Truncated, u.NoArchive, u.ErrStreak, u.NotFoundSince = false, false, false, 0, time.Time{}
	return u
}

// goldenPlainURL sets every field in the long forms, none of those flags:
// a host that is not the URL's, a hash that is not hex, a Last-Modified
// that is not an HTTP date, a short estimator state, floats that need
// eight bytes, a mode without a code, and times of every encoding.
func goldenPlainURL() URL {
	return URL{
		URL: "http://a.example:8080/x?q=1", ID: 7, Host: "a.example", Weight: 0.1, Selector: "div.main", Mode: "future-mode",
		Ignore: IgnoreRules{Selectors: []string{".ad"}, Patterns: []string{`\d+`}, MinChange: 0.1},
		Period: "weekly", Polls: -3, Webhook: "http://127.0.0.1/hook",
		AddedAt: time.Date(1200, 1, 2, 3, 4, 5, 6, time.UTC), PausedAt: time.Date(3000, 1, 1, 0, 0, 0, 7, time.UTC),
		DeletedAt: time.Unix(1, 2).UTC(), Fetches: -1, Changes: 1, NotModified: 1, Errors: 1 << 40, Failed: 2, Versions: 9,
		ErrorKinds: map[string]int64{"timeout": 3}, LastFetch: goldenAt, LastOK: goldenAt.Add(-time.Hour), LastChange: goldenAt.Add(-2 * time.Hour),
		LastStatus: 503, LastErrKind: "http-status", LastErr: "503", ETag: "e", LastMod: "yesterday", Hash: "ABCDEF",
		Estimate: []byte{1, 2, 3}, Rate: 1.0 / 3, RateSE: 1e300, Interval: -time.Second, NextDue: goldenAt.Add(time.Minute),
	}
}

func goldenHost() Host {
	return Host{Host: "www.example.com", CrawlDelay: 10 * time.Second, BackoffTill: goldenAt.Add(time.Minute), Backoff: 30 * time.Second,
		ServerErrs: 2, LastFetch: goldenAt, Fetches: 120, Errors: 7, Slowdown: 3, OKStreak: 2}
}

func goldenChange() Change {
	return Change{Seq: 17, URL: "https://www.example.com/articles/2026/lamp", Host: "www.example.com", At: goldenAt, TaskID: "t-000123",
		Hash: "h2", PrevHash: "h1", Diff: DiffSummary{LinesAdded: 3, LinesRemoved: 2, CharsChanged: 120, Magnitude: 0.25, Numeric: true, Preview: "+ new\n- old"}}
}

func goldenVersion() Version {
	return Version{Seq: 3, URL: "https://www.example.com/articles/2026/lamp", CapturedAt: goldenAt, After: goldenAt.Add(-time.Hour),
		Before: goldenAt, Exact: true, Hash: "h2", Text: "the text\nof version 3", TaskID: "t-000123"}
}

func goldenItem() Item {
	return Item{Source: "shop", ID: "sku-9", Attrs: map[string]string{"title": "Brass lamp"}, Value: 49.9, LastSync: goldenAt,
		Syncs: 5, Changes: 2, Estimate: []byte{2, 0, 1}, Rate: 1e-5, HasValue: true, Dissimilarity: 0.75}
}

func goldenDelivery() Delivery {
	return Delivery{Endpoint: "https://hooks.example/lamp", Seq: 17, EventID: "t-000123", Body: json.RawMessage(`{"v":1}`),
		Attempts: 3, LastErr: "503", LastAt: goldenAt, DeadAt: goldenAt.Add(time.Hour)}
}

func goldenRaw() Raw {
	return Raw{ContentType: "text/html; charset=utf-8", FetchedAt: goldenAt, Hash: "h2", Size: 31000, Truncated: true, Body: []byte("<html>\x00\xff")}
}

// goldenFetches are a fetch history with every outcome. Times are read
// back in the local zone, as time.Unix gives them.
func goldenFetches() []Fetch {
	var fs []Fetch
	for i, o := range outcomeCodes {
		fs = append(fs, Fetch{At: time.Unix(0, goldenAt.Add(time.Duration(i)*time.Hour).UnixNano()), Duration: time.Duration(i+1) * time.Millisecond,
			Status: 200 + i, Outcome: o, ErrKind: "timeout", Bytes: int64(1000 * (i + 1))})
	}
	return fs
}

// TestGoldenRecords decodes the records under testdata/golden, written by
// earlier code, and compares them field by field with the values that
// made them; then it encodes the values and compares the bytes. A flag bit
// moved, a code renumbered or a JSON name changed fails one or the other,
// whatever the round trips say. The JSON URL and host records are how
// stores written before the binary form hold them, still read.
func TestGoldenRecords(t *testing.T) {
	urlCase := func(u URL, meta recMeta) (func() ([]byte, error), func([]byte) (any, error)) {
		return func() ([]byte, error) { return appendURL(nil, &u, meta), nil },
			func(b []byte) (any, error) {
				var got URL
				err := decodeURL([]byte(u.URL), b, &got)
				return got, err
			}
	}
	urlEnc, urlDec := urlCase(goldenURL(), recMeta{id: goldenURL().ID, content: []byte("texts-key-of-the-latest-version")})
	plainEnc, plainDec := urlCase(goldenPlainURL(), recMeta{id: goldenPlainURL().ID})
	jsonOf := func(v any) func() ([]byte, error) { return func() ([]byte, error) { return json.Marshal(v) } }
	record := func(key string, dst func() any) func([]byte) (any, error) {
		return func(b []byte) (any, error) {
			d := dst()
			err := decodeRecord([]byte(key), b, d)
			return deref(d), err
		}
	}
	legacyURL := goldenURL()
	legacyURL.ID = 0 // not in a JSON record
	for _, c := range []struct {
		file   string
		want   any
		unset  []string // fields the form has no place for
		encode func() ([]byte, error)
		decode func([]byte) (any, error)
	}{
		{"url.bin", goldenURL(), nil, urlEnc, urlDec},
		{"url_plain.bin", goldenPlainURL(), []string{"store.URL.KeepRaw", "store.URL.Paused", "store.URL.Disallowed",
			"store.URL.Gone", "store.URL.Truncated", "store.URL.NoArchive", "store.URL.ErrStreak", "store.URL.NotFoundSince"}, plainEnc, plainDec},
		{"url.json", legacyURL, []string{"store.URL.ID"}, jsonOf(legacyURL), record(legacyURL.URL, func() any { return new(URL) })},
		{"host.bin", goldenHost(), nil, func() ([]byte, error) { return encodeRecord(goldenHost()) }, record(goldenHost().Host, func() any { return new(Host) })},
		{"host.json", goldenHost(), nil, jsonOf(goldenHost()), record(goldenHost().Host, func() any { return new(Host) })},
		{"change.json", goldenChange(), nil, func() ([]byte, error) { return encodeRecord(goldenChange()) }, record("", func() any { return new(Change) })},
		{"version.json", goldenVersion(), nil, func() ([]byte, error) { return encodeRecord(goldenVersion()) }, record("", func() any { return new(Version) })},
		{"item.json", goldenItem(), nil, func() ([]byte, error) { return encodeRecord(goldenItem()) }, record("", func() any { return new(Item) })},
		{"delivery.json", goldenDelivery(), nil, func() ([]byte, error) { return encodeRecord(goldenDelivery()) }, record("", func() any { return new(Delivery) })},
		{"raw.bin", goldenRaw(), nil, func() ([]byte, error) { return rawEnvelope(goldenRaw()) }, func(b []byte) (any, error) { return openRawEnvelope(b, true) }},
		{"fetchlog.bin", goldenFetches(), nil, func() ([]byte, error) { return encodeFetchLog(goldenFetches()), nil }, func(b []byte) (any, error) { return decodeFetchLog(b) }},
	} {
		t.Run(c.file, func(t *testing.T) {
			testutil.AllSet(t, c.want, c.unset...)
			path := filepath.Join("testdata", "golden", c.file)
			b, err := c.encode()
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

// deref returns the value a pointer to a record points to.
func deref(p any) any {
	switch v := p.(type) {
	case *URL:
		return *v
	case *Host:
		return *v
	case *Change:
		return *v
	case *Version:
		return *v
	case *Item:
		return *v
	case *Delivery:
		return *v
	}
	return p
}

// TestGoldenRecordsBeforeFailures decodes URL and host records written
// before a URL kept its failures (gone, truncated, noarchive, the error
// streak) and a host its slowdown: a store of an earlier release reads as
// one where none of them has happened.
func TestGoldenRecordsBeforeFailures(t *testing.T) {
	host := goldenHost()
	host.Slowdown, host.OKStreak = 0, 0
	legacyURL := beforeFailures(goldenURL())
	legacyURL.ID = 0
	for _, c := range []struct {
		file string
		key  string
		want any
		dst  func() any
	}{
		{"url.bin", goldenURL().URL, beforeFailures(goldenURL()), func() any { return new(URL) }},
		{"url_plain.bin", goldenPlainURL().URL, goldenPlainURL(), func() any { return new(URL) }},
		{"url.json", goldenURL().URL, legacyURL, func() any { return new(URL) }},
		{"host.bin", host.Host, host, func() any { return new(Host) }},
		{"host.json", host.Host, host, func() any { return new(Host) }},
	} {
		t.Run(c.file, func(t *testing.T) {
			d := c.dst()
			if err := decodeRecord([]byte(c.key), testutil.ReadGolden(t, filepath.Join("testdata", "golden", "before_failures_"+c.file)), d); err != nil {
				t.Fatal(err)
			}
			testutil.SameFields(t, deref(d), c.want)
		})
	}
}
