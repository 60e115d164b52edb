package sim

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// What the sim's hosts publish about their pages' changes: a sitemap
// (/sitemap.xml, named in robots.txt), an Atom feed of recent changes
// (/feed.xml) and Cache-Control on every page, each as honest or as
// misleading as Config.Signals says. Every signal is computed from the
// pages' own change times (schedule.go), the truth that ChangeTimes and
// the freshness integral read, so how far a crawler can believe it is
// measurable.

// SitemapMode is how a host's sitemap reports its pages' last changes.
type SitemapMode uint8

const (
	// SitemapAbsent: no sitemap (404) and no Sitemap: line.
	SitemapAbsent SitemapMode = iota
	// SitemapAccurate: each page's lastmod is its true last change (the
	// epoch for a page that has not changed), to the nanosecond.
	SitemapAccurate
	// SitemapLate: the sitemap is regenerated late: a change shows only
	// Signals.SitemapLagDays after it happened.
	SitemapLate
	// SitemapPartial: half the pages (every other page of the host; the
	// change classes are assigned by a permutation of their own, so the
	// halves are alike) carry their true lastmod, the others none.
	SitemapPartial
	// SitemapLyingNow: every lastmod is the time of the response.
	SitemapLyingNow
	// SitemapStale: the sitemap was generated at the epoch and never
	// again: every lastmod is the epoch, whatever changed since.
	SitemapStale
)

// ParseSitemapMode is the mode String names.
func ParseSitemapMode(s string) (SitemapMode, error) {
	for m := SitemapAbsent; m <= SitemapStale; m++ {
		if m.String() == s {
			return m, nil
		}
	}
	return SitemapAbsent, fmt.Errorf("sitemap mode %q: want absent, accurate, late, partial, lying-now or stale", s)
}

// String is the mode's name as the bench and tests print it.
func (m SitemapMode) String() string {
	switch m {
	case SitemapAbsent:
		return "absent"
	case SitemapAccurate:
		return "accurate"
	case SitemapLate:
		return "late"
	case SitemapPartial:
		return "partial"
	case SitemapLyingNow:
		return "lying-now"
	case SitemapStale:
		return "stale"
	}
	return fmt.Sprintf("SitemapMode(%d)", int(m))
}

// CacheMode is how a host's pages fill Cache-Control.
type CacheMode uint8

const (
	// CacheNone: no Cache-Control.
	CacheNone CacheMode = iota
	// CacheHonest: max-age is the page's true mean interval between
	// changes (a year for a page that never changes).
	CacheHonest
	// CacheMeaningless: one max-age for every page whatever it does
	// (Signals.CacheMaxAge: 0, as many dynamic sites send, or a fixed
	// large value).
	CacheMeaningless
)

// String is the mode's name.
func (m CacheMode) String() string {
	switch m {
	case CacheNone:
		return "none"
	case CacheHonest:
		return "honest"
	case CacheMeaningless:
		return "meaningless"
	}
	return fmt.Sprintf("CacheMode(%d)", int(m))
}

// Signals is what a host publishes about its changes. The zero value
// publishes nothing, as the sim always did.
type Signals struct {
	Sitemap SitemapMode
	// SitemapLagDays is how many simulated days a late sitemap lags the
	// changes (default 3).
	SitemapLagDays float64
	// SitemapFileURLs is the most pages one sitemap file lists: a host
	// with more serves /sitemap.xml as a sitemap index of gzipped files
	// /sitemap-1.xml.gz, /sitemap-2.xml.gz, … (default and at most 50 000,
	// the protocol's limit).
	SitemapFileURLs int
	// Feed serves /feed.xml, an Atom feed of the host's FeedEntries most
	// recent changes (default 20), each entry linking the page that
	// changed and dated with the change.
	Feed        bool
	FeedEntries int
	Cache       CacheMode
	// CacheMaxAge is the max-age of CacheMeaningless (whole seconds).
	CacheMaxAge time.Duration
}

const (
	defaultSitemapLagDays = 3
	maxSitemapFileURLs    = 50_000
	defaultFeedEntries    = 20
	// honestNever is an honest max-age for a page that never changes: a
	// year, the most RFC 9111 §5.3 suggests sending.
	honestNever = 365 * 24 * time.Hour
)

func (sg Signals) withDefaults() Signals {
	if sg.SitemapLagDays == 0 {
		sg.SitemapLagDays = defaultSitemapLagDays
	}
	if sg.SitemapFileURLs == 0 {
		sg.SitemapFileURLs = maxSitemapFileURLs
	}
	if sg.FeedEntries == 0 {
		sg.FeedEntries = defaultFeedEntries
	}
	return sg
}

// validate checks sg; name is how errors call it.
func (sg Signals) validate(name string) error {
	switch {
	case sg.Sitemap > SitemapStale:
		return fmt.Errorf("%s.Sitemap = %d: unknown", name, sg.Sitemap)
	case !finiteNonNeg(sg.SitemapLagDays):
		return fmt.Errorf("%s.SitemapLagDays = %v: must be finite and >= 0", name, sg.SitemapLagDays)
	case sg.SitemapFileURLs < 0 || sg.SitemapFileURLs > maxSitemapFileURLs:
		return fmt.Errorf("%s.SitemapFileURLs = %d: must be in 0..%d", name, sg.SitemapFileURLs, maxSitemapFileURLs)
	case sg.FeedEntries < 0:
		return fmt.Errorf("%s.FeedEntries = %d: must be >= 0", name, sg.FeedEntries)
	case sg.Cache > CacheMeaningless:
		return fmt.Errorf("%s.Cache = %d: unknown", name, sg.Cache)
	case sg.CacheMaxAge < 0:
		return fmt.Errorf("%s.CacheMaxAge = %v: must be >= 0", name, sg.CacheMaxAge)
	}
	return nil
}

// validateSignals checks Config.Signals and Config.HostSignals.
func (cfg Config) validateSignals() error {
	if err := cfg.Signals.validate("sim: Config.Signals"); err != nil {
		return err
	}
	for h, sg := range cfg.HostSignals {
		if h < 0 || h >= cfg.Hosts {
			return fmt.Errorf("sim: Config.HostSignals[%d]: no such host (Hosts = %d)", h, cfg.Hosts)
		}
		if err := sg.validate(fmt.Sprintf("sim: Config.HostSignals[%d]", h)); err != nil {
			return err
		}
	}
	return nil
}

// signalsOf is host h's Signals, defaults applied.
func (s *Sim) signalsOf(h int) Signals {
	if sg, ok := s.cfg.HostSignals[h]; ok {
		return sg.withDefaults()
	}
	return s.cfg.Signals.withDefaults()
}

// hostPages are the indexes of host h's pages, in order.
func (s *Sim) hostPages(h int) []int {
	var out []int
	for i := h; i < len(s.pages); i += s.cfg.Hosts {
		out = append(out, i)
	}
	return out
}

// lastChangeAt is the offset of page i's last change at or before off,
// 0 (the epoch) when it has not changed.
func (s *Sim) lastChangeAt(i int, off time.Duration) time.Duration {
	p := s.pages[i]
	p.mu.Lock()
	defer p.mu.Unlock()
	if ver := p.sched.countAt(off); ver > 0 {
		return p.sched.times[ver-1]
	}
	return 0
}

// SitemapLastMod is the lastmod page i's host's sitemap lists for it to
// a request at `at`, and false when it lists none (no sitemap, or a
// partial sitemap's page without one). Its error against ChangeTimes is
// the sitemap's accuracy. It panics if i is out of range.
func (s *Sim) SitemapLastMod(i int, at time.Time) (time.Time, bool) {
	sg := s.signalsOf(i % s.cfg.Hosts)
	off := at.Sub(s.epoch)
	switch sg.Sitemap {
	case SitemapAbsent:
		return time.Time{}, false
	case SitemapLyingNow:
		return at.UTC(), true
	case SitemapStale:
		return s.epoch.UTC(), true
	case SitemapLate:
		lag := time.Duration(sg.SitemapLagDays * float64(s.cfg.Day))
		if off < lag {
			return s.epoch.UTC(), true
		}
		return s.epoch.Add(s.lastChangeAt(i, off-lag)).UTC(), true
	case SitemapPartial:
		if (i/s.cfg.Hosts)%2 != 0 {
			return time.Time{}, false
		}
	}
	return s.epoch.Add(s.lastChangeAt(i, off)).UTC(), true
}

// isSignalPath reports whether path is one serveSignal answers.
func isSignalPath(path string) bool {
	return path == "/sitemap.xml" || path == "/feed.xml" || (strings.HasPrefix(path, "/sitemap-") && strings.HasSuffix(path, ".xml.gz"))
}

// serveSignal serves host h's sitemap, sitemap index files and feed, or
// 404 for what the host does not publish. Each file's ETag is a hash of
// its content, so a sitemap that did not change answers 304.
func (s *Sim) serveSignal(h int, w http.ResponseWriter, r *http.Request, now time.Time, rec *record) {
	sg := s.signalsOf(h)
	var body []byte
	ctype := "application/xml; charset=utf-8"
	switch path := r.URL.Path; {
	case path == "/feed.xml" && sg.Feed:
		body, ctype = s.renderHostFeed(h, sg.FeedEntries, now), "application/atom+xml; charset=utf-8"
	case path == "/sitemap.xml" && sg.Sitemap != SitemapAbsent:
		body = s.renderSitemap(h, sg, now)
	case strings.HasPrefix(path, "/sitemap-") && sg.Sitemap != SitemapAbsent:
		n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(path, "/sitemap-"), ".xml.gz"))
		pages := s.hostPages(h)
		files := (len(pages) + sg.SitemapFileURLs - 1) / sg.SitemapFileURLs
		if err == nil && files > 1 && n >= 1 && n <= files {
			body = s.renderURLSet(pages[(n-1)*sg.SitemapFileURLs:min(n*sg.SitemapFileURLs, len(pages))], now)
			ctype = "application/gzip"
		}
	}
	if body == nil {
		rec.status = http.StatusNotFound
		http.NotFound(w, r)
		return
	}
	hash := fnv.New64a()
	hash.Write(body)
	etag := fmt.Sprintf(`"sig-%016x"`, hash.Sum64())
	if ctype == "application/gzip" {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		_, _ = zw.Write(body)
		_ = zw.Close()
		body = b.Bytes()
	}
	hdr := w.Header()
	hdr.Set("ETag", etag)
	if inm := r.Header.Get("If-None-Match"); inm != "" && etagMatches(inm, etag) {
		rec.status = http.StatusNotModified
		w.WriteHeader(http.StatusNotModified)
		return
	}
	hdr.Set("Content-Type", ctype)
	s.writeBody(w, r, body, http.StatusOK, rec)
}

// w3c formats a lastmod: UTC to the nanosecond, so an accurate sitemap
// states the true change time exactly.
func w3c(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// renderSitemap is /sitemap.xml: a urlset of the host's pages, or, when
// they are more than one file holds, a sitemap index of the gzipped
// files, each dated with the latest lastmod it lists.
func (s *Sim) renderSitemap(h int, sg Signals, now time.Time) []byte {
	pages := s.hostPages(h)
	if len(pages) <= sg.SitemapFileURLs {
		return s.renderURLSet(pages, now)
	}
	base := "http://" + hostIP(h) + ":" + strconv.Itoa(s.Port())
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">` + "\n")
	for n, start := 1, 0; start < len(pages); n, start = n+1, start+sg.SitemapFileURLs {
		var latest time.Time
		for _, i := range pages[start:min(start+sg.SitemapFileURLs, len(pages))] {
			if lm, ok := s.SitemapLastMod(i, now); ok && lm.After(latest) {
				latest = lm
			}
		}
		fmt.Fprintf(&b, "<sitemap><loc>%s/sitemap-%d.xml.gz</loc>", base, n)
		if !latest.IsZero() {
			fmt.Fprintf(&b, "<lastmod>%s</lastmod>", w3c(latest))
		}
		b.WriteString("</sitemap>\n")
	}
	b.WriteString("</sitemapindex>\n")
	return b.Bytes()
}

// renderURLSet lists pages with the lastmod their host's mode gives.
func (s *Sim) renderURLSet(pages []int, now time.Time) []byte {
	port := s.Port()
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">` + "\n")
	for _, i := range pages {
		fmt.Fprintf(&b, "<url><loc>%s</loc>", s.pageURL(i, port))
		if lm, ok := s.SitemapLastMod(i, now); ok {
			fmt.Fprintf(&b, "<lastmod>%s</lastmod>", w3c(lm))
		}
		b.WriteString("</url>\n")
	}
	b.WriteString("</urlset>\n")
	return b.Bytes()
}

// hostChange is one change of one page, for the host's feed.
type hostChange struct {
	page, version int
	at            time.Duration
}

// hostChanges are the n most recent changes of host h's pages at or
// before `at`, newest first: what its feed lists. It panics if h is out
// of range.
func (s *Sim) hostChanges(h, n int, at time.Time) []hostChange {
	off := at.Sub(s.epoch)
	var all []hostChange
	for _, i := range s.hostPages(h) {
		p := s.pages[i]
		p.mu.Lock()
		ver := p.sched.countAt(off)
		for v := ver; v >= 1 && v > ver-n; v-- {
			all = append(all, hostChange{page: i, version: v, at: p.sched.times[v-1]})
		}
		p.mu.Unlock()
	}
	slices.SortFunc(all, func(a, b hostChange) int {
		return cmp.Or(cmp.Compare(b.at, a.at), cmp.Compare(a.page, b.page))
	})
	return all[:min(n, len(all))]
}

// renderHostFeed is /feed.xml: an Atom feed of the host's n most recent
// changes, each entry the page that changed, dated with the change.
func (s *Sim) renderHostFeed(h, n int, now time.Time) []byte {
	changes := s.hostChanges(h, n, now)
	port := s.Port()
	updated := s.epoch
	if len(changes) > 0 {
		updated = s.epoch.Add(changes[0].at)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<feed xmlns=\"http://www.w3.org/2005/Atom\"><title>Changes on host %d</title><id>urn:sim:host:%d</id><updated>%s</updated>\n", h, h, w3c(updated))
	for _, c := range changes {
		fmt.Fprintf(&b, "<entry><id>urn:sim:p%d-v%d</id><title>Page %d, version %d</title><link href=\"%s\"/><updated>%s</updated></entry>\n",
			c.page, c.version, c.page, c.version, s.pageURL(c.page, port), w3c(s.epoch.Add(c.at)))
	}
	b.WriteString("</feed>\n")
	return b.Bytes()
}

// robotsBody is host h's robots.txt: its configured body, and a Sitemap:
// line naming its sitemap when it has one (on a line of its own, whatever
// the body ends with).
func (s *Sim) robotsBody(h int) string {
	body := s.robotsTx[h]
	if s.signalsOf(h).Sitemap == SitemapAbsent {
		return body
	}
	if body != "" && !strings.HasSuffix(body, "\n") {
		body += "\n"
	}
	return body + "Sitemap: http://" + hostIP(h) + ":" + strconv.Itoa(s.Port()) + "/sitemap.xml\n"
}

// setCacheHeaders fills page i's Cache-Control as its host's mode says.
func (s *Sim) setCacheHeaders(hdr http.Header, i int) {
	sg := s.signalsOf(i % s.cfg.Hosts)
	switch sg.Cache {
	case CacheHonest:
		hdr.Set("Cache-Control", "max-age="+strconv.FormatInt(int64(s.meanInterval(i)/time.Second), 10))
	case CacheMeaningless:
		hdr.Set("Cache-Control", "max-age="+strconv.FormatInt(int64(sg.CacheMaxAge/time.Second), 10))
	}
}

// meanInterval is page i's true mean time between changes (honestNever
// for a page that never changes).
func (s *Sim) meanInterval(i int) time.Duration {
	rate := s.pages[i].info.Rate
	if rate <= 0 || math.IsInf(1/rate, 0) || 1/rate > honestNever.Seconds() {
		return honestNever
	}
	return time.Duration(float64(time.Second) / rate)
}
