package extract

import (
	"strings"
	"testing"
	"time"
)

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	x, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// Each feed format gives its items' dates, the latest date of an item
// when it has several, newest first; items without a date are left out.
func TestFeedTimes(t *testing.T) {
	cases := []struct {
		name, body string
		want       []string
	}{
		{"rss 2.0", `<?xml version="1.0" encoding="ISO-8859-1"?>
<rss version="2.0"><channel><title>News</title><pubDate>Mon, 02 Jan 2006 00:00:00 GMT</pubDate>
<item><title>a</title><pubDate>Tue, 10 Jun 2003 04:00:00 GMT</pubDate></item>
<item><title>b &amp; c</title><pubDate>Tue, 10 Jun 2003 09:41:01 +0200</pubDate></item>
<item><title>no date</title></item>
</channel></rss>`, []string{"2003-06-10T07:41:01Z", "2003-06-10T04:00:00Z"}},
		{"atom", `<feed xmlns="http://www.w3.org/2005/Atom"><updated>2024-01-01T00:00:00Z</updated>
<entry><title>x</title><published>2024-03-01T10:00:00Z</published><updated>2024-03-02T11:30:00+01:00</updated></entry>
<entry><title>y</title><updated>2024-02-01T00:00:00Z</updated></entry></feed>`, []string{"2024-03-02T10:30:00Z", "2024-02-01T00:00:00Z"}},
		{"rss 1.0 with dc:date", `<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/" xmlns:dc="http://purl.org/dc/elements/1.1/">
<channel><title>t</title></channel><item><title>i</title><dc:date>2020-05-05T05:05:05Z</dc:date></item></rdf:RDF>`, []string{"2020-05-05T05:05:05Z"}},
		{"json feed", `{"version":"https://jsonfeed.org/version/1.1","title":"j","items":[
{"id":"1","date_published":"2021-01-01T00:00:00Z"},{"id":"2","date_published":"2021-01-01T00:00:00Z","date_modified":"2021-02-01T00:00:00Z"},{"id":"3"}]}`,
			[]string{"2021-02-01T00:00:00Z", "2021-01-01T00:00:00Z"}},
	}
	for _, c := range cases {
		got, ok := FeedTimes([]byte(c.body))
		if !ok {
			t.Errorf("%s: not read as a feed", c.name)
			continue
		}
		if len(got) != len(c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
			continue
		}
		for i := range got {
			if w := mustTime(t, c.want[i]); !got[i].Equal(w) {
				t.Errorf("%s: item %d at %v, want %v", c.name, i, got[i], w)
			}
		}
	}
}

// Pages that are not feeds are said so, whatever they hold.
func TestFeedTimesNotAFeed(t *testing.T) {
	for _, body := range []string{"", "plain text", "<html><body><item><pubDate>Tue, 10 Jun 2003 04:00:00 GMT</pubDate></item></body></html>",
		`{"items":[{"date_published":"2021-01-01T00:00:00Z"}]}`, "<", "{"} {
		if ts, ok := FeedTimes([]byte(body)); ok {
			t.Errorf("%q read as a feed: %v", body, ts)
		}
	}
}

// A huge feed yields its newest maxFeedTimes dates.
func TestFeedTimesBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString(`<rss><channel>`)
	base := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 3 * maxFeedTimes {
		b.WriteString("<item><pubDate>" + base.Add(time.Duration(i)*time.Hour).Format(time.RFC1123Z) + "</pubDate></item>")
	}
	b.WriteString(`</channel></rss>`)
	got, ok := FeedTimes([]byte(b.String()))
	if !ok || len(got) != maxFeedTimes {
		t.Fatalf("%d times (ok %v), want %d", len(got), ok, maxFeedTimes)
	}
	if want := base.Add(time.Duration(3*maxFeedTimes-1) * time.Hour); !got[0].Equal(want) {
		t.Errorf("newest %v, want %v", got[0], want)
	}
}

func FuzzFeedTimes(f *testing.F) {
	for _, s := range []string{
		"", "<rss><channel><item><pubDate>Tue, 10 Jun 2003 04:00:00 GMT</pubDate></item></channel></rss>",
		`<feed><entry><updated>2024-03-02T11:30:00+01:00</updated></entry></feed>`,
		`{"version":"https://jsonfeed.org/version/1","items":[{"date_modified":"2021-02-01T00:00:00Z"}]}`,
		"<rss><item><item><pubDate>", "<feed><entry><updated>\xff</updated>", `{"version":"jsonfeed.org","items":[{}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		times, ok := FeedTimes(body)
		if !ok && len(times) > 0 {
			t.Fatalf("not a feed but %d times", len(times))
		}
		if len(times) > maxFeedTimes {
			t.Fatalf("%d times, bound %d", len(times), maxFeedTimes)
		}
		for i := 1; i < len(times); i++ {
			if times[i].After(times[i-1]) {
				t.Fatalf("times not newest first: %v", times)
			}
		}
	})
}
