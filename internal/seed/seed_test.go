package seed

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/freshcrawl/freshcrawl/proto"
	"github.com/freshcrawl/freshcrawl/worker/extract"
)

func TestParseGoodAndBadLines(t *testing.T) {
	in := strings.Join([]string{
		"# comment",
		"",
		"http://Example.com/a",    // 3 good
		"ftp://example.com/",      // 4 bad scheme
		"http://exa mple.com/%zz", // 5 unparsable
		`{"url":"http://example.com/b","weight":2.5,"selector":"h1"}`, // 6 good
		`{"url":"http://example.com/c","wieght":2}`,                   // 7 unknown field
		`{"url":"http://example.com/d","weight":0}`,                   // 8 weight ≤ 0
		`{"url":"http://example.com/e","weight":-1}`,                  // 9 weight ≤ 0
		`{"url":"http://example.com/f","selector":"div[["}`,           // 10 bad selector
		`{"url":"http://example.com/g","mode":"archive"}`,             // 11 bad mode
		`{"url":"http://example.com/h","mode":"capture"}`,             // 12 good
		`{"weight":1}`,                  // 13 missing url
		`{"url":"http://example.com/i"`, // 14 bad JSON
		`{"url":"http://example.com/j","ignore":{"patterns":["(["]}}`, // 15 bad pattern
		"   https://example.com:443/k#x   ",                           // 16 good
	}, "\n")
	var good []Seed
	var bad []*LineError
	n, nb, err := Parser{}.Parse(strings.NewReader(in), "seeds.txt", func(s Seed) error { good = append(good, s); return nil }, func(e *LineError) { bad = append(bad, e) })
	if err != nil {
		t.Fatal(err)
	}
	if n != 4 || nb != 10 || len(good) != 4 || len(bad) != 10 {
		t.Fatalf("good=%d bad=%d; want 4 and 10; bad=%v", n, nb, bad)
	}
	wantBad := map[int]string{4: "scheme", 5: "unparsable", 7: "unknown field", 8: "weight", 9: "weight", 10: "selector", 11: "mode", 13: "url", 14: "JSON", 15: "pattern"}
	for _, e := range bad {
		frag, ok := wantBad[e.Line]
		if !ok {
			t.Errorf("unexpected bad line %d: %v", e.Line, e)
			continue
		}
		if e.File != "seeds.txt" || !strings.Contains(e.Error(), frag) || !strings.HasPrefix(e.Error(), "seeds.txt:") {
			t.Errorf("line %d: error %q should name the file and mention %q", e.Line, e, frag)
		}
	}
	if good[1].Weight != 2.5 || good[1].Selector != "h1" || good[2].Mode != ModeCapture || good[3].URL != "https://example.com/k" {
		t.Errorf("fields not carried: %+v", good)
	}
}

func TestParseStopsOnEmitError(t *testing.T) {
	boom := errors.New("disk full")
	_, _, err := Parser{}.Parse(strings.NewReader("http://a.com/\nhttp://b.com/\n"), "f", func(Seed) error { return boom }, nil)
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "f:1") {
		t.Fatalf("err = %v; want wrapped disk full at f:1", err)
	}
}

func FuzzParseLine(f *testing.F) {
	f.Add([]byte(`{"url":"http://a.com/","weight":1,"selector":"p"}`))
	f.Add([]byte("http://a.com/"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return
		}
		s, err := ParseLine(b)
		if err == nil && (s.Weight <= 0 || s.URL == "") {
			t.Fatalf("accepted %q with weight %v url %q", b, s.Weight, s.URL)
		}
	})
}

// TestRulesRefusedAsTheWorkerWould: the seed parser refuses exactly the
// extraction rules the worker's compile refuses, at file:line with the
// field at fault, so that no stored seed fails every fetch.
func TestRulesRefusedAsTheWorkerWould(t *testing.T) {
	cases := []struct {
		line  string
		field string // "" for a good line
	}{
		{`{"url":"http://a.com/1","ignore":{"patterns":[""]}}`, `"ignore.patterns[0]"`},
		{`{"url":"http://a.com/2","ignore":{"patterns":["\\d+","(["]}}`, `"ignore.patterns[1]"`},
		{`{"url":"http://a.com/3","selector":"div[["}`, `"selector"`},
		{`{"url":"http://a.com/4","ignore":{"selectors":["p:bogus"]}}`, `"ignore.selectors[0]"`},
		{`{"url":"http://a.com/5","ignore":{"selectors":["  "]}}`, `"ignore.selectors[0]"`},
		{`{"url":"http://a.com/6","ignore":{"min_change":-0.5}}`, `"ignore.min_change"`},
		{`{"url":"http://a.com/7","ignore":{"min_change":NaN}}`, "bad JSON"}, // JSON has no NaN
		{`{"url":"http://a.com/8","selector":"h1","ignore":{"selectors":[".ad"],"patterns":["\\d{2}:\\d{2}"],"min_change":0.1}}`, ""},
	}
	var lines []string
	for _, c := range cases {
		lines = append(lines, c.line)
	}
	bad := map[int]*LineError{}
	good := map[string]Seed{}
	_, _, err := Parser{}.Parse(strings.NewReader(strings.Join(lines, "\n")), "rules.txt",
		func(s Seed) error { good[s.URL] = s; return nil },
		func(e *LineError) { bad[e.Line] = e })
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		line := i + 1
		e := bad[line]
		if c.field == "" {
			if e != nil {
				t.Errorf("line %d refused: %v", line, e)
			}
			continue
		}
		if e == nil {
			t.Errorf("line %d (%s) accepted; the worker would refuse it", line, c.line)
			continue
		}
		if want := fmt.Sprintf("rules.txt:%d: ", line); !strings.HasPrefix(e.Error(), want) || !strings.Contains(e.Error(), c.field) {
			t.Errorf("line %d: %q, want %q… naming %s", line, e, want, c.field)
		}
		// Whatever the seed parser refuses on a rule, the worker's compile
		// refuses too (and the other way round, checked by the good line).
		var js struct {
			Selector string            `json:"selector"`
			Ignore   proto.IgnoreRules `json:"ignore"`
		}
		if json.Unmarshal([]byte(c.line), &js) == nil {
			if _, err := extract.Compile(js.Selector, js.Ignore); err == nil {
				t.Errorf("line %d: the worker's compile accepts what the seed parser refused", line)
			}
		}
	}
	s := good["http://a.com/8"]
	if _, err := extract.Compile(s.Selector, s.Ignore); err != nil {
		t.Errorf("good line: the worker's compile refuses what the seed parser accepted: %v", err)
	}
}

func TestKeepRaw(t *testing.T) {
	s, err := ParseLine([]byte(`{"url":"http://example.com/a","keep_raw":true}`))
	if err != nil || !s.KeepRaw {
		t.Fatalf("keep_raw: %+v %v", s, err)
	}
	if s, _ := ParseLine([]byte(`http://example.com/a`)); s.KeepRaw {
		t.Error("a plain URL keeps its raw body")
	}
	if _, err := ParseLine([]byte(`{"url":"http://example.com/a","keep_raw":"yes"}`)); err == nil {
		t.Error(`"keep_raw": "yes" accepted`)
	}
}

func TestWebhookField(t *testing.T) {
	s, err := ParseLine([]byte(`{"url":"http://example.com/a","webhook":"https://hooks.example/x?k=1"}`))
	if err != nil || s.Webhook != "https://hooks.example/x?k=1" {
		t.Fatalf("webhook: %+v %v", s, err)
	}
	for _, bad := range []string{`"ftp://hooks.example/"`, `"/relative"`, `"http://"`, `3`} {
		_, err := ParseLine([]byte(`{"url":"http://example.com/a","webhook":` + bad + `}`))
		if err == nil || !strings.Contains(err.Error(), "webhook") {
			t.Errorf("webhook %s: %v, want an error naming the field", bad, err)
		}
	}
}

// TestWebhookPrivateAddress: a webhook naming the metadata service, or
// any other non-public address, is a bad line naming the field, streamed
// or not, unless the parser allows private webhooks; a host name passes
// (it is checked when it is resolved, at delivery).
func TestWebhookPrivateAddress(t *testing.T) {
	private := []string{
		"http://169.254.169.254/latest/meta-data/iam/security-credentials/",
		"http://127.0.0.1:8080/hook", "http://[::1]/hook", "http://localhost/hook", "http://10.0.0.7/hook",
		"http://[::ffff:169.254.169.254]/", "http://[fd00:ec2::254]/",
	}
	for _, hook := range private {
		line := `{"url":"https://a.example/","webhook":"` + hook + `"}`
		if _, err := ParseLine([]byte(line)); err == nil || !strings.Contains(err.Error(), `field "webhook"`) || !strings.Contains(err.Error(), "not a public address") {
			t.Errorf("%s: %v, want refused naming the field", hook, err)
		}
		var bad []*LineError
		good, _, err := Parser{}.Parse(strings.NewReader(line+"\n"), "seeds.txt", func(Seed) error { return nil }, func(e *LineError) { bad = append(bad, e) })
		if err != nil || good != 0 || len(bad) != 1 || bad[0].Line != 1 {
			t.Errorf("%s: Parse: %d good, bad %v, %v; want one bad line", hook, good, bad, err)
		}
		s, err := Parser{AllowPrivateWebhooks: true}.ParseLine([]byte(line))
		if err != nil || s.Webhook != hook {
			t.Errorf("%s allowed: %+v, %v", hook, s, err)
		}
		good, _, err = Parser{AllowPrivateWebhooks: true}.Parse(strings.NewReader(line+"\n"), "seeds.txt", func(Seed) error { return nil }, nil)
		if err != nil || good != 1 {
			t.Errorf("%s allowed: Parse: %d good, %v", hook, good, err)
		}
	}
	for _, hook := range []string{"https://hooks.example/x", "http://8.8.8.8/x", "http://[2606:4700:4700::1111]/x"} {
		if _, err := ParseLine([]byte(`{"url":"https://a.example/","webhook":"` + hook + `"}`)); err != nil {
			t.Errorf("%s: %v, want accepted", hook, err)
		}
	}
}

// A URL too long for the store and a line too long to read are bad lines
// with their line numbers; the lines around them are read.
func TestParseLongLines(t *testing.T) {
	longURL := "http://example.com/" + strings.Repeat("a", 9<<10)
	huge := "http://example.com/" + strings.Repeat("b", 2<<20)
	in := strings.Join([]string{
		"http://example.com/1",
		longURL,
		"http://example.com/3",
		huge,
		"http://example.com/5",
		huge, // the last line, with no newline after it
	}, "\n")
	var got []string
	var bad []string
	good, bads, err := Parser{}.Parse(strings.NewReader(in), "long.txt", func(s Seed) error {
		got = append(got, s.URL)
		return nil
	}, func(e *LineError) { bad = append(bad, e.Error()) })
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"http://example.com/1", "http://example.com/3", "http://example.com/5"}
	if good != 3 || bads != 3 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("good %d %v, bad %d; want %v and 3 bad", good, got, bads, want)
	}
	for i, w := range []string{"long.txt:2: URL", "long.txt:4: line longer than", "long.txt:6: line longer than"} {
		if !strings.HasPrefix(bad[i], w) || len(bad[i]) > 200 {
			t.Errorf("bad line %d reported as %.300q; want it to start %q, in a line", i, bad[i], w)
		}
	}
	if !strings.Contains(bad[0], "over the limit of 8192") {
		t.Errorf("long URL reported as %.300q; want the limit named", bad[0])
	}

	// Lines at the limits are read whole, with either end of line.
	atLimit := "http://example.com/" + strings.Repeat("c", maxURL-len("http://example.com/"))
	line := `{"url":"` + atLimit + `"}` + strings.Repeat(" ", MaxLine-len(atLimit)-len(`{"url":""}`))
	good, bads, err = Parser{}.Parse(strings.NewReader(line+"\r\n"+line+"\n"), "limit.txt", func(s Seed) error {
		if s.URL != atLimit {
			t.Errorf("got %.60q…, want the URL at the limit", s.URL)
		}
		return nil
	}, func(e *LineError) { t.Errorf("%.200s", e) })
	if err != nil || good != 2 || bads != 0 {
		t.Errorf("lines at the limits: %d good, %d bad, %v", good, bads, err)
	}
}
