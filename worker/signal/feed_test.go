package signal

import (
	"errors"
	"maps"
	"strings"
	"testing"
	"time"
)

// RSS, Atom and JSON Feed give each item's link and its updated time (the
// published one when there is none); relative links resolve against the
// feed's URL; an item listed twice keeps its later time.
func TestFeedFormats(t *testing.T) {
	at := func(h int) time.Time { return time.Date(2026, 3, 1, h, 0, 0, 0, time.UTC) }
	for _, c := range []struct {
		name, format, doc string
		want              []Entry
		skipped, ignored  map[string]int
	}{
		{"rss", "rss", `<?xml version="1.0"?><rss version="2.0"><channel><title>t</title><link>https://n.example/</link>
<lastBuildDate>Sun, 01 Mar 2026 12:00:00 GMT</lastBuildDate>
<item><link>https://n.example/a</link><pubDate>Sun, 01 Mar 2026 10:00:00 +0000</pubDate></item>
<item><link>/b</link><pubDate>Sun, 01 Mar 2026 13:00:00 +0200</pubDate></item>
<item><title>no link</title></item>
<item><link>https://n.example/a</link><pubDate>Sun, 01 Mar 2026 12:00:00 GMT</pubDate></item>
<item><link>https://n.example/c</link><pubDate>sometime</pubDate></item>
<item><link>mailto:x@n.example</link></item>
</channel></rss>`,
			[]Entry{{URL: "https://n.example/a", LastMod: at(12)}, {URL: "https://n.example/b", LastMod: at(11)}, {URL: "https://n.example/c"}},
			map[string]int{reasonNoLink: 1, reasonDuplicate: 1, reasonBadURL: 1}, map[string]int{fieldUpdated: 1}},
		{"atom", "atom", `<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom" xml:base="https://n.example/blog/"><title>t</title><updated>2026-03-01T12:00:00Z</updated>
<entry><id>1</id><link rel="alternate" href="post-1"/><published>2026-03-01T09:00:00Z</published><updated>2026-03-01T10:00:00Z</updated></entry>
<entry><id>2</id><link href="https://n.example/other"/><published>2026-03-01T11:00:00Z</published></entry>
</feed>`,
			[]Entry{{URL: "https://n.example/blog/post-1", LastMod: at(10)}, {URL: "https://n.example/other", LastMod: at(11)}}, map[string]int{}, map[string]int{}},
		{"json", "json", `{"version":"https://jsonfeed.org/version/1.1","title":"t","items":[
{"id":"1","url":"https://n.example/j1","date_published":"2026-03-01T09:00:00Z","date_modified":"2026-03-01T10:00:00Z"},
{"id":"2","url":"https://n.example/j2","date_published":"2026-03-01T11:00:00+00:00"},
{"id":"3","content_text":"no url"}]}`,
			[]Entry{{URL: "https://n.example/j1", LastMod: at(10)}, {URL: "https://n.example/j2", LastMod: at(11)}}, map[string]int{reasonNoLink: 1}, map[string]int{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := parser(t, nil).Feed(strings.NewReader(c.doc), "https://n.example/feed")
			if err != nil {
				t.Fatal(err)
			}
			if f.Format != c.format || f.Truncated != "" || f.Bytes != int64(len(c.doc)) {
				t.Errorf("format %q truncated %q bytes %d", f.Format, f.Truncated, f.Bytes)
			}
			if len(f.Entries) != len(c.want) {
				t.Fatalf("entries %+v, want %+v", f.Entries, c.want)
			}
			for i, w := range c.want {
				if g := f.Entries[i]; g.URL != w.URL || !g.LastMod.Equal(w.LastMod) || g.Priority != -1 || g.ChangeFreq != "" {
					t.Errorf("entry %d: %+v, want %+v", i, g, w)
				}
			}
			if !maps.Equal(f.Skipped, c.skipped) || !maps.Equal(f.Ignored, c.ignored) {
				t.Errorf("skipped %v ignored %v, want %v and %v", f.Skipped, f.Ignored, c.skipped, c.ignored)
			}
		})
	}
}

// A feed over the byte limit is refused; one with more items than the
// entry limit keeps the first ones; what is not a feed is an error.
func TestFeedLimitsAndErrors(t *testing.T) {
	var b strings.Builder
	b.WriteString(`<rss version="2.0"><channel><title>t</title>`)
	for i := range 50 {
		b.WriteString(`<item><link>https://n.example/` + strings.Repeat("x", i+1) + `</link></item>`)
	}
	b.WriteString(`</channel></rss>`)
	doc := b.String()
	_, err := parser(t, func(o *Options) { o.MaxFeedBytes = 500 }).Feed(strings.NewReader(doc), "https://n.example/feed")
	if !errors.Is(err, ErrTooLarge) {
		t.Errorf("over the byte limit: %v, want ErrTooLarge", err)
	}
	f, err := parser(t, func(o *Options) { o.MaxEntries = 10 }).Feed(strings.NewReader(doc), "https://n.example/feed")
	if err != nil || len(f.Entries) != 10 || f.Truncated != "over 10 entries" {
		t.Fatalf("entry limit: %+v, %v", f, err)
	}
	for _, bad := range []string{"", "<html><body>hi</body></html>", "{}", "<urlset/>"} {
		if f, err := parser(t, nil).Feed(strings.NewReader(bad), "https://n.example/feed"); err == nil {
			t.Errorf("%q: parsed as %+v", bad, f)
		}
	}
}
