package extract

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/freshcrawl/freshcrawl/proto"
	"github.com/freshcrawl/freshcrawl/worker/fetch"
)

// An Extractor's page has the text and hash Rules.extractText and Hash give,
// on every path: streamed HTML, HTML the stream hands to the tree, ignore
// rules, plain text and binaries; and a page's text survives its buffer
// being released and reused by the next page.
func TestExtractorMatchesRules(t *testing.T) {
	e := NewExtractor()
	bench := benchPage(t)
	cases := []struct {
		name  string
		sel   string
		ig    proto.IgnoreRules
		class fetch.Class
		body  string
	}{
		{"streamed", "", proto.IgnoreRules{}, fetch.HTML, string(bench)},
		{"streamed small", "", proto.IgnoreRules{}, fetch.HTML, "<p>Hello <b>world</b></p>\n<div>  two\tspaces </div>"},
		{"tree: foster parenting", "", proto.IgnoreRules{}, fetch.HTML, "<table><tr><td>cell</td></tr>text in table</table><p>after</p>"},
		{"selector", "p", proto.IgnoreRules{}, fetch.HTML, "<p>one</p><div>skip</div><p>two</p>"},
		{"ignore selector", "", proto.IgnoreRules{Selectors: []string{".ad"}}, fetch.HTML, "<p>keep</p><div class=ad>drop</div>"},
		{"ignore pattern", "", proto.IgnoreRules{Patterns: []string{`\d{2}:\d{2}`}}, fetch.HTML, "<p>at 12:34 today</p>"},
		{"text", "", proto.IgnoreRules{}, fetch.Text, "line one  \n\n  line two\n"},
		{"json", "", proto.IgnoreRules{}, fetch.Text, `{"b": 1, "a": [1, 2]}`},
		{"invalid utf-8", "", proto.IgnoreRules{}, fetch.HTML, "<p>caf\xe9 \xff</p>"},
		{"empty", "", proto.IgnoreRules{}, fetch.HTML, ""},
	}
	var kept []struct{ want, got string }
	for _, c := range cases {
		r := mustCompile(t, c.sel, c.ig)
		want, wantErr := r.extractText([]byte(c.body), c.class)
		p, err := e.Extract(r, []byte(c.body), c.class)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("%s: error %v, Rules.extractText's %v", c.name, err, wantErr)
		}
		if got := p.Text(); got != want || p.Hash != hashText(want) {
			t.Errorf("%s: text %q hash %s; want %q hash %s", c.name, got, p.Hash, want, hashText(want))
		}
		kept = append(kept, struct{ want, got string }{want, p.Text()})
		p.Release()
		p.Release() // a second release is harmless
	}
	// The texts taken before their buffers went back are intact.
	for i, k := range kept {
		if k.got != k.want {
			t.Errorf("case %d: text changed after release: %q, want %q", i, k.got, k.want)
		}
	}
	body := []byte{0x89, 'P', 'N', 'G', 0, 1, 2}
	p, err := e.Extract(mustCompile(t, "", proto.IgnoreRules{}), body, fetch.Binary)
	if err != nil || p.Hash != hashBytes(body) || p.Text() != "" {
		t.Errorf("binary: hash %s text %q err %v; want hash %s, no text", p.Hash, p.Text(), err, hashBytes(body))
	}
}

// One Extractor serves concurrent workers: each page's text and hash are
// its own (run with -race).
func TestExtractorConcurrent(t *testing.T) {
	e := NewExtractor()
	r := mustCompile(t, "", proto.IgnoreRules{})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				word := fmt.Sprintf("page-%d-%d", g, i)
				body := "<html><body><h1>" + word + "</h1><p>" + strings.Repeat(word+" ", 100+i) + "</p></body></html>"
				want, _ := r.extractText([]byte(body), fetch.HTML)
				p, err := e.Extract(r, []byte(body), fetch.HTML)
				if err != nil || p.Text() != want || p.Hash != hashText(want) {
					errs <- fmt.Errorf("%s: text of %d bytes (want %d), err %v", word, len(p.Text()), len(want), err)
					return
				}
				p.Release()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
