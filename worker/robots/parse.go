package robots

import (
	"bytes"
	"math"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// maxBodySize is how much of a robots.txt file is parsed. RFC 9309 §2.5
// requires crawlers to parse at least 500 KiB; content beyond this limit is
// ignored, and so is a line the limit cuts in two, because a truncated
// pattern would apply to paths its author never meant.
const maxBodySize = 512 << 10

// MaxCrawlDelay caps a Crawl-delay value. The field is not part of RFC 9309;
// the cap keeps absurd values (or ones that would overflow a time.Duration)
// from stalling a host forever.
const MaxCrawlDelay = 24 * time.Hour

// robotsFile is a parsed robots.txt file. The zero value allows everything.
// A robotsFile is immutable and safe for concurrent use.
type robotsFile struct {
	groups   []group
	sitemaps []string
}

// group is one group as written in the file.
type group struct {
	agents        []string // lower-case product tokens; "*" for the global group
	rules         []robotsRule
	crawlDelay    time.Duration
	hasCrawlDelay bool
}

// robotsRule is one allow or disallow line of a group.
type robotsRule struct {
	Allow   bool
	Pattern string // the value as written in the file
	Line    int    // 1-based line number in the file

	pat         pattern
	specificity int
}

// String returns the rule as a robots.txt line, for logs and Decision.Reason.
func (r robotsRule) String() string {
	field := "disallow"
	if r.Allow {
		field = "allow"
	}
	return field + ": " + r.Pattern + " (line " + strconv.Itoa(r.Line) + ")"
}

// ruleSet is the combined set of rules that applies to one crawler: every
// group of the file that names it, or every "*" group (RFC 9309 §2.2.1).
// The zero value allows everything. A ruleSet is safe for concurrent use.
type ruleSet struct {
	rules         []robotsRule // most specific first; allow before disallow on ties
	crawlDelay    time.Duration
	hasCrawlDelay bool
}

// parse parses a robots.txt body. It never fails: RFC 9309 §2.3.1.5 asks
// crawlers to use whatever rules they can parse, so malformed lines are
// skipped. Only the first MaxBodySize octets are read.
func parse(body []byte) *robotsFile {
	s := strings.TrimPrefix(string(limitBody(body)), "\ufeff")

	r := &robotsFile{}
	var cur *group    // group receiving rules; nil before the first user-agent line
	inAgents := false // the previous member line was a user-agent line
	for lineNo := 1; len(s) > 0; lineNo++ {
		var line string
		line, s = nextLine(s)
		key, value, ok := splitLine(line)
		if !ok {
			continue
		}
		switch canonicalKey(key) {
		case "user-agent":
			if cur == nil || !inAgents {
				r.groups = append(r.groups, group{})
				cur = &r.groups[len(r.groups)-1]
			}
			inAgents = true
			if tok := agentToken(value); tok != "" {
				cur.agents = append(cur.agents, tok)
			}
		case "allow", "disallow":
			if cur == nil {
				continue // §2.2 grammar: rules follow a user-agent line
			}
			inAgents = false
			pat, spec, ok := compilePattern(value)
			if !ok {
				continue // includes the empty "Disallow:", which allows all
			}
			cur.rules = append(cur.rules, robotsRule{
				Allow:       canonicalKey(key) == "allow",
				Pattern:     value,
				Line:        lineNo,
				pat:         pat,
				specificity: spec,
			})
		case "crawl-delay":
			if cur == nil {
				continue
			}
			inAgents = false
			if d, ok := parseDelay(value); ok && !cur.hasCrawlDelay {
				cur.crawlDelay, cur.hasCrawlDelay = d, true
			}
		case "sitemap":
			// §2.2.4: sitemaps are not tied to a group.
			if value != "" {
				r.sitemaps = append(r.sitemaps, value)
			}
		}
	}
	return r
}

// sitemapURLs returns the values of the file's sitemap lines, in order.
func (r *robotsFile) sitemapURLs() []string {
	return append([]string(nil), r.sitemaps...)
}

// ruleSet returns the rules that apply to a crawler with the given product
// token (see tokenOf), following RFC 9309 §2.2.1: the groups naming the
// token, compared case-insensitively, combined; failing that the "*" groups
// combined; failing that no rules at all. When several combined groups carry a
// crawl-delay, the largest applies, the polite reading.
func (r *robotsFile) forAgent(productToken string) ruleSet {
	tok := strings.ToLower(productToken)
	g := r.combine(func(a string) bool { return a == tok && a != "*" })
	if g == nil {
		g = r.combine(func(a string) bool { return a == "*" })
	}
	if g == nil {
		return ruleSet{}
	}
	sort.SliceStable(g.rules, func(i, j int) bool {
		a, b := g.rules[i], g.rules[j]
		if a.specificity != b.specificity {
			return a.specificity > b.specificity
		}
		return a.Allow && !b.Allow
	})
	return *g
}

// combine merges every group with an agent satisfying want; nil if none.
func (r *robotsFile) combine(want func(agent string) bool) *ruleSet {
	var out *ruleSet
	for i := range r.groups {
		gr := &r.groups[i]
		matched := false
		for _, a := range gr.agents {
			if want(a) {
				matched = true
				break
			}
		}
		if !matched {
			continue
		}
		if out == nil {
			out = &ruleSet{}
		}
		out.rules = append(out.rules, gr.rules...)
		if gr.hasCrawlDelay && (!out.hasCrawlDelay || gr.crawlDelay > out.crawlDelay) {
			out.crawlDelay, out.hasCrawlDelay = gr.crawlDelay, true
		}
	}
	return out
}

// allowed reports whether a crawler with the given product token may fetch
// pathQuery (see ruleSet.allowed).
func (r *robotsFile) allowed(productToken, pathQuery string) bool {
	g := r.forAgent(productToken)
	return g.allowed(pathQuery)
}

// delay returns the group's crawl-delay and whether it set one.
func (g ruleSet) delay() (time.Duration, bool) {
	return g.crawlDelay, g.hasCrawlDelay
}

// ruleList returns the group's rules in precedence order.
func (g ruleSet) ruleList() []robotsRule {
	return append([]robotsRule(nil), g.rules...)
}

// allowed reports whether the group allows pathQuery: the URL's path, plus
// "?" and the query if there is one, in the form it has in the request line
// (for a *url.URL, see pathAndQuery). The empty string stands for "/".
func (g ruleSet) allowed(pathQuery string) bool {
	allowed, _, _ := g.match(pathQuery)
	return allowed
}

// match is Allowed that also returns the deciding rule, if any rule matched.
// "/robots.txt" is always allowed (RFC 9309 §2.2.2) and matches no rule.
func (g ruleSet) match(pathQuery string) (allowed bool, rule robotsRule, matched bool) {
	if pathQuery == "" {
		pathQuery = "/"
	}
	p := normalize(pathQuery)
	if p == "/robots.txt" {
		return true, robotsRule{}, false
	}
	// Rules are sorted by precedence, so the first match decides (§2.2.2).
	for _, r := range g.rules {
		if r.pat.match(p) {
			return r.Allow, r, true
		}
	}
	return true, robotsRule{}, false
}

// pathAndQuery returns the part of u that robots.txt rules are matched against:
// the escaped path (or "/") plus "?" and the raw query if present.
func pathAndQuery(u *url.URL) string {
	p := u.EscapedPath()
	if p == "" {
		p = "/"
	}
	if u.RawQuery != "" || u.ForceQuery {
		p += "?" + u.RawQuery
	}
	return p
}

// tokenOf returns the product token of a User-Agent header value: its
// leading run of letters, '-' and '_' (RFC 9309 §2.2.1, which requires the
// token to consist of these characters). "freshcrawl/1.0 (+https://x)"
// yields "freshcrawl".
func tokenOf(userAgent string) string {
	s := strings.TrimLeft(userAgent, " \t")
	i := 0
	for i < len(s) && isTokenChar(s[i]) {
		i++
	}
	return s[:i]
}

// agentToken extracts the product token named by a user-agent line value,
// lower-cased for case-insensitive comparison, or "*" for the global group.
// Only the leading identifier characters count, so "FooBot/1.2" names
// "foobot"; a value with no such characters names nothing.
func agentToken(v string) string {
	if v == "*" || strings.HasPrefix(v, "* ") || strings.HasPrefix(v, "*\t") {
		return "*"
	}
	return strings.ToLower(tokenOf(v))
}

func isTokenChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '-' || c == '_'
}

// nextLine splits off the first line of s, accepting LF, CR and CRLF.
func nextLine(s string) (line, rest string) {
	i := strings.IndexAny(s, "\r\n")
	if i < 0 {
		return s, ""
	}
	line, rest = s[:i], s[i+1:]
	if s[i] == '\r' && strings.HasPrefix(rest, "\n") {
		rest = rest[1:]
	}
	return line, rest
}

// limitBody returns the part of a robots.txt body that is parsed: at most
// MaxBodySize octets, without the line cut by that limit. It is idempotent,
// so a body can be limited before it is stored and parsed later.
func limitBody(b []byte) []byte {
	if len(b) <= maxBodySize {
		return b
	}
	if c := b[maxBodySize]; c == '\n' || c == '\r' {
		return b[:maxBodySize] // the limit falls on a line end
	}
	b = b[:maxBodySize]
	if i := bytes.LastIndexAny(b, "\r\n"); i >= 0 {
		return b[:i+1]
	}
	return nil
}

// splitLine strips the comment and splits a line into field name and value.
// A missing colon is tolerated when the line is exactly "name value".
func splitLine(line string) (key, value string, ok bool) {
	if i := strings.IndexByte(line, '#'); i >= 0 {
		line = line[:i]
	}
	line = strings.TrimSpace(line)
	if line == "" {
		return "", "", false
	}
	if i := strings.IndexByte(line, ':'); i >= 0 {
		return strings.TrimSpace(line[:i]), strings.TrimSpace(line[i+1:]), true
	}
	i := strings.IndexAny(line, " \t")
	if i < 0 {
		return "", "", false
	}
	key, value = line[:i], strings.TrimSpace(line[i:])
	if strings.ContainsAny(value, " \t") {
		return "", "", false
	}
	return key, value, true
}

// canonicalKey maps a field name, in any case and with the misspellings seen
// in the wild, to its canonical lower-case form; unknown names map to "".
func canonicalKey(k string) string {
	switch strings.ToLower(k) {
	case "user-agent", "useragent", "user_agent":
		return "user-agent"
	case "allow":
		return "allow"
	case "disallow", "dissallow", "dissalow", "disalow", "diasllow", "disallaw":
		return "disallow"
	case "crawl-delay", "crawldelay", "crawl_delay":
		return "crawl-delay"
	case "sitemap", "site-map":
		return "sitemap"
	}
	return ""
}

// parseDelay parses a crawl-delay in seconds, possibly fractional.
func parseDelay(v string) (time.Duration, bool) {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || f < 0 {
		return 0, false
	}
	if f >= MaxCrawlDelay.Seconds() {
		return MaxCrawlDelay, true
	}
	return time.Duration(f * float64(time.Second)), true
}
