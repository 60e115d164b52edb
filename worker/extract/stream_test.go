package extract

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html/charset"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/japanese"
	unienc "golang.org/x/text/encoding/unicode"
)

// domVisible is the visible text the tree path renders (html.Parse and
// appendText, or tokenText when the parser refuses the document).
func domVisible(t testing.TB, body []byte) string {
	t.Helper()
	raw, err := (&Rules{}).domText(body)
	if err != nil {
		t.Fatalf("domText: %v", err)
	}
	return normalize(raw)
}

// streamVisible is the streaming path's text, and whether it followed the
// document.
func streamVisible(body []byte) (string, bool) {
	buf, ok := streamText(body, nil)
	return normalize(string(buf)), ok
}

// checkSame fails when the streaming path follows body but renders other
// text than the tree path.
func checkSame(t testing.TB, body []byte) bool {
	t.Helper()
	got, ok := streamVisible(body)
	if !ok {
		return false
	}
	if want := domVisible(t, body); got != want {
		t.Fatalf("streaming and tree text differ on %q:\nstream: %q\ntree:   %q", body, got, want)
	}
	return true
}

// trickySnippets exercise the tree construction rules the streamer
// follows (implied ends, head/body inference, tables, raw text, hidden and
// dropped elements) and ones where it must give up.
var trickySnippets = []string{
	"hello", "  \n <p>x", "<title>t</title>x", "<head><title>t</title></head><title>in body</title>",
	"<head></head>\n<noscript>n</noscript><title>b</title>", "</body><title>b</title>", "</html>x",
	"</br>x", "<br/>a<br hidden>b<hr hidden>c<hr>d", "&#32;<title>t</title>x", "&nbsp;<title>t</title>x",
	"\x00<title>t</title>", "a\x00b<pre>\x00</pre>", "<p>a<div>b</div>c</p>d", "<p hidden>a<div>b</div>c",
	"<li hidden>a<li>b", "<ul><li>a<li>b</ul>c", "<dl><dt>a<dd>b<dt hidden>c<dd>d</dl>",
	"<h1>a<h2>b</h1>c", "<b>a<p>b</b>c</p>", "<p><b>x</p>y</b>z", "<div><b>x</div>y", "<b hidden>a<p>b",
	"<a>1<a>2", "<a href=x>1</a><a>2</a>", "<nobr>a<nobr>b", "<table><tr><td>a<td>b<tr><td>c</table>d",
	"<table>x<tr><td>a</table>", "<table>\n<tr>\n<td>a</td>\n</tr>\n</table>", "<table><td>a</td></table>",
	"<table><tbody><tr><td>a</tbody><tfoot><tr><td>f</table>", "<table><thead><tr><th>h<tbody><tr><td>b</table>",
	"<table><tr><td><table><tr><td>in</table>out</td></tr></table>", "<p><table><td>x</table>",
	"<!DOCTYPE html><p><table><td>x</table>", "<table><caption>c</caption><tr><td>x</table>",
	"<table><colgroup><col></colgroup><tr><td>x</table>", "<table><td hidden>h</td><td>v</table>",
	"<table><tr><td><b>x<td>y</table>z", "<table><tr><td>x</tr></td>y</table>", "<table><script>s</script><tr><td>x</table>",
	"<table><input type=hidden><tr><td>x</table>", "<table><input><tr><td>x</table>", "<table><form><tr><td>x</table>",
	"<form>a<form>b</form>c</form>d", "<form><div>a</form>b", "<div><form></div><form>x</form>",
	"<pre>\na\n  b</pre>", "<textarea>\nx\ny</textarea>z", "a<textarea></textarea>b", "<xmp><b>x</b></xmp>",
	"<listing>\nl</listing>", "<noembed>e</noembed><noframes>f</noframes><iframe>i</iframe>",
	"<script>a</script><style>b</style><noscript>c</noscript>x", "<select><option>a<option>b</select>",
	"<option>a<option>b<optgroup>c", "<button>a<button>b", "<ruby>a<rt>b</ruby>", "<object>o</object>x",
	"<svg><p>x</p></svg>", "<math>m</math>y", "<template>t</template>u", "<frameset></frameset>",
	"<plaintext><p>x", "<html hidden>x", "<body hidden>x", "<p>a</p><body hidden>", "<custom-el>a</custom-el>b",
	"<x-a>a<x-b>b</x-a>c", "<span>a</div>b</span>", "</p>x", "<p>a</p></p>b", "x</td>y</select>z",
	"<div>a<br>b</div>\r\nc\rd", "<td>a</td><th>b</th>", "<dialog>d</dialog><details><summary>s</summary>t</details>",
	"<p>a<h1>b", "<main><article><section>s</section></article></main>", "<center>c</center><dir>d</dir>",
	"<p>\u00a0\u200bx\u2028y</p>", "<img alt=x>a<input value=y>b", "<canvas>c</canvas><embed>d",
	"<div hidden><table><td>x</table></div>y", "<head><meta charset=utf-8><link rel=x><base href=/>",
	"<h2>a</h2 >b<p/>c", "<p>x<!-- c -->y", "<!doctype html><html><body><p>x</body></html><p>y",
	"<p>a<svg><style>x</svg><p>b</p>", "<svg><![CDATA[</svg>]]></svg>after", "<svg><path/><g><circle></g></svg>ok",
	"<svg><title>t</title></svg>x", "<svg><p>x</svg>", "<svg/>z", "<svg><script>a</script></svg>q",
	"<svg><g></svg>after</g>", "<table><td><svg><rect/></svg>x</table>", "<SVG><Rect></RECT></svg>x",
	"<svg><a><g></a>y</svg>z", "<math><mrow><msup></math>w", "<svg><font>x</font></svg>", "<svg></p></svg>x",
	"<button><svg viewBox='0 0 1 1'><use href='#i'/></svg>Go</button>",
	"<b><svg><title>t</title></svg>x</b>", "<a href=/><svg><title>t<b>x</b></title></svg></a>y",
	"<svg><desc>d</desc><foreignObject>f</foreignObject></svg>z", "<math><mi>x</mi><mo>+</mo></math>y",
	"<p><b>1<svg><title>a\x00</title></svg>2</b>3", "<svg><title></svg>x", "<svg><title><![CDATA[<p>]]></title></svg>z",
}

func FuzzStreamMatchesDOM(f *testing.F) {
	for _, s := range extractSeeds {
		f.Add([]byte(s))
	}
	for _, s := range trickySnippets {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkSame(t, body)
	})
}

func TestStreamMatchesDOMSnippets(t *testing.T) {
	followed := 0
	for _, s := range append(append([]string(nil), extractSeeds...), trickySnippets...) {
		if checkSame(t, []byte(s)) {
			followed++
		}
	}
	// Most snippets are ones the streamer follows; the rest check it gives
	// up rather than render something else.
	if n := len(extractSeeds) + len(trickySnippets); followed < n/2 {
		t.Fatalf("streamed %d of %d snippets", followed, n)
	}
}

// newsPage is a page in the shape of the throughput benchmark's and of
// typical article pages: head scripts and styles, navigation, lists, tables
// without tbody, paragraphs with inline markup, a form and a footer.
func newsPage(words []string) []byte {
	var b bytes.Buffer
	b.WriteString(`<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>News</title>`)
	b.WriteString(`<style>.c{margin:0}</style><script>var a = "<p>not text</p>";</script></head><body>`)
	b.WriteString(`<nav class="top"><a href="/"><svg class="icon" viewBox="0 0 24 24"><title>home</title><path d="M0 0h24v24H0z"/></svg>Home</a> <a href="/p">Previous</a></nav>` + "\n")
	b.WriteString(`<main><h1>Headline</h1><p class="updated">Revision 7</p><ul class="latest">`)
	for i := range 5 {
		fmt.Fprintf(&b, `<li class="news"><a href="/n/%d">%s</a><p>%s %d</p></li>`, i, words[i%len(words)], words[(i+1)%len(words)], i)
	}
	b.WriteString("</ul>\n")
	for i := range 30 {
		fmt.Fprintf(&b, "<article class=\"c%d\"><h2>%s</h2>\n<p>%s <b>%s</b>, <em>%s</em> <a href=\"/r/%d\">%s</a> </p>\n",
			i, words[i%len(words)], words[(i+2)%len(words)], words[(i+3)%len(words)], words[(i+4)%len(words)], i, words[(i+5)%len(words)])
		if i%7 == 0 {
			b.WriteString(`<table class="specs"><tr><th>Item</th><th>Value</th></tr>`)
			for j := range 4 {
				fmt.Fprintf(&b, "<tr><td>%s</td><td>%d.%02d</td></tr>\n", words[j%len(words)], j*13, j)
			}
			b.WriteString("</table>\n")
		}
		if i%11 == 0 {
			b.WriteString("<pre>  code\n\tindented</pre><blockquote>quote<br>next line</blockquote>")
		}
		b.WriteString("</article>")
	}
	b.WriteString(`<form action="/s"><input type="hidden" name="q"><label>Search <input name="s"></label><button>Go</button></form>`)
	b.WriteString(`</main><footer class="site-footer"><ul><li><a href="/a">About</a></li></ul><p>Copyright</p></footer>`)
	b.WriteString(`<script>(function(){})();</script></body></html>`)
	return b.Bytes()
}

// TestStreamMatchesDOMPages holds the streaming path to the tree path on
// real-looking pages, served in several charsets and converted to UTF-8 as
// the fetcher does, and checks it does follow them (a fallback on every
// page would keep the results equal but the extraction slow).
func TestStreamMatchesDOMPages(t *testing.T) {
	latin := []string{"café", "naïve", "“quoted”", "Ærø", "déjà vu", "€ 5", "façade"}
	japaneseWords := []string{"日本語", "東京", "ニュース", "価格", "天気", "経済", "文化"}
	pages := []struct {
		name        string
		body        []byte
		contentType string
		enc         encoding.Encoding // nil: UTF-8 as written
	}{
		{name: "bench", body: benchPage(t)},
		{name: "news-utf8", body: newsPage(latin)},
		{name: "news-windows-1252", body: newsPage(latin), contentType: "text/html; charset=windows-1252", enc: charmapWindows1252(t)},
		{name: "news-shift-jis-meta", body: bytes.Replace(newsPage(japaneseWords), []byte(`charset="utf-8"`), []byte(`charset="shift_jis"`), 1), enc: japanese.ShiftJIS},
		{name: "news-utf16-bom", body: newsPage(japaneseWords), enc: unienc.UTF16(unienc.LittleEndian, unienc.UseBOM)},
		{name: "invalid-utf8", body: append(newsPage(latin), "<p>bad \xff\xfe bytes</p>"...)},
	}
	for _, p := range pages {
		t.Run(p.name, func(t *testing.T) {
			body := p.body
			if p.enc != nil {
				encoded, err := p.enc.NewEncoder().Bytes(body)
				if err != nil {
					t.Fatalf("encode: %v", err)
				}
				body = toUTF8(t, encoded, p.contentType)
			}
			if !checkSame(t, body) {
				t.Fatalf("the streaming path gave up on the page")
			}
			text, _ := streamVisible(body)
			for _, w := range []string{"not text", "var a", ".c{"} {
				if strings.Contains(text, w) {
					t.Fatalf("text has %q from a script or style", w)
				}
			}
		})
	}
}

func charmapWindows1252(t *testing.T) encoding.Encoding {
	t.Helper()
	e, _ := charset.Lookup("windows-1252")
	if e == nil {
		t.Fatal("no windows-1252")
	}
	return e
}

// toUTF8 decodes body as the fetcher does for HTML (BOM, Content-Type,
// <meta> prescan).
func toUTF8(t *testing.T, body []byte, contentType string) []byte {
	t.Helper()
	enc, name, _ := charset.DetermineEncoding(body, contentType)
	out, err := enc.NewDecoder().Bytes(body)
	if err != nil {
		t.Fatalf("decode as %s: %v", name, err)
	}
	return bytes.TrimPrefix(out, []byte("\uFEFF"))
}

// normalizeRef is normalize as it was before its ASCII fast path: the
// reference FuzzNormalize holds it to.
//
// It collapses runs of blanks (any Unicode space, plus invisible
// zero-width and soft-hyphen characters and control characters) to one
// space, trims every line, drops empty lines and joins them with "\n".
// Invalid UTF-8 becomes U+FFFD, so the result survives a JSON round trip
// byte for byte and hashes the same on both sides of the wire.
func normalizeRef(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	space, lineStarted := false, false
	for i := 0; i < len(s); {
		c, size := rune(s[i]), 1
		if c >= utf8.RuneSelf {
			c, size = utf8.DecodeRuneInString(s[i:])
		}
		i += size
		switch {
		case c == '\n' || c == '\r' || c == '\v' || c == '\f' || c == '\u2028' || c == '\u2029' || c == '\u0085':
			if lineStarted {
				b.WriteByte('\n')
			}
			space, lineStarted = false, false
			continue
		case c == ' ' || c == '\t':
			space = true
			continue
		case c < utf8.RuneSelf && c > 0x20 && c != 0x7f:
			// Printable ASCII, the common case.
		case c == '\u200b' || c == '\ufeff' || c == '\u00ad' || c == '\u2060':
			continue // invisible: not even a word break
		case unicode.IsSpace(c) || unicode.IsControl(c):
			space = true
			continue
		}
		if space && lineStarted {
			b.WriteByte(' ')
		}
		switch {
		case c < utf8.RuneSelf:
			b.WriteByte(byte(c))
		case c == utf8.RuneError && size == 1:
			b.WriteString("\uFFFD") // an invalid byte
		default:
			b.WriteString(s[i-size : i])
		}
		space, lineStarted = false, true
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"", " a  b \n\n c\t", "x\u00a0y\u200bz", "\xff\xfe a", "line\r\nnext\u2028x", "é  ü\n", "a\x00b\x7fc"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := normalizeRef(s)
		if got := normalize(s); got != want {
			t.Fatalf("normalize(%q) = %q, want %q", s, got, want)
		}
		if got := normalize([]byte(s)); got != want {
			t.Fatalf("normalize([]byte(%q)) = %q, want %q", s, got, want)
		}
	})
}

func BenchmarkNormalize(b *testing.B) {
	raw, ok := streamText(benchPage(b), nil)
	if !ok {
		b.Fatal("bench page not streamed")
	}
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		_ = normalize(raw)
	}
}

// TestHashIsSHA256 holds Hash, which feeds the text in chunks, to the
// SHA-256 of the whole text, across chunk boundaries.
func TestHashIsSHA256(t *testing.T) {
	for _, n := range []int{0, 1, 1023, 1024, 1025, 5000} {
		text := strings.Repeat("é", n/2) + strings.Repeat("x", n%2)
		if got, want := hashText(text), hashBytes([]byte(text)); got != want {
			t.Errorf("Hash of %d bytes = %s, want %s", len(text), got, want)
		}
	}
}

func BenchmarkHash(b *testing.B) {
	text := strings.Repeat("A paragraph of the page, long enough to look like one.\n", 360)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		_ = hashText(text)
	}
}
