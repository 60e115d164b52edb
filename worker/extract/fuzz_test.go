package extract

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/freshcrawl/freshcrawl/proto"
	"github.com/freshcrawl/freshcrawl/worker/fetch"
)

// extractSeeds start the extraction fuzzers.
var extractSeeds = []string{
	"", "<", "<html>", shopPage, "<p>a<br>b</p>", "<table><td>x<tr>y",
	"<div class=x><p>12:34:56</p><li>one</li></div>", "<pre>\n\n a \n</pre>",
	"<svg><title>t</title><p>in svg</p></svg>", "<template><p>x</p></template>y",
	strings.Repeat("<div>", 600) + "deep", "<script>never</script ><p>ok",
	"\xff\xfe<\x00p>", `{"b":1,"a":[true,null,"x"]}`, "<meta content=x>",
	"<math><mi>x</mi></math><noscript><p>n</p></noscript>", "<p hidden>h</p>\u00a0",
}

// checkNormalised asserts the invariants every extracted text has.
func checkNormalised(t *testing.T, text string) {
	t.Helper()
	if !utf8.ValidString(text) {
		t.Fatalf("invalid UTF-8: %q", text)
	}
	if text == "" {
		return
	}
	for _, l := range strings.Split(text, "\n") {
		if l == "" || l != strings.TrimSpace(l) || strings.Contains(l, "  ") {
			t.Fatalf("line not normalised: %q in %q", l, text)
		}
	}
	if normalize(text) != text {
		t.Fatalf("normalize is not idempotent on %q", text)
	}
}

func FuzzExtract(f *testing.F) {
	for _, s := range extractSeeds {
		f.Add([]byte(s))
	}
	plain, err := Compile("", proto.IgnoreRules{})
	if err != nil {
		f.Fatal(err)
	}
	selected, err := Compile("div p, .x, li:nth-child(2), meta, script", proto.IgnoreRules{
		Selectors: []string{".ad", "footer"},
		Patterns:  []string{`\d{2}:\d{2}:\d{2}`, `(?i)session=\w+`},
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, r := range []*Rules{plain, selected} {
			for _, class := range []fetch.Class{fetch.HTML, fetch.Text, fetch.Binary} {
				text, err := r.extractText(body, class)
				if err != nil {
					if text != "" {
						t.Fatalf("text %q with error %v", text, err)
					}
					continue
				}
				checkNormalised(t, text)
				if class == fetch.Binary && text != "" {
					t.Fatalf("binary gave text %q", text)
				}
				if h := hashText(text); len(h) != 64 {
					t.Fatalf("hash %q", h)
				}
			}
		}
	})
}

func FuzzDiff(f *testing.F) {
	for _, p := range [][2]string{
		{"", ""}, {"a", ""}, {"", "a"}, {"a\nb\nc", "a\nB\nc\nd"}, {"$19.99", "$24.99"},
		{"1,234", "1.234"}, {"x\n\ny", "y\nx"}, {"\xff", "\xfe"}, {"é\nü", "ü\né"},
		{strings.Repeat("line\n", 50), strings.Repeat("line\n", 49) + "changed"},
		{"1e308", "-1e308"}, {"\n\n\n", "\n"},
	} {
		f.Add(p[0], p[1])
	}
	f.Fuzz(func(t *testing.T, prev, next string) {
		d := Diff(prev, next)
		if d.Numeric {
			if d.Magnitude < 0 || d.Magnitude != d.Magnitude {
				t.Fatalf("numeric magnitude %v", d.Magnitude)
			}
		} else if d.Magnitude < 0 || d.Magnitude > 1 {
			t.Fatalf("magnitude %v out of [0,1]", d.Magnitude)
		}
		if got, want := d.LinesAdded-d.LinesRemoved, len(splitLines(next))-len(splitLines(prev)); got != want {
			t.Fatalf("added-removed = %d, want %d (%+v)", got, want, d)
		}
		if d.LinesAdded > len(splitLines(next)) || d.LinesRemoved > len(splitLines(prev)) {
			t.Fatalf("more lines changed than exist: %+v", d)
		}
		if prev == next && (d.LinesAdded != 0 || d.LinesRemoved != 0 || d.CharsChanged != 0 || d.Magnitude != 0) {
			t.Fatalf("equal texts differ: %+v", d)
		}
		if prev != next && !d.Numeric && d.CharsChanged == 0 {
			t.Fatalf("different texts, no chars changed: %+v", d)
		}
		if len(d.Preview) > previewMax {
			t.Fatalf("preview %d bytes", len(d.Preview))
		}
		if utf8.ValidString(prev) && utf8.ValidString(next) && !utf8.ValidString(d.Preview) {
			t.Fatalf("preview not valid UTF-8: %q", d.Preview)
		}
		_ = Significant(d, 0.1)
	})
}
