package robots

import (
	"strings"
)

// pattern is a compiled path pattern. segs are the literal pieces between
// '*' wildcards, already percent-normalised; anchored records a trailing '$'.
type pattern struct {
	segs     []string
	anchored bool
}

// compilePattern normalises and compiles a rule value (RFC 9309 §2.2.2,
// §2.2.3). It returns the pattern and its specificity: the length in octets
// of the normalised pattern, special characters included, which is what
// longest-match precedence compares. ok is false for values that can never
// match a path: the RFC grammar requires a pattern to start with "/", and
// "*" is accepted too because it is common and unambiguous.
func compilePattern(v string) (p pattern, specificity int, ok bool) {
	if v == "" || (v[0] != '/' && v[0] != '*') {
		return pattern{}, 0, false
	}
	if strings.HasSuffix(v, "$") {
		p.anchored = true
		v = v[:len(v)-1]
		specificity++
	}
	raw := strings.Split(v, "*")
	p.segs = make([]string, len(raw))
	for i, s := range raw {
		p.segs[i] = normalize(s)
		specificity += len(p.segs[i])
	}
	specificity += len(raw) - 1 // the '*' characters
	return p, specificity, true
}

// match reports whether p matches path, which must already be normalised.
//
// A robots.txt pattern is a prefix match, as if followed by '*', unless it
// ends in '$'. With only '*' as a metacharacter, matching each literal
// segment at its leftmost possible position is optimal: any later position
// leaves strictly less of the path for the remaining segments. So a single
// left-to-right pass with strings.Index suffices and there is no
// backtracking; the worst case is O(len(path) × len(pattern)).
func (p *pattern) match(path string) bool {
	first := p.segs[0]
	if len(p.segs) == 1 {
		if p.anchored {
			return path == first
		}
		return strings.HasPrefix(path, first)
	}
	if !strings.HasPrefix(path, first) {
		return false
	}
	pos := len(first)
	last := len(p.segs) - 1
	for _, s := range p.segs[1:last] {
		if s == "" {
			continue
		}
		i := strings.Index(path[pos:], s)
		if i < 0 {
			return false
		}
		pos += i + len(s)
	}
	tail := p.segs[last]
	if !p.anchored {
		return strings.Contains(path[pos:], tail)
	}
	// The tail must end the path without overlapping what the earlier
	// segments consumed.
	return len(path)-pos >= len(tail) && strings.HasSuffix(path, tail)
}

// normalize returns s in the canonical percent-encoded form shared by paths
// and patterns (RFC 9309 §2.2.2, RFC 3986 §6.2.2): escapes of unreserved
// characters are decoded, remaining escapes are upper-cased, a '%' that does
// not start an escape becomes "%25", and every octet that may not appear
// literally in a URL is escaped. '*' and '$' are escaped too, so that in a
// normalised path they are ordinary characters and in a pattern only the
// unescaped metacharacters (handled by compilePattern) are special.
func normalize(s string) string {
	if isCanonical(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			v := unhex(s[i+1])<<4 | unhex(s[i+2])
			if isUnreserved(v) {
				b.WriteByte(v)
			} else {
				writeEscape(&b, v)
			}
			i += 2
		case c == '%' || !isLiteral(c):
			writeEscape(&b, c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// isCanonical reports whether normalize(s) == s, letting the common case of
// an already clean path avoid an allocation.
func isCanonical(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '%' {
			if i+2 >= len(s) || !isUpperHex(s[i+1]) || !isUpperHex(s[i+2]) ||
				isUnreserved(unhex(s[i+1])<<4|unhex(s[i+2])) {
				return false
			}
			i += 2
			continue
		}
		if !isLiteral(c) {
			return false
		}
	}
	return true
}

func writeEscape(b *strings.Builder, c byte) {
	const hex = "0123456789ABCDEF"
	b.WriteByte('%')
	b.WriteByte(hex[c>>4])
	b.WriteByte(hex[c&15])
}

// isUnreserved reports RFC 3986 §2.3 unreserved characters, whose escaped
// and literal forms are equivalent.
func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

// isLiteral reports characters kept as they are in normalised form: the
// unreserved characters and the RFC 3986 reserved characters, whose escaped
// form has a different meaning and so must not be decoded. '*' and '$' are
// excluded; see normalize.
func isLiteral(c byte) bool {
	if isUnreserved(c) {
		return true
	}
	switch c {
	case ':', '/', '?', '#', '[', ']', '@', '!', '&', '\'', '(', ')', '+', ',', ';', '=':
		return true
	}
	return false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func isUpperHex(c byte) bool {
	return '0' <= c && c <= '9' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}
