package signal

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"
)

const smNS = `xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"`

func parser(t testing.TB, set func(*Options)) *Parser {
	t.Helper()
	o := DefaultOptions()
	if set != nil {
		set(&o)
	}
	p, err := NewParser(o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func gz(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// A urlset's entries come with their fields; extension elements (an
// image's own <loc>) are not the page's; unusable entries are skipped
// and counted by reason, unreadable fields dropped and counted.
func TestSitemapURLSet(t *testing.T) {
	doc := `<?xml version="1.0" encoding="UTF-8"?>
<urlset ` + smNS + ` xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">
 <url><loc> https://example.com/a?x=1&amp;y=2 </loc><lastmod>2026-03-01</lastmod><changefreq>Daily</changefreq><priority>0.8</priority></url>
 <url><image:image><image:loc>https://cdn.example.net/i.png</image:loc></image:image><loc><![CDATA[https://example.com/b]]></loc><lastmod>2026-03-01T10:20:30.25+02:00</lastmod></url>
 <url><loc>https://example.com/c</loc><lastmod>yesterday</lastmod><changefreq>sometimes</changefreq><priority>1.5</priority></url>
 <url><loc>http://EXAMPLE.com/d</loc><lastmod>2026-03-01T10:20Z</lastmod></url>
 <url><loc>https://example.com/e?a=1&b=2</loc></url>
 <url><lastmod>2026-03-01</lastmod></url>
 <url><loc>/relative</loc></url>
 <url><loc>ftp://example.com/f</loc></url>
 <url><loc>https://other.example/g</loc></url>
 <url><loc>https://example.com/a?x=1&amp;y=2</loc></url>
 <url><loc>https://example.com/` + strings.Repeat("x", 2100) + `</loc></url>
 <news:news xmlns:news="http://www.google.com/schemas/sitemap-news/0.9"><news:loc>https://example.com/n</news:loc></news:news>
</urlset>`
	sm, err := parser(t, nil).Sitemap(strings.NewReader(doc), "https://example.com/sitemap.xml")
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{
		{URL: "https://example.com/a?x=1&y=2", LastMod: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), LastModSpan: 24 * time.Hour, ChangeFreq: "daily", Priority: 0.8},
		{URL: "https://example.com/b", LastMod: time.Date(2026, 3, 1, 8, 20, 30, 250e6, time.UTC), LastModSpan: 10 * time.Millisecond, Priority: -1},
		{URL: "https://example.com/c", Priority: -1},
		{URL: "http://EXAMPLE.com/d", LastMod: time.Date(2026, 3, 1, 10, 20, 0, 0, time.UTC), LastModSpan: time.Minute, Priority: -1},
		{URL: "https://example.com/e?a=1&b=2", Priority: -1},
	}
	if sm.Index || len(sm.Children) != 0 || sm.Truncated != "" {
		t.Errorf("index %v, children %v, truncated %q", sm.Index, sm.Children, sm.Truncated)
	}
	if len(sm.Entries) != len(want) {
		t.Fatalf("entries %+v, want %+v", sm.Entries, want)
	}
	for i := range want {
		if g, w := sm.Entries[i], want[i]; g.URL != w.URL || !g.LastMod.Equal(w.LastMod) || g.LastModSpan != w.LastModSpan || g.ChangeFreq != w.ChangeFreq || g.Priority != w.Priority {
			t.Errorf("entry %d: %+v, want %+v", i, g, w)
		}
	}
	wantSkipped := map[string]int{reasonNoLoc: 1, reasonBadURL: 2, reasonOtherHost: 1, reasonDuplicate: 1, reasonLong: 1}
	if !maps.Equal(sm.Skipped, wantSkipped) {
		t.Errorf("skipped %v, want %v", sm.Skipped, wantSkipped)
	}
	wantIgnored := map[string]int{fieldLastMod: 1, fieldChangeFreq: 1, fieldPriority: 1}
	if !maps.Equal(sm.Ignored, wantIgnored) {
		t.Errorf("ignored %v, want %v", sm.Ignored, wantIgnored)
	}
}

// A sitemap index lists its child sitemaps with their lastmod; a file
// without the namespace reads the same; a page that is not a sitemap is
// an error, not an empty sitemap.
func TestSitemapIndexAndErrors(t *testing.T) {
	p := parser(t, nil)
	doc := `<sitemapindex><sitemap><loc>https://example.com/s1.xml.gz</loc><lastmod>2026-02-03T04:05:06Z</lastmod></sitemap>
<sitemap><loc>https://example.com/s2.xml</loc></sitemap><sitemap><loc>https://evil.example/s3.xml</loc></sitemap></sitemapindex>`
	sm, err := p.Sitemap(strings.NewReader(doc), "https://example.com/sitemap.xml")
	if err != nil {
		t.Fatal(err)
	}
	if !sm.Index || len(sm.Entries) != 0 || len(sm.Children) != 2 || sm.Skipped[reasonOtherHost] != 1 {
		t.Fatalf("index: %+v", sm)
	}
	if c := sm.Children[0]; c.URL != "https://example.com/s1.xml.gz" || !c.LastMod.Equal(time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)) || c.LastModSpan != time.Second {
		t.Errorf("child 0: %+v", c)
	}
	for _, bad := range []string{"", "<html><body>not found</body></html>", "just text", `{"urlset": []}`} {
		if sm, err := p.Sitemap(strings.NewReader(bad), "https://example.com/sitemap.xml"); err == nil {
			t.Errorf("%q: parsed as %+v, want an error", bad, sm)
		}
	}
	if _, err := p.Sitemap(strings.NewReader("<urlset/>"), "://bad"); err == nil {
		t.Error("a bad sitemap URL: no error")
	}
	// A document that breaks off keeps what came before the break.
	sm, err = p.Sitemap(strings.NewReader(`<urlset><url><loc>https://example.com/a</loc></url><url><loc>https://exa`), "https://example.com/s.xml")
	if err != nil || len(sm.Entries) != 1 || sm.Truncated == "" {
		t.Errorf("broken document: %+v, %v", sm, err)
	}
}

// A gzipped sitemap reads the same as the plain one, whatever its URL
// says; gzip that does not open is an error.
func TestSitemapGzip(t *testing.T) {
	doc := []byte(`<?xml version="1.0"?><urlset ` + smNS + `><url><loc>http://h.example/p</loc><lastmod>2026-01-02</lastmod></url></urlset>`)
	p := parser(t, nil)
	for _, name := range []string{"http://h.example/sitemap.xml.gz", "http://h.example/sitemap.xml"} {
		sm, err := p.Sitemap(bytes.NewReader(gz(t, doc)), name)
		if err != nil || len(sm.Entries) != 1 || sm.Entries[0].URL != "http://h.example/p" || sm.Bytes != int64(len(doc)) {
			t.Errorf("%s: %+v, %v", name, sm, err)
		}
	}
	broken := gz(t, doc)[:12]
	if sm, err := p.Sitemap(bytes.NewReader(broken), "http://h.example/s.xml.gz"); err == nil && sm.Truncated == "" {
		t.Errorf("cut gzip read as a whole sitemap: %+v", sm)
	}
}

// urlset writes a sitemap of n URLs on host h.
func urlset(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n<urlset " + smNS + ">\n")
	for i := range n {
		fmt.Fprintf(&b, "<url><loc>https://h.example/page/%d</loc><lastmod>2026-01-01T00:00:%02dZ</lastmod></url>\n", i, i%60)
	}
	b.WriteString("</urlset>\n")
	return b.Bytes()
}

// The protocol's limits: 50 000 URLs are read whole, the 50 001st marks
// the file truncated; a file over the byte limit keeps the entries
// before the cut and says why.
func TestSitemapLimits(t *testing.T) {
	p := parser(t, nil)
	sm, err := p.Sitemap(bytes.NewReader(urlset(50_000)), "https://h.example/sitemap.xml")
	if err != nil || len(sm.Entries) != 50_000 || sm.Truncated != "" {
		t.Fatalf("50 000 URLs: %d entries, truncated %q, %v", len(sm.Entries), sm.Truncated, err)
	}
	sm, err = p.Sitemap(bytes.NewReader(gz(t, urlset(50_001))), "https://h.example/sitemap.xml.gz")
	if err != nil || len(sm.Entries) != 50_000 || sm.Truncated != "over 50000 entries" {
		t.Fatalf("50 001 URLs: %d entries, truncated %q, %v", len(sm.Entries), sm.Truncated, err)
	}
	if d := DefaultOptions(); d.MaxSitemapBytes != 52_428_800 || d.MaxEntries != 50_000 {
		t.Errorf("defaults %+v, want the protocol's 50 000 URLs and 52 428 800 bytes", d)
	}
	small := parser(t, func(o *Options) { o.MaxSitemapBytes = 4000 })
	doc := urlset(100)
	sm, err = small.Sitemap(bytes.NewReader(gz(t, doc)), "https://h.example/sitemap.xml.gz")
	if err != nil || len(sm.Entries) == 0 || len(sm.Entries) >= 100 || sm.Truncated != "over 4000 bytes" || sm.Bytes != 4000 {
		t.Fatalf("byte limit: %d entries, truncated %q, %d bytes, %v", len(sm.Entries), sm.Truncated, sm.Bytes, err)
	}
	for i, e := range sm.Entries {
		if e.URL != fmt.Sprintf("https://h.example/page/%d", i) {
			t.Fatalf("entry %d is %s", i, e.URL)
		}
	}
}

// A gzip bomb is cut at 50 MB uncompressed: it costs the limit, never
// its full size.
func TestSitemapGzipBomb(t *testing.T) {
	var raw bytes.Buffer
	raw.WriteString("<urlset " + smNS + "><url><loc>https://h.example/a</loc></url><!--")
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = zw.Write(raw.Bytes())
	pad := bytes.Repeat([]byte("a"), 1<<20)
	for range 64 { // 64 MiB inside a comment
		_, _ = zw.Write(pad)
	}
	_, _ = zw.Write([]byte("--></urlset>"))
	_ = zw.Close()
	sm, err := parser(t, nil).Sitemap(&buf, "https://h.example/s.xml.gz")
	if err != nil || len(sm.Entries) != 1 || sm.Truncated != "over 52428800 bytes" || sm.Bytes != 52_428_800 {
		t.Fatalf("bomb: %+v, %v", sm, err)
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, c := range []struct {
		field string
		set   func(*Options)
	}{
		{"MaxEntries", func(o *Options) { o.MaxEntries = 0 }},
		{"MaxSitemapBytes", func(o *Options) { o.MaxSitemapBytes = -1 }},
		{"MaxFeedBytes", func(o *Options) { o.MaxFeedBytes = 0 }},
	} {
		o := DefaultOptions()
		c.set(&o)
		if _, err := NewParser(o); err == nil || !strings.Contains(err.Error(), c.field+":") {
			t.Errorf("%s: NewParser = %v, want an error naming the field", c.field, err)
		}
	}
}
