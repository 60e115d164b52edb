package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/freshcrawl/freshcrawl/config"
	"github.com/freshcrawl/freshcrawl/internal/api"
	"github.com/freshcrawl/freshcrawl/internal/node"
	"github.com/freshcrawl/freshcrawl/internal/testutil"
	"github.com/freshcrawl/freshcrawl/store"
)

// site serves pages whose version the test bumps, a /slow page whose
// first request blocks until released, and /private/ pages robots.txt
// disallows.
type site struct {
	mu       sync.Mutex
	version  map[string]int
	hits     map[string]int
	slowHeld chan struct{}
	slowGate chan struct{}
	once     sync.Once
	slowN    atomic.Int32
}

func newSite() *site {
	return &site{version: map[string]int{}, hits: map[string]int{}, slowHeld: make(chan struct{}), slowGate: make(chan struct{})}
}

func (s *site) bump(path string) {
	s.mu.Lock()
	s.version[path]++
	s.mu.Unlock()
}

func (s *site) hitCount(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

func (s *site) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.hits[r.URL.Path]++
	v := s.version[r.URL.Path]
	s.mu.Unlock()
	switch {
	case r.URL.Path == "/robots.txt":
		fmt.Fprint(w, "User-agent: *\nDisallow: /private/\n")
		return
	case r.URL.Path == "/slow" && s.slowN.Add(1) == 1:
		s.once.Do(func() { close(s.slowHeld) })
		select {
		case <-s.slowGate:
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, "<html><body><h1>Page %s</h1><p>version %d</p><ul><li>one</li><li>two %d</li></ul></body></html>", r.URL.Path, v, v)
}

func testConfig(dir string) config.Config {
	cfg := config.Default()
	cfg.Data = dir
	cfg.NATSListen = "127.0.0.1:-1"
	cfg.Listen = "127.0.0.1:0"
	cfg.Budget = 40
	cfg.HostRate = 40
	cfg.MaxInFlight = 16
	cfg.AckWait = 2 * time.Second
	cfg.MaxDeliver = 5
	cfg.Replan = time.Second
	cfg.PriorRate = 1
	cfg.AllowPrivate = true
	cfg.Concurrency = 2
	cfg.Workers = 1
	cfg.Policy = "uniform"
	cfg.UserAgent = "freshcrawl-test/1.0"
	return cfg
}

// client talks to the console's HTTP API.
type client struct {
	t    *testing.T
	base string
}

func (c client) get(path string, v any) int {
	c.t.Helper()
	resp, err := http.Get(c.base + path)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	if v != nil {
		// Decode into a zero value: fields the answer omits must not keep
		// what an earlier answer put there.
		reflect.ValueOf(v).Elem().SetZero()
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			c.t.Fatalf("GET %s: decode: %v", path, err)
		}
	}
	return resp.StatusCode
}

func (c client) post(path string, body any, v any) int {
	c.t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(c.base+path, "application/json", bytes.NewReader(b))
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	if v != nil {
		reflect.ValueOf(v).Elem().SetZero()
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			c.t.Fatalf("POST %s: decode: %v", path, err)
		}
	}
	return resp.StatusCode
}

func TestConsoleLifecycle(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	web := newSite()
	srv := httptest.NewServer(web)
	defer srv.Close()
	defer func() {
		select {
		case <-web.slowGate:
		default:
			close(web.slowGate)
		}
	}()
	cfg := testConfig(t.TempDir())
	n, err := node.Start(ctx, node.Options{Config: cfg, Roles: node.Roles{Coordinator: true, Workers: 1, HTTP: true, ConsoleEvery: 200 * time.Millisecond}, Log: testutil.QuietLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	c := client{t: t, base: "http://" + n.HTTPAddr()}
	db := n.DB
	u := func(p string) string { return srv.URL + p }
	var lines []string
	for i := range 6 {
		lines = append(lines, u(fmt.Sprintf("/p/%d", i)))
	}
	lines = append(lines, fmt.Sprintf(`{"url":%q,"mode":"capture"}`, u("/cap")), fmt.Sprintf(`{"url":%q,"keep_raw":true}`, u("/raw")), u("/private/x"))
	if sum, err := n.Coordinator.AddSeeds(strings.NewReader(strings.Join(lines, "\n")), "test"); err != nil || sum.Added != 9 {
		t.Fatalf("seed %+v %v", sum, err)
	}
	rec := func(p string) store.URL {
		r, err := db.Get(u(p))
		if err != nil {
			t.Fatalf("get %s: %v", p, err)
		}
		return r
	}
	testutil.WaitFor(t, 30*time.Second, "every page fetched", func() bool {
		// Every page: the rate intervals checked below exist only once a
		// URL has been fetched (a busy machine fetches them late).
		for _, p := range []string{"/p/0", "/p/1", "/p/2", "/p/3", "/p/4", "/p/5", "/cap", "/raw"} {
			if rec(p).Hash == "" {
				return false
			}
		}
		return rec("/private/x").Disallowed
	})

	// Listing and filters.
	var page api.ListPage
	if c.get("/api/urls", &page); page.Total != 9 || len(page.URLs) != 9 {
		t.Fatalf("listing: total %d, %d rows", page.Total, len(page.URLs))
	}
	c.get("/api/urls?state=disallowed", &page)
	if len(page.URLs) != 1 || page.URLs[0].URL != u("/private/x") || page.URLs[0].State != "disallowed" {
		t.Errorf("disallowed filter: %+v", page.URLs)
	}
	// The uniform policy gives up on nothing: an empty state is empty.
	if c.get("/api/urls?state=given+up", &page); len(page.URLs) != 0 {
		t.Errorf("given up under the uniform policy: %+v", page.URLs)
	}
	c.get("/api/urls?mode=capture", &page)
	if len(page.URLs) != 1 || page.URLs[0].URL != u("/cap") {
		t.Errorf("mode filter: %+v", page.URLs)
	}
	c.get("/api/urls?q=P/&limit=4", &page)
	if len(page.URLs) != 4 || page.Next == "" {
		t.Fatalf("search, first page: %d rows, next %q", len(page.URLs), page.Next)
	}
	var page2 api.ListPage
	c.get("/api/urls?q=P/&limit=4&after="+page.Next, &page2)
	if len(page2.URLs) != 2 || page2.Next != "" || page2.URLs[0].URL != u("/p/4") {
		t.Errorf("search, second page: %+v next %q", page2.URLs, page2.Next)
	}
	var e api.Error
	if code := c.get("/api/urls?state=sleepy", &e); code != http.StatusBadRequest || !strings.Contains(e.Error, "sleepy") {
		t.Errorf("bad state: %d %q", code, e.Error)
	}
	for _, r := range page.URLs {
		if r.RateLo > r.Rate || r.RateHi < r.Rate || r.RateHi == r.RateLo {
			t.Errorf("%s: rate %v not inside its interval [%v, %v]", r.URL, r.Rate, r.RateLo, r.RateHi)
		}
	}

	// A change shows up in the URL's change log, filtered by URL.
	web.bump("/p/1")
	testutil.WaitFor(t, 30*time.Second, "the change of /p/1", func() bool { return rec("/p/1").Changes >= 1 })
	var changes []store.Change
	c.get("/api/changes?url="+url.QueryEscape(u("/p/1")), &changes)
	if len(changes) != 1 || changes[0].URL != u("/p/1") || !strings.Contains(changes[0].Diff.Preview, "version 1") {
		t.Errorf("changes of /p/1: %+v", changes)
	}
	var d api.Detail
	c.get("/api/url/show?url="+url.QueryEscape(u("/p/1")), &d)
	if len(d.Changes) != 1 || len(d.Fetches) < 2 || d.Schedule == nil || d.State == "" || d.Copy.Length == 0 {
		t.Errorf("detail of /p/1: %d changes, %d fetches, schedule %v, state %q, copy %d", len(d.Changes), len(d.Fetches), d.Schedule, d.State, d.Copy.Length)
	}

	// The raw body of a keep_raw URL, apart from its text.
	var cp api.Copy
	c.get("/api/content?url="+url.QueryEscape(u("/raw")), &cp)
	if !strings.Contains(cp.Text, "Page /raw") || strings.Contains(cp.Text, "<h1>") || cp.Raw == nil || cp.Raw.ContentType != "text/html" {
		t.Fatalf("copy of /raw: %+v", cp)
	}
	resp, err := http.Get(c.base + "/api/content?raw=1&url=" + url.QueryEscape(u("/raw")))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.HasPrefix(string(body), "<html><body><h1>Page /raw</h1>") || resp.Header.Get("Content-Type") != "text/html" {
		t.Errorf("raw body %q (%s)", body, resp.Header.Get("Content-Type"))
	}
	if code := c.get("/api/content?raw=1&url="+url.QueryEscape(u("/p/0")), nil); code != http.StatusNotFound {
		t.Errorf("raw body of a URL that keeps none: %d", code)
	}

	// Pause stops fetching; resume brings it back.
	var res api.OpResult
	if code := c.post("/api/url/pause", api.Selection{URLs: []string{u("/p/2")}}, &res); code != 200 || res.Changed != 1 {
		t.Fatalf("pause: %d %+v", code, res)
	}
	if !rec("/p/2").Paused {
		t.Fatal("pause did not reach the store")
	}
	before := web.hitCount("/p/2")
	other := web.hitCount("/p/3")
	testutil.WaitFor(t, 30*time.Second, "other URLs fetched while /p/2 is paused", func() bool { return web.hitCount("/p/3") >= other+3 })
	if got := web.hitCount("/p/2"); got > before+1 { // one fetch may have been out already
		t.Errorf("paused /p/2 requested %d more times", got-before)
	}
	c.get("/api/urls?state=paused", &page)
	if len(page.URLs) != 1 || page.URLs[0].URL != u("/p/2") {
		t.Errorf("paused filter: %+v", page.URLs)
	}
	c.post("/api/url/resume", api.Selection{URLs: []string{u("/p/2")}}, &res)
	paused := web.hitCount("/p/2")
	testutil.WaitFor(t, 30*time.Second, "/p/2 fetched again after resume", func() bool { return web.hitCount("/p/2") > paused })

	// A robots-disallowed seed can be deleted; its history stays.
	var st struct {
		URLs int `json:"urls"`
	}
	c.get("/api/status", &st)
	urls := st.URLs
	if code := c.post("/api/url/delete", api.Selection{URLs: []string{u("/private/x")}}, &res); code != 200 || res.Changed != 1 {
		t.Fatalf("delete: %d %+v", code, res)
	}
	if _, err := db.Get(u("/private/x")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("deleted URL still stored live: %v", err)
	}
	if kept, err := db.Deleted(u("/private/x")); err != nil || kept.Fetches == 0 {
		t.Errorf("history of the deleted URL: %+v %v", kept, err)
	}
	c.get("/api/status", &st)
	if st.URLs != urls-1 {
		t.Errorf("status URLs %d after delete, want %d", st.URLs, urls-1)
	}
	c.get("/api/url/show?url="+url.QueryEscape(u("/private/x")), &d)
	if !d.Deleted || d.State != "deleted" {
		t.Errorf("show of a deleted URL: deleted %v state %q", d.Deleted, d.State)
	}

	// Delete a URL whose fetch is out: its task leaves the queue, the host
	// is free at once, and the late result folds into nothing.
	if _, err := n.Coordinator.AddSeeds(strings.NewReader(u("/slow")), "slow"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-web.slowHeld:
	case <-ctx.Done():
		t.Fatal("/slow never requested")
	}
	held := web.hitCount("/p/4")
	if code := c.post("/api/url/delete", api.Selection{URLs: []string{u("/slow")}}, &res); code != 200 || res.Changed != 1 {
		t.Fatalf("delete /slow: %d %+v", code, res)
	}
	// Without taking the task off the queue the host would wait for the
	// held fetch to end; with it, the host is free at once.
	testutil.WaitFor(t, 8*time.Second, "the host to be fetched while the deleted /slow is still out", func() bool { return web.hitCount("/p/4") > held })
	close(web.slowGate)
	testutil.WaitFor(t, 10*time.Second, "fetches to go on", func() bool { return web.hitCount("/p/4") > held+2 })
	if _, err := db.Get(u("/slow")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a late result brought the deleted URL back: %v", err)
	}
	if kept, _ := db.Deleted(u("/slow")); kept.Fetches != 0 {
		t.Errorf("a late result folded into the deleted URL's history: %d fetches", kept.Fetches)
	}

	// Set: weight and mode; a bad selector is refused naming the field.
	w := 4.0
	if code := c.post("/api/url/set", api.SetRequest{Selection: api.Selection{Host: "127.0.0.1"}, SeedChange: store.SeedChange{Weight: &w}}, &res); code != 200 || res.Changed != 8 {
		t.Errorf("set weight on the host: %d %+v", code, res)
	}
	if rec("/p/0").Weight != 4 {
		t.Errorf("weight %v", rec("/p/0").Weight)
	}
	bad := "div[["
	if code := c.post("/api/url/set", api.SetRequest{Selection: api.Selection{URLs: []string{u("/p/0")}}, SeedChange: store.SeedChange{Selector: &bad}}, &e); code != http.StatusBadRequest || !strings.Contains(e.Error, `"selector"`) {
		t.Errorf("bad selector: %d %q", code, e.Error)
	}
	if code := c.post("/api/url/pause", api.Selection{}, &e); code != http.StatusBadRequest {
		t.Errorf("empty selection: %d %q", code, e.Error)
	}
	// A form another site could make a browser send is refused.
	resp, err = http.Post(c.base+"/api/url/delete", "text/plain", strings.NewReader(`{"host":"127.0.0.1"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnsupportedMediaType || rec("/p/0").URL == "" {
		t.Errorf("text/plain delete: %d", resp.StatusCode)
	}

	// Export, then import: everything already stored is kept; a new line
	// is added and joins the schedule.
	resp, err = http.Get(c.base + "/api/export")
	if err != nil {
		t.Fatal(err)
	}
	exported, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// 9 seeded, /private/x deleted, /slow added and deleted.
	if got := bytes.Count(exported, []byte("\n")); got != 8 {
		t.Fatalf("export has %d lines, want 8", got)
	}
	var line store.Line
	first, _, _ := bufio.NewReader(bytes.NewReader(exported)).ReadLine()
	if err := json.Unmarshal(first, &line); err != nil || line.URL.URL == "" || line.Content == "" || len(line.Estimate) == 0 {
		t.Fatalf("export line %s: %v", first, err)
	}
	imp := string(exported) + fmt.Sprintf(`{"url":%q,"weight":2}`+"\n", u("/p/9")) + "{not json}\n"
	var sum store.ImportSummary
	resp, err = http.Post(c.base+"/api/import?name=backup.jsonl", "application/x-ndjson", strings.NewReader(imp))
	if err != nil {
		t.Fatal(err)
	}
	_ = json.NewDecoder(resp.Body).Decode(&sum)
	resp.Body.Close()
	if sum.Added != 1 || sum.Kept != 8 || sum.Bad != 1 || len(sum.Errors) != 1 || !strings.HasPrefix(sum.Errors[0], "backup.jsonl:10:") {
		t.Errorf("import summary %+v", sum)
	}
	testutil.WaitFor(t, 30*time.Second, "the imported URL to be fetched", func() bool { return rec("/p/9").Fetches > 0 })

	// The series fills and new points stream as server-sent events.
	var ser api.SeriesAnswer
	// The model's freshness is the last plan's: wait for a sample after a
	// re-plan that saw fetches (the first maintenance tick after them),
	// which a fast pipeline reaches after this point. The worker is
	// listed from its first heartbeat the coordinator hears, which can be
	// the second (every 5 s) when the first went out before the
	// coordinator subscribed: a fast pipeline gets here before that too.
	testutil.WaitFor(t, 20*time.Second, "samples after a plan that saw fetches, with the worker heard", func() bool {
		c.get("/api/series", &ser)
		return len(ser.Points) >= 2 && ser.Points[len(ser.Points)-1].Freshness > 0 && ser.Points[len(ser.Points)-1].Workers > 0
	})
	last := ser.Points[len(ser.Points)-1]
	if last.Workers != 1 || last.Budget != 40 || last.Freshness <= 0 || last.FreshnessLo > last.Freshness || last.FreshnessHi < last.Freshness {
		t.Errorf("last sample %+v", last)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/api/events", nil)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	var ev api.Point
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			if err := json.Unmarshal([]byte(data), &ev); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	if ev.T.IsZero() || ev.Budget != 40 {
		t.Errorf("streamed point %+v", ev)
	}
}
