package fetch

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/charset"
	"golang.org/x/text/encoding"
)

// metaScanLimit bounds the bytes of an HTML page searched for a <meta>
// charset. The WHATWG prescan reads 1 024 bytes, but a browser honours a
// later <meta> in the head too (the parser's "change the encoding"):
// Chromium reads the whole head, which pages with long inline scripts or
// styles push past 1 024 bytes.
const metaScanLimit = 64 << 10

// prescanLimit is where the WHATWG prescan stops; up to it a <meta>
// counts wherever it is.
const prescanLimit = 1024

// htmlEncoding picks the encoding of an HTML body as a browser does: a
// BOM, then the Content-Type charset, then a <meta> charset in the first
// 1 024 bytes or later in the head, then UTF-8 if the whole body is valid
// UTF-8, else windows-1252. name is the encoding's WHATWG name.
func htmlEncoding(body []byte, contentType string) (e encoding.Encoding, name string) {
	if e, name, certain := charset.DetermineEncoding(body, contentType); certain {
		return e, name
	}
	if e, name := metaCharset(body); e != nil {
		return e, name
	}
	if validUTF8Prefix(body) {
		return encoding.Nop, "utf-8"
	}
	return charset.Lookup("windows-1252")
}

// metaCharset returns the encoding a <meta charset> or <meta
// http-equiv="content-type" content="…charset=…"> declares, searched in
// the first metaScanLimit bytes: anywhere in the first prescanLimit bytes,
// then up to the end of the head (the first tag of body content or
// </head>).
func metaCharset(body []byte) (encoding.Encoding, string) {
	z := html.NewTokenizer(bytes.NewReader(body[:min(len(body), metaScanLimit)]))
	read := 0
	leftHead := false
	for {
		tt := z.Next()
		if leftHead && read > prescanLimit {
			return nil, ""
		}
		read += len(z.Raw())
		switch tt {
		case html.ErrorToken:
			return nil, ""
		case html.EndTagToken:
			if name, _ := z.TagName(); string(name) == "head" {
				leftHead = true
			}
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			if string(name) != "meta" {
				leftHead = leftHead || !inHead(string(name))
				continue
			}
			if e, name := metaDeclares(z, hasAttr); e != nil {
				return e, name
			}
		}
	}
}

// inHead reports whether a start tag belongs in a document's head, so
// that a <meta> after it is still the head's.
func inHead(tag string) bool {
	switch tag {
	case "html", "head", "title", "base", "link", "meta", "style", "script", "noscript", "template":
		return true
	}
	return false
}

// metaDeclares reads the attributes of a <meta> as the WHATWG prescan
// does: charset, or http-equiv="content-type" with a content naming one.
func metaDeclares(z *html.Tokenizer, hasAttr bool) (encoding.Encoding, string) {
	var cs, content string
	var pragma, seenCharset, seenContent bool
	for hasAttr {
		var k, v []byte
		k, v, hasAttr = z.TagAttr()
		switch string(k) {
		case "charset":
			if !seenCharset {
				cs, seenCharset = string(v), true
			}
		case "content":
			if !seenContent {
				content, seenContent = string(v), true
			}
		case "http-equiv":
			pragma = pragma || strings.EqualFold(string(v), "content-type")
		}
	}
	if !seenCharset {
		if !pragma {
			return nil, ""
		}
		cs = charsetInContent(content)
	}
	e, name := charset.Lookup(cs)
	if e == nil {
		return nil, ""
	}
	// A page cannot be UTF-16 and declare so in ASCII: the standard reads
	// the declaration as UTF-8.
	if strings.HasPrefix(name, "utf-16") {
		return encoding.Nop, "utf-8"
	}
	return e, name
}

// charsetInContent is the WHATWG "extracting a character encoding from a
// meta element" on a content attribute.
func charsetInContent(s string) string {
	for {
		i := strings.Index(strings.ToLower(s), "charset")
		if i < 0 {
			return ""
		}
		s = strings.TrimLeft(s[i+len("charset"):], " \t\n\f\r")
		if !strings.HasPrefix(s, "=") {
			continue
		}
		s = strings.TrimLeft(s[1:], " \t\n\f\r")
		if s == "" {
			return ""
		}
		if q := s[0]; q == '"' || q == '\'' {
			end := strings.IndexByte(s[1:], q)
			if end < 0 {
				return ""
			}
			return s[1 : 1+end]
		}
		if end := strings.IndexAny(s, " \t\n\f\r;"); end >= 0 {
			return s[:end]
		}
		return s
	}
}

// validUTF8Prefix reports whether body is valid UTF-8 but for a rune cut
// short at its end, as a body truncated at the size limit may be.
func validUTF8Prefix(body []byte) bool {
	for i := len(body) - 1; i >= 0 && i >= len(body)-utf8.UTFMax; i-- {
		if utf8.RuneStart(body[i]) {
			if !utf8.FullRune(body[i:]) {
				body = body[:i]
			}
			break
		}
	}
	return utf8.Valid(body)
}
