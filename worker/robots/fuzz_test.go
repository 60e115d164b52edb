package robots

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// refMatch is a slow, obviously correct matcher for p: dynamic programming
// over (pattern position, path position), used as an oracle for the greedy
// matcher.
func refMatch(p pattern, path string) bool {
	type tok struct {
		star bool
		c    byte
	}
	var toks []tok
	for i, s := range p.segs {
		if i > 0 {
			toks = append(toks, tok{star: true})
		}
		for j := 0; j < len(s); j++ {
			toks = append(toks, tok{c: s[j]})
		}
	}
	if !p.anchored {
		toks = append(toks, tok{star: true}) // prefix match
	}
	// cur[j]: toks[:i] matches path[:j].
	cur := make([]bool, len(path)+1)
	cur[0] = true
	for _, t := range toks {
		next := make([]bool, len(path)+1)
		for j := 0; j <= len(path); j++ {
			if t.star {
				next[j] = cur[j] || (j > 0 && next[j-1])
			} else {
				next[j] = j > 0 && cur[j-1] && path[j-1] == t.c
			}
		}
		cur = next
	}
	return cur[len(path)]
}

// refAllowed applies RFC 9309 §2.2.2 precedence by brute force: the longest
// matching rule, allow on ties, allowed if none. An empty path is the root,
// as in a URL (testdata/fuzz/FuzzMatch/7369e277803ac46d: "disallow: *"
// matches "" but not "/", and "allow: /" wins on "/").
func refAllowed(rules []robotsRule, path string) bool {
	if path == "" {
		path = "/"
	}
	p := normalize(path)
	if p == "/robots.txt" {
		return true
	}
	best, allowed := -1, true
	for _, r := range rules {
		if !refMatch(r.pat, p) {
			continue
		}
		if r.specificity > best || (r.specificity == best && r.Allow) {
			best, allowed = r.specificity, r.Allow
		}
	}
	return allowed
}

func addSeeds(f *testing.F) {
	f.Add([]byte(rfcExample), "/example/page.html")
	f.Add([]byte("user-agent: *\ndisallow: /*.php$\nallow: /a*b*c$\n"), "/index.php?x")
	f.Add([]byte("user-agent: freshcrawl\ndisallow: /%7Ejoe\nallow: /~joe/x\n"), "/~joe/x/y")
	f.Add([]byte("\ufeffUser-Agent:*\r\nDisallow:/ツ\r\nAllow: /ツ$\r\n"), "/%E3%83%84")
	f.Add([]byte("user-agent: *\ndisallow: /ab*ba$\ndisallow: /%zz\n"), "/abba")
	f.Add([]byte("disallow: /\nuser-agent: x\nuser-agent: freshcrawl\ncrawl-delay: 2\nallow: *\n"), "/a$b*c")
	f.Add([]byte("user-agent: *\ndisallow: /*a*a*a*a*b\n"), "/aaaaaaaaaaaaaaaaaaaa")
	f.Add([]byte{0xff, 0xfe, ':', '\r', '#', '\n'}, "")
}

// FuzzMatch checks that matching never panics, is deterministic, and agrees
// with the brute-force oracle.
func FuzzMatch(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, body []byte, path string) {
		if len(path) > 512 {
			path = path[:512] // keep the quadratic oracle fast
		}
		g := parse(body).forAgent("freshcrawl")
		got := g.allowed(path)
		if again := parse(body).forAgent("FreshCrawl").allowed(path); again != got {
			t.Fatalf("nondeterministic: %v then %v", got, again)
		}
		np := normalize(path)
		for _, r := range g.rules {
			if len(r.Pattern) > 512 {
				return
			}
			if m, want := r.pat.match(np), refMatch(r.pat, np); m != want {
				t.Fatalf("pattern %q on %q: match %v, oracle %v", r.Pattern, np, m, want)
			}
		}
		if want := refAllowed(g.rules, path); got != want {
			t.Fatalf("Allowed(%q) = %v, oracle %v", path, got, want)
		}
	})
}

// FuzzParse checks that arbitrary input never panics the parser and that
// normalisation is idempotent and yields ASCII.
func FuzzParse(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, body []byte, agent string) {
		r := parse(body)
		_ = r.sitemapURLs()
		for _, a := range []string{agent, "*", "", tokenOf(agent)} {
			g := r.forAgent(a)
			_, _ = g.delay()
			_ = g.allowed("/")
		}
		n := normalize(agent)
		if normalize(n) != n {
			t.Fatalf("normalize not idempotent: %q -> %q -> %q", agent, n, normalize(n))
		}
		if !utf8.ValidString(n) || strings.ContainsFunc(n, func(r rune) bool { return r > 0x7e || r <= 0x20 }) {
			t.Fatalf("normalize(%q) = %q contains unsafe characters", agent, n)
		}
	})
}

func BenchmarkParse500KiB(b *testing.B) {
	body := bigRobots(500<<10, "disallow: /deep")
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		parse(body)
	}
}

// typicalRules is a 50-rule group of the shapes seen in real files.
func typicalRules() string {
	var s strings.Builder
	s.WriteString("user-agent: *\n")
	dirs := []string{"admin", "cart", "checkout", "account", "search", "tmp", "cgi-bin", "private", "api", "login"}
	for i, d := range dirs {
		s.WriteString("disallow: /" + d + "/\n")
		s.WriteString("allow: /" + d + "/public/\n")
		s.WriteString("disallow: /*?" + d + "=\n")
		s.WriteString("disallow: /*." + d + "$\n")
		if i%2 == 0 {
			s.WriteString("disallow: /" + d + "*/print\n")
		} else {
			s.WriteString("allow: /%7E" + d + "/\n")
		}
	}
	return s.String()
}

func BenchmarkAllowed50Rules(b *testing.B) {
	g := parse([]byte(typicalRules())).forAgent("freshcrawl")
	if n := len(g.ruleList()); n != 50 {
		b.Fatalf("group has %d rules", n)
	}
	paths := []string{
		"/products/widgets/blue-widget-2000?color=blue&size=m",
		"/search/results?q=widgets",
		"/admin/public/help.html",
		"/news/2024/05/some-long-article-slug-about-things.html",
		"/~api/docs",
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		g.allowed(paths[i%len(paths)])
		i++
	}
}
