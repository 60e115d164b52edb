package api_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/freshcrawl/freshcrawl/internal/node"
	"github.com/freshcrawl/freshcrawl/internal/testutil"
	"github.com/freshcrawl/freshcrawl/store"
)

// routePattern matches a route registered in coordinator/api.go.
var routePattern = regexp.MustCompile(`mux\.Handle(?:Func)?\("([A-Z]+) (/[^"]*)"`)

// TestSecureHeadersOnEveryAnswer runs a coordinator with a token and asks
// every route registered in coordinator/api.go, with and without the
// token, plus 404s, a wrong method and the console's page under each path
// that serves it: every answer carries the policy, nosniff and
// no-referrer. The routes are read from the source, so a route added
// there is asked too.
func TestSecureHeadersOnEveryAnswer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := testConfig(t.TempDir())
	cfg.APITokens = []string{adminToken}
	n, err := node.Start(ctx, node.Options{Config: cfg, Roles: node.Roles{Coordinator: true, HTTP: true}, Log: testutil.QuietLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	base := "http://" + n.HTTPAddr()

	type answer struct {
		code int
		h    http.Header
		body string
	}
	ask := func(method, path, tok string) answer {
		t.Helper()
		// Bounded: /api/events streams until the client goes.
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(rctx, method, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultTransport.RoundTrip(req) // redirects are answers too
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		var b []byte
		if resp.Header.Get("Content-Type") != "text/event-stream" {
			b, _ = io.ReadAll(resp.Body)
		}
		return answer{resp.StatusCode, resp.Header, string(b)}
	}
	check := func(what string, a answer) {
		t.Helper()
		csp := a.h.Get("Content-Security-Policy")
		for _, d := range []string{"default-src 'self'", "script-src 'self'", "object-src 'none'", "base-uri 'none'", "form-action 'self'", "frame-ancestors 'none'"} {
			if !strings.Contains(csp, d) {
				t.Errorf("%s (%d): Content-Security-Policy %q lacks %q", what, a.code, csp, d)
			}
		}
		if got := a.h.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s (%d): X-Content-Type-Options %q", what, a.code, got)
		}
		if got := a.h.Get("Referrer-Policy"); got != "no-referrer" {
			t.Errorf("%s (%d): Referrer-Policy %q", what, a.code, got)
		}
	}
	testutil.WaitFor(t, 30*time.Second, "healthz 200", func() bool { return ask("GET", "/healthz", "").code == 200 })

	// A URL keeping a raw body, for /api/content?raw=1.
	page := "http://site.example/page.html"
	if _, err := n.Coordinator.AddSeeds(strings.NewReader(`{"url":"`+page+`","keep_raw":true}`), "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := n.DB.Fold("raw-1", func(tx *store.Tx) error {
		return tx.SetRaw(page, store.Raw{ContentType: "text/html", FetchedAt: time.Now(), Size: 20, Body: []byte("<script>x()</script>")})
	}); err != nil {
		t.Fatal(err)
	}
	q := "?url=" + url.QueryEscape(page)

	src, err := os.ReadFile("../../coordinator/api.go")
	if err != nil {
		t.Fatal(err)
	}
	routes := routePattern.FindAllStringSubmatch(string(src), -1)
	if len(routes) < 30 {
		t.Fatalf("found %d routes in coordinator/api.go; the pattern no longer matches how routes are registered", len(routes))
	}
	for _, m := range routes {
		method, path := m[1], m[2]
		switch {
		case path == "/{$}":
			path = "/"
		case strings.HasSuffix(path, "/"):
			path += "app.js"
		}
		if method == "GET" {
			path += q
		}
		for _, tok := range []string{"", adminToken} {
			check(method+" "+path+" token="+tok, ask(method, path, tok))
		}
	}

	// The console's page wherever it is served, its assets, errors.
	extra := []struct{ method, path string }{
		{"GET", "/"}, {"HEAD", "/"}, {"GET", "/ui/"}, {"GET", "/ui/index.html"}, {"GET", "/ui/style.css"}, {"GET", "/ui/app.js"},
		{"GET", "/ui/nope.js"}, {"GET", "/nope"}, {"GET", "/api/nope"}, {"GET", "/index.html"},
		{"GET", "/api/seeds"}, {"DELETE", "/api/urls"}, {"GET", "/api/content?raw=2"},
		{"GET", "/api/content?raw=1&url=" + url.QueryEscape(page)},
	}
	for _, e := range extra {
		for _, tok := range []string{"", adminToken} {
			check(e.method+" "+e.path+" token="+tok, ask(e.method, e.path, tok))
		}
	}

	// The raw body: a download, sandboxed, never a script for a page.
	a := ask("GET", "/api/content?raw=1&url="+url.QueryEscape(page), adminToken)
	if a.code != 200 || a.body != "<script>x()</script>" {
		t.Fatalf("raw body: %d %q", a.code, a.body)
	}
	if cd := a.h.Get("Content-Disposition"); !strings.HasPrefix(cd, "attachment") || !strings.Contains(cd, "page.html") {
		t.Errorf("raw body Content-Disposition %q, want an attachment named page.html", cd)
	}
	if csp := a.h.Get("Content-Security-Policy"); !strings.Contains(csp, "sandbox") {
		t.Errorf("raw body policy %q has no sandbox", csp)
	}
	for dest, want := range map[string]int{"script": 403, "style": 403, "iframe": 403, "empty": 200, "document": 200} {
		req, _ := http.NewRequestWithContext(ctx, "GET", base+"/api/content?raw=1&url="+url.QueryEscape(page), nil)
		req.Header.Set("Authorization", "Bearer "+adminToken)
		req.Header.Set("Sec-Fetch-Dest", dest)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("raw body for Sec-Fetch-Dest %s: %d, want %d", dest, resp.StatusCode, want)
		}
		check("raw body for "+dest, answer{resp.StatusCode, resp.Header, ""})
	}
}
