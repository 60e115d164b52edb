package proto

import (
	"maps"
	"math"
	"slices"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// The kinds of task that fetch what a site publishes about its changes.
// They are fetched as politely as a page (robots.txt, the host's gap and
// the conditional request from the task's validators), and their results
// carry the parsed entries in Result.Signal instead of a page's text.
const (
	// KindSitemap fetches a sitemap (sitemaps.org): a urlset's pages or
	// a sitemap index's child sitemaps, each with its lastmod.
	KindSitemap Kind = "sitemap"
	// KindFeed fetches an RSS, Atom or JSON feed: its items' links and
	// their updated times.
	KindFeed Kind = "feed"
)

// IsSignal reports whether k is a sitemap or a feed task, whose results
// are not pages to fold but evidence about other URLs.
func (k Kind) IsSignal() bool { return k == KindSitemap || k == KindFeed }

// SignalResult is what a sitemap or feed task found, on Result.Signal.
//
// A file of many entries would not fit one NATS message (1 MiB by
// default; a full sitemap lists 50 000 URLs, several MB), so the worker
// splits its result into chunks (SplitSignal): each a whole Result with
// the same task id and header fields, chunk Seq of a sequence whose Last
// chunk says so, each holding its share of Entries and Sitemaps in the
// file's order; the file's Skipped, Ignored, Truncated, Cache and Robots
// travel on chunk 0 only. Chunking rather than filtering by a time lets
// a first fetch, and every fetch of a file whose entries have no
// lastmod, deliver the whole list, which a receiver needs to tell URLs
// that left the file. Each chunk is published with a message id of its
// fetch and sequence (worker: r-<task id>/<fetch start>/<seq>), so a
// receiver may see a task fetched twice (redelivered, or handed back by
// a stopping worker) as two sequences of chunks, which may list other
// entries: a receiver assembling the whole list groups chunks by task id
// and StartedAt, which every chunk of one fetch shares.
//
// A page task's result carries a SignalResult too when its robots.txt
// check fetched the host's robots.txt: then only Robots is set, and Last.
type SignalResult struct {
	// Format is "urlset" or "sitemapindex" for a sitemap, "rss", "atom"
	// or "json" for a feed; "" when nothing was parsed (a failed fetch,
	// a 304).
	Format string `json:"format,omitempty"`
	// Seq numbers the chunks of one result from 0; Last marks the final
	// one; Total is the number of Entries and Sitemaps over all chunks.
	Seq   int  `json:"seq"`
	Last  bool `json:"last"`
	Total int  `json:"total"`
	// Entries are a urlset's pages or a feed's items, this chunk's share.
	Entries []SignalEntry `json:"entries,omitempty"`
	// Sitemaps are a sitemap index's child sitemaps, this chunk's share.
	Sitemaps []SignalEntry `json:"sitemaps,omitempty"`
	// Skipped counts the file's entries left out, by reason; Ignored the
	// fields dropped from kept entries, by field (worker/signal says
	// which).
	Skipped map[string]int `json:"skipped,omitempty"`
	Ignored map[string]int `json:"ignored,omitempty"`
	// Truncated says why the file was read only in part (the protocol's
	// 50 000 entries or 50 MB, or the XML breaking off): its later
	// entries are unknown, not absent.
	Truncated string `json:"truncated,omitempty"`
	// Updated is a feed's own updated time.
	Updated time.Time `json:"updated,omitzero"`
	// Cache is what the file's caching headers claim, nil when nothing.
	Cache *CacheClaim `json:"cache,omitempty"`
	// Robots are the Sitemap: lines of the host's robots.txt: on every
	// sitemap and feed result, and on a page result whose check fetched
	// robots.txt.
	Robots []string `json:"robots,omitempty"`
}

// SignalEntry is one URL a sitemap or feed lists.
type SignalEntry struct {
	URL string `json:"url"`
	// LastMod is when the file says the URL last changed; zero when it
	// does not. The change lies in [LastMod, LastMod+LastModSpan): the
	// span is what the date's form leaves open (a day for a date alone),
	// 0 when unknown.
	LastMod     time.Time     `json:"lastmod,omitzero"`
	LastModSpan time.Duration `json:"lastmod_span,omitempty"`
	// ChangeFreq is a sitemap's <changefreq>, lower case, "" when none.
	ChangeFreq string `json:"changefreq,omitempty"`
	// Priority is a sitemap's <priority> in [0, 1], or -1 when none.
	Priority float64 `json:"priority"`
}

// CacheClaim is the freshness lifetime a response's caching headers
// claim (RFC 9111 §4.2.1): Lifetime from From (no-store, no-cache,
// max-age, s-maxage or expires), of which Age had passed in caches.
type CacheClaim struct {
	Lifetime       time.Duration `json:"lifetime"`
	Age            time.Duration `json:"age,omitempty"`
	From           string        `json:"from"`
	NoStore        bool          `json:"no_store,omitempty"`
	NoCache        bool          `json:"no_cache,omitempty"`
	MustRevalidate bool          `json:"must_revalidate,omitempty"`
}

// SplitSignal splits r into the chunks SignalResult describes, each of
// which encodes to at most maxBytes (a single entry larger than what is
// left after the header still goes, alone, in a chunk of its own). A
// result without Signal, or whose entries fit, is one chunk, marked Seq 0
// and Last.
func SplitSignal(r Result, maxBytes int) []Result {
	s := r.Signal
	if s == nil {
		return []Result{r}
	}
	all := make([]SignalEntry, 0, len(s.Entries)+len(s.Sitemaps))
	all = append(append(all, s.Entries...), s.Sitemaps...)
	nEntries := len(s.Entries)
	meta := *s
	meta.Entries, meta.Sitemaps = nil, nil
	meta.Seq, meta.Total, meta.Last = math.MaxInt32, len(all), true
	head := r
	head.Signal = &meta
	room := maxBytes - len(encodeResult(&head)) - 16 // the Signal field's longer length prefix
	bare := meta
	bare.Skipped, bare.Ignored, bare.Truncated, bare.Cache, bare.Robots = nil, nil, "", nil, nil
	var chunks []Result
	for start := 0; start == 0 || start < len(all); {
		end, size := start, 0
		for end < len(all) {
			n := entrySize(&all[end])
			if end > start && size+n > room {
				break
			}
			size += n
			end++
		}
		sig := meta
		if start > 0 {
			sig = bare
		}
		sig.Seq, sig.Last = len(chunks), end == len(all)
		// Entries come first in the file's order, then sitemaps; a chunk
		// may hold the end of one and the start of the other.
		sig.Entries = all[min(start, nEntries):min(end, nEntries)]
		sig.Sitemaps = all[max(start, nEntries):max(end, nEntries)]
		if len(sig.Entries) == 0 {
			sig.Entries = nil
		}
		if len(sig.Sitemaps) == 0 {
			sig.Sitemaps = nil
		}
		c := r
		c.Signal = &sig
		chunks = append(chunks, c)
		if end == len(all) {
			break
		}
		start = end
	}
	return chunks
}

// Field numbers of the signal messages. Result's own is 40, apart from
// the numbers a page result's fields take one by one.
const (
	rfSignal = 40

	sfFormat    = 1
	sfSeq       = 2
	sfLast      = 3
	sfTotal     = 4
	sfEntries   = 5
	sfSitemaps  = 6
	sfSkipped   = 7
	sfIgnored   = 8
	sfTruncated = 9
	sfUpdated   = 10
	sfCache     = 11
	sfRobots    = 12

	efURL         = 1
	efLastMod     = 2
	efLastModSpan = 3
	efChangeFreq  = 4
	efPriority    = 5

	cfLifetime       = 1
	cfAge            = 2
	cfFrom           = 3
	cfNoStore        = 4
	cfNoCache        = 5
	cfMustRevalidate = 6

	kfKey   = 1
	kfValue = 2
)

// entrySize is the bytes e takes in an encoded result: tag, length and
// body.
func entrySize(e *SignalEntry) int {
	var m enc
	encodeEntry(&m, e)
	return protowire.SizeTag(sfEntries) + protowire.SizeBytes(len(m.b))
}

func encodeSignal(e *enc, s *SignalResult) {
	e.message(rfSignal, func(m *enc) {
		m.str(sfFormat, s.Format)
		m.int(sfSeq, int64(s.Seq))
		m.bool(sfLast, s.Last)
		m.int(sfTotal, int64(s.Total))
		for i := range s.Entries {
			m.message(sfEntries, func(x *enc) { encodeEntry(x, &s.Entries[i]) })
		}
		for i := range s.Sitemaps {
			m.message(sfSitemaps, func(x *enc) { encodeEntry(x, &s.Sitemaps[i]) })
		}
		encodeCounts(m, sfSkipped, s.Skipped)
		encodeCounts(m, sfIgnored, s.Ignored)
		m.str(sfTruncated, s.Truncated)
		m.time(sfUpdated, s.Updated)
		if c := s.Cache; c != nil {
			m.message(sfCache, func(x *enc) {
				x.int(cfLifetime, int64(c.Lifetime))
				x.int(cfAge, int64(c.Age))
				x.str(cfFrom, c.From)
				x.bool(cfNoStore, c.NoStore)
				x.bool(cfNoCache, c.NoCache)
				x.bool(cfMustRevalidate, c.MustRevalidate)
			})
		}
		for _, u := range s.Robots {
			m.b = protowire.AppendTag(m.b, sfRobots, protowire.BytesType)
			m.b = protowire.AppendString(m.b, u)
		}
	})
}

func encodeEntry(x *enc, e *SignalEntry) {
	x.str(efURL, e.URL)
	x.time(efLastMod, e.LastMod)
	x.int(efLastModSpan, int64(e.LastModSpan))
	x.str(efChangeFreq, e.ChangeFreq)
	// A priority of 0 is one; no priority is no field (decoded as -1),
	// which most entries are.
	if e.Priority >= 0 {
		x.b = protowire.AppendTag(x.b, efPriority, protowire.Fixed64Type)
		x.b = protowire.AppendFixed64(x.b, math.Float64bits(e.Priority))
	}
}

// encodeCounts writes a map as key/value messages sorted by key, so a
// result encodes to the same bytes every time.
func encodeCounts(m *enc, num protowire.Number, counts map[string]int) {
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		m.message(num, func(x *enc) {
			x.str(kfKey, k)
			x.int(kfValue, int64(counts[k]))
		})
	}
}

func decodeSignal(d *dec) *SignalResult {
	s := &SignalResult{}
	for num, typ, ok := d.next(); ok; num, typ, ok = d.next() {
		switch num {
		case sfFormat:
			s.Format = d.str(num, typ)
		case sfSeq:
			s.Seq = d.int(num, typ)
		case sfLast:
			s.Last = d.bool(num, typ)
		case sfTotal:
			s.Total = d.int(num, typ)
		case sfEntries, sfSitemaps:
			m := d.nested(num, typ)
			e := decodeEntry(m)
			d.done(num, m)
			if num == sfEntries {
				s.Entries = append(s.Entries, e)
			} else {
				s.Sitemaps = append(s.Sitemaps, e)
			}
		case sfSkipped:
			s.Skipped = decodeCount(d, num, typ, s.Skipped)
		case sfIgnored:
			s.Ignored = decodeCount(d, num, typ, s.Ignored)
		case sfTruncated:
			s.Truncated = d.str(num, typ)
		case sfUpdated:
			s.Updated = d.time(num, typ)
		case sfCache:
			m := d.nested(num, typ)
			s.Cache = decodeCache(m)
			d.done(num, m)
		case sfRobots:
			s.Robots = append(s.Robots, d.str(num, typ))
		default:
			d.skip(num, typ)
		}
	}
	return s
}

func decodeEntry(d *dec) SignalEntry {
	e := SignalEntry{Priority: -1}
	for num, typ, ok := d.next(); ok; num, typ, ok = d.next() {
		switch num {
		case efURL:
			e.URL = d.str(num, typ)
		case efLastMod:
			e.LastMod = d.time(num, typ)
		case efLastModSpan:
			e.LastModSpan = time.Duration(d.int64(num, typ))
		case efChangeFreq:
			e.ChangeFreq = d.str(num, typ)
		case efPriority:
			// Outside [0, 1] (or NaN) is no priority, as the encoder
			// would write it.
			if p := d.float(num, typ); p >= 0 && p <= 1 {
				e.Priority = p
			}
		default:
			d.skip(num, typ)
		}
	}
	return e
}

// decodeCount adds one key/value message to counts, made on first use.
func decodeCount(d *dec, num protowire.Number, typ protowire.Type, counts map[string]int) map[string]int {
	m := d.nested(num, typ)
	var k string
	var v int
	for n, t, ok := m.next(); ok; n, t, ok = m.next() {
		switch n {
		case kfKey:
			k = m.str(n, t)
		case kfValue:
			v = m.int(n, t)
		default:
			m.skip(n, t)
		}
	}
	d.done(num, m)
	if counts == nil {
		counts = map[string]int{}
	}
	counts[k] = v
	return counts
}

func decodeCache(d *dec) *CacheClaim {
	c := &CacheClaim{}
	for num, typ, ok := d.next(); ok; num, typ, ok = d.next() {
		switch num {
		case cfLifetime:
			c.Lifetime = time.Duration(d.int64(num, typ))
		case cfAge:
			c.Age = time.Duration(d.int64(num, typ))
		case cfFrom:
			c.From = d.str(num, typ)
		case cfNoStore:
			c.NoStore = d.bool(num, typ)
		case cfNoCache:
			c.NoCache = d.bool(num, typ)
		case cfMustRevalidate:
			c.MustRevalidate = d.bool(num, typ)
		default:
			d.skip(num, typ)
		}
	}
	return c
}
