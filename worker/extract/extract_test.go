package extract

import (
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/freshcrawl/freshcrawl/proto"
	"github.com/freshcrawl/freshcrawl/worker/fetch"
)

func mustCompile(t testing.TB, sel string, ig proto.IgnoreRules) *Rules {
	t.Helper()
	r, err := Compile(sel, ig)
	if err != nil {
		t.Fatalf("Compile(%q, %+v): %v", sel, ig, err)
	}
	return r
}

func mustExtract(t testing.TB, r *Rules, body string, class fetch.Class) string {
	t.Helper()
	text, err := r.extractText([]byte(body), class)
	if err != nil {
		t.Fatalf("Extract: %v", err)
	}
	return text
}

const shopPage = `<!DOCTYPE html>
<html><head><title>Shop – Widget</title>
<style>.price { color: red }</style>
<script>var tracking = "do not include";</script>
</head>
<body>
  <nav><a href="/">Home</a> | <a href="/shop">Shop</a></nav>
  <h1>Widget   Deluxe</h1>
  <div class="price">$19.99</div>
  <ul>
    <li class="feature">Fast</li>
    <li class="feature">Cheap</li>
  </ul>
  <noscript>Enable JavaScript</noscript>
  <template><p>template content</p></template>
  <p hidden>hidden text</p>
  <!-- a comment -->
  <script type="application/ld+json">{"price": "19.99"}</script>
</body></html>`

func TestExtractSelector(t *testing.T) {
	for _, c := range []struct{ sel, want string }{
		{".price", "$19.99"},
		{"li.feature", "Fast\nCheap"},
		{"h1, .price", "Widget Deluxe\n$19.99"},
		{"ul", "Fast\nCheap"},
		{`script[type="application/ld+json"]`, `{"price": "19.99"}`},
		{"title", "Shop – Widget"},
	} {
		got := mustExtract(t, mustCompile(t, c.sel, proto.IgnoreRules{}), shopPage, fetch.HTML)
		if got != c.want {
			t.Errorf("selector %q: got %q, want %q", c.sel, got, c.want)
		}
	}
}

func TestExtractSelectorNestedMatchesOnce(t *testing.T) {
	page := `<div id="a">outer <div id="b">inner</div> tail</div><div>other</div>`
	got := mustExtract(t, mustCompile(t, "div", proto.IgnoreRules{}), page, fetch.HTML)
	if want := "outer\ninner\ntail\nother"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestExtractMetaContent(t *testing.T) {
	page := `<html><head><meta property="product:price:amount" content="42.00"></head><body>x</body></html>`
	got := mustExtract(t, mustCompile(t, `meta[property="product:price:amount"]`, proto.IgnoreRules{}), page, fetch.HTML)
	if got != "42.00" {
		t.Fatalf("got %q", got)
	}
}

func TestExtractVisibleText(t *testing.T) {
	got := mustExtract(t, mustCompile(t, "", proto.IgnoreRules{}), shopPage, fetch.HTML)
	want := "Home | Shop\nWidget Deluxe\n$19.99\nFast\nCheap"
	if got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	for _, bad := range []string{"tracking", "color", "Enable JavaScript", "template content", "hidden text", "comment", "Shop – Widget"} {
		if strings.Contains(got, bad) {
			t.Errorf("visible text contains %q", bad)
		}
	}
}

func TestWhitespaceNormalisation(t *testing.T) {
	page := "<body>\n\t<p>  one\n two\u00a0\u00a0three\t</p><p></p><p>   </p>" +
		"<div>inline <b>bold</b><i>italic</i> end<br>after break</div>" +
		"<table><tr><td>a</td><td>b</td></tr><tr><th>c</th><td>d</td></tr></table>" +
		"<pre>line 1\n   line 2\n\n</pre>" +
		"<span>zero\u200bwidth</span><section>s1</section><article>a1</article>" +
		"<h2>head</h2>tail text</body>"
	got := mustExtract(t, mustCompile(t, "", proto.IgnoreRules{}), page, fetch.HTML)
	want := strings.Join([]string{
		"one two three",
		"inline bolditalic end",
		"after break",
		"a b",
		"c d",
		"line 1",
		"line 2",
		"zerowidth",
		"s1",
		"a1",
		"head",
		"tail text",
	}, "\n")
	if got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestIgnoreSelectorsDropRotatingAd(t *testing.T) {
	page := func(ad string) string {
		return `<body><article><p>Story text.</p><div class="ad">` + ad + `</div><aside id="promo">Buy ` + ad + `</aside></article></body>`
	}
	plain := mustCompile(t, "", proto.IgnoreRules{})
	if hashText(mustExtract(t, plain, page("Ad A"), fetch.HTML)) == hashText(mustExtract(t, plain, page("Ad B"), fetch.HTML)) {
		t.Fatal("without ignore rules the pages should differ")
	}
	r := mustCompile(t, "article", proto.IgnoreRules{Selectors: []string{".ad", "aside#promo"}})
	a, b := mustExtract(t, r, page("Ad A"), fetch.HTML), mustExtract(t, r, page("Ad B"), fetch.HTML)
	if a != "Story text." || hashText(a) != hashText(b) {
		t.Fatalf("got %q and %q", a, b)
	}
}

func TestIgnorePatternsBlankClock(t *testing.T) {
	page := func(clock, date string) string {
		return `<body><p>Status: all systems operational</p><footer>Generated ` + date + ` at ` + clock + `</footer></body>`
	}
	r := mustCompile(t, "", proto.IgnoreRules{Patterns: []string{`\d{2}:\d{2}:\d{2}`, `\d{4}-\d{2}-\d{2}`}})
	a := mustExtract(t, r, page("12:34:56", "2026-03-01"), fetch.HTML)
	b := mustExtract(t, r, page("08:00:01", "2026-03-02"), fetch.HTML)
	if hashText(a) != hashText(b) {
		t.Fatalf("hashes differ: %q vs %q", a, b)
	}
	if a != "Status: all systems operational\nGenerated at" {
		t.Fatalf("got %q", a)
	}
	c := mustExtract(t, r, strings.Replace(page("12:34:56", "2026-03-01"), "operational", "degraded", 1), fetch.HTML)
	if hashText(a) == hashText(c) {
		t.Fatal("a real change must still change the hash")
	}
}

func TestExtractText(t *testing.T) {
	r := mustCompile(t, ".ignored-for-text", proto.IgnoreRules{Patterns: []string{`session=\w+`}})
	got := mustExtract(t, r, "  first   line \r\n\n\tsecond session=abc123 line\n", fetch.Text)
	if got != "first line\nsecond line" {
		t.Fatalf("got %q", got)
	}
	a := mustExtract(t, r, `{"b": 1, "a": [1, 2.50], "c": {"y": true, "x": null}}`, fetch.Text)
	b := mustExtract(t, r, `{"c":{"x":null,"y":true},"a":[1,2.50],"b":1}`, fetch.Text)
	if a != b {
		t.Fatalf("JSON key order changed the text:\n%s\n---\n%s", a, b)
	}
	if !strings.Contains(a, `"a": [`) || !strings.Contains(a, "2.50") {
		t.Fatalf("canonical JSON = %q", a)
	}
}

func TestExtractBinary(t *testing.T) {
	r := mustCompile(t, "p", proto.IgnoreRules{})
	got, err := r.extractText([]byte("\x89PNG\x00\x01"), fetch.Binary)
	if got != "" || err != nil {
		t.Fatalf("binary: %q, %v", got, err)
	}
	if hashBytes([]byte("\x89PNG")) == hashBytes([]byte("\x89PNH")) || len(hashBytes(nil)) != 64 {
		t.Fatal("hashBytes must tell bodies apart and be hex SHA-256")
	}
	if hashText("") != "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Fatalf("hashText(\"\") = %s", hashText(""))
	}
}

func TestExtractNoMatch(t *testing.T) {
	_, err := mustCompile(t, "#gone", proto.IgnoreRules{}).extractText([]byte(shopPage), fetch.HTML)
	if !errors.Is(err, errNoMatch) || !strings.Contains(err.Error(), "#gone") {
		t.Fatalf("err = %v", err)
	}
}

func TestCompileErrors(t *testing.T) {
	for _, c := range []struct {
		sel   string
		ig    proto.IgnoreRules
		field string
		want  string
	}{
		{"div[", proto.IgnoreRules{}, "selector", `"div["`},
		{">>", proto.IgnoreRules{}, "selector", `">>"`},
		{"", proto.IgnoreRules{Selectors: []string{".ok", "p:bogus"}}, "ignore.selectors[1]", `"p:bogus"`},
		{"", proto.IgnoreRules{Selectors: []string{"  "}}, "ignore.selectors[0]", "empty selector"},
		{"", proto.IgnoreRules{Patterns: []string{`\d`, `(unclosed`}}, "ignore.patterns[1]", `"(unclosed"`},
		{"", proto.IgnoreRules{Patterns: []string{""}}, "ignore.patterns[0]", "empty pattern"},
		{"", proto.IgnoreRules{MinChange: -0.1}, "ignore.min_change", "-0.1"},
		{"", proto.IgnoreRules{MinChange: math.NaN()}, "ignore.min_change", "NaN"},
		{"", proto.IgnoreRules{MinChange: math.Inf(1)}, "ignore.min_change", "Inf"},
	} {
		_, err := Compile(c.sel, c.ig)
		var re *RuleError
		if !errors.As(err, &re) || re.Field != c.field || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Compile(%q, %+v) err = %v, want a RuleError on %s mentioning %s", c.sel, c.ig, err, c.field, c.want)
		}
	}
	for _, sel := range []string{"", " ", "div.price > span", "a, b"} {
		if _, err := Compile(sel, proto.IgnoreRules{}); err != nil {
			t.Errorf("Compile(%q) = %v", sel, err)
		}
	}
	r := mustCompile(t, " ", proto.IgnoreRules{MinChange: 0.25})
	if r.MinChange() != 0.25 {
		t.Fatalf("MinChange = %v", r.MinChange())
	}
}

func TestDeepNesting(t *testing.T) {
	page := []byte(strings.Repeat("<div>", 2000) + "deep text")
	got, err := mustCompile(t, "", proto.IgnoreRules{}).extractText(page, fetch.HTML)
	if err != nil || got != "deep text" {
		t.Fatalf("visible text fallback: %q, %v", got, err)
	}
	if _, err := mustCompile(t, "div", proto.IgnoreRules{}).extractText(page, fetch.HTML); err == nil {
		t.Fatal("a selector on an unparseable page must fail, not guess")
	}
}

func TestExtractInvalidUTF8(t *testing.T) {
	got := mustExtract(t, mustCompile(t, "", proto.IgnoreRules{}), "<p>a\xffb\x00c</p>", fetch.HTML)
	if !utf8.ValidString(got) {
		t.Fatalf("invalid UTF-8 out: %q", got)
	}
}

func TestRulesConcurrentUse(t *testing.T) {
	r := mustCompile(t, "li", proto.IgnoreRules{Selectors: []string{".x"}, Patterns: []string{`\d+`}})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				if got := mustExtract(t, r, `<ul><li>a1</li><li class="x">b</li><li>c22</li></ul>`, fetch.HTML); got != "a\nc" {
					t.Errorf("got %q", got)
					return
				}
			}
		})
	}
	wg.Wait()
}
