package extract

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"sort"
	"strings"
	"time"
)

// maxFeedTimes bounds the item times FeedTimes returns (the newest), so a
// feed of thousands of items cannot bloat a result.
const maxFeedTimes = 200

// FeedTimes reads the item dates of an RSS, Atom or JSON Feed document:
// for each item its latest of pubDate, dc:date, published, updated,
// date_published and date_modified, the time the item was last changed.
// They are the feed's own account of when it was updated, exact where a
// page's Last-Modified is at best the last change (Ashish, Kulkarni &
// Wang's update times; docs/design.md §3.5). It reports ok = false when the
// body is not a feed; items without a date are left out (a new one shows
// only as a change of the document). Times are returned newest first, at
// most maxFeedTimes. It never panics on malformed input.
//
// The standard library's decoders are enough here: only dates are read,
// and a full feed library would add a dependency for fields nobody uses.
func FeedTimes(body []byte) (times []time.Time, ok bool) {
	trimmed := bytes.TrimLeft(body, " \t\r\n\ufeff")
	trimmed = bytes.TrimPrefix(trimmed, []byte("\xef\xbb\xbf"))
	switch {
	case len(trimmed) == 0:
		return nil, false
	case trimmed[0] == '{':
		times, ok = jsonFeedTimes(trimmed)
	case trimmed[0] == '<':
		times, ok = xmlFeedTimes(trimmed)
	default:
		return nil, false
	}
	if !ok {
		return nil, false
	}
	sort.Slice(times, func(i, j int) bool { return times[i].After(times[j]) })
	if len(times) > maxFeedTimes {
		times = times[:maxFeedTimes]
	}
	return times, true
}

// jsonFeedTimes reads JSON Feed 1.x (https://jsonfeed.org/version/1.1).
func jsonFeedTimes(body []byte) ([]time.Time, bool) {
	var doc struct {
		Version string `json:"version"`
		Items   []struct {
			Published string `json:"date_published"`
			Modified  string `json:"date_modified"`
		} `json:"items"`
	}
	if err := json.Unmarshal(body, &doc); err != nil || !strings.Contains(doc.Version, "jsonfeed.org") {
		return nil, false
	}
	var out []time.Time
	for _, it := range doc.Items {
		if t, ok := latest(it.Published, it.Modified); ok {
			out = append(out, t)
		}
	}
	return out, true
}

// xmlFeedTimes reads RSS 0.9x/2.0, RSS 1.0 (RDF) and Atom with a streaming
// decoder: an item (RSS) or entry (Atom) opens a record, its date elements
// fill it, its end closes it.
func xmlFeedTimes(body []byte) ([]time.Time, bool) {
	d := xml.NewDecoder(bytes.NewReader(body))
	d.Strict = false
	d.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) {
		return r, nil // dates are ASCII whatever the encoding
	}
	d.Entity = xml.HTMLEntity
	var (
		out    []time.Time
		isFeed bool
		depth  int // inside an item/entry: its depth, else 0
		level  int
		dates  []string
		field  string
		text   strings.Builder
	)
	for range 1 << 20 { // bounded: a token per step
		tok, err := d.Token()
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			if !isFeed {
				return nil, false
			}
			break // keep what a truncated feed gave
		}
		switch t := tok.(type) {
		case xml.StartElement:
			level++
			name := strings.ToLower(t.Name.Local)
			switch {
			case level == 1:
				isFeed = name == "rss" || name == "feed" || name == "rdf"
				if !isFeed {
					return nil, false
				}
			case depth == 0 && (name == "item" || name == "entry"):
				depth, dates = level, dates[:0]
			case depth > 0 && level == depth+1 && isDateField(name):
				field = name
				text.Reset()
			}
		case xml.CharData:
			if field != "" && text.Len() < 256 {
				text.Write(t)
			}
		case xml.EndElement:
			if field != "" && level == depth+1 {
				dates = append(dates, strings.TrimSpace(text.String()))
				field = ""
			}
			if depth > 0 && level == depth {
				if t, ok := latest(dates...); ok {
					out = append(out, t)
				}
				depth = 0
			}
			level--
		}
	}
	return out, isFeed
}

func isDateField(name string) bool {
	switch name {
	case "pubdate", "date", "published", "updated", "issued", "modified":
		return true
	}
	return false
}

// latest parses the given dates and returns the latest that parses.
func latest(dates ...string) (time.Time, bool) {
	var best time.Time
	ok := false
	for _, s := range dates {
		if t, good := parseFeedDate(s); good && (!ok || t.After(best)) {
			best, ok = t, true
		}
	}
	return best, ok
}

// feedLayouts are the date forms feeds use: RFC 3339 (Atom, JSON Feed,
// dc:date) and the RFC 822/1123 family of RSS, with the variants seen in
// the wild (no weekday, single-digit day, two-digit year, zone names).
var feedLayouts = []string{
	time.RFC3339Nano,
	time.RFC3339,
	"2006-01-02T15:04:05Z0700",
	"2006-01-02T15:04Z07:00",
	"2006-01-02 15:04:05Z07:00",
	"2006-01-02 15:04:05",
	"2006-01-02",
	time.RFC1123Z,
	time.RFC1123,
	"Mon, 2 Jan 2006 15:04:05 -0700",
	"Mon, 2 Jan 2006 15:04:05 MST",
	"Mon, 02 Jan 2006 15:04 -0700",
	"Mon, 2 Jan 2006 15:04 MST",
	"Mon, 02 Jan 06 15:04:05 -0700",
	"Mon, 02 Jan 06 15:04:05 MST",
	"02 Jan 2006 15:04:05 -0700",
	"2 Jan 2006 15:04:05 -0700",
	"02 Jan 2006 15:04:05 MST",
	"2 Jan 2006 15:04:05 MST",
	time.RFC822Z,
	time.RFC822,
}

func parseFeedDate(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > 64 {
		return time.Time{}, false
	}
	for _, l := range feedLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}
