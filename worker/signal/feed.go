package signal

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/mmcdole/gofeed"
)

// Feed is what one RSS, Atom or JSON feed lists.
type Feed struct {
	// Format is "rss", "atom" or "json".
	Format string
	// Updated is the feed's own updated (or published) time, zero when
	// it gives none.
	Updated time.Time
	// Entries are the items' links with their updated time (the
	// published time when an item has no updated one), in the feed's
	// order. An item whose link an earlier item already listed is merged
	// into it, keeping the later time.
	Entries []Entry
	// Skipped counts the items left out, by reason: no link, not an
	// absolute http(s) url, url too long, duplicate (merged).
	Skipped map[string]int
	// Ignored counts the items kept without a time because theirs did not
	// parse: updated.
	Ignored map[string]int
	// Truncated says the feed listed more items than the entry limit;
	// the first ones are kept.
	Truncated string
	// Bytes is how many bytes were read.
	Bytes int64
}

// Feed reads an RSS (0.9x, 1.0, 2.0), Atom (0.3, 1.0) or JSON Feed
// document from r with github.com/mmcdole/gofeed, which knows the many
// date formats and link conventions feeds use in the wild. feedURL
// resolves relative links. Items may link to any host: a feed that
// announces changes of another site's pages is still a signal about
// them, and the coordinator uses an entry only for URLs it crawls. A feed
// longer than MaxFeedBytes is refused with ErrTooLarge.
func (p *Parser) Feed(r io.Reader, feedURL string) (f *Feed, err error) {
	base, err := url.Parse(feedURL)
	if err != nil {
		return nil, fmt.Errorf("feed %q: %w", feedURL, err)
	}
	cr := &capReader{r: r, left: p.opts.MaxFeedBytes}
	defer func() {
		// gofeed is not ours to fix: a panic on a hostile document is a
		// bad feed, not a dead worker.
		if v := recover(); v != nil {
			f, err = nil, fmt.Errorf("feed %s: parser failed: %v", feedURL, v)
		}
	}()
	doc, err := gofeed.NewParser().Parse(cr)
	if cr.hit {
		return nil, fmt.Errorf("feed %s: %w (%d bytes)", feedURL, ErrTooLarge, p.opts.MaxFeedBytes)
	}
	if err != nil {
		if errors.Is(err, gofeed.ErrFeedTypeNotDetected) {
			return nil, fmt.Errorf("feed %s: not an RSS, Atom or JSON feed", feedURL)
		}
		return nil, fmt.Errorf("feed %s: %w", feedURL, err)
	}
	if doc.FeedType == "json" && !strings.HasPrefix(doc.FeedVersion, "https://jsonfeed.org/version/") {
		// Any JSON object passes gofeed's detection: a JSON API's answer
		// is not a feed that lists nothing.
		return nil, fmt.Errorf("feed %s: JSON without a JSON Feed version", feedURL)
	}
	f = &Feed{Format: doc.FeedType, Skipped: map[string]int{}, Ignored: map[string]int{}, Bytes: cr.read}
	f.Updated = firstTime(doc.UpdatedParsed, doc.PublishedParsed)
	at := map[string]int{} // URL → index in f.Entries
	for _, it := range doc.Items {
		if it == nil {
			continue
		}
		link := strings.TrimSpace(it.Link)
		if link == "" && len(it.Links) > 0 {
			link = strings.TrimSpace(it.Links[0])
		}
		if link == "" {
			f.Skipped[reasonNoLink]++
			continue
		}
		u, err := base.Parse(link)
		switch {
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			f.Skipped[reasonBadURL]++
			continue
		case len(u.String()) >= maxURLLength:
			f.Skipped[reasonLong]++
			continue
		}
		e := Entry{URL: u.String(), Priority: -1, LastMod: firstTime(it.UpdatedParsed, it.PublishedParsed)}
		if e.LastMod.IsZero() && (it.Updated != "" || it.Published != "") {
			f.Ignored[fieldUpdated]++
		}
		if i, ok := at[e.URL]; ok {
			f.Skipped[reasonDuplicate]++
			if e.LastMod.After(f.Entries[i].LastMod) {
				f.Entries[i].LastMod = e.LastMod
			}
			continue
		}
		if len(f.Entries) == p.opts.MaxEntries {
			f.Truncated = fmt.Sprintf("over %d entries", p.opts.MaxEntries)
			break
		}
		at[e.URL] = len(f.Entries)
		f.Entries = append(f.Entries, e)
	}
	return f, nil
}

// firstTime is the first of ts that is set, in UTC, or the zero time.
func firstTime(ts ...*time.Time) time.Time {
	for _, t := range ts {
		if t != nil && !t.IsZero() {
			return t.UTC()
		}
	}
	return time.Time{}
}
