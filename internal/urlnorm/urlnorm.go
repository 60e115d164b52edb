// Package urlnorm puts http(s) URLs in the canonical form the crawler
// keys URLs and hosts by: the form a browser's URL parser (WHATWG URL) and
// crawler-commons give, so that two spellings of one address are one URL.
// It is a package of its own, on the standard library and x/net/idna alone,
// so that a package that only needs a URL's host (the scheduler naming a
// keyword-search source's host) does not link the seed parser, which
// validates selectors with an HTML parser.
package urlnorm

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// hostProfile is UTS #46 as the WHATWG URL standard applies it to hosts:
// non-transitional mapping, Bidi and ContextJ rules, but no STD3 rules and no
// hyphen checks, since host names such as "a_b.example" and
// "r3---sn-abc.example" are in everyday use.
var hostProfile = idna.New(
	idna.MapForLookup(),
	idna.BidiRule(),
	idna.Transitional(false),
	idna.StrictDomainName(false),
	idna.CheckHyphens(false),
)

// MaxLen is the longest canonical URL accepted. The store keys records by
// URL, and a bolt key can be no longer than 32 KiB; 8 KiB is above what
// browsers and servers commonly take, so no fetchable page is refused.
const MaxLen = 8 << 10

// Normalize returns the canonical form of an http(s) URL and its host name:
// scheme lower-cased; the host mapped and converted to punycode (IDNA,
// UTS #46), an IPv6 literal in its shortest form; the port in 1–65535,
// dropped when it is the scheme's default; in path and query, percent-escapes
// upper-cased, escaped unreserved characters decoded and characters a URL
// may not carry escaped; dot segments removed; an empty path made "/"; the
// fragment dropped. It refuses anything but absolute http and https URLs,
// and URLs longer than MaxLen.
func Normalize(raw string) (canonical, host string, err error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", "", errors.New("empty URL")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", "", fmt.Errorf("unparsable URL: %w", err)
	}
	u.Scheme = strings.ToLower(u.Scheme)
	if u.Scheme != "http" && u.Scheme != "https" {
		if u.Scheme == "" {
			return "", "", fmt.Errorf("URL %q has no scheme: want http:// or https://", raw)
		}
		return "", "", fmt.Errorf("URL %q: scheme %q is not http or https", raw, u.Scheme)
	}
	if u.Opaque != "" {
		return "", "", fmt.Errorf("URL %q is not hierarchical", raw)
	}
	if u.User != nil {
		return "", "", fmt.Errorf("URL %q carries credentials; put them nowhere near a seed list", raw)
	}
	host, err = normHost(u.Hostname())
	if err != nil {
		return "", "", fmt.Errorf("URL %q: %w", raw, err)
	}
	port, err := normPort(u.Scheme, u.Port())
	if err != nil {
		return "", "", fmt.Errorf("URL %q: %w", raw, err)
	}

	var b strings.Builder
	b.WriteString(u.Scheme)
	b.WriteString("://")
	if strings.Contains(host, ":") {
		b.WriteString("[" + host + "]")
	} else {
		b.WriteString(host)
	}
	if port != "" {
		b.WriteString(":" + port)
	}
	path := removeDotSegments(escape(u.EscapedPath(), false))
	if path == "" {
		path = "/"
	}
	b.WriteString(path)
	if u.ForceQuery || u.RawQuery != "" {
		b.WriteString("?")
		b.WriteString(escape(u.RawQuery, true))
	}
	if b.Len() > MaxLen {
		return "", "", fmt.Errorf("URL %.60q… is %d bytes, over the limit of %d", raw, b.Len(), MaxLen)
	}
	return b.String(), host, nil
}

// normHost returns the canonical form of a host name net/url has already
// percent-decoded, without its trailing dot.
func normHost(h string) (string, error) {
	if h == "" {
		return "", errors.New("no host")
	}
	if strings.Contains(h, ":") {
		a, err := netip.ParseAddr(h)
		if err != nil || !a.Is6() {
			return "", fmt.Errorf("host %q is not an IPv6 address", h)
		}
		if a.Zone() != "" {
			return "", fmt.Errorf("host %q: an IPv6 zone names an interface of one machine", h)
		}
		return a.String(), nil
	}
	if !utf8.ValidString(h) {
		return "", fmt.Errorf("host %q is not valid UTF-8", h)
	}
	a, err := hostProfile.ToASCII(h)
	if err != nil {
		return "", fmt.Errorf("host %q: %w", h, err)
	}
	a = strings.TrimRight(a, ".")
	if a == "" {
		return "", fmt.Errorf("host %q is empty", h)
	}
	if strings.HasPrefix(a, ".") || strings.Contains(a, "..") {
		return "", fmt.Errorf("host %q has an empty label", h)
	}
	// The WHATWG forbidden domain code points: UTS #46 without STD3 rules
	// lets them through, and each would change what the URL means.
	if i := strings.IndexFunc(a, func(r rune) bool {
		return r <= ' ' || r == 0x7f || strings.ContainsRune("#%/:<>?@[\\]^|", r)
	}); i >= 0 {
		return "", fmt.Errorf("host %q: character %q is not allowed in a host name", h, a[i])
	}
	return a, nil
}

// normPort returns the port without leading zeros, or "" for none or the
// scheme's default.
func normPort(scheme, p string) (string, error) {
	if p == "" {
		return "", nil
	}
	n, err := strconv.ParseUint(p, 10, 32)
	if err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("port %q: want 1–65535", p)
	}
	if (scheme == "http" && n == 80) || (scheme == "https" && n == 443) {
		return "", nil
	}
	return strconv.FormatUint(n, 10), nil
}

const upperhex = "0123456789ABCDEF"

// escape puts an escaped path or query in canonical form (RFC 3986 §6.2.2):
// a percent-escape of an unreserved character is decoded, the hex digits of
// every other escape upper-cased; a byte a URL may not carry literally (a
// space, a control, non-ASCII, a '%' that starts no escape) is escaped. The
// reserved characters keep their form, since "/" and "%2F" differ in meaning.
func escape(s string, query bool) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			d := unhex(s[i+1])<<4 | unhex(s[i+2])
			if unreserved(d) {
				b.WriteByte(d)
			} else {
				b.WriteByte('%')
				b.WriteByte(upperhex[d>>4])
				b.WriteByte(upperhex[d&15])
			}
			i += 2
			continue
		}
		if unreserved(c) || strings.IndexByte("!$&'()*+,;=:@/[]", c) >= 0 || (query && c == '?') {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(upperhex[c>>4])
		b.WriteByte(upperhex[c&15])
	}
	return b.String()
}

func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	default:
		return c - 'a' + 10
	}
}

// removeDotSegments is RFC 3986 §5.2.4 on an absolute path whose escapes of
// "." are already decoded.
func removeDotSegments(p string) string {
	if !strings.Contains(p, ".") {
		return p
	}
	segs := strings.Split(p, "/")[1:]
	out := make([]string, 0, len(segs))
	for i, s := range segs {
		last := i == len(segs)-1
		switch s {
		case ".":
			if last {
				out = append(out, "")
			}
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
			if last {
				out = append(out, "")
			}
		default:
			out = append(out, s)
		}
	}
	return "/" + strings.Join(out, "/")
}
