package worker

import (
	"bytes"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/freshcrawl/freshcrawl/worker/fetch"
)

// archiveForbidden reports whether a page forbids keeping its text, for
// the crawler whose robots.txt product token is token: an X-Robots-Tag
// header (tags, as sent) or, in an HTML page, a <meta name="robots"> or
// <meta name="TOKEN"> element says noarchive, noindex or none.
//
// noarchive asks search engines to show no cached copy, which is what a
// stored text served by the API would be. noindex and none go further
// (keep the page out of any index), and a kept copy, searchable through
// the console, is an index in all but name: so they count too. The hash
// is not a copy, so the page's changes are still tracked.
func archiveForbidden(tags []string, body []byte, class fetch.Class, token string) bool {
	for _, v := range tags {
		if headerForbids(v, token) {
			return true
		}
	}
	return class == fetch.HTML && metaForbids(body, token)
}

// forbidding reports whether a robots directive forbids a kept copy.
func forbidding(directive string) bool {
	switch strings.ToLower(strings.TrimSpace(directive)) {
	case "noarchive", "noindex", "none":
		return true
	}
	return false
}

// valueDirectives are the directives whose value follows a colon, which a
// header must not read as a user agent ("unavailable_after: 25 Jun 2030").
var valueDirectives = map[string]bool{"unavailable_after": true, "max-snippet": true, "max-image-preview": true, "max-video-preview": true}

// headerForbids reads one X-Robots-Tag value: comma-separated directives,
// each list optionally led by "agent:" naming the crawler it is for (the
// agent holds for the directives after it, up to the next agent). A
// directive with no agent is for every crawler; one for another agent is
// ignored.
func headerForbids(v, token string) bool {
	agent := ""
	for part := range strings.SplitSeq(v, ",") {
		part = strings.TrimSpace(part)
		if name, rest, ok := strings.Cut(part, ":"); ok && isToken(strings.TrimSpace(name)) && !valueDirectives[strings.ToLower(strings.TrimSpace(name))] {
			agent, part = strings.TrimSpace(name), rest
		}
		if (agent == "" || strings.EqualFold(agent, token)) && forbidding(part) {
			return true
		}
	}
	return false
}

// isToken reports whether s is a product token: letters, '-' and '_'
// (RFC 9309 §2.2.1), which no directive with a value is.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// metaForbids reads the robots <meta> elements of an HTML page's head:
// name="robots" for every crawler, name=TOKEN for this one. It stops at
// the first element that starts the body, so a page costs a read of its
// head, not of its whole body.
func metaForbids(body []byte, token string) bool {
	z := html.NewTokenizer(bytes.NewReader(body))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return false
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			switch atom.Lookup(name) {
			case atom.Meta:
				if hasAttr && metaTagForbids(z, token) {
					return true
				}
			case atom.Html, atom.Head, atom.Title, atom.Link, atom.Base, atom.Script, atom.Style, atom.Noscript, atom.Template:
			default:
				return false // the body has begun
			}
		}
	}
}

// metaTagForbids reads the attributes of a <meta> tag.
func metaTagForbids(z *html.Tokenizer, token string) bool {
	var name, content string
	for more := true; more; {
		var k, v []byte
		k, v, more = z.TagAttr()
		switch string(k) {
		case "name":
			name = strings.TrimSpace(string(v))
		case "content":
			content = string(v)
		}
	}
	if !strings.EqualFold(name, "robots") && !strings.EqualFold(name, token) {
		return false
	}
	for d := range strings.SplitSeq(content, ",") {
		if forbidding(d) {
			return true
		}
	}
	return false
}
