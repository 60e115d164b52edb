package signal

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzSitemap feeds arbitrary bytes, plain and gzipped, to the sitemap
// parser under small limits: it never panics, never keeps more entries
// than the limit, and every entry it keeps is an absolute http(s) URL of
// the sitemap's host with a priority in range.
func FuzzSitemap(f *testing.F) {
	for _, s := range []string{
		`<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>https://h.example/a</loc><lastmod>2026-03-01T10:00:00+01:00</lastmod><changefreq>daily</changefreq><priority>0.5</priority></url></urlset>`,
		`<sitemapindex><sitemap><loc>https://h.example/s.xml.gz</loc><lastmod>2026</lastmod></sitemap></sitemapindex>`,
		`<urlset><url><loc>https://h.example/&</loc></url><url><loc>https://h.example/b`,
		`<?xml version="1.0" encoding="ISO-8859-1"?><urlset><url><loc>https://h.example/caf` + "\xe9" + `</loc></url></urlset>`,
		"\x1f\x8b\x08\x00\x00\x00\x00\x00",
		`<urlset><url><loc>https://h.example/a</loc></url></urlset>`,
	} {
		f.Add([]byte(s), false)
	}
	f.Add([]byte(`<urlset><url><loc>https://h.example/z</loc></url></urlset>`), true)
	p, err := NewParser(Options{MaxEntries: 5, MaxSitemapBytes: 1 << 16, MaxFeedBytes: 1 << 16})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte, zip bool) {
		if zip {
			b = gz(t, b)
		}
		sm, err := p.Sitemap(bytes.NewReader(b), "https://h.example/sitemap.xml")
		if err != nil {
			return
		}
		if n := len(sm.Entries) + len(sm.Children); n > 5 || (sm.Index && len(sm.Entries) > 0) {
			t.Fatalf("%d entries under a limit of 5 (index %v)", n, sm.Index)
		}
		for _, e := range append(sm.Entries, sm.Children...) {
			if !strings.HasPrefix(e.URL, "http") || !strings.Contains(strings.ToLower(e.URL), "h.example") || utf8.RuneCountInString(e.URL) >= maxURLLength {
				t.Fatalf("kept %q", e.URL)
			}
			if e.Priority != -1 && (e.Priority < 0 || e.Priority > 1) {
				t.Fatalf("priority %v", e.Priority)
			}
			if !e.LastMod.IsZero() && (e.LastMod.Location() != time.UTC || e.LastModSpan <= 0) {
				t.Fatalf("lastmod %v span %v", e.LastMod, e.LastModSpan)
			}
		}
	})
}

// FuzzFeed: the feed parser (gofeed underneath) never panics, keeps at
// most the entry limit and only absolute http(s) URLs.
func FuzzFeed(f *testing.F) {
	for _, s := range []string{
		`<rss version="2.0"><channel><item><link>https://n.example/a</link><pubDate>Sun, 01 Mar 2026 10:00:00 GMT</pubDate></item></channel></rss>`,
		`<feed xmlns="http://www.w3.org/2005/Atom"><entry><link href="/x"/><updated>2026-03-01T10:00:00Z</updated></entry></feed>`,
		`{"version":"https://jsonfeed.org/version/1","items":[{"url":"https://n.example/j","date_published":"2026-03-01T10:00:00Z"}]}`,
		`<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/"><item><link>https://n.example/r</link></item></rdf:RDF>`,
	} {
		f.Add([]byte(s))
	}
	p, err := NewParser(Options{MaxEntries: 5, MaxSitemapBytes: 1 << 16, MaxFeedBytes: 1 << 16})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fd, err := p.Feed(bytes.NewReader(b), "https://n.example/feed")
		if err != nil {
			return
		}
		if len(fd.Entries) > 5 {
			t.Fatalf("%d entries", len(fd.Entries))
		}
		for _, e := range fd.Entries {
			if !strings.HasPrefix(e.URL, "http://") && !strings.HasPrefix(e.URL, "https://") {
				t.Fatalf("kept %q", e.URL)
			}
		}
	})
}

// FuzzLastMod: a lastmod that parses is in UTC with a positive span.
func FuzzLastMod(f *testing.F) {
	for _, s := range []string{"2026", "2026-03", "2026-03-01", "2026-03-01T10:20:30.5+02:00", "2026-03-01 10:20:30", "Sun, 01 Mar 2026 10:20:30 GMT"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tm, span, ok := parseLastMod(s)
		if ok && (tm.Location() != time.UTC || span <= 0) {
			t.Fatalf("%q: %v span %v", s, tm, span)
		}
	})
}

// FuzzParseCache: any header values give a lifetime in [0, 2³¹ s].
func FuzzParseCache(f *testing.F) {
	f.Add("max-age=60, must-revalidate", "Sun, 01 Mar 2026 10:20:30 GMT", "30")
	f.Add(`no-cache="a,b", s-maxage="5"`, "0", "")
	f.Fuzz(func(t *testing.T, cc, exp, age string) {
		h := http.Header{"Cache-Control": {cc}, "Expires": {exp}, "Age": {age}}
		c, _ := ParseCache(h, time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
		if c.Lifetime < 0 || c.Lifetime > maxDelta || c.Age < 0 || c.Age > maxDelta {
			t.Fatalf("%+v", c)
		}
	})
}
