// Package extract turns a fetched body into the text whose changes matter:
// the content picked by a CSS selector (or the page's visible text), with
// noise removed — scripts and styles, elements matched by ignore selectors,
// regex matches such as clocks and session ids — and whitespace normalised
// to one block per line, so that a hash changes only when the content does
// and a line diff says what changed.
//
// It also hashes and diffs versions. Everything here is pure: no I/O, no
// state but the buffers an Extractor recycles, and it never panics on any
// input, because its input is whatever a web server chose to send.
package extract

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"github.com/PuerkitoBio/goquery"
	"github.com/andybalholm/cascadia"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/freshcrawl/freshcrawl/proto"
	"github.com/freshcrawl/freshcrawl/worker/fetch"
)

// errNoMatch is returned by extractText when a selector matches nothing. It is
// an error rather than empty text because a page whose layout changed would
// otherwise look like a page whose content was deleted, and raise a false
// change; the worker reports it as proto.ErrContent.
var errNoMatch = errors.New("selector matched nothing")

// Rules are compiled extraction rules: a content selector and the noise to
// drop. They are immutable and safe for concurrent use; compile once per
// task (or cache per URL) and extract many bodies.
type Rules struct {
	selector     cascadia.Selector // nil: the page's visible text
	selectorText string
	ignore       []cascadia.Selector
	blankRE      *regexp.Regexp // the ignore patterns as one alternation; nil if none
	minChange    float64
}

// RuleError is a rule Compile refused. Field names the rule the way a seed
// line's JSON does: "selector", "ignore.selectors[i]", "ignore.patterns[i]"
// or "ignore.min_change", so that the seed parser, the config and a worker
// all report the same rule the same way.
type RuleError struct {
	Field string
	Err   error
}

func (e *RuleError) Error() string { return e.Field + ": " + e.Err.Error() }
func (e *RuleError) Unwrap() error { return e.Err }

// Compile validates and compiles a content selector and ignore rules. It is
// the one check of extraction rules: the worker runs it on every task, and
// the seed parser and the config run it before anything is stored, so a
// rule that would fail every fetch is refused where it was written. Errors
// are *RuleError. The empty content selector means the page's visible text;
// an empty ignore selector or pattern is an error (it would match
// everything or nothing, which no one means). Patterns use RE2 syntax (Go's
// regexp), which runs in linear time, so a hostile page cannot make a
// pattern backtrack forever.
func Compile(selector string, ignore proto.IgnoreRules) (*Rules, error) {
	r := &Rules{selectorText: strings.TrimSpace(selector)}
	if r.selectorText != "" {
		s, err := cascadia.Compile(r.selectorText)
		if err != nil {
			return nil, &RuleError{"selector", fmt.Errorf("%q: %w", selector, err)}
		}
		r.selector = s
	}
	for i, sel := range ignore.Selectors {
		field := fmt.Sprintf("ignore.selectors[%d]", i)
		if strings.TrimSpace(sel) == "" {
			return nil, &RuleError{field, errors.New("empty selector")}
		}
		s, err := cascadia.Compile(sel)
		if err != nil {
			return nil, &RuleError{field, fmt.Errorf("%q: %w", sel, err)}
		}
		r.ignore = append(r.ignore, s)
	}
	alts := make([]string, 0, len(ignore.Patterns))
	for i, p := range ignore.Patterns {
		field := fmt.Sprintf("ignore.patterns[%d]", i)
		if p == "" {
			return nil, &RuleError{field, errors.New("empty pattern")}
		}
		if _, err := regexp.Compile(p); err != nil {
			return nil, &RuleError{field, fmt.Errorf("%q: %w", p, err)}
		}
		alts = append(alts, "(?:"+p+")")
	}
	if len(alts) > 0 {
		// One alternation scans each line once however many patterns
		// there are; flags such as (?i) stay scoped to their own group.
		re, err := regexp.Compile(strings.Join(alts, "|"))
		if err != nil {
			return nil, &RuleError{"ignore.patterns", fmt.Errorf("%q together: %w", ignore.Patterns, err)}
		}
		r.blankRE = re
	}
	if m := ignore.MinChange; m < 0 || math.IsNaN(m) || math.IsInf(m, 0) {
		return nil, &RuleError{"ignore.min_change", fmt.Errorf("%v: want a finite number >= 0", m)}
	}
	r.minChange = ignore.MinChange
	return r, nil
}

// MinChange is the threshold Significant should be called with.
func (r *Rules) MinChange() float64 { return r.minChange }

// extractText returns the normalised text of interest in body, which fetch has
// already converted to UTF-8.
//
//   - HTML: the text of the selector's matches, each on its own line(s), or
//     without a selector the visible text of the page; scripts, styles and
//     other non-content elements and the ignore selectors' matches are
//     dropped, block elements become line breaks.
//   - Text: the body itself; JSON is re-encoded with sorted keys, one value
//     per line, so key order and formatting are not changes. Selectors do
//     not apply.
//   - Binary: "" — binaries are compared by hashBytes of the raw body.
//
// In every case whitespace is then normalised — runs of blanks collapse to
// one space, lines are trimmed, empty lines dropped — and the ignore
// patterns are blanked out, each line on its own (see blank). The result is
// valid UTF-8.
func (r *Rules) extractText(body []byte, class fetch.Class) (text string, err error) {
	defer func() {
		// Last-resort guard: the parsers are fuzzed, but a worker must turn
		// an unforeseen input into a failed task, not a crash.
		if p := recover(); p != nil {
			text, err = "", fmt.Errorf("extract: internal error on %d-byte body: %v", len(body), p)
		}
	}()
	switch class {
	case fetch.HTML:
		text, err = r.htmlText(body)
		if err != nil {
			return "", err
		}
	case fetch.Text:
		text = normalize(canonicalText(body))
	default:
		return "", nil
	}
	if r.blankRE != nil {
		text = normalize(r.blank(text))
	}
	return text, nil
}

// htmlText renders the text of interest of an HTML body, normalised.
func (r *Rules) htmlText(body []byte) (string, error) {
	if r.streams() {
		if buf, ok := streamText(body, nil); ok {
			return normalize(buf), nil
		}
	}
	raw, err := r.domText(body)
	if err != nil {
		return "", err
	}
	return normalize(raw), nil
}

// streams reports whether the rules' text can be read off the token
// stream (no selector, no ignore selectors).
func (r *Rules) streams() bool { return r.selector == nil && len(r.ignore) == 0 }

// domText parses body into a tree and renders the text of interest with
// line breaks at block boundaries (not yet normalised): the
// path for selectors, ignore selectors and the documents streamText does
// not follow.
func (r *Rules) domText(body []byte) (string, error) {
	root, err := html.Parse(bytes.NewReader(body))
	if err != nil {
		// x/net/html refuses documents nested deeper than 512 open
		// elements (broken pages with thousands of unclosed divs do
		// this). Without a selector or ignore selectors to honour, the
		// visible text can still be read off the token stream, so such a
		// page is tracked rather than failing on every fetch.
		if r.selector == nil && len(r.ignore) == 0 {
			return tokenText(body), nil
		}
		return "", fmt.Errorf("extract: parse html: %w", err)
	}
	if len(r.ignore) > 0 {
		goquery.NewDocumentFromNode(root).FindMatcher(anyOf(r.ignore)).Remove()
	}
	var buf []byte
	if r.selector == nil {
		buf = appendText(buf, root)
		return string(buf), nil
	}
	matches := goquery.NewDocumentFromNode(root).FindMatcher(r.selector).Nodes
	if len(matches) == 0 {
		return "", fmt.Errorf("extract: selector %q: %w", r.selectorText, errNoMatch)
	}
	picked := make(map[*html.Node]bool, len(matches))
	for _, n := range matches {
		picked[n] = true
	}
	for _, n := range matches {
		if hasPickedAncestor(n, picked) {
			continue // its text is already in via the ancestor
		}
		buf = appendMatch(buf, n)
		buf = append(buf, '\n')
	}
	return string(buf), nil
}

// anyOf matches a node matched by any of ms, so all ignore selectors are
// applied in one walk of the document.
type anyOf []cascadia.Selector

func (a anyOf) Match(n *html.Node) bool {
	for _, s := range a {
		if s(n) {
			return true
		}
	}
	return false
}

// MatchAll returns the nodes under and including n that match.
func (a anyOf) MatchAll(n *html.Node) []*html.Node {
	return cascadia.Selector(a.Match).MatchAll(n)
}

// Filter returns the nodes in ns that match.
func (a anyOf) Filter(ns []*html.Node) []*html.Node { return cascadia.Filter(ns, a) }

func hasPickedAncestor(n *html.Node, picked map[*html.Node]bool) bool {
	for p := n.Parent; p != nil; p = p.Parent {
		if picked[p] {
			return true
		}
	}
	return false
}

// appendMatch renders a selected element. An element picked on purpose is
// rendered even if it is of a kind dropped from visible text: a selector for
// script[type="application/ld+json"] gets the JSON, and one for
// meta[property="product:price:amount"] gets its content attribute.
func appendMatch(buf []byte, n *html.Node) []byte {
	if n.Type == html.ElementNode {
		switch n.DataAtom {
		case atom.Meta:
			return append(buf, attr(n, "content")...)
		case atom.Script, atom.Style, atom.Noscript, atom.Template, atom.Textarea, atom.Title:
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				if c.Type == html.TextNode {
					buf = append(buf, c.Data...)
				}
			}
			return buf
		}
	}
	return appendText(buf, n)
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			return a.Val
		}
	}
	return ""
}

// dropped reports elements whose content is not visible text: code, styles,
// fallbacks for disabled scripting, inert templates, embedded objects, the
// head (its title is the tab's label, not the page's content), and elements
// marked hidden.
func dropped(n *html.Node) bool {
	switch n.DataAtom {
	case atom.Script, atom.Style, atom.Noscript, atom.Template, atom.Head,
		atom.Iframe, atom.Object, atom.Embed, atom.Canvas, atom.Svg, atom.Math:
		return true
	}
	if n.Data == "svg" || n.Data == "math" {
		return true
	}
	for _, a := range n.Attr {
		if a.Key == "hidden" && a.Namespace == "" {
			return true
		}
	}
	return false
}

// blockAtoms are elements rendered as their own line(s), so that a change in
// one paragraph, list item or table row is one changed line in a diff.
var blockAtoms = map[atom.Atom]bool{
	atom.Address: true, atom.Article: true, atom.Aside: true, atom.Blockquote: true,
	atom.Body: true, atom.Caption: true, atom.Center: true, atom.Dd: true,
	atom.Details: true, atom.Dialog: true, atom.Dir: true, atom.Div: true,
	atom.Dl: true, atom.Dt: true, atom.Fieldset: true, atom.Figcaption: true,
	atom.Figure: true, atom.Footer: true, atom.Form: true, atom.Frameset: true,
	atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true, atom.H5: true,
	atom.H6: true, atom.Header: true, atom.Hgroup: true, atom.Hr: true,
	atom.Html: true, atom.Legend: true, atom.Li: true, atom.Listing: true,
	atom.Main: true, atom.Menu: true, atom.Nav: true, atom.Ol: true,
	atom.Optgroup: true, atom.Option: true, atom.P: true, atom.Pre: true,
	atom.Section: true, atom.Summary: true, atom.Table: true, atom.Tbody: true,
	atom.Tfoot: true, atom.Thead: true, atom.Tr: true,
	atom.Ul: true, atom.Xmp: true, atom.Plaintext: true,
}

// appendText renders the visible text under root. It walks with an
// explicit stack: parsed HTML can be nested arbitrarily deep, and a
// recursive walk would let a page choose the worker's stack size.
func appendText(buf []byte, root *html.Node) []byte {
	type frame struct {
		n    *html.Node
		exit bool
	}
	stack := []frame{{n: root}}
	pre := 0 // depth of <pre>-like elements, where newlines are kept
	for len(stack) > 0 {
		f := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n := f.n
		if f.exit {
			switch {
			case blockAtoms[n.DataAtom]:
				buf = append(buf, '\n')
			case n.DataAtom == atom.Td || n.DataAtom == atom.Th:
				buf = append(buf, ' ')
			}
			if preserves(n) {
				pre--
			}
			continue
		}
		switch n.Type {
		case html.TextNode:
			if pre > 0 {
				buf = append(buf, n.Data...)
			} else {
				buf = appendCollapsed(buf, n.Data)
			}
			continue
		case html.ElementNode:
			if n != root && dropped(n) {
				continue
			}
			switch {
			case n.DataAtom == atom.Br:
				buf = append(buf, '\n')
				continue
			case blockAtoms[n.DataAtom]:
				buf = append(buf, '\n')
			case n.DataAtom == atom.Td || n.DataAtom == atom.Th:
				buf = append(buf, ' ')
			}
			if preserves(n) {
				pre++
			}
			stack = append(stack, frame{n: n, exit: true})
		case html.DocumentNode:
		default:
			continue // comments, doctypes
		}
		// Push children last-first so they pop in document order.
		for c := n.LastChild; c != nil; c = c.PrevSibling {
			stack = append(stack, frame{n: c})
		}
	}
	return buf
}

// tokenText renders visible text from the token stream alone, for
// documents the tree builder refuses. It honours the same block and
// dropped-element rules as appendText as far as a flat stream allows.
func tokenText(body []byte) string {
	z := html.NewTokenizer(bytes.NewReader(body))
	var buf []byte
	skip, pre := 0, 0
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			return string(buf)
		case html.TextToken:
			switch {
			case skip > 0:
			case pre > 0:
				buf = append(buf, z.Text()...)
			default:
				buf = appendCollapsed(buf, string(z.Text()))
			}
		case html.StartTagToken, html.EndTagToken, html.SelfClosingTagToken:
			name, _ := z.TagName()
			a := atom.Lookup(name)
			switch a {
			case atom.Script, atom.Style, atom.Noscript, atom.Template, atom.Title, atom.Svg, atom.Math:
				switch tt {
				case html.StartTagToken:
					skip++
				case html.EndTagToken:
					skip = max(skip-1, 0)
				}
			case atom.Pre, atom.Textarea, atom.Listing, atom.Xmp:
				switch tt {
				case html.StartTagToken:
					pre++
				case html.EndTagToken:
					pre = max(pre-1, 0)
				}
			}
			switch {
			case a == atom.Br || blockAtoms[a]:
				buf = append(buf, '\n')
			case a == atom.Td || a == atom.Th:
				buf = append(buf, ' ')
			}
		}
	}
}

func preserves(n *html.Node) bool {
	return n.Type == html.ElementNode &&
		(n.DataAtom == atom.Pre || n.DataAtom == atom.Textarea || n.DataAtom == atom.Listing || n.DataAtom == atom.Xmp)
}

// appendCollapsed appends s with every whitespace character, newlines
// included, turned into a space: outside <pre>, source line breaks are
// layout of the HTML file, not of the page.
func appendCollapsed[T string | []byte](buf []byte, s T) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\n', '\r', '\t', '\f', '\v':
			buf = append(buf, ' ')
		default:
			buf = append(buf, c)
		}
	}
	return buf
}

// canonicalText returns a text body as a string, re-encoding JSON
// canonically (sorted keys, one value per line) so that a server that
// serialises maps in random order does not produce a change on every fetch.
// Anything that is not a single valid JSON object or array is kept as is.
func canonicalText(body []byte) string {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') && json.Valid(trimmed) {
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		dec.UseNumber() // keep numbers exactly as sent
		var v any
		if err := dec.Decode(&v); err == nil {
			var out bytes.Buffer
			enc := json.NewEncoder(&out)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "  ")
			if err := enc.Encode(v); err == nil {
				return out.String()
			}
		}
	}
	return string(body)
}

// normalize collapses runs of blanks (any Unicode space, plus invisible
// zero-width and soft-hyphen characters and control characters) to one
// space, trims every line, drops empty lines and joins them with "\n".
// Invalid UTF-8 becomes U+FFFD, so the result survives a JSON round trip
// byte for byte and hashes the same on both sides of the wire.
//
// It runs on every fetched page, so runs of printable ASCII — nearly all
// of most pages — are copied whole rather than rune by rune.
func normalize[T string | []byte](s T) string {
	b := appendNormalized(make([]byte, 0, len(s)), s)
	// b is not written again: the string shares its bytes, as
	// strings.Builder's does, rather than copying the whole page's text.
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// appendNormalized appends normalize(s) to dst.
func appendNormalized[T string | []byte](dst []byte, s T) []byte {
	start := len(dst)
	space, lineStarted := false, false
	for i := 0; i < len(s); {
		if c := s[i]; c > 0x20 && c < 0x7f {
			// A run of printable ASCII, with the single spaces between its
			// words: they stay as they are, so a line of prose is one copy.
			j := i + 1
			for j < len(s) {
				if c := s[j]; c > 0x20 && c < 0x7f {
					j++
				} else if c == ' ' && j+1 < len(s) && s[j+1] > 0x20 && s[j+1] < 0x7f {
					j += 2
				} else {
					break
				}
			}
			if space && lineStarted {
				dst = append(dst, ' ')
			}
			dst = append(dst, s[i:j]...)
			space, lineStarted = false, true
			i = j
			continue
		}
		c, size := rune(s[i]), 1
		if c >= utf8.RuneSelf {
			c, size = utf8.DecodeRuneInString(string(s[i:min(i+utf8.UTFMax, len(s))]))
		}
		i += size
		switch {
		case c == '\n' || c == '\r' || c == '\v' || c == '\f' || c == '\u2028' || c == '\u2029' || c == '\u0085':
			if lineStarted {
				dst = append(dst, '\n')
			}
			space, lineStarted = false, false
			continue
		case c == ' ' || c == '\t':
			space = true
			continue
		case c == '\u200b' || c == '\ufeff' || c == '\u00ad' || c == '\u2060':
			continue // invisible: not even a word break
		case unicode.IsSpace(c) || unicode.IsControl(c):
			space = true
			continue
		}
		if space && lineStarted {
			dst = append(dst, ' ')
		}
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, "\uFFFD"...) // an invalid byte
		} else {
			dst = append(dst, s[i-size:i]...)
		}
		space, lineStarted = false, true
	}
	if len(dst) > start && dst[len(dst)-1] == '\n' {
		dst = dst[:len(dst)-1]
	}
	return dst
}

// blank removes every match of the ignore patterns. Patterns are matched
// line by line: a line is one block of the page, so "^" and "$" mean its
// start and end, no match swallows a line break, and short inputs let the
// regexp package use its faster backtracking matcher.
func (r *Rules) blank(text string) string {
	var b strings.Builder
	b.Grow(len(text))
	for line := range strings.SplitSeq(text, "\n") {
		if r.blankRE.MatchString(line) {
			line = r.blankRE.ReplaceAllLiteralString(line, "")
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// hashText is the hex SHA-256 of an extracted text: the version identity the
// coordinator compares to decide whether a page changed.
func hashText(text string) string {
	// Fed through a small buffer rather than as []byte(text): that
	// conversion would copy the whole text of every fetched page.
	h := sha256.New()
	var chunk [1024]byte
	for len(text) > 0 {
		n := copy(chunk[:], text)
		h.Write(chunk[:n])
		text = text[n:]
	}
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0]))
}

// hashBytes is the hex SHA-256 of a raw body, for Binary content which is
// compared by hash only.
func hashBytes(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
