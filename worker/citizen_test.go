package worker

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/freshcrawl/freshcrawl/proto"
)

// A host whose robots.txt cannot be fetched (the connection is refused on
// first contact) is disallowed whole, as RFC 9309 says, but its URLs
// carry the kind robots-unreachable, not the kind of a rule (robots); a
// robots.txt answering 503 does the same.
func TestRobotsUnreachableNamed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	var pageHits atomic.Int64
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		pageHits.Add(1)
		fmt.Fprint(w, "<p>page</p>")
	}))
	defer failing.Close()
	w := newTestWorker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, url := range []string{closed + "/page", failing.URL + "/page"} {
		r := w.process(ctx, task(url, proto.Result{}, proto.IgnoreRules{}, ""))
		if r.ErrKind != proto.ErrRobotsUnreachable || !r.Disallowed {
			t.Errorf("%s: kind %q disallowed %v err %q, want robots-unreachable and disallowed", url, r.ErrKind, r.Disallowed, r.Err)
		}
	}
	if n := pageHits.Load(); n != 0 {
		t.Errorf("a page of a host whose robots.txt answers 503 was fetched %d times", n)
	}
}

// A page longer than max-body is kept as far as it was read: the result
// is a success, marked truncated, with the text and hash of its first
// max-body bytes; the same page fetched again hashes the same.
func TestTruncatedPageKept(t *testing.T) {
	const maxBody = 64 << 10
	long := "<html><body><p>head of the page</p>" + strings.Repeat("<p>filler line</p>\n", maxBody/10) + "<p>tail never read</p></body></html>"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, long)
	}))
	defer srv.Close()
	w := newWorker(t, nil, nil, testOptions(func(o *Options) { o.Fetch.AllowPrivate, o.Fetch.MaxBody = true, maxBody }))
	ctx := context.Background()
	r := w.process(ctx, task(srv.URL+"/big", proto.Result{}, proto.IgnoreRules{}, ""))
	if !r.OK() || !r.Truncated || r.Bytes != maxBody {
		t.Fatalf("kind %q err %q truncated %v bytes %d, want a success cut at %d", r.ErrKind, r.Err, r.Truncated, r.Bytes, maxBody)
	}
	if r.Hash == "" || !strings.HasPrefix(r.Text, "head of the page") || strings.Contains(r.Text, "tail never read") {
		t.Fatalf("hash %q text %.40q…: want the prefix's text and hash", r.Hash, r.Text)
	}
	again := w.process(ctx, task(srv.URL+"/big", r, proto.IgnoreRules{}, ""))
	if !again.OK() || again.Changed || again.Hash != r.Hash {
		t.Fatalf("the same page again: changed %v hash %q, want unchanged %q", again.Changed, again.Hash, r.Hash)
	}
}

// X-Robots-Tag and robots <meta>: noarchive, noindex and none, for every
// crawler or for this one's product token, keep the text, the raw body and
// the diff out of the result; the hash still comes, so changes are still
// seen. Directives for another crawler, and others, change nothing.
func TestNoArchiveDirectives(t *testing.T) {
	page := func(head string) string {
		return "<html><head><title>t</title>" + head + "</head><body><p>private words</p></body></html>"
	}
	cases := []struct {
		name   string
		header []string
		body   string
		want   bool
	}{
		{"header noarchive", []string{"noarchive"}, page(""), true},
		{"header noindex", []string{"noindex, nofollow"}, page(""), true},
		{"header none", []string{"none"}, page(""), true},
		{"header for this crawler", []string{"freshcrawl-test: noarchive"}, page(""), true},
		{"header for this crawler, any case", []string{"FreshCrawl-Test: NOINDEX"}, page(""), true},
		{"header for another crawler", []string{"otherbot: noarchive"}, page(""), false},
		{"header for another crawler, then every one", []string{"otherbot: noindex", "nosnippet"}, page(""), false},
		{"agent switches within one header", []string{"otherbot: nofollow, freshcrawl-test: noarchive"}, page(""), true},
		{"a dated directive is no agent", []string{"unavailable_after: 25 Jun 2030 15:00:00 PST"}, page(""), false},
		{"header nofollow only", []string{"nofollow, nosnippet"}, page(""), false},
		{"meta robots noarchive", nil, page(`<meta name="robots" content="noarchive">`), true},
		{"meta robots none", nil, page(`<meta name="ROBOTS" content="NONE">`), true},
		{"meta for this crawler", nil, page(`<meta name="freshcrawl-test" content="noindex">`), true},
		{"meta for another crawler", nil, page(`<meta name="googlebot" content="noarchive">`), false},
		{"meta robots follow", nil, page(`<meta name="robots" content="index, follow">`), false},
		{"meta in the body is not read", nil, "<html><body><p>x</p><meta name=robots content=noarchive></body></html>", false},
	}
	var current atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		c := cases[current.Load()]
		for _, v := range c.header {
			w.Header().Add("X-Robots-Tag", v)
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, c.body)
	}))
	defer srv.Close()
	w := newTestWorker(t)
	ctx := context.Background()
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			current.Store(int64(i))
			tk := task(srv.URL+"/p", proto.Result{}, proto.IgnoreRules{}, "")
			tk.KeepRaw, tk.NeedRaw = true, true
			r := w.process(ctx, tk)
			if !r.OK() || r.Hash == "" {
				t.Fatalf("kind %q err %q hash %q", r.ErrKind, r.Err, r.Hash)
			}
			if r.NoArchive != c.want {
				t.Fatalf("NoArchive = %v, want %v", r.NoArchive, c.want)
			}
			if c.want && (r.Text != "" || len(r.Raw) != 0 || r.Diff != nil) {
				t.Fatalf("text %q raw %d bytes diff %v: nothing of the page may leave the worker", r.Text, len(r.Raw), r.Diff)
			}
			if !c.want && r.Text == "" {
				t.Fatal("no text for a page that allows archiving")
			}
		})
	}
}
