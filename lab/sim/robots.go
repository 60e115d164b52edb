package sim

import (
	"strings"
)

// robotsRules is a parsed robots.txt, used to flag requests a polite crawler
// should never have made. It follows RFC 9309: groups keyed by user-agent
// product tokens, the group matching the crawler's token (else "*") applies,
// the longest matching rule wins and Allow wins a tie; "*" and a trailing
// "$" are supported in patterns.
type robotsRules struct {
	groups map[string][]robotsRule // lower-case agent token → rules
}

type robotsRule struct {
	allow   bool
	pattern string
}

func parseRobots(body string) robotsRules {
	rr := robotsRules{groups: make(map[string][]robotsRule)}
	var agents []string
	inRules := false // a rule line ends the user-agent list of a group
	for line := range strings.Lines(body) {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		key = strings.ToLower(strings.TrimSpace(key))
		val = strings.TrimSpace(val)
		switch key {
		case "user-agent":
			if inRules {
				agents, inRules = nil, false
			}
			agents = append(agents, strings.ToLower(val))
		case "allow", "disallow":
			inRules = true
			if val == "" { // "Disallow:" with no path allows everything
				continue
			}
			for _, a := range agents {
				rr.groups[a] = append(rr.groups[a], robotsRule{allow: key == "allow", pattern: val})
			}
		}
	}
	return rr
}

// disallowed reports whether robots.txt forbids userAgent to fetch path.
func (rr robotsRules) disallowed(userAgent, path string) bool {
	if path == "/robots.txt" {
		return false
	}
	rules, ok := rr.groups[productToken(userAgent)]
	if !ok {
		rules = rr.groups["*"]
	}
	best, allow := -1, true
	for _, r := range rules {
		if !robotsMatch(r.pattern, path) {
			continue
		}
		n := len(r.pattern)
		if n > best || (n == best && r.allow) {
			best, allow = n, r.allow
		}
	}
	return !allow
}

// productToken is the lower-case first token of a User-Agent header, e.g.
// "freshcrawl" for "freshcrawl/1.0 (+https://example.org)".
func productToken(ua string) string {
	ua = strings.TrimSpace(ua)
	if i := strings.IndexAny(ua, "/ "); i >= 0 {
		ua = ua[:i]
	}
	return strings.ToLower(ua)
}

// robotsMatch matches path against a robots.txt pattern: a prefix match in
// which "*" matches any run of characters and a trailing "$" anchors the end.
func robotsMatch(pattern, path string) bool {
	anchored := strings.HasSuffix(pattern, "$")
	if anchored {
		pattern = pattern[:len(pattern)-1]
	}
	parts := strings.Split(pattern, "*")
	if !strings.HasPrefix(path, parts[0]) {
		return false
	}
	rest := path[len(parts[0]):]
	if len(parts) == 1 {
		return !anchored || rest == ""
	}
	for i, p := range parts[1:] {
		last := i == len(parts)-2
		if last && anchored {
			return strings.HasSuffix(rest, p)
		}
		j := strings.Index(rest, p)
		if j < 0 {
			return false
		}
		rest = rest[j+len(p):]
	}
	return true
}
