package api_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/freshcrawl/freshcrawl/coordinator"
	"github.com/freshcrawl/freshcrawl/internal/api"
	"github.com/freshcrawl/freshcrawl/internal/node"
	"github.com/freshcrawl/freshcrawl/internal/source"
	"github.com/freshcrawl/freshcrawl/internal/testutil"
	"github.com/freshcrawl/freshcrawl/lab/sim"
	"github.com/freshcrawl/freshcrawl/store"
)

// chromium finds a Chromium to drive. Under CI=true a missing browser is a
// failure (.ci/run installs Debian's chromium); elsewhere the test skips.
func chromium(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no Chromium found; .ci/run installs it with apt-get install -y chromium")
	}
	t.Skip("no Chromium found (apt-get install -y chromium); skipping the browser test")
	return ""
}

// TestDashboardInBrowser runs a real coordinator with a worker against the
// simulated web, loads every page of the dashboard in headless Chromium,
// checks that no page logs a console error and that the numbers shown are
// the store's, and pauses and deletes URLs from the page. With
// FRESHCRAWL_SCREENSHOTS=DIR it also saves a PNG of each page there (the
// README's screenshots: FRESHCRAWL_SCREENSHOTS=$PWD/docs/screenshots).
func TestDashboardInBrowser(t *testing.T) {
	exe := chromium(t)
	shots := os.Getenv("FRESHCRAWL_SCREENSHOTS")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	// The simulated web: two hosts, Poisson pages and a periodic class for
	// capture, and a keyword-search site on the first host.
	s, err := sim.New(sim.Config{Hosts: 2, Pages: 24, Day: 2 * time.Second, Seed: 7,
		Mix:      []sim.RateClass{{Share: 0.25, Rate: 20}, {Share: 0.25, Rate: 4}, {Share: 0.25, Rate: 0.5}},
		Periodic: []sim.PeriodicClass{{Share: 0.25, Period: 10 * time.Second, Phases: []time.Duration{2 * time.Second, 6 * time.Second}, Jitter: 200 * time.Millisecond}},
		Search:   &sim.SearchConfig{Papers: 60, K: 10, TimeUnit: time.Second, Seed: 3}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Skipf("simulated hosts on 127.0.0.2+ unavailable: %v", err)
	}
	defer s.Close()
	src, err := s.SearchSource()
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t.TempDir())
	cfg.Workers, cfg.Concurrency = 1, 4
	cfg.HostRate = 20
	n, err := node.Start(ctx, node.Options{Config: cfg, Roles: node.Roles{Coordinator: true, Workers: 1, HTTP: true, ConsoleEvery: 500 * time.Millisecond}, Log: testutil.QuietLogger(t), Sources: []source.Source{src}})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	var items bytes.Buffer
	if err := s.WriteSearchItems(&items); err != nil {
		t.Fatal(err)
	}
	if _, err := coordinator.IngestItems(n.DB, &items, "sim items", src.Name); err != nil {
		t.Fatal(err)
	}
	var seeds []string
	var captures []string
	for _, p := range s.Pages() {
		switch {
		case p.Kind == "periodic":
			seeds = append(seeds, fmt.Sprintf(`{"url":%q,"mode":"capture","period":"10s","polls":2}`, p.URL))
			captures = append(captures, p.URL)
		case p.Index%2 == 0:
			seeds = append(seeds, fmt.Sprintf(`{"url":%q,"keep_raw":true}`, p.URL))
		default:
			seeds = append(seeds, p.URL)
		}
	}
	hosts := s.Hosts()
	private := "http://" + hosts[0] + "/private/secret"
	seeds = append(seeds, private)
	if _, err := n.Coordinator.AddSeeds(strings.NewReader(strings.Join(seeds, "\n")), "sim"); err != nil {
		t.Fatal(err)
	}
	db := n.DB
	c := client{t: t, base: "http://" + n.HTTPAddr()}
	// rawChanged is the URL keeping its raw body that has seen the most
	// changes ("" while none has changed).
	rawChanged := func() string {
		busiest, err := db.ListURLs(store.Query{Sort: store.SortChanges, Desc: true, Limit: 50})
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range busiest.URLs {
			if u.KeepRaw && u.Changes > 0 {
				return u.URL
			}
		}
		return ""
	}
	testutil.WaitFor(t, 40*time.Second, "a crawl with changes (one to a URL keeping its raw body), a disallowed seed, probe rounds and samples", func() bool {
		st := n.Coordinator.Status()
		p, _ := db.Get(private)
		var ser api.SeriesAnswer
		c.get("/api/series", &ser)
		return st.Fetches >= 60 && st.Changes >= 5 && p.Disallowed && len(st.Probes) == 1 && st.Probes[0].Rounds >= 1 && len(ser.Points) >= 4 && rawChanged() != ""
	})
	if shots != "" {
		// Screenshots look better with half a minute of history.
		testutil.WaitFor(t, time.Minute, "30 s of samples", func() bool {
			var ser api.SeriesAnswer
			c.get("/api/series", &ser)
			return len(ser.Points) >= 60
		})
	}

	// Start the browser and listen to its console from the first page on.
	// A Chromium that dies while starting on a loaded machine is started
	// once more; a second failure fails the test.
	startBrowser := func() (context.Context, func(), error) {
		alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(exe), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1400, 1000),
			chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-quic", true),
			chromedp.NoFirstRun, chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true))...)
		bctx, cancelBrowser := chromedp.NewContext(alloc)
		stop := func() { cancelBrowser(); cancelAlloc() }
		if err := chromedp.Do(bctx); err != nil {
			stop()
			return nil, nil, err
		}
		return bctx, stop, nil
	}
	bctx, cancelBrowser, err := startBrowser()
	if err != nil {
		t.Logf("start Chromium: %v; starting it once more", err)
		if bctx, cancelBrowser, err = startBrowser(); err != nil {
			t.Fatalf("start Chromium: %v", err)
		}
	}
	var mu sync.Mutex
	var consoleErrs []string
	listening := make(chan struct{})
	go func() {
		defer close(listening)
		for m, err := range chromedp.Console(bctx) {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				mu.Lock()
				consoleErrs = append(consoleErrs, m.String()+" "+m.URL)
				mu.Unlock()
			}
		}
	}()
	defer func() { cancelBrowser(); <-listening }()
	noErrors := func(page string) {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		if len(consoleErrs) > 0 {
			t.Errorf("%s: console errors: %q", page, consoleErrs)
			consoleErrs = nil
		}
	}
	// step bounds one browser action, so a wait that never ends fails
	// that step instead of using up the whole test's time.
	const step = 20 * time.Second
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, cancel := context.WithTimeout(bctx, step)
		defer cancel()
		if err := chromedp.Do(sctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	poll := func(js string, d time.Duration) chromedp.Action[chromedp.Void] {
		return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
			_, err := chromedp.Poll[bool](js, chromedp.WithPollingTimeout(d))(ctx, tg)
			return chromedp.Void{}, err
		}
	}
	eval := func(js string) chromedp.Action[chromedp.Void] {
		return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
			_, err := chromedp.Evaluate[any](js)(ctx, tg)
			return chromedp.Void{}, err
		}
	}
	// show goes to a route and waits until the page says it shows it.
	show := func(route string) {
		t.Helper()
		do("go to "+route, eval(fmt.Sprintf("location.hash = %q", route)),
			poll(fmt.Sprintf("document.body.dataset.route === %q && document.body.dataset.page !== 'error'", route), 15*time.Second))
	}
	str := func(js string) string {
		t.Helper()
		sctx, cancel := context.WithTimeout(bctx, step)
		defer cancel()
		v, err := chromedp.Run(sctx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("evaluate %s: %v", js, err)
		}
		return v
	}
	// text reads an element's text in one evaluation: the overview
	// redraws on every sample, so a node found by one call may be gone
	// by the next.
	text := func(sel string) string {
		t.Helper()
		return strings.TrimSpace(str(fmt.Sprintf(`(document.querySelector(%q) || {innerText: "(missing)"}).innerText`, sel)))
	}
	count := func(js string) int {
		t.Helper()
		sctx, cancel := context.WithTimeout(bctx, step)
		defer cancel()
		n, err := chromedp.Run(sctx, chromedp.Evaluate[int](js))
		if err != nil {
			t.Fatalf("evaluate %s: %v", js, err)
		}
		return n
	}
	shot := func(name string) {
		t.Helper()
		if shots == "" {
			return
		}
		// The window (1400×1000) is enough: a URL's full page with its
		// change log runs to thousands of pixels.
		png, err := chromedp.Run(bctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatalf("screenshot: %v", err)
		}
		if err := os.WriteFile(filepath.Join(shots, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// Overview: the numbers are the coordinator's, and the charts have
	// data.
	do("open the dashboard", chromedp.Navigate(c.base+"/#/"), poll(`document.body.dataset.route === "#/"`, 15*time.Second))
	if got, want := text(`[data-card="URLs"] .v`), strconv.Itoa(n.Coordinator.Status().URLs); got != want {
		t.Errorf("overview URLs %q, want %q", got, want)
	}
	if got := text(`[data-card="Workers seen"] .v`); got != "1" {
		t.Errorf("overview workers %q, want 1", got)
	}
	if got := count(`document.querySelectorAll(".chart").length`); got != 6 {
		t.Errorf("%d charts, want 6", got)
	}
	if got := count(`document.querySelector('[data-chart="Fetch and change rate"] polyline').getAttribute("points").split(" ").length`); got < 3 {
		t.Errorf("fetch rate chart has %d points", got)
	}
	if got := count(`document.querySelectorAll('[data-chart="Model freshness (90% band)"] path.band').length`); got != 1 {
		t.Errorf("freshness chart has %d bands", got)
	}
	// Live: a new sample arrives over server-sent events and is drawn.
	before := count(`Number(document.querySelector("main p.muted:last-child").textContent.split(" ")[0])`)
	do("live update", poll(fmt.Sprintf(`Number(document.querySelector("main p.muted:last-child").textContent.split(" ")[0]) > %d`, before), 10*time.Second))
	shot("overview")
	noErrors("overview")

	// Hosts: one row per host, with the store's URL counts.
	show("#/hosts")
	if got := count(`document.querySelectorAll('[data-table="hosts"] tbody tr').length`); got != len(hosts) {
		t.Errorf("%d host rows, want %d", got, len(hosts))
	}
	p0, err := db.ListURLs(store.Query{Host: hosts[0]})
	if err != nil {
		t.Fatal(err)
	}
	urlsCell := str(`(() => { const r = [...document.querySelectorAll('[data-table="hosts"] tbody tr')].find(r => r.cells[0].textContent === ` + strconv.Quote(hosts[0]) + `); return r.cells[7].textContent })()`)
	if urlsCell != strconv.Itoa(p0.Total) {
		t.Errorf("host %s shows %s URLs, the store has %d", hosts[0], urlsCell, p0.Total)
	}
	shot("hosts")
	noErrors("hosts")

	// URLs: the count is the store's; filters narrow it.
	total := 0
	if err := db.ForEach(func(store.URL) error { total++; return nil }); err != nil {
		t.Fatal(err)
	}
	show("#/urls")
	if got := text(`[data-count]`); !strings.HasSuffix(got, fmt.Sprintf("of %d", total)) {
		t.Errorf("URL count %q, want … of %d", got, total)
	}
	if got := count(`document.querySelectorAll('[data-table="urls"] tbody tr').length`); got != min(total, 50) {
		t.Errorf("%d URL rows, want %d", got, min(total, 50))
	}
	shot("urls")
	do("filter by host", chromedp.SetValue(chromedp.CSS(`input[name="host"]`), hosts[1]), chromedp.Click(chromedp.CSS(`form.filters button[type="submit"]`)),
		poll(`document.body.dataset.route.includes("host=")`, 10*time.Second))
	p1, _ := db.ListURLs(store.Query{Host: hosts[1]})
	if got := text(`[data-count]`); !strings.HasSuffix(got, fmt.Sprintf("of %d", p1.Total)) {
		t.Errorf("host filter count %q, want … of %d", got, p1.Total)
	}
	show("#/urls?state=disallowed")
	if got := count(`document.querySelectorAll('[data-table="urls"] tbody tr').length`); got != 1 || !strings.Contains(text(`[data-table="urls"] tbody`), "/private/secret") {
		t.Errorf("disallowed filter: %d rows", got)
	}
	noErrors("urls")

	// One URL: its numbers, then pause it from the page. The target keeps
	// its raw body and has seen the most changes.
	target := rawChanged()
	if target == "" {
		t.Fatal("no URL keeping its raw body has changed")
	}
	show("#/url?u=" + urlQuery(target))
	shot("url")
	do("pause", chromedp.Click(chromedp.CSS(`[data-action="pause"]`)), chromedp.WaitVisible(chromedp.CSS(`[data-action="resume"]`)))
	rec, err := db.Get(target)
	if err != nil || !rec.Paused {
		t.Fatalf("pause in the page did not reach the store: %+v %v", rec.Paused, err)
	}
	if got := text(`[data-field="state"]`); got != "paused" {
		t.Errorf("state shown %q after pause", got)
	}
	// Once its last fetch is in, the page shows the store's history.
	testutil.WaitFor(t, 10*time.Second, "the paused URL to have no fetch out", func() bool {
		var d api.Detail
		c.get("/api/url/show?url="+urlQuery(target), &d)
		return d.Schedule != nil && !d.Schedule.InFlight
	})
	show("#/url?u=" + urlQuery(target) + "&again=1")
	rec, _ = db.Get(target)
	fl, _ := db.FetchLog(target)
	if got := text(`[data-field="fetches"]`); !strings.HasPrefix(got, strconv.FormatInt(rec.Fetches, 10)+" ") {
		t.Errorf("fetches shown %q, store has %d", got, rec.Fetches)
	}
	if got := count(`document.querySelectorAll('[data-table="fetches"] tbody tr').length`); got != len(fl) {
		t.Errorf("%d fetch rows, store has %d", got, len(fl))
	}
	if raw, found, _ := db.Raw(target, false); !found || !strings.HasPrefix(text(`[data-field="raw body"]`), fmt.Sprintf("raw body kept (%d bytes", raw.Size)) {
		t.Errorf("raw body shown as %q; the store has one: %v", text(`[data-field="raw body"]`), found)
	}
	if changes, _ := db.LastChangesOf(target, api.DetailChanges); count(`document.querySelectorAll('[data-table="changes"] tbody tr').length`) != len(changes) {
		t.Errorf("change log rows differ from the store's %d changes", len(changes))
	}
	noErrors("url")

	// Delete the robots-disallowed seed from its page.
	show("#/url?u=" + urlQuery(private))
	do("delete", chromedp.Click(chromedp.CSS(`[data-action="delete"]`)), chromedp.Click(chromedp.CSS(`[data-action="confirm-delete"]`)),
		poll(`document.body.dataset.route === "#/urls"`, 10*time.Second))
	if _, err := db.Get(private); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("delete in the page did not reach the store: %v", err)
	}
	if _, err := db.Deleted(private); err != nil {
		t.Errorf("the deleted URL's history was not kept: %v", err)
	}
	if st := n.Coordinator.Status(); st.URLs != total-1 {
		t.Errorf("scheduler has %d URLs after the delete, want %d", st.URLs, total-1)
	}
	noErrors("delete")

	// Capture URLs and keyword-search sources.
	show("#/capture")
	if got := count(`document.querySelectorAll('[data-table="capture"] tbody tr').length`); got != len(captures) {
		t.Errorf("%d capture rows, want %d", got, len(captures))
	}
	if !strings.Contains(text(`[data-table="capture"] tbody`), "10s (configured)") {
		t.Errorf("capture period not shown: %q", text(`[data-table="capture"] tbody`))
	}
	shot("capture")
	// A capture URL's versions, and the diff of the newest against the one
	// before.
	capURL, most := "", 0
	for _, u := range captures {
		if vs, _ := db.Versions(u); len(vs) > most {
			capURL, most = u, len(vs)
		}
	}
	if capURL == "" {
		t.Fatal("no capture URL has a version")
	}
	show("#/url?u=" + urlQuery(capURL))
	vs, _ := db.Versions(capURL)
	if got := count(`document.querySelectorAll('[data-table="versions"] tbody tr').length`); got != len(vs) {
		t.Errorf("%d version rows, the store has %d", got, len(vs))
	}
	do("diff a version", chromedp.Click(chromedp.CSS(`[data-table="versions"] tbody tr button`)), chromedp.WaitVisible(chromedp.CSS(`[data-version-diff] pre.diff`)))
	against := "nothing"
	if len(vs) > 1 {
		against = strconv.Itoa(len(vs) - 1)
	}
	heads := str(`[...document.querySelectorAll("main h2")].map(h => h.textContent).join("|")`)
	if want := fmt.Sprintf("Version %d against %s", len(vs), against); !strings.Contains(heads, want) {
		t.Errorf("headings %q, want %q", heads, want)
	}
	if got := count(`document.querySelectorAll("[data-version-diff] pre.diff div.add").length`); got == 0 {
		t.Error("the diff shows no added line")
	}
	noErrors("capture")
	show("#/sources")
	itemsN, _ := db.Items(src.Name)
	row := text(`[data-table="sources"] tbody tr`)
	if !strings.HasPrefix(row, src.Name) || !strings.Contains(row, strconv.Itoa(len(itemsN))) {
		t.Errorf("source row %q, want %s with %d items", row, src.Name, len(itemsN))
	}
	shot("sources")
	noErrors("sources")
}

func urlQuery(u string) string { return url.QueryEscape(u) }
