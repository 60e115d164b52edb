package seed

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/freshcrawl/freshcrawl/worker/extract"
)

// FuzzParse feeds whole seed files through Parse. Every line that is not
// blank or a comment is either a good seed or a bad line reported at its
// file:line; a good seed is stored as a worker will use it: a canonical
// URL, a finite weight > 0, a known mode, rules the worker's compile
// accepts, capture fields only on capture seeds.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"http://a.com/\n# comment\n\nhttps://B.com:443/x#y\n",
		"\xef\xbb\xbfhttp://a.com/\r\nftp://b.com/\n",
		`{"url":"http://a.com/","weight":2,"selector":"h1","ignore":{"selectors":[".ad"],"patterns":["\\d+"],"min_change":0.1}}`,
		`{"url":"http://a.com/f","mode":"capture","period":"1h","polls":4}` + "\n" + `{"url":"http://a.com/g","period":"1h"}`,
		`{"url":"http://a.com/","weight":-1}` + "\n" + `{"url":"http://a.com/","weight":1e999}`,
		`{"url":"http://a.com/","selector":"div[["}{"x":1}`,
		`{"url":"http://a.com/","unknown":true}`,
		"http://[::1]:8080/\nhttp://a..com/\nhttp://user:pw@a.com/\n",
		strings.Repeat("x", 100) + "\n{",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, file []byte) {
		var bad []*LineError
		var goodSeeds []Seed
		good, bads, err := Parser{}.Parse(bytes.NewReader(file), "f.txt", func(s Seed) error {
			goodSeeds = append(goodSeeds, s)
			return nil
		}, func(e *LineError) { bad = append(bad, e) })
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.txt:") {
				t.Fatalf("error does not name the file and line: %v", err)
			}
			return
		}
		if good != len(goodSeeds) || bads != len(bad) {
			t.Fatalf("counted %d good and %d bad, reported %d and %d", good, bads, len(goodSeeds), len(bad))
		}
		lines := 0
		for i, l := range bytes.Split(file, []byte("\n")) {
			l = bytes.TrimSpace(l)
			if i == 0 {
				l = bytes.TrimPrefix(l, []byte("\xef\xbb\xbf"))
			}
			if len(bytes.TrimSpace(l)) > 0 && l[0] != '#' {
				lines++
			}
		}
		if good+bads != lines {
			t.Fatalf("%d good + %d bad lines of %d", good, bads, lines)
		}
		for _, e := range bad {
			if !strings.HasPrefix(e.Error(), fmt.Sprintf("f.txt:%d: ", e.Line)) || e.Line < 1 {
				t.Fatalf("bad line reported as %q", e)
			}
		}
		for _, s := range goodSeeds {
			if u, _, err := Normalize(s.URL); err != nil || u != s.URL || s.Host == "" {
				t.Fatalf("stored URL %q is not canonical (%q, %v)", s.URL, u, err)
			}
			if !(s.Weight > 0) || math.IsInf(s.Weight, 0) {
				t.Fatalf("stored weight %v", s.Weight)
			}
			if s.Mode != ModeFreshness && s.Mode != ModeCapture {
				t.Fatalf("stored mode %q", s.Mode)
			}
			if (s.Period != "" || s.Polls != 0) && s.Mode != ModeCapture {
				t.Fatalf("capture fields on a %s seed", s.Mode)
			}
			if _, err := extract.Compile(s.Selector, s.Ignore); err != nil {
				t.Fatalf("stored rules the worker refuses: %v", err)
			}
		}
	})
}
