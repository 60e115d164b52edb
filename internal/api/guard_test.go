package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/freshcrawl/freshcrawl/internal/api"
	"github.com/freshcrawl/freshcrawl/internal/node"
	"github.com/freshcrawl/freshcrawl/internal/testutil"
	"github.com/freshcrawl/freshcrawl/store"
)

// startOpenAPI starts a coordinator serving its API on loopback without
// a token: the default setup.
func startOpenAPI(t *testing.T, ctx context.Context) *node.Node {
	t.Helper()
	cfg := testConfig(t.TempDir())
	cfg.Workers = 0
	n, err := node.Start(ctx, node.Options{Config: cfg, Roles: node.Roles{Coordinator: true, HTTP: true}, Log: testutil.QuietLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Stop)
	testutil.WaitFor(t, 30*time.Second, "the coordinator active", func() bool {
		resp, err := http.Get("http://" + n.HTTPAddr() + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	return n
}

// TestStateChangesNeedJSONFromTheAPIsOwnSite: every request that changes
// something on an API without a token must carry a JSON body and must
// not come, by the browser's word, from another site; reads are not
// refused (another site cannot read their answers).
func TestStateChangesNeedJSONFromTheAPIsOwnSite(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	n := startOpenAPI(t, ctx)
	base := "http://" + n.HTTPAddr()
	own := base
	other := "http://127.0.0.2:" + portOf(t, n.HTTPAddr())

	send := func(method, path, ct string, hdr map[string]string, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode >= 400 {
			var e api.Error
			if err := json.Unmarshal(b, &e); err != nil || e.Error == "" {
				t.Errorf("%s %s: %d with a body that is not a JSON error: %s", method, path, resp.StatusCode, b)
			}
			return resp.StatusCode, e.Error
		}
		return resp.StatusCode, string(b)
	}

	const ndjson = "application/x-ndjson"
	for i, c := range []struct {
		ct   string
		hdr  map[string]string
		code int
		why  string // what the error names
	}{
		{ndjson, nil, 200, ""},
		{"application/x-ndjson; charset=utf-8", nil, 200, ""},
		{"Application/JSON", nil, 200, ""},
		{"application/jsonl", nil, 200, ""},
		{"text/plain", nil, 415, "Content-Type"},
		{"text/plain; charset=utf-8", nil, 415, "Content-Type"},
		{"application/x-www-form-urlencoded", nil, 415, "Content-Type"},
		{"multipart/form-data; boundary=x", nil, 415, "Content-Type"},
		{"", nil, 415, "Content-Type"},
		{ndjson, map[string]string{"Origin": own}, 200, ""},
		{ndjson, map[string]string{"Origin": other}, 403, "Origin"},
		{ndjson, map[string]string{"Origin": "http://attacker.example"}, 403, "another site"},
		{ndjson, map[string]string{"Origin": "null"}, 403, "another site"},
		{ndjson, map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": own}, 200, ""},
		{ndjson, map[string]string{"Sec-Fetch-Site": "none"}, 200, ""},
		{ndjson, map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "http://attacker.example"}, 403, "Sec-Fetch-Site"},
		{ndjson, map[string]string{"Sec-Fetch-Site": "cross-site"}, 403, `Sec-Fetch-Site is "cross-site"`},
		{ndjson, map[string]string{"Sec-Fetch-Site": "same-site", "Origin": other}, 403, `Sec-Fetch-Site is "same-site"`},
		// A cross-site form is refused for where it came from before
		// what it carries.
		{"text/plain", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403, "another site"},
	} {
		u := fmt.Sprintf("http://case%d.example/", i)
		code, msg := send("POST", "/api/seeds?name=case", c.ct, c.hdr, u+"\n")
		if code != c.code || !strings.Contains(msg, c.why) {
			t.Errorf("POST /api/seeds, Content-Type %q, %v: %d %q, want %d naming %q", c.ct, c.hdr, code, msg, c.code, c.why)
		}
		_, err := n.DB.Get(u)
		if added := err == nil; added != (c.code == 200) {
			t.Errorf("POST /api/seeds, Content-Type %q, %v: added %v (%v)", c.ct, c.hdr, added, err)
		}
	}

	// Every other route that changes something: a form is refused for its
	// type, a JSON body from another site for its origin.
	for _, p := range []string{"/api/items?source=none", "/api/webhooks/retry", "/api/webhooks/drop", "/api/url/pause", "/api/url/resume", "/api/url/delete?purge=1", "/api/url/set", "/api/import?name=x", "/api/status", "/nowhere"} {
		if code, msg := send("POST", p, "text/plain", nil, `{"all": true}`); code != 415 || !strings.Contains(msg, "Content-Type") {
			t.Errorf("POST %s as text/plain: %d %q, want 415", p, code, msg)
		}
		if code, msg := send("POST", p, "application/json", map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "http://attacker.example"}, `{"all": true}`); code != 403 {
			t.Errorf("POST %s from another site: %d %q, want 403", p, code, msg)
		}
	}
	for _, m := range []string{"PUT", "DELETE", "PATCH"} {
		if code, _ := send(m, "/api/seeds", "text/plain", nil, "http://put.example/\n"); code != 415 {
			t.Errorf("%s /api/seeds as text/plain: %d, want 415", m, code)
		}
	}
	// The routes' own types: JSON objects where the route wants one.
	if code, msg := send("POST", "/api/url/pause", ndjson, nil, `{"urls": ["http://case0.example/"]}`); code != 415 || !strings.Contains(msg, "application/json") {
		t.Errorf("POST /api/url/pause as JSON lines: %d %q, want 415", code, msg)
	}
	if code, msg := send("POST", "/api/webhooks/drop", ndjson, nil, `{"all": true}`); code != 415 || !strings.Contains(msg, "application/json") {
		t.Errorf("POST /api/webhooks/drop as JSON lines: %d %q, want 415", code, msg)
	}
	if code, msg := send("POST", "/api/url/pause", "application/json", map[string]string{"Origin": own, "Sec-Fetch-Site": "same-origin"}, `{"urls": ["http://case0.example/"]}`); code != 200 {
		t.Errorf("POST /api/url/pause from the API's own page: %d %q", code, msg)
	}
	if rec, err := n.DB.Get("http://case0.example/"); err != nil || !rec.Paused {
		t.Errorf("the pause from the API's own page: %+v, %v", rec, err)
	}
	// Reads are answered whoever asks: the browser keeps the answer from
	// a page of another site.
	if code, _ := send("GET", "/api/status", "", map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "http://attacker.example"}, ""); code != 200 {
		t.Errorf("GET /api/status from another site: %d, want 200", code)
	}
}

// TestHostNamesOfTheAPI: which Host headers name an API, by its listening
// address and the operator's --api-host names.
func TestHostNamesOfTheAPI(t *testing.T) {
	loop := api.NewHostList(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}, "127.0.0.1:8080", []string{"Crawler.internal", "proxy.example:443", "[fd00::1]:8080"})
	all := api.NewHostList(&net.TCPAddr{IP: net.IPv6unspecified, Port: 8080}, ":8080", nil)
	web := api.NewHostList(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 80}, "127.0.0.1:80", nil)
	// --listen crawler.local:0, which resolved to 10.0.0.7 and port 41234.
	byName := api.NewHostList(&net.TCPAddr{IP: net.IPv4(10, 0, 0, 7), Port: 41234}, "crawler.local:0", nil)
	for _, c := range []struct {
		l    *api.HostList
		host string
		ok   bool
	}{
		{loop, "127.0.0.1:8080", true},
		{loop, "localhost:8080", true},
		{loop, "LOCALHOST:8080", true},
		{loop, "[::1]:8080", true},
		{loop, "crawler.internal:8080", true},
		{loop, "crawler.internal", true},
		{loop, "crawler.internal:9999", true},
		{loop, "proxy.example:443", true},
		{loop, "proxy.example", false},
		{loop, "[fd00::1]:8080", true},
		{loop, "localhost:8081", false},
		{loop, "127.0.0.1", false},
		{loop, "attacker.example:8080", false},
		{loop, "localhost.attacker.example:8080", false},
		{loop, "10.0.0.5:8080", false},
		{loop, "", false},
		{all, "10.0.0.5:8080", true},
		{all, "[fd00::5]:8080", true},
		{all, "localhost:8080", true},
		{all, "coordinator:8080", false},
		{all, "10.0.0.5:8081", false},
		{web, "localhost", true},
		{web, "127.0.0.1", true},
		{web, "attacker.example", false},
		{byName, "crawler.local:41234", true},
		{byName, "10.0.0.7:41234", true},
		{byName, "localhost:41234", true},
		{byName, "crawler.local:0", false},
		{byName, "attacker.example:41234", false},
	} {
		if got := c.l.Allows(c.host); got != c.ok {
			t.Errorf("%s: Host %q allowed %v, want %v", c.l.Example(), c.host, got, c.ok)
		}
	}
}

// TestCrossSitePageCannotChangeTheCrawl: a page of another origin,
// opened in real Chromium, tries what any web page can do to an API on
// loopback without a token (a no-cors fetch, a form aimed at a hidden
// frame, a JSON fetch that needs a preflight), and also reaching the API
// under its own name re-pointed at loopback (DNS rebinding). Nothing is
// added, and the page reads nothing.
func TestCrossSitePageCannotChangeTheCrawl(t *testing.T) {
	exe := chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	n := startOpenAPI(t, ctx)
	apiBase := "http://" + n.HTTPAddr()
	port := portOf(t, n.HTTPAddr())

	// The attacker's site: another loopback origin.
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("127.0.0.2 unavailable: %v", err)
	}
	page := fmt.Sprintf(`<!doctype html><title>cute cats</title>
<iframe name="sink" id="sink"></iframe>
<form id="f" method="POST" enctype="text/plain" target="sink" action="%[1]s/api/seeds?name=csrf-form"><input name="http://form.evil.example/?x" value="1"></form>
<script>
window.results = {};
const seeds = %[1]q + "/api/seeds?name=csrf";
fetch(seeds, {mode: "no-cors", method: "POST", body: "http://fetch.evil.example/\n"})
  .then(r => { results.nocors = r.type; }, e => { results.nocors = "error " + e; });
fetch(seeds, {method: "POST", headers: {"Content-Type": "application/json"}, body: "{\"url\": \"http://json.evil.example/\"}"})
  .then(r => r.text().then(t => { results.json = "read " + t; }), e => { results.json = "error " + e; });
fetch(%[1]q + "/api/status").then(r => r.text().then(t => { results.read = "read " + t; }), e => { results.read = "error " + e; });
document.getElementById("sink").addEventListener("load", () => { results.form = "sent"; });
document.getElementById("f").submit();
</script>`, apiBase)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, page)
	})}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() {
		srv.Close()
		<-served
	}()

	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.UserDataDir(t.TempDir()), chromedp.Flag("headless", true), chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true), chromedp.NoFirstRun, chromedp.Flag("disable-background-networking", true),
		// The attacker's own name, re-pointed at loopback.
		chromedp.Flag("host-resolver-rules", "MAP rebind.evil.example 127.0.0.1"))...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(alloc)
	defer cancelBrowser()
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	poll := func(js string) chromedp.Action[chromedp.Void] {
		return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
			_, err := chromedp.Poll[bool](js, chromedp.WithPollingTimeout(20*time.Second))(ctx, tg)
			return chromedp.Void{}, err
		}
	}
	str := func(js string) string {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("evaluate %s: %v", js, err)
		}
		return v
	}
	attacker := "http://" + ln.Addr().String() + "/"
	if err := chromedp.Do(bctx, chromedp.Navigate(attacker),
		poll(`results.nocors !== undefined && results.json !== undefined && results.read !== undefined && results.form !== undefined`)); err != nil {
		t.Fatalf("the attacker's page: %v", err)
	}
	if got := str(`JSON.stringify(results)`); !strings.Contains(got, `"nocors":"opaque"`) || !strings.Contains(got, `"json":"error`) || !strings.Contains(got, `"read":"error`) {
		t.Errorf("what the page got: %s", got)
	}

	// Rebinding: the browser sends the attacker's name as Host.
	if err := chromedp.Do(bctx, chromedp.Navigate("http://rebind.evil.example:"+port+"/api/status"),
		poll(`document.body !== null && document.body.innerText.length > 0`)); err != nil {
		t.Fatalf("the rebound name: %v", err)
	}
	if got := str(`document.body.innerText`); !strings.Contains(got, "not a name of this API") || strings.Contains(got, `"role"`) {
		t.Errorf("the API under a rebound name answered: %s", got)
	}

	ul, err := n.DB.ListURLs(store.Query{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(ul.URLs) != 0 {
		var got []string
		for _, u := range ul.URLs {
			got = append(got, u.URL)
		}
		t.Errorf("a page of another site added %d URLs: %q", len(ul.URLs), got)
	}
}

func portOf(t *testing.T, hostport string) string {
	t.Helper()
	_, p, err := net.SplitHostPort(hostport)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
