package node_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/freshcrawl/freshcrawl/config"
	"github.com/freshcrawl/freshcrawl/internal/node"
	"github.com/freshcrawl/freshcrawl/internal/schedule"
	"github.com/freshcrawl/freshcrawl/internal/testutil"
)

// sitemapSite serves n pages, a robots.txt naming its sitemap, and the
// sitemap, whose lastmods are each page's true last change or, when
// lying, the time of the request.
type sitemapSite struct {
	mu      sync.Mutex
	url     string
	ver     []int
	changed []time.Time
	lying   bool
}

func (s *sitemapSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case r.URL.Path == "/robots.txt":
		fmt.Fprintf(w, "User-agent: *\nAllow: /\nSitemap: %s/sitemap.xml\n", s.url)
	case r.URL.Path == "/sitemap.xml":
		w.Header().Set("Content-Type", "application/xml")
		var b strings.Builder
		b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
		for i := range s.ver {
			lm := s.changed[i]
			if s.lying {
				lm = time.Now()
			}
			fmt.Fprintf(&b, "<url><loc>%s/p/%d</loc><lastmod>%s</lastmod></url>", s.url, i, lm.UTC().Format(time.RFC3339))
		}
		b.WriteString("</urlset>")
		fmt.Fprint(w, b.String())
	default:
		var i int
		if _, err := fmt.Sscanf(r.URL.Path, "/p/%d", &i); err != nil || i < 0 || i >= len(s.ver) {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintf(w, "<html><body><p>page %d, version %d</p></body></html>", i, s.ver[i])
	}
}

// change makes pages [0, k) change now.
func (s *sitemapSite) change(k int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range k {
		s.ver[i]++
		s.changed[i] = time.Now()
	}
}

// crawlSitemapSite crawls a sitemapSite of n pages under the optimal
// policy, a page due about every 3 s on average, and returns the node once every
// page has been fetched twice and the sitemap once.
func crawlSitemapSite(t *testing.T, ctx context.Context, site *sitemapSite, n int) *node.Node {
	t.Helper()
	srv := httptest.NewServer(site)
	t.Cleanup(srv.Close)
	site.mu.Lock()
	site.url = srv.URL
	site.ver, site.changed = make([]int, n), make([]time.Time, n)
	start := time.Now().Add(-time.Hour)
	for i := range site.changed {
		site.changed[i] = start
	}
	site.mu.Unlock()
	cfg := testConfig(t, t.TempDir())
	cfg.Policy = "optimal"
	// A lastmod within the skew of the sitemap's response is taken for
	// the response time; the site's changes come seconds before it.
	cfg.LMSkew = time.Second
	cfg.Budget, cfg.HostRate = config.Rate(float64(n)/3), config.Rate(float64(n)/3)
	nd, err := node.Start(ctx, node.Options{Config: cfg, Roles: node.Roles{Coordinator: true, Workers: 1}, Log: testutil.QuietLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nd.Stop)
	// The first pages weigh little: the plan fetches them rarely, and a
	// sitemap fetched as often as an average page can tell of their
	// changes before their own fetch does.
	var seeds, lines []string
	for i := range n {
		u := fmt.Sprintf("%s/p/%d", srv.URL, i)
		w := 1.0
		if i < n/6 {
			w = 0.05
		}
		seeds, lines = append(seeds, u), append(lines, fmt.Sprintf(`{"url":%q,"weight":%v}`, u, w))
	}
	if _, err := nd.Coordinator.AddSeeds(strings.NewReader(strings.Join(lines, "\n")), "t"); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 40*time.Second, "every page fetched twice and the sitemap once", func() bool {
		if nd.Coordinator.Status().Signals.SitemapFetches < 1 {
			return false
		}
		for _, u := range seeds {
			if r, err := nd.DB.Get(u); err != nil || r.Fetches < 2 {
				return false
			}
		}
		return true
	})
	return nd
}

// sitemapHints is the status's count of the hints sitemaps gave.
func sitemapHints(nd *node.Node) schedule.CoChangeStats {
	for _, h := range nd.Coordinator.Status().Hints {
		if h.Tie == "sitemap" {
			return h
		}
	}
	return schedule.CoChangeStats{}
}

// A page a sitemap dates after its copy is refetched for it, and the
// fetch finds the change.
func TestSitemapLastmodRefetches(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	site := &sitemapSite{}
	nd := crawlSitemapSite(t, ctx, site, 30)
	site.change(5)
	testutil.WaitFor(t, 40*time.Second, "a sitemap's hint confirmed by a fetch", func() bool {
		return sitemapHints(nd).Confirmed >= 1
	})
	if h := sitemapHints(nd); h.Refuted > h.Confirmed {
		t.Errorf("an accurate sitemap's hints: %+v, more refuted than confirmed", h)
	}
}

// A sitemap whose every lastmod is the time of the request says nothing:
// no page is refetched for it, and it is fetched ever more rarely.
func TestLyingSitemapStopsCosting(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	site := &sitemapSite{lying: true}
	nd := crawlSitemapSite(t, ctx, site, 30)
	testutil.WaitFor(t, 40*time.Second, "four sitemap fetches", func() bool {
		return nd.Coordinator.Status().Signals.SitemapFetches >= 4
	})
	if h := sitemapHints(nd); h.Sent != 0 {
		t.Errorf("a lying sitemap refetched pages: %+v", h)
	}
}
