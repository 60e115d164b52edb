package proto

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

var at = time.Date(2025, 3, 1, 12, 30, 0, 500, time.UTC)

func TestTaskRoundTrip(t *testing.T) {
	in := Task{
		V: Version, ID: "abc-1", Kind: KindProbe, URL: "https://s.example/search?q=a", Host: "s.example",
		NotBefore: at, IssuedAt: at.Add(-time.Second), MinGap: 2 * time.Second, Selector: "main",
		Ignore: IgnoreRules{Selectors: []string{".ad"}, Patterns: []string{`\d+ views`}, MinChange: 0.01},
		ETag:   `"e1"`, LastModified: "Sat, 01 Mar 2025 12:00:00 GMT", PrevHash: "h0", PrevText: "old",
		Probe: &ProbeSpec{Source: "s", Def: json.RawMessage(`{"name":"s"}`), Query: []string{"a", "b"}, Page: 2, Item: ""},
	}
	b, err := Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := DecodeTask(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("round trip:\n in %+v\nout %+v", in, out)
	}
}

func TestResultRoundTrip(t *testing.T) {
	in := Result{
		V: Version, TaskID: "abc-1", Kind: KindCapture, URL: "https://a.example/", Host: "a.example", WorkerID: "w1", Attempt: 2,
		StartedAt: at, FinishedAt: at.Add(300 * time.Millisecond), Duration: 300 * time.Millisecond,
		Status: 200, FinalURL: "https://a.example/home", Bytes: 1234, Truncated: true, ETag: `"e2"`, LastModified: "Sat, 01 Mar 2025 12:00:00 GMT",
		ContentType: "text/html", Hash: "h1", Changed: true, Text: "new text",
		Diff:       &DiffSummary{LinesAdded: 1, LinesRemoved: 2, CharsChanged: 30, Magnitude: 0.2, Preview: "+ a\n- b"},
		RetryAfter: time.Minute, CrawlDelay: 5 * time.Second,
		Items: []ProbeItem{{ID: "i1", Fields: map[string]string{"price": "3"}}}, Total: 17,
	}
	b, err := Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := DecodeResult(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("round trip:\n in %+v\nout %+v", in, out)
	}
	if !out.OK() {
		t.Error("a result without an error kind is OK")
	}
	out.ErrKind = ErrTimeout
	if out.OK() {
		t.Error("a result with an error kind is not OK")
	}
}

// A message of another version is refused with errVersion, not guessed
// at; one missing what identifies it is refused too.
func TestDecodeRefuses(t *testing.T) {
	task, _ := Encode(Task{V: Version + 1, ID: "x", Kind: KindFetch, URL: "http://a/"})
	if _, err := DecodeTask(task); !errors.Is(err, errVersion) {
		t.Errorf("task of version %d: %v, want errVersion", Version+1, err)
	}
	res, _ := Encode(Result{V: 0, TaskID: "x", URL: "http://a/"})
	if _, err := DecodeResult(res); !errors.Is(err, errVersion) {
		t.Errorf("result of version 0: %v, want errVersion", err)
	}
	for name, b := range map[string]Task{
		"no id":     {V: Version, Kind: KindFetch, URL: "http://a/"},
		"no url":    {V: Version, ID: "x", Kind: KindFetch},
		"bad kind":  {V: Version, ID: "x", Kind: "crawl", URL: "http://a/"},
		"no kind":   {V: Version, ID: "x", URL: "http://a/"},
		"uppercase": {V: Version, ID: "x", Kind: "FETCH", URL: "http://a/"},
	} {
		raw, _ := Encode(b)
		if _, err := DecodeTask(raw); err == nil || errors.Is(err, errVersion) {
			t.Errorf("%s: %v, want a validation error", name, err)
		}
	}
	for name, r := range map[string]Result{
		"no task id": {V: Version, URL: "http://a/"},
		"no url":     {V: Version, TaskID: "x"},
	} {
		raw, _ := Encode(r)
		if _, err := DecodeResult(raw); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
	for _, junk := range []string{"", "{", "null", `{"v":"one"}`} {
		if _, err := DecodeTask([]byte(junk)); err == nil {
			t.Errorf("task %q decoded", junk)
		}
		if _, err := DecodeResult([]byte(junk)); err == nil {
			t.Errorf("result %q decoded", junk)
		}
	}
}

func TestKindValid(t *testing.T) {
	for _, k := range []Kind{KindFetch, KindCapture, KindProbe} {
		if !k.valid() {
			t.Errorf("%q not valid", k)
		}
		if got := TaskSubject(k); got != TaskSubjectPrefix+string(k) || !strings.HasPrefix(got, "freshcrawl.tasks.") {
			t.Errorf("task subject of %q: %s", k, got)
		}
		if got := ResultSubject(k); got != ResultSubjectPrefix+string(k) {
			t.Errorf("result subject of %q: %s", k, got)
		}
	}
	for _, k := range []Kind{"", "Fetch", "crawl", "fetch "} {
		if k.valid() {
			t.Errorf("%q valid", k)
		}
	}
}

// A host becomes one subject token: the separators and wildcards of NATS
// subjects are replaced, everything else kept.
func TestChangeSubject(t *testing.T) {
	for host, want := range map[string]string{
		"example.com":           "freshcrawl.changes.example_com",
		"127.0.0.1:8080":        "freshcrawl.changes.127_0_0_1:8080",
		"a*b>c d":               "freshcrawl.changes.a_b_c_d",
		"xn--bcher-kva.example": "freshcrawl.changes.xn--bcher-kva_example",
	} {
		got := ChangeSubject(host)
		if got != want {
			t.Errorf("ChangeSubject(%q) = %q, want %q", host, got, want)
		}
		token := strings.TrimPrefix(got, ChangeSubjectPrefix)
		if strings.ContainsAny(token, ".*> ") {
			t.Errorf("ChangeSubject(%q) = %q is not a single literal token", host, got)
		}
	}
}
