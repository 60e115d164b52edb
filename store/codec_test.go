package store

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// fetchedURL is a record as a fold leaves it: counters, validators, a
// content hash, an estimator state, a rate and a schedule.
func fetchedURL(i int) URL {
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second)
	est := make([]byte, 126)
	for j := range est {
		est[j] = byte(i*7 + j)
	}
	return URL{
		URL: fmt.Sprintf("https://www.example-%d.com/articles/2026/11/%08d/some-longer-slug-for-the-page", i%1000, i), Host: fmt.Sprintf("www.example-%d.com", i%1000),
		Weight: 1.5, Mode: "freshness", AddedAt: at.Add(-time.Hour),
		Fetches: 12, Changes: 3, NotModified: 4, Versions: 0,
		LastFetch: at, LastOK: at, LastChange: at.Add(-10 * time.Minute), LastStatus: 200,
		ETag: `"5e1a-61c3b2a4f1e80"`, LastMod: "Sun, 22 Nov 2026 09:50:00 GMT",
		Hash:     "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		Estimate: est, Rate: 1.2e-5, RateSE: 3e-6, Interval: 36 * time.Hour, NextDue: at.Add(36 * time.Hour),
	}
}

// oddURL exercises every field and every fallback of the binary form: a
// host that is not the URL's authority, an unknown mode, ignore rules, a
// non-hex hash, a Last-Modified that is not in HTTP form, error kinds and
// times outside the nanosecond range.
func oddURL() URL {
	return URL{
		URL: "http://a.example:8080/x?q=1", Host: "a.example", Weight: -2, Selector: "div.main", Mode: "future-mode",
		Ignore: IgnoreRules{Selectors: []string{".ad"}, Patterns: []string{`\d+`}, MinChange: 0.1},
		Period: "weekly", Polls: -3, KeepRaw: true, Webhook: "http://127.0.0.1/hook",
		AddedAt: time.Date(1200, 1, 2, 3, 4, 5, 6, time.UTC), Paused: true, PausedAt: time.Date(3000, 1, 1, 0, 0, 0, 7, time.UTC),
		DeletedAt: time.Unix(1, 2).UTC(), Fetches: -1, Errors: 1 << 40, Failed: 2, Versions: 9,
		ErrorKinds: map[string]int64{"timeout": 3, "dns": 1}, LastErrKind: "timeout", LastErr: "i/o timeout",
		LastMod: "yesterday", Hash: "ABCDEF", Disallowed: true, Rate: 1e300, RateSE: 0.5, Interval: -time.Second,
	}
}

func TestURLRecordRoundTrip(t *testing.T) {
	for _, u := range []URL{fetchedURL(7), oddURL(), {URL: "x"}} {
		b := appendURL(nil, &u, recMeta{id: 12345, content: make([]byte, 32)})
		if b[0] == '{' {
			t.Fatal("a binary record starts like JSON")
		}
		var got URL
		if err := decodeURL([]byte(u.URL), b, &got); err != nil {
			t.Fatalf("%s: %v", u.URL, err)
		}
		u.ID = 12345 // the record's id, read back
		if !reflect.DeepEqual(got, u) {
			t.Errorf("round trip of %s:\n got %+v\nwant %+v", u.URL, got, u)
		}
	}
}

// TestScheduledRecord: a record decoded for a restart
// (decodeScheduled, ForEachScheduleBatch) holds every field of the full
// decode but the validators, selector, ignore rules, webhook and errors,
// which it leaves empty; it fails on what the full decode fails on.
func TestScheduledRecord(t *testing.T) {
	for _, u := range []URL{fetchedURL(7), oddURL(), {URL: "x"}} {
		b := appendURL(nil, &u, recMeta{id: 12345, content: make([]byte, 32)})
		var got URL
		if err := decodeScheduled([]byte(u.URL), b, &got); err != nil {
			t.Fatalf("%s: %v", u.URL, err)
		}
		want := u
		want.ID = 12345
		want.ETag, want.LastMod, want.Hash, want.Selector, want.Webhook = "", "", "", "", ""
		want.Ignore, want.ErrorKinds, want.LastErrKind, want.LastErr = IgnoreRules{}, nil, "", ""
		if !reflect.DeepEqual(got, want) {
			t.Errorf("scheduled decode of %s:\n got %+v\nwant %+v", u.URL, got, want)
		}
		for cut := range b {
			var full, lean URL
			if (decodeURL([]byte(u.URL), b[:cut], &full) == nil) != (decodeScheduled([]byte(u.URL), b[:cut], &lean) == nil) {
				t.Fatalf("%s cut at %d of %d: the two decodes disagree on an error", u.URL, cut, len(b))
			}
		}
	}
}

// TestURLRecordReadsJSON: a record written by an older binary (JSON) is
// read as it was written.
func TestURLRecordReadsJSON(t *testing.T) {
	u := fetchedURL(3)
	raw, err := json.Marshal(u)
	if err != nil {
		t.Fatal(err)
	}
	var got URL
	if err := decodeURL([]byte(u.URL), raw, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, u) {
		t.Errorf("JSON record:\n got %+v\nwant %+v", got, u)
	}
	h := Host{Host: "a", CrawlDelay: time.Second, BackoffTill: time.Unix(100, 0).UTC(), Backoff: 2 * time.Second, ServerErrs: 2, LastFetch: time.Unix(50, 1).UTC(), Fetches: 9, Errors: 3}
	raw, _ = json.Marshal(h)
	var gh Host
	if err := decodeHost([]byte("a"), raw, &gh); err != nil || gh != h {
		t.Errorf("JSON host %+v, %v", gh, err)
	}
	var bh Host
	if err := decodeHost([]byte("a"), appendHost(nil, &h), &bh); err != nil || bh != h {
		t.Errorf("binary host %+v, %v", bh, err)
	}
}

// TestURLRecordDamage: every cut or flipped byte of a record decodes to an
// error or to some record, never a panic; a cut one is always an error.
func TestURLRecordDamage(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, u := range []URL{fetchedURL(1), oddURL()} {
		good := appendURL(nil, &u, recMeta{id: 12345, content: make([]byte, 32)})
		for cut := 1; cut < len(good); cut++ {
			var got URL
			if err := decodeURL([]byte(u.URL), good[:cut], &got); err == nil {
				t.Fatalf("record cut at %d of %d decoded", cut, len(good))
			}
		}
		for range 2000 {
			bad := append([]byte(nil), good...)
			bad[1+rng.IntN(len(bad)-1)] ^= byte(1 + rng.IntN(255))
			var got URL
			_ = decodeURL([]byte(u.URL), bad, &got)
		}
		var got URL
		if err := decodeURL([]byte(u.URL), append(good, 0), &got); err == nil {
			t.Error("a record with a trailing byte decoded")
		}
	}
}

// TestStoreRecordsAreBinary: records are written in binary and a store
// holding JSON records (as an older binary wrote them) reads them, and
// rewrites them in binary when they are written.
func TestStoreRecordsAreBinary(t *testing.T) {
	db := open(t, t.TempDir())
	defer db.Close()
	u := fetchedURL(5)
	if _, err := db.Upsert([]URL{u}); err != nil {
		t.Fatal(err)
	}
	raw := rawRecord(t, db, bucketURLs, u.URL)
	if raw[0] != recordV1 {
		t.Fatalf("record written as %q", raw[:1])
	}
	old := fetchedURL(6)
	js, _ := json.Marshal(old)
	if err := db.bolt.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketURLs).Put([]byte(old.URL), js) }); err != nil {
		t.Fatal(err)
	}
	got, err := db.Get(old.URL)
	if err != nil || !reflect.DeepEqual(got, old) {
		t.Fatalf("JSON record read as %+v, %v", got, err)
	}
	if _, err := db.Fold("t1", func(tx *Tx) error {
		got.Fetches++
		return tx.Put(got)
	}); err != nil {
		t.Fatal(err)
	}
	if raw := rawRecord(t, db, bucketURLs, old.URL); raw[0] != recordV1 {
		t.Fatalf("rewritten record is %q", raw[:1])
	}
}

func rawRecord(t *testing.T, db *DB, bucket []byte, key string) []byte {
	t.Helper()
	var raw []byte
	if err := db.bolt.View(func(tx *bolt.Tx) error {
		raw = append(raw, tx.Bucket(bucket).Get([]byte(key))...)
		return nil
	}); err != nil || len(raw) == 0 {
		t.Fatalf("no record %s: %v", key, err)
	}
	return raw
}

func BenchmarkURLRecord(b *testing.B) {
	u := fetchedURL(42)
	js, _ := json.Marshal(u)
	bin := appendURL(nil, &u, recMeta{id: 12345, content: make([]byte, 32)})
	b.Run(fmt.Sprintf("encode/binary-%dB", len(bin)), func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 512)
		for b.Loop() {
			buf = appendURL(buf[:0], &u, recMeta{id: 12345, content: make([]byte, 32)})
		}
	})
	b.Run(fmt.Sprintf("encode/json-%dB", len(js)), func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(u); err != nil {
				b.Fatal(err)
			}
		}
	})
	key := []byte(u.URL)
	b.Run("decode/binary", func(b *testing.B) {
		b.ReportAllocs()
		var got URL
		for b.Loop() {
			if err := decodeURL(key, bin, &got); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode/json", func(b *testing.B) {
		b.ReportAllocs()
		var got URL
		for b.Loop() {
			if err := decodeURL(key, js, &got); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestURLRecordPacking: the estimator state is zero-packed and round floats
// and LastOK are short, whatever the bytes (random states with zeros,
// all-zero, no zeros, odd floats); a record written unpacked, as a
// schema-2 binary wrote it, reads the same; a realistic fetched record
// shrinks by at least the zeros of its state.
func TestURLRecordPacking(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	floats := []float64{0, 1, 1.5, -2, 1e-5, math.Copysign(0, -1), math.Inf(1), math.SmallestNonzeroFloat64, rng.Float64()}
	for i := range 500 {
		u := fetchedURL(i)
		u.Estimate = make([]byte, rng.IntN(200))
		for j := range u.Estimate {
			if rng.IntN(3) == 0 {
				u.Estimate[j] = byte(1 + rng.IntN(255))
			}
		}
		if len(u.Estimate) == 0 {
			u.Estimate = nil
		}
		u.Weight, u.Rate, u.RateSE = floats[rng.IntN(len(floats))], floats[rng.IntN(len(floats))], rng.Float64()
		if i%2 == 0 {
			u.LastOK = u.LastFetch.Add(-time.Hour)
		}
		m := recMeta{id: uint64(i + 1)}
		packed, plain := appendURL(nil, &u, m), appendURLPacked(nil, &u, m, false)
		u.ID = m.id // the record's id, read back
		for name, b := range map[string][]byte{"packed": packed, "unpacked": plain} {
			var got URL
			if err := decodeURL([]byte(u.URL), b, &got); err != nil {
				t.Fatalf("%s record %d: %v", name, i, err)
			}
			if !reflect.DeepEqual(got, u) || math.Float64bits(got.Weight) != math.Float64bits(u.Weight) || math.Float64bits(got.Rate) != math.Float64bits(u.Rate) {
				t.Fatalf("%s record %d:\n got %+v\nwant %+v", name, i, got, u)
			}
		}
		zeros := 0
		for _, c := range u.Estimate {
			if c == 0 {
				zeros++
			}
		}
		if len(u.Estimate) >= minPacked && len(packed) > len(plain)-zeros+len(u.Estimate)/8+4 {
			t.Errorf("record %d: packed %d bytes, unpacked %d with %d zeros in a %d-byte state", i, len(packed), len(plain), zeros, len(u.Estimate))
		}
	}
	var zero URL
	if err := decodeURL([]byte("x"), appendURL(nil, &URL{URL: "x", Estimate: make([]byte, 126)}, recMeta{}), &zero); err != nil || len(zero.Estimate) != 126 {
		t.Errorf("an all-zero state: %d bytes, %v", len(zero.Estimate), err)
	}
}
