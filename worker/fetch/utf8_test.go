package fetch

import (
	"bytes"
	"testing"

	"golang.org/x/net/html/charset"
)

// TestToUTF8SkipsDecodingValidUTF8 checks the shortcut for valid UTF-8 HTML
// gives what the UTF-8 decoder gives.
func TestToUTF8SkipsDecodingValidUTF8(t *testing.T) {
	for _, c := range []struct{ body, ct string }{
		{"<p>café “quoted” 日本</p>", "text/html; charset=utf-8"},
		{"\uFEFF<p>with a BOM</p>", "text/html"},
		{`<meta charset="utf-8"><p>é</p>`, "text/html"},
		{"<p>plain ascii</p>", "text/html; charset=UTF-8"},
		{"<p>\u2028\u0085\x00</p>", "text/html; charset=utf-8"},
	} {
		enc, name, _ := charset.DetermineEncoding([]byte(c.body), c.ct)
		if name != "utf-8" {
			t.Fatalf("%q sniffed as %s", c.body, name)
		}
		want, err := enc.NewDecoder().Bytes([]byte(c.body))
		if err != nil {
			t.Fatal(err)
		}
		want = bytes.TrimPrefix(want, []byte("\uFEFF"))
		if got := toUTF8([]byte(c.body), c.ct, HTML); !bytes.Equal(got, want) {
			t.Errorf("toUTF8(%q) = %q, want %q", c.body, got, want)
		}
	}
}
