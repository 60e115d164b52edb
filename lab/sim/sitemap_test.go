package sim

import (
	"bytes"
	"encoding/xml"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/freshcrawl/freshcrawl/worker/signal"
)

// signalConfig is two hosts of 20 pages each, half changing 24 times a
// simulated day (a real hour), half never, publishing sg.
func signalConfig(clk *fakeClock, sg Signals) Config {
	return Config{Hosts: 2, Pages: 40, Day: time.Hour, Seed: 11, Now: clk.Now, Mix: []RateClass{{Share: 0.5, Rate: 24}, {Share: 0.5, Rate: 0}}, Signals: sg}
}

var signalTimes = []time.Duration{0, 10 * time.Minute, 3 * time.Hour, 10*time.Hour + 7*time.Second, 50 * time.Hour}

// trueLast is page i's last change at or before at, from the sim's own
// change log: the epoch when it has not changed.
func trueLast(s *Sim, i int, at time.Time) time.Time {
	ch := s.ChangeTimes(i, s.Epoch(), at.Add(1))
	if len(ch) == 0 {
		return s.Epoch().UTC()
	}
	return ch[len(ch)-1].UTC()
}

// readSitemap fetches path from host h and parses it with the worker's
// parser, failing the test unless it is a sitemap.
func readSitemap(t *testing.T, s *Sim, h int, path string) (*signal.Sitemap, *http.Response) {
	t.Helper()
	rec := get(t, s, h, path, nil)
	if rec.Code != http.StatusOK {
		t.Fatalf("host %d %s: status %d", h, path, rec.Code)
	}
	p, err := signal.NewParser(signal.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	sm, err := p.Sitemap(bytes.NewReader(rec.Body.Bytes()), "http://"+hostIP(h)+":"+strconv.Itoa(s.Port())+"/sitemap.xml")
	if err != nil || sm.Truncated != "" || len(sm.Skipped) != 0 || len(sm.Ignored) != 0 {
		t.Fatalf("host %d %s: %+v, %v", h, path, sm, err)
	}
	return sm, rec.Result()
}

// lastmods is what host h's sitemap says of each of its pages: page
// index → lastmod (zero when it lists none). Every page is listed once.
func lastmods(t *testing.T, s *Sim, h int) map[int]time.Time {
	t.Helper()
	sm, _ := readSitemap(t, s, h, "/sitemap.xml")
	out := map[int]time.Time{}
	for _, e := range sm.Entries {
		i, err := strconv.Atoi(e.URL[strings.LastIndex(e.URL, "/")+1:])
		if err != nil || i%s.cfg.Hosts != h {
			t.Fatalf("host %d lists %s", h, e.URL)
		}
		out[i] = e.LastMod
	}
	if len(out) != len(s.hostPages(h)) || len(sm.Entries) != len(out) {
		t.Fatalf("host %d lists %d pages (%d entries), has %d", h, len(out), len(sm.Entries), len(s.hostPages(h)))
	}
	return out
}

// An accurate sitemap lists, at every time, every page's true last
// change (the epoch before the first), to the nanosecond; robots.txt
// names it.
func TestSitemapAccurate(t *testing.T) {
	clk := newFakeClock()
	s := mustNew(t, signalConfig(clk, Signals{Sitemap: SitemapAccurate}))
	changed := 0
	for _, at := range signalTimes {
		clk.At(at)
		for h := range 2 {
			for i, lm := range lastmods(t, s, h) {
				want := trueLast(s, i, clk.Now())
				if !lm.Equal(want) {
					t.Fatalf("at %v page %d: lastmod %v, true last change %v", at, i, lm, want)
				}
				if got, ok := s.SitemapLastMod(i, clk.Now()); !ok || !got.Equal(lm) {
					t.Fatalf("SitemapLastMod(%d) = %v %v, served %v", i, got, ok, lm)
				}
				if want.After(s.Epoch()) {
					changed++
				}
			}
		}
	}
	if changed == 0 {
		t.Fatal("no page changed: the test checks nothing")
	}
	robots := get(t, s, 1, "/robots.txt", nil).Body.String()
	if !strings.Contains(robots, "Disallow: /private/\nSitemap: http://127.0.0.3:0/sitemap.xml\n") {
		t.Errorf("robots.txt:\n%s", robots)
	}
}

// A late sitemap shows each page's last change as of SitemapLagDays ago:
// never ahead of the truth, behind it for the pages that changed since.
func TestSitemapLate(t *testing.T) {
	clk := newFakeClock()
	s := mustNew(t, signalConfig(clk, Signals{Sitemap: SitemapLate, SitemapLagDays: 0.5}))
	lag := 30 * time.Minute
	behind := 0
	for _, at := range signalTimes {
		clk.At(at)
		for h := range 2 {
			for i, lm := range lastmods(t, s, h) {
				want := s.Epoch().UTC()
				if at >= lag {
					want = trueLast(s, i, clk.Now().Add(-lag))
				}
				if !lm.Equal(want) || lm.After(trueLast(s, i, clk.Now())) {
					t.Fatalf("at %v page %d: lastmod %v, want %v", at, i, lm, want)
				}
				if lm.Before(trueLast(s, i, clk.Now())) {
					behind++
				}
			}
		}
	}
	if behind == 0 {
		t.Error("the late sitemap never lagged")
	}
}

// A sitemap that lies says "now" for every page; a stale one says the
// epoch forever and, unchanged, answers 304; a partial one dates about
// half the pages, truly; an absent one is not served nor named.
func TestSitemapMisleadingModes(t *testing.T) {
	clk := newFakeClock()
	s := mustNew(t, signalConfig(clk, Signals{}))
	s.cfg.HostSignals = map[int]Signals{0: {Sitemap: SitemapLyingNow}, 1: {Sitemap: SitemapStale}}
	var staleTag string
	for _, at := range signalTimes[1:] {
		clk.At(at)
		for i, lm := range lastmods(t, s, 0) {
			if !lm.Equal(clk.Now().UTC()) {
				t.Fatalf("lying-now at %v page %d: %v", at, i, lm)
			}
		}
		for i, lm := range lastmods(t, s, 1) {
			if !lm.Equal(s.Epoch()) {
				t.Fatalf("stale at %v page %d: %v", at, i, lm)
			}
		}
		tag := get(t, s, 1, "/sitemap.xml", nil).Header().Get("ETag")
		if staleTag != "" && tag != staleTag {
			t.Fatalf("the stale sitemap's ETag moved: %s, %s", staleTag, tag)
		}
		staleTag = tag
	}
	if rec := get(t, s, 1, "/sitemap.xml", map[string]string{"If-None-Match": staleTag}); rec.Code != http.StatusNotModified {
		t.Errorf("stale sitemap, If-None-Match: %d", rec.Code)
	}

	s.cfg.HostSignals = map[int]Signals{0: {Sitemap: SitemapPartial}}
	clk.At(10 * time.Hour)
	dated := 0
	for i, lm := range lastmods(t, s, 0) {
		if lm.IsZero() {
			continue
		}
		dated++
		if want := trueLast(s, i, clk.Now()); !lm.Equal(want) {
			t.Errorf("partial page %d: %v, want %v", i, lm, want)
		}
	}
	if dated != 10 {
		t.Errorf("partial: %d of 20 pages dated, want half", dated)
	}
	if rec := get(t, s, 1, "/sitemap.xml", nil); rec.Code != http.StatusNotFound {
		t.Errorf("absent sitemap: status %d", rec.Code)
	}
	if robots := get(t, s, 1, "/robots.txt", nil).Body.String(); strings.Contains(robots, "Sitemap") {
		t.Errorf("a host without a sitemap names one:\n%s", robots)
	}
}

// A host with more pages than one file holds serves a sitemap index of
// gzipped files, each dated with its latest lastmod, that together list
// every page once.
func TestSitemapIndexOfGzippedFiles(t *testing.T) {
	clk := newFakeClock()
	cfg := signalConfig(clk, Signals{Sitemap: SitemapAccurate, SitemapFileURLs: 7})
	cfg.Hosts, cfg.Pages = 1, 30
	s := mustNew(t, cfg)
	clk.At(5 * time.Hour)
	idx, _ := readSitemap(t, s, 0, "/sitemap.xml")
	if !idx.Index || len(idx.Children) != 5 {
		t.Fatalf("index: %+v", idx)
	}
	seen := map[string]bool{}
	for n, c := range idx.Children {
		path := "/sitemap-" + strconv.Itoa(n+1) + ".xml.gz"
		if !strings.HasSuffix(c.URL, path) {
			t.Fatalf("child %d: %s", n, c.URL)
		}
		sm, resp := readSitemap(t, s, 0, path)
		if ct := resp.Header.Get("Content-Type"); ct != "application/gzip" {
			t.Errorf("%s: Content-Type %q", path, ct)
		}
		var latest time.Time
		for _, e := range sm.Entries {
			if seen[e.URL] {
				t.Fatalf("%s listed twice", e.URL)
			}
			seen[e.URL] = true
			if e.LastMod.After(latest) {
				latest = e.LastMod
			}
		}
		if !c.LastMod.Equal(latest) {
			t.Errorf("child %d dated %v, its latest lastmod is %v", n, c.LastMod, latest)
		}
	}
	if len(seen) != 30 {
		t.Errorf("%d pages listed, want 30", len(seen))
	}
	if rec := get(t, s, 0, "/sitemap-6.xml.gz", nil); rec.Code != http.StatusNotFound {
		t.Errorf("/sitemap-6.xml.gz: %d", rec.Code)
	}
}

// The host's feed lists its most recent changes, newest first, each
// linking the page that changed and dated with the change: exactly the
// sim's own change log.
func TestHostFeed(t *testing.T) {
	clk := newFakeClock()
	s := mustNew(t, signalConfig(clk, Signals{Feed: true, FeedEntries: 6}))
	for _, at := range signalTimes[1:] {
		clk.At(at)
		for h := range 2 {
			rec := get(t, s, h, "/feed.xml", nil)
			var doc struct {
				Entries []struct {
					Link struct {
						Href string `xml:"href,attr"`
					} `xml:"link"`
					Updated string `xml:"updated"`
				} `xml:"entry"`
			}
			if err := xml.Unmarshal(rec.Body.Bytes(), &doc); err != nil || rec.Header().Get("Content-Type") != "application/atom+xml; charset=utf-8" {
				t.Fatalf("feed: %v %q", err, rec.Header().Get("Content-Type"))
			}
			// The truth: every change of the host's pages, newest first.
			type change struct {
				at  time.Time
				url string
			}
			var all []change
			for _, i := range s.hostPages(h) {
				for _, c := range s.ChangeTimes(i, s.Epoch(), clk.Now().Add(1)) {
					all = append(all, change{c.UTC(), s.pageURL(i, 0)})
				}
			}
			slices.SortStableFunc(all, func(a, b change) int { return b.at.Compare(a.at) })
			var want []string
			for _, c := range all[:min(6, len(all))] {
				want = append(want, c.at.Format(time.RFC3339Nano)+" "+c.url)
			}
			var got []string
			for _, e := range doc.Entries {
				got = append(got, e.Updated+" "+e.Link.Href)
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("at %v host %d feed:\n%s\nwant\n%s", at, h, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		}
	}
	if rec := get(t, mustNew(t, signalConfig(clk, Signals{})), 0, "/feed.xml", nil); rec.Code != http.StatusNotFound {
		t.Errorf("a host without a feed: %d", rec.Code)
	}
}

// Honest Cache-Control states each page's true mean interval between
// changes (a year for a page that never changes); meaningless sends one
// value for all; none sends nothing.
func TestCacheHeaders(t *testing.T) {
	clk := newFakeClock()
	s := mustNew(t, signalConfig(clk, Signals{}))
	s.cfg.HostSignals = map[int]Signals{0: {Cache: CacheHonest}, 1: {Cache: CacheMeaningless, CacheMaxAge: time.Hour}}
	for _, p := range s.Pages() {
		rec := get(t, s, p.HostIndex, "/p/"+strconv.Itoa(p.Index), nil)
		c, ok := signal.ParseCache(rec.Header(), clk.Now())
		switch p.HostIndex {
		case 0:
			want := 365 * 24 * time.Hour
			if p.Rate > 0 {
				want = time.Duration(1/p.Rate) * time.Second
			}
			if !ok || c.Lifetime != want.Truncate(time.Second) {
				t.Errorf("honest page %d (rate %g/s): %+v, want %v", p.Index, p.Rate, c, want)
			}
		case 1:
			if !ok || c.Lifetime != time.Hour {
				t.Errorf("meaningless page %d: %+v", p.Index, c)
			}
		}
	}
	s.cfg.HostSignals = nil
	if cc := get(t, s, 0, "/p/0", nil).Header().Get("Cache-Control"); cc != "" {
		t.Errorf("no cache mode sends %q", cc)
	}
	s.cfg.HostSignals = map[int]Signals{0: {Cache: CacheMeaningless}}
	if cc := get(t, s, 0, "/p/0", nil).Header().Get("Cache-Control"); cc != "max-age=0" {
		t.Errorf("meaningless without a max-age sends %q", cc)
	}
}

// Config refuses unknown modes, negative settings and hosts that do not
// exist.
func TestSignalsValidate(t *testing.T) {
	for name, cfg := range map[string]Config{
		"mode":      {Signals: Signals{Sitemap: SitemapStale + 1}},
		"cache":     {Signals: Signals{Cache: CacheMeaningless + 1}},
		"lag":       {Signals: Signals{SitemapLagDays: -1}},
		"file urls": {Signals: Signals{SitemapFileURLs: 50_001}},
		"entries":   {Signals: Signals{FeedEntries: -1}},
		"max-age":   {Signals: Signals{CacheMaxAge: -time.Second}},
		"host":      {Hosts: 2, HostSignals: map[int]Signals{2: {Feed: true}}},
		"host mode": {Hosts: 2, HostSignals: map[int]Signals{1: {Sitemap: 99}}},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
