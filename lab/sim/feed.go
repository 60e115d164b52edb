package sim

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// feedContentType is the media type a page is served with.
func feedContentType(feed string) string {
	switch feed {
	case "rss":
		return "application/rss+xml; charset=utf-8"
	case "atom":
		return "application/atom+xml; charset=utf-8"
	case "json":
		return "application/feed+json; charset=utf-8"
	}
	return "text/html; charset=utf-8"
}

// renderFeed returns page's feed after the given changes (offsets from
// epoch, oldest first): one item per version, dated with the exact time
// of the change that made it, the newest feedItems listed. The item dates
// are the truth a crawler reading the feed can recover exactly (to the
// second for RSS's RFC 1123 dates).
func renderFeed(kind string, seed uint64, vocab []string, page int, epoch time.Time, changes []time.Duration) []byte {
	type item struct {
		id, title string
		at        time.Time
	}
	var items []item
	for v := len(changes); v >= 1 && len(items) < feedItems; v-- {
		r := rand.New(rand.NewPCG(splitmix(seed^0xfeed), splitmix(uint64(page)<<32|uint64(uint32(v)))))
		w := make([]string, 5)
		for i := range w {
			w[i] = vocab[r.IntN(len(vocab))]
		}
		items = append(items, item{id: fmt.Sprintf("p%d-v%d", page, v), title: strings.Join(w, " "), at: epoch.Add(changes[v-1]).UTC()})
	}
	var b bytes.Buffer
	esc := func(s string) string {
		var e bytes.Buffer
		_ = xml.EscapeText(&e, []byte(s))
		return e.String()
	}
	switch kind {
	case "rss":
		fmt.Fprintf(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<rss version=\"2.0\"><channel><title>Feed %d</title><link>/p/%d</link>\n", page, page)
		for _, it := range items {
			fmt.Fprintf(&b, "<item><guid>%s</guid><title>%s</title><pubDate>%s</pubDate></item>\n", it.id, esc(it.title), it.at.Format(time.RFC1123Z))
		}
		b.WriteString("</channel></rss>\n")
	case "atom":
		fmt.Fprintf(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<feed xmlns=\"http://www.w3.org/2005/Atom\"><title>Feed %d</title><id>urn:sim:%d</id>\n", page, page)
		for _, it := range items {
			fmt.Fprintf(&b, "<entry><id>urn:sim:%s</id><title>%s</title><updated>%s</updated></entry>\n", it.id, esc(it.title), it.at.Format(time.RFC3339Nano))
		}
		b.WriteString("</feed>\n")
	case "json":
		type jitem struct {
			ID        string `json:"id"`
			Title     string `json:"title"`
			Published string `json:"date_published"`
		}
		doc := struct {
			Version string  `json:"version"`
			Title   string  `json:"title"`
			Items   []jitem `json:"items"`
		}{Version: "https://jsonfeed.org/version/1.1", Title: fmt.Sprintf("Feed %d", page), Items: []jitem{}}
		for _, it := range items {
			doc.Items = append(doc.Items, jitem{ID: it.id, Title: it.title, Published: it.at.Format(time.RFC3339Nano)})
		}
		out, _ := json.Marshal(doc) // plain strings: cannot fail
		b.Write(out)
	}
	return b.Bytes()
}
