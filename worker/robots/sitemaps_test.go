package robots

import (
	"net/http"
	"slices"
	"strings"
	"testing"
)

// A Check names the origin's Sitemap: lines, in order, from the cache as
// well as from a fetch, whether or not the page is allowed; a robots.txt
// that is not a 2xx file lists none; a file of thousands keeps the first
// maxSitemaps.
func TestCheckerSitemaps(t *testing.T) {
	body := "Sitemap: https://h.example/s1.xml\nuser-agent: *\ndisallow: /x\nsitemap:https://h.example/news.xml.gz\n"
	rs := newRobotsServer(t, http.StatusOK, body)
	c := newTestChecker(rs, NewMemoryStore(), newClock(), DefaultOptions())
	want := []string{"https://h.example/s1.xml", "https://h.example/news.xml.gz"}
	first := mustCheck(t, c, rs.URL+"/a")
	again := mustCheck(t, c, rs.URL+"/x")
	if !first.Fetched || again.Fetched || again.Allowed {
		t.Fatalf("checks: %+v, %+v", first, again)
	}
	for _, d := range []Decision{first, again} {
		if !slices.Equal(d.Sitemaps, want) {
			t.Errorf("sitemaps %q, want %q", d.Sitemaps, want)
		}
	}
	// Appending to one decision's list cannot change the cache's.
	_ = append(first.Sitemaps, "https://h.example/mine.xml")
	if d := mustCheck(t, c, rs.URL+"/b"); !slices.Equal(d.Sitemaps, want) {
		t.Errorf("after an append: %q", d.Sitemaps)
	}

	missing := newRobotsServer(t, http.StatusNotFound, body)
	c = newTestChecker(missing, NewMemoryStore(), newClock(), DefaultOptions())
	if d := mustCheck(t, c, missing.URL+"/a"); !d.Allowed || d.Sitemaps != nil {
		t.Errorf("404 robots.txt: %+v", d)
	}

	many := newRobotsServer(t, http.StatusOK, strings.Repeat("sitemap: https://h.example/s.xml\n", maxSitemaps+10))
	c = newTestChecker(many, NewMemoryStore(), newClock(), DefaultOptions())
	if d := mustCheck(t, c, many.URL+"/a"); len(d.Sitemaps) != maxSitemaps {
		t.Errorf("%d sitemaps kept, want %d", len(d.Sitemaps), maxSitemaps)
	}
}
