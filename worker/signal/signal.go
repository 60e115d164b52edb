// Package signal reads what sites publish about their own changes:
// sitemaps (the sitemaps.org protocol: a urlset or a sitemap index, plain
// or gzipped, with <lastmod>, <changefreq> and <priority>), RSS, Atom and
// JSON feeds (each entry's link and its updated or published time), and
// the freshness lifetime a response's caching headers claim (RFC 9111
// §4.2.1). The worker fetches; this package only parses, so it can be
// tested and fuzzed on bytes alone.
//
// Nothing here trusts what it reads: the coordinator learns how far each
// site's signals agree with the changes it observes. What the parsers
// guarantee is that hostile or broken input costs bounded memory and time
// and never a panic: a sitemap is read as a stream of XML tokens, never as
// a tree, and cut at the protocol's limits (50 000 URLs, 50 MB
// uncompressed), an entry that cannot be used is skipped and counted by
// reason, and a field that cannot be read is dropped from its entry and
// counted.
package signal

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/freshcrawl/freshcrawl/internal/optcheck"
)

// The sitemaps.org protocol's limits for one file.
const (
	maxSitemapURLs  = 50_000
	maxSitemapBytes = 52_428_800 // 50 MB, uncompressed
	// maxURLLength: the protocol's URLs are "less than 2,048 characters".
	maxURLLength = 2048
)

// Options bound what one file may hold. Start from DefaultOptions: every
// field is taken as it is, and NewParser refuses what Validate refuses.
type Options struct {
	// MaxEntries is the most entries kept from one sitemap or feed; an
	// entry past it marks the file truncated. The protocol's limit for a
	// sitemap is 50 000.
	MaxEntries int
	// MaxSitemapBytes is the most uncompressed bytes of a sitemap read;
	// the protocol's limit is 50 MB (52 428 800 bytes). The entries read
	// before the cut are kept and the file is marked truncated.
	MaxSitemapBytes int64
	// MaxFeedBytes is the most bytes of a feed read. A feed is parsed
	// whole (a JSON document cannot be read in part), so a longer one is
	// refused with ErrTooLarge.
	MaxFeedBytes int64
}

// DefaultOptions are the protocol's limits, and 10 MiB for a feed: real
// feeds list their latest few dozen items in well under a megabyte.
func DefaultOptions() Options {
	return Options{MaxEntries: maxSitemapURLs, MaxSitemapBytes: maxSitemapBytes, MaxFeedBytes: 10 << 20}
}

// Validate reports every field NewParser would refuse, each by its name.
func (o Options) Validate() error {
	var errs optcheck.Errors
	if o.MaxEntries <= 0 {
		errs.Check("MaxEntries", fmt.Errorf("must be > 0, got %d", o.MaxEntries))
	}
	if o.MaxSitemapBytes <= 0 {
		errs.Check("MaxSitemapBytes", fmt.Errorf("must be > 0, got %d", o.MaxSitemapBytes))
	}
	if o.MaxFeedBytes <= 0 {
		errs.Check("MaxFeedBytes", fmt.Errorf("must be > 0, got %d", o.MaxFeedBytes))
	}
	return errs.Err()
}

// Parser reads sitemaps and feeds under its Options. It holds no state
// between calls and is safe for concurrent use.
type Parser struct {
	opts Options
}

// NewParser returns a Parser, or Validate's error.
func NewParser(o Options) (*Parser, error) {
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("signal options: %w", err)
	}
	return &Parser{opts: o}, nil
}

// Entry is one URL a sitemap or feed lists, with what it says of the
// URL's last change.
type Entry struct {
	// URL is absolute, http or https, as the file wrote it (entities
	// decoded, spaces around it trimmed).
	URL string
	// LastMod is when the file says the URL last changed, in UTC; zero
	// when it does not say (or says it in a form that does not parse).
	LastMod time.Time
	// LastModSpan is how much LastMod's form leaves open: the change
	// happened in [LastMod, LastMod+LastModSpan). A second for a time to
	// the second, a minute for hh:mm, a day for a date alone, a month or
	// a year for those forms, less for fractions of a second. A form
	// without a zone is read in UTC, so the site's own zone may move it
	// by up to 14 hours. 0 for a feed's times, whose precision is not
	// known.
	LastModSpan time.Duration
	// ChangeFreq is a sitemap's <changefreq>, lower case: always, hourly,
	// daily, weekly, monthly, yearly or never; "" when absent.
	ChangeFreq string
	// Priority is a sitemap's <priority> in [0, 1], or -1 when the entry
	// gives none (the protocol then reads it as 0.5).
	Priority float64
}

// Reasons an entry is skipped, the keys of Skipped.
const (
	reasonNoLoc     = "no loc"
	reasonNoLink    = "no link"
	reasonBadURL    = "not an absolute http(s) url"
	reasonLong      = "url too long"
	reasonOtherHost = "other host"
	reasonDuplicate = "duplicate"
)

// Fields dropped from a kept entry, the keys of Ignored.
const (
	fieldLastMod    = "lastmod"
	fieldChangeFreq = "changefreq"
	fieldPriority   = "priority"
	fieldUpdated    = "updated"
)

// ErrTooLarge is returned for a feed longer than Options.MaxFeedBytes.
var ErrTooLarge = errors.New("file over the size limit")

// capReader reads at most left bytes of r. When r holds more, it sets hit
// and reports the end, so a parser sees a file cut at the limit and the
// caller can tell the cut from the file's own end.
type capReader struct {
	r    io.Reader
	left int64
	hit  bool
	read int64
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		var one [1]byte
		n, err := io.ReadFull(c.r, one[:])
		if n > 0 {
			c.hit = true
			return 0, io.EOF
		}
		if err == io.ErrUnexpectedEOF {
			err = io.EOF
		}
		return 0, err
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	c.read += int64(n)
	return n, err
}
