package robots

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"
)

// rfcExample is the example of RFC 9309 §5.1.
const rfcExample = `User-Agent: *
Disallow: *.gif$
Disallow: /example/
Allow: /publications/

User-Agent: foobot
Disallow:/
Allow:/example/page.html
Allow:/example/allowed.gif

User-Agent: barbot
User-Agent: bazbot
Disallow: /example/page.html

User-Agent: quxbot
`

func TestAllowed(t *testing.T) {
	type probe struct {
		path string
		want bool
	}
	tests := []struct {
		name   string
		robots string
		agent  string // default "freshcrawl"
		probes []probe
	}{
		{
			name: "RFC 9309 §5.1 foobot", robots: rfcExample, agent: "foobot",
			probes: []probe{
				{"/example/page.html", true},
				{"/example/allowed.gif", true},
				{"/example/other.gif", false},
				{"/", false},
				{"/publications/", false}, // the * group does not apply
			},
		},
		{
			name: "RFC 9309 §5.1 barbot and bazbot share a group", robots: rfcExample, agent: "bazbot",
			probes: []probe{{"/example/page.html", false}, {"/example/", true}, {"/x.gif", true}},
		},
		{
			name: "RFC 9309 §5.1 quxbot's empty group allows all", robots: rfcExample, agent: "quxbot",
			probes: []probe{{"/x.gif", true}, {"/example/", true}},
		},
		{
			name: "RFC 9309 §5.1 other crawlers get the * group", robots: rfcExample,
			probes: []probe{
				{"/x.gif", false},
				{"/x.gif?size=2", true}, // $ anchors at the end of path+query
				{"/example/", false},
				{"/publications/", true},
				{"/other", true},
			},
		},
		{
			name:   "RFC 9309 §5.2 longest match",
			robots: "User-Agent: foobot\nAllow: /example/page/\nDisallow: /example/page/disallowed.gif\n",
			agent:  "FooBot",
			probes: []probe{
				{"/example/page/", true},
				{"/example/page/disallowed.gif", false},
				{"/example/page/disallowed.gif2", false},
			},
		},
		{
			name:   "longest match: longer allow beats shorter disallow regardless of order",
			robots: "user-agent: *\nallow: /a/b/c\ndisallow: /a\n",
			probes: []probe{{"/a/b/c/d", true}, {"/a/b", false}, {"/b", true}},
		},
		{
			name:   "longest match: longer disallow beats shorter allow",
			robots: "user-agent: *\ndisallow: /a/b/c\nallow: /a\n",
			probes: []probe{{"/a/b/c/d", false}, {"/a/b", true}},
		},
		{
			name:   "tie goes to allow (§2.2.2), in either order",
			robots: "user-agent: *\ndisallow: /page\nallow: /page\nallow: /ot*er\ndisallow: /other\n",
			probes: []probe{{"/page", true}, {"/pagex", true}, {"/other", true}},
		},
		{
			name:   "tie goes to allow for equal normalised length",
			robots: "user-agent: *\ndisallow: /%7Ejoe\nallow: /~joe\n",
			probes: []probe{{"/~joe", true}},
		},
		{
			name:   "/fish (Google's documented examples)",
			robots: "user-agent: *\ndisallow: /fish\n",
			probes: []probe{
				{"/fish", false}, {"/fish.html", false}, {"/fish/salmon.html", false},
				{"/fishheads", false}, {"/fish.php?id=anything", false},
				{"/Fish.asp", true}, {"/catfish", true}, {"/?id=fish", true}, {"/desert/fish", true},
			},
		},
		{
			name:   "/fish* matches what /fish matches",
			robots: "user-agent: *\ndisallow: /fish*\n",
			probes: []probe{
				{"/fish", false}, {"/fish.html", false}, {"/fishheads", false},
				{"/Fish.asp", true}, {"/catfish", true},
			},
		},
		{
			name:   "/fish/",
			robots: "user-agent: *\ndisallow: /fish/\n",
			probes: []probe{
				{"/fish/", false}, {"/fish/?id=anything", false}, {"/fish/salmon.htm", false},
				{"/fish", true}, {"/fish.html", true}, {"/animals/fish/", true},
			},
		},
		{
			name:   "/*.php",
			robots: "user-agent: *\ndisallow: /*.php\n",
			probes: []probe{
				{"/index.php", false}, {"/folder/filename.php?parameters", false},
				{"/folder/any.php.file.html", false}, {"/filename.php/", false},
				{"/", true}, {"/windows.PHP", true},
			},
		},
		{
			name:   "/*.php$",
			robots: "user-agent: *\ndisallow: /*.php$\n",
			probes: []probe{
				{"/index.php", false}, {"/folder/filename.php", false},
				{"/index.php?x", true}, {"/filename.php/", true}, {"/filename.php5", true},
				{"/windows.PHP", true}, {"/.php.php", false},
			},
		},
		{
			name:   "/fish*.php",
			robots: "user-agent: *\ndisallow: /fish*.php\n",
			probes: []probe{{"/fish.php", false}, {"/fishheads/catfish.php?parameters", false}, {"/Fish.PHP", true}},
		},
		{
			name:   "$ anchors only at the end; elsewhere it is literal",
			robots: "user-agent: *\ndisallow: /a$b\ndisallow: /exact$\n",
			probes: []probe{
				{"/a$b", false}, {"/a%24b", false}, {"/ab", true},
				{"/exact", false}, {"/exact/", true}, {"/exactly", true},
			},
		},
		{
			name:   "* wildcard in the middle and repeated",
			robots: "user-agent: *\ndisallow: /a/**/c\n",
			probes: []probe{{"/a/b/c", false}, {"/a//c", false}, {"/a/c", true}, {"/a/b/x/c/d", false}},
		},
		{
			name:   "anchored tail must not overlap the head",
			robots: "user-agent: *\ndisallow: /ab*ba$\n",
			probes: []probe{{"/aba", true}, {"/abba", false}, {"/ab-ba", false}},
		},
		{
			name:   "percent-encoding: unreserved escapes equal their characters",
			robots: "user-agent: *\ndisallow: /%7Ejoe\ndisallow: /~ann\ndisallow: /foo/bar/%62%61%7A\n",
			probes: []probe{
				{"/~joe/index.html", false}, {"/%7ejoe", false}, {"/%7Eann", false},
				{"/foo/bar/baz", false}, {"/foo/bar/%62az", false},
			},
		},
		{
			name:   "percent-encoding: %2F is not a slash",
			robots: "user-agent: *\ndisallow: /foo/bar/baz\ndisallow: /x%2fy\n",
			probes: []probe{
				{"/foo/bar%2Fbaz", true}, {"/foo/bar/baz", false},
				{"/x%2Fy", false}, {"/x/y", true},
			},
		},
		{
			name:   "percent-encoding: non-ASCII pattern matches the encoded path (RFC 9309 §2.2.2)",
			robots: "user-agent: *\ndisallow: /foo/bar/ツ\ndisallow: /%e3%81%82\n",
			probes: []probe{
				{"/foo/bar/%E3%83%84", false}, {"/foo/bar/%e3%83%84", false},
				{"/foo/bar/ツ", false}, {"/あ", false}, {"/foo/bar/x", true},
			},
		},
		{
			name:   "percent-encoding: literal * and $ in URLs match %2A and %24 (RFC 9309 §2.2.3)",
			robots: "user-agent: *\ndisallow: /path/file-with-a-%2A.html\ndisallow: /path/foo-%24\n",
			probes: []probe{
				{"/path/file-with-a-*.html", false}, {"/path/file-with-a-x.html", true},
				{"/path/foo-$", false}, {"/path/foo-", true},
			},
		},
		{
			name:   "characters not allowed literally in URLs match their escapes",
			robots: "user-agent: *\ndisallow: /a|b\ndisallow: /c d\n",
			probes: []probe{{"/a%7Cb", false}, {"/a%7cb", false}, {"/c%20d", false}, {"/cd", true}},
		},
		{
			name:   "paths are case-sensitive",
			robots: "user-agent: *\ndisallow: /Private\n",
			probes: []probe{{"/Private", false}, {"/private", true}},
		},
		{
			name:   "query is part of the matched path",
			robots: "user-agent: *\ndisallow: /*?sessionid=\ndisallow: /search?\n",
			probes: []probe{
				{"/a?sessionid=1", false}, {"/a?x=1&sessionid=1", true}, {"/a?x", true},
				{"/search?q=x", false}, {"/search", true},
			},
		},
		{
			name:   "empty disallow disallows nothing",
			robots: "user-agent: *\ndisallow:\n",
			probes: []probe{{"/", true}, {"/anything", true}},
		},
		{
			name:   "disallow all",
			robots: "user-agent: *\ndisallow: /\n",
			probes: []probe{{"/", false}, {"", false}, {"/a", false}, {"/robots.txt", true}},
		},
		{
			name:   "/robots.txt is always allowed",
			robots: "user-agent: *\ndisallow: /robots.txt\n",
			probes: []probe{{"/robots.txt", true}, {"/robots.txt?x", false}},
		},
		{
			name:   "rules before the first group are ignored",
			robots: "disallow: /a\nallow: /b\ncrawl-delay: 5\nuser-agent: *\ndisallow: /c\n",
			probes: []probe{{"/a", true}, {"/c", false}},
		},
		{
			name:   "groups for the same agent are combined",
			robots: "user-agent: freshcrawl\ndisallow: /a\n\nuser-agent: other\ndisallow: /b\n\nuser-agent: FreshCrawl\ndisallow: /c\n",
			probes: []probe{{"/a", false}, {"/b", true}, {"/c", false}},
		},
		{
			name:   "* groups are combined",
			robots: "user-agent: *\ndisallow: /a\nuser-agent: other\ndisallow: /b\nuser-agent: *\ndisallow: /c\n",
			probes: []probe{{"/a", false}, {"/b", true}, {"/c", false}},
		},
		{
			name:   "agent match is case-insensitive",
			robots: "User-Agent: FRESHCRAWL\nDisallow: /x\n",
			probes: []probe{{"/x", false}},
		},
		{
			name:   "* applies only when no group names the agent",
			robots: "user-agent: *\ndisallow: /\nuser-agent: freshcrawl\ndisallow: /private\n",
			probes: []probe{{"/", true}, {"/private", false}},
		},
		{
			name:   "a specific empty group overrides *",
			robots: "user-agent: *\ndisallow: /\nuser-agent: freshcrawl\n",
			probes: []probe{{"/", true}},
		},
		{
			name:   "no prefix or substring agent matching",
			robots: "user-agent: freshcrawl-bad\ndisallow: /a\nuser-agent: freshcrawlbot\ndisallow: /b\nuser-agent: fresh\ndisallow: /c\nuser-agent: *\ndisallow: /d\n",
			probes: []probe{{"/a", true}, {"/b", true}, {"/c", true}, {"/d", false}},
		},
		{
			name:   "the group line's token ends at the first non-token character",
			robots: "user-agent: FreshCrawl/2.0\ndisallow: /a\n",
			probes: []probe{{"/a", false}},
		},
		{
			name:   "freshcrawl group does not apply to freshcrawlbot",
			robots: "user-agent: freshcrawl\ndisallow: /a\n",
			agent:  "freshcrawlbot",
			probes: []probe{{"/a", true}},
		},
		{
			name:   "no applicable group allows everything",
			robots: "user-agent: other\ndisallow: /\n",
			probes: []probe{{"/", true}},
		},
		{
			name:   "user-agent after a rule starts a new group",
			robots: "user-agent: a\ndisallow: /x\nuser-agent: freshcrawl\ndisallow: /y\n",
			probes: []probe{{"/x", true}, {"/y", false}},
		},
		{
			name:   "sitemap and unknown lines do not break a group",
			robots: "user-agent: a\nsitemap: https://x/s.xml\nfoo: bar\nuser-agent: freshcrawl\ndisallow: /y\n",
			agent:  "a",
			probes: []probe{{"/y", false}},
		},
		{
			name:   "tolerant syntax: BOM, CRLF, CR, case, spacing, comments, missing colon",
			robots: "\ufeffUSER-AGENT:*\r\nDISALLOW:/a # comment\r\n  Disallow  :   /b\rdisallow /c\n# disallow: /d\nDisallow: /e#f\nallow: /a/ok\n",
			probes: []probe{
				{"/a", false}, {"/a/ok", true}, {"/b", false}, {"/c", false}, {"/d", true},
				{"/e", false}, {"/f", true},
			},
		},
		{
			name:   "patterns not starting with / or * never match",
			robots: "user-agent: *\ndisallow: private\n",
			probes: []probe{{"/private", true}},
		},
		{
			name:   "empty file",
			robots: "",
			probes: []probe{{"/", true}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			agent := tt.agent
			if agent == "" {
				agent = "freshcrawl"
			}
			r := parse([]byte(tt.robots))
			g := r.forAgent(agent)
			for _, p := range tt.probes {
				allowed, rule, matched := g.match(p.path)
				if allowed != p.want {
					t.Errorf("%s %q: allowed = %v, want %v (rule %v, matched %v)", agent, p.path, allowed, p.want, rule, matched)
				}
				if got := r.allowed(agent, p.path); got != allowed {
					t.Errorf("Robots.Allowed(%q) = %v, Group.Allowed = %v", p.path, got, allowed)
				}
			}
		})
	}
}

func TestMatchReportsRule(t *testing.T) {
	g := parse([]byte("user-agent: *\n\ndisallow: /a\nallow: /a/b\n")).forAgent("x")
	allowed, rule, matched := g.match("/a/b/c")
	if !allowed || !matched || !rule.Allow || rule.Pattern != "/a/b" || rule.Line != 4 {
		t.Errorf("Match = %v, %+v, %v", allowed, rule, matched)
	}
	if got, want := rule.String(), "allow: /a/b (line 4)"; got != want {
		t.Errorf("Rule.String() = %q, want %q", got, want)
	}
	if rules := g.ruleList(); len(rules) != 2 || rules[0].Pattern != "/a/b" {
		t.Errorf("Rules() = %+v, want most specific first", rules)
	}
	var zero ruleSet
	if !zero.allowed("/x") {
		t.Error("zero Group disallows")
	}
	var zr robotsFile
	if !zr.allowed("x", "/x") {
		t.Error("zero Robots disallows")
	}
}

func TestProductToken(t *testing.T) {
	for ua, want := range map[string]string{
		"freshcrawl/1.0 (+https://example.com/bot)": "freshcrawl",
		"FreshCrawl":   "FreshCrawl",
		" my_bot-2":    "my_bot-",
		"Mozilla/5.0":  "Mozilla",
		"":             "",
		"1bot":         "",
		"fresh crawl/": "fresh",
	} {
		if got := tokenOf(ua); got != want {
			t.Errorf("tokenOf(%q) = %q, want %q", ua, got, want)
		}
	}
}

func TestCrawlDelayAndSitemaps(t *testing.T) {
	r := parse([]byte(`Sitemap: https://example.com/a.xml
user-agent: freshcrawl
crawl-delay: 1.5
disallow: /a
user-agent: other
crawl-delay: 10
user-agent: freshcrawl
Crawl-Delay: 2
user-agent: *
crawl-delay: nonsense
sitemap:https://example.com/b.xml
user-agent: huge
crawl-delay: 1e300
user-agent: neg
crawl-delay: -1
`))
	if d, ok := r.forAgent("freshcrawl").delay(); !ok || d != 2*time.Second {
		t.Errorf("freshcrawl crawl-delay = %v, %v; want 2s (largest of combined groups)", d, ok)
	}
	if d, ok := r.forAgent("other").delay(); !ok || d != 10*time.Second {
		t.Errorf("other crawl-delay = %v, %v; want 10s", d, ok)
	}
	if _, ok := r.forAgent("unknown").delay(); ok {
		t.Error("invalid crawl-delay accepted")
	}
	if d, _ := r.forAgent("huge").delay(); d != MaxCrawlDelay {
		t.Errorf("huge crawl-delay = %v, want cap %v", d, MaxCrawlDelay)
	}
	if _, ok := r.forAgent("neg").delay(); ok {
		t.Error("negative crawl-delay accepted")
	}
	r2 := parse([]byte("user-agent: *\ncrawl-delay: 0.25\n"))
	if d, _ := r2.forAgent("x").delay(); d != 250*time.Millisecond {
		t.Errorf("fractional crawl-delay = %v, want 250ms", d)
	}
	want := []string{"https://example.com/a.xml", "https://example.com/b.xml"}
	if got := r.sitemapURLs(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("sitemapURLs() = %q, want %q", got, want)
	}
}

// bigRobots returns a robots.txt of size octets, or one more, whose last
// line is line.
func bigRobots(size int, line string) []byte {
	var b strings.Builder
	b.WriteString("user-agent: *\n")
	for i := 0; b.Len() < size-len(line)-64; i++ {
		fmt.Fprintf(&b, "disallow: /filler/%08d/*.html$\n", i)
	}
	for b.Len() < size-len(line)-1 {
		b.WriteString("#")
	}
	b.WriteString("\n" + line + "\n")
	return []byte(b.String())
}

func TestLargeFile(t *testing.T) {
	body := bigRobots(499<<10, "disallow: /deep")
	if len(body) < 498<<10 || len(body) > maxBodySize {
		t.Fatalf("test body is %d octets", len(body))
	}
	g := parse(body).forAgent("freshcrawl")
	if g.allowed("/deep/x") {
		t.Error("rule at ~499 KiB ignored")
	}
	if g.allowed("/filler/00000042/a.html") || !g.allowed("/filler/00000042/a.htm") {
		t.Error("filler rules not applied")
	}

	// Beyond the limit: ignored, including a rule cut by it.
	over := append(bigRobots(maxBodySize-8, "disallow: /last"), "disallow: /beyond\n"...)
	g = parse(over).forAgent("freshcrawl")
	if g.allowed("/last") {
		t.Error("last rule inside the limit ignored")
	}
	if !g.allowed("/beyond") || !g.allowed("/b") {
		t.Error("rule beyond or cut by the limit applied")
	}
	exact := bigRobots(maxBodySize, "disallow: /edge")
	if len(exact) != maxBodySize+1 || exact[maxBodySize] != '\n' {
		t.Fatalf("edge body is %d octets", len(exact))
	}
	if parse(exact).forAgent("x").allowed("/edge") {
		t.Error("line ending exactly at the limit ignored")
	}
}

func TestPathologicalWildcard(t *testing.T) {
	path := "/" + strings.Repeat("a", 200_000)
	r := parse([]byte("user-agent: *\ndisallow: /*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b\n" +
		"disallow: /*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b$\n" +
		"disallow: " + strings.Repeat("*a", 1000) + "*b\n"))
	g := r.forAgent("x")
	// Backtracking would take astronomically long; the O(len(path) ×
	// len(pattern)) matcher answers in milliseconds. The matching runs
	// aside so that a regression fails at the guard instead of hanging the
	// test binary; the guard is far above any instrumented run.
	type answer struct{ allowed, allowedB bool }
	done := make(chan answer, 1)
	go func() {
		var a answer
		for range 10 {
			a.allowed = g.allowed(path)
		}
		a.allowedB = g.allowed(path + "b")
		done <- a
	}()
	guard := time.NewTimer(30 * time.Second)
	defer guard.Stop()
	select {
	case a := <-done:
		if !a.allowed {
			t.Error("pathological path disallowed")
		}
		if a.allowedB {
			t.Error("matching pathological path allowed")
		}
	case <-guard.C:
		t.Fatal("pathological matching did not finish: the matcher backtracks")
	}
}

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"/foo/bar?baz=quz":   "/foo/bar?baz=quz",
		"/foo/bar/ツ":         "/foo/bar/%E3%83%84",
		"/foo/bar/%e3%83%84": "/foo/bar/%E3%83%84",
		"/foo/bar/%62%61%7A": "/foo/bar/baz",
		"/%7e%2f%2F":         "/~%2F%2F",
		"/100%":              "/100%25",
		"/%zz%4":             "/%25zz%254",
		"/a b\x01":           "/a%20b%01",
		"/*$":                "/%2A%24",
		"/a=b&c;d:e@f!'()+,": "/a=b&c;d:e@f!'()+,",
	} {
		if got := normalize(in); got != want {
			t.Errorf("normalize(%q) = %q, want %q", in, got, want)
		}
		if got := normalize(want); got != want {
			t.Errorf("normalize not idempotent on %q: %q", want, got)
		}
	}
}

func TestPathQuery(t *testing.T) {
	for in, want := range map[string]string{
		"http://x":                   "/",
		"http://x/a?b=c#frag":        "/a?b=c",
		"http://x/%7Ejoe":            "/%7Ejoe",
		"http://x/a%2Fb":             "/a%2Fb",
		"http://x/ü":                 "/%C3%BC",
		"http://x/a?":                "/a?",
		"http://x/a|b?q=|":           "/a%7Cb?q=|",
		"https://x:8080/p/../q?x=1y": "/p/../q?x=1y",
	} {
		u, err := url.Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := pathAndQuery(u); got != want {
			t.Errorf("pathAndQuery(%q) = %q, want %q", in, got, want)
		}
	}
}
