package extract

import (
	"fmt"
	"strings"
	"testing"

	"github.com/freshcrawl/freshcrawl/proto"
	"github.com/freshcrawl/freshcrawl/worker/fetch"
)

// benchPage builds a realistic ~50 KiB article page: head with scripts and
// styles, navigation, paragraphs, a price table, ads and a footer clock.
func benchPage(tb testing.TB) []byte {
	var b strings.Builder
	b.WriteString(`<!DOCTYPE html><html><head><title>Bench</title><meta charset="utf-8">`)
	b.WriteString(`<style>` + strings.Repeat(".c{margin:0 auto;padding:1em}", 40) + `</style>`)
	b.WriteString(`<script>` + strings.Repeat("window.dataLayer=window.dataLayer||[];", 40) + `</script></head><body>`)
	b.WriteString(`<nav><ul>`)
	for i := range 20 {
		fmt.Fprintf(&b, `<li><a href="/section/%d">Section %d</a></li>`, i, i)
	}
	b.WriteString(`</ul></nav><main><article class="story">`)
	for i := 0; b.Len() < 45<<10; i++ {
		fmt.Fprintf(&b, `<h2 id="h%d">Heading number %d</h2><p>Paragraph %d with <a href="/x">a link</a>, <b>bold</b> and `+
			`<em>emphasis</em>: lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor `+
			`incididunt ut labore et dolore magna aliqua.</p>`, i, i, i)
		if i%5 == 0 {
			fmt.Fprintf(&b, `<div class="ad">Advertisement %d <img src="/ad.png"></div>`, i)
		}
	}
	b.WriteString(`<table class="prices">`)
	for i := range 40 {
		fmt.Fprintf(&b, `<tr><td>Item %d</td><td class="price">$%d.99</td></tr>`, i, 10+i)
	}
	b.WriteString(`</table></article></main><footer>Rendered 2026-03-01 12:34:56</footer></body></html>`)
	page := []byte(b.String())
	if len(page) < 45<<10 || len(page) > 55<<10 {
		tb.Fatalf("bench page is %d bytes", len(page))
	}
	return page
}

func BenchmarkExtract(b *testing.B) {
	page := benchPage(b)
	for _, c := range []struct {
		name string
		sel  string
		ig   proto.IgnoreRules
	}{
		{"visible", "", proto.IgnoreRules{}},
		{"visible-ignore", "", proto.IgnoreRules{Selectors: []string{".ad", "nav"}, Patterns: []string{`\d{4}-\d{2}-\d{2}`, `\d{2}:\d{2}:\d{2}`}}},
		{"selector", "article.story p, td.price", proto.IgnoreRules{Selectors: []string{".ad"}}},
	} {
		b.Run(c.name, func(b *testing.B) {
			r := mustCompile(b, c.sel, c.ig)
			b.SetBytes(int64(len(page)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.extractText(page, fetch.HTML); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkExtractTree is the visible text by the tree path, which
// BenchmarkExtract/visible takes only for documents the streaming path
// does not follow; the two together show what streaming saves.
func BenchmarkExtractTree(b *testing.B) {
	page := benchPage(b)
	r := mustCompile(b, "", proto.IgnoreRules{})
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		raw, err := r.domText(page)
		if err != nil {
			b.Fatal(err)
		}
		_ = normalize(raw)
	}
}

func BenchmarkDiff(b *testing.B) {
	var lines []string
	for i := 0; len(strings.Join(lines, "\n")) < 50<<10; i++ {
		lines = append(lines, fmt.Sprintf("Paragraph %d: lorem ipsum dolor sit amet, consectetur adipiscing elit.", i))
	}
	prev := strings.Join(lines, "\n")
	changed := append([]string(nil), lines...)
	for _, i := range []int{3, 200, 400, len(lines) - 2} {
		changed[i] = strings.Replace(changed[i], "lorem", "LOREM", 1)
	}
	changed = append(changed[:100], append([]string{"an inserted line"}, changed[100:]...)...)
	next := strings.Join(changed, "\n")
	b.SetBytes(int64(len(prev)))
	b.ReportAllocs()
	for b.Loop() {
		if d := Diff(prev, next); d.LinesAdded != 5 || d.LinesRemoved != 4 {
			b.Fatalf("diff = %+v", d)
		}
	}
}

// BenchmarkExtractor is BenchmarkExtract/visible through an Extractor,
// hash included, as the worker runs it: the buffers are recycled and an
// unchanged page's text never becomes a string.
func BenchmarkExtractor(b *testing.B) {
	page := benchPage(b)
	r := mustCompile(b, "", proto.IgnoreRules{})
	e := NewExtractor()
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		p, err := e.Extract(r, page, fetch.HTML)
		if err != nil {
			b.Fatal(err)
		}
		p.Release()
	}
}
