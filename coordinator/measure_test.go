package coordinator

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/freshcrawl/freshcrawl/internal/api"
	"github.com/freshcrawl/freshcrawl/internal/schedule"
	"github.com/freshcrawl/freshcrawl/internal/testutil"
	"github.com/freshcrawl/freshcrawl/worker"
	"github.com/freshcrawl/freshcrawl/worker/robots"
)

// hit is one request a site served: when it arrived, to what, and the
// status it was answered with.
type hit struct {
	at     time.Time
	host   string
	path   string
	status int
}

// citizenSite is the web of the measurement: a host on each of 127.0.0.2
// to .5 with pages that fail in every way a good citizen must meet, and
// a port on 127.0.0.6 that refuses connections. Every request is logged
// as the server sees it, robots.txt included.
type citizenSite struct {
	retryAfter time.Duration // what host b's 429 asks for
	healAt     time.Time     // host b answers 429 until then
	maxBody    int

	mu   sync.Mutex
	hits []hit
	srvs []*http.Server
	base map[string]string // host name → http://ip:port
}

func newCitizenSite(t *testing.T, retryAfter time.Duration, maxBody int) *citizenSite {
	t.Helper()
	s := &citizenSite{retryAfter: retryAfter, maxBody: maxBody, base: map[string]string{}}
	for i, name := range []string{"a", "b", "c", "d"} {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.%d:0", 2+i))
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: s.handler(name), ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		s.srvs = append(s.srvs, srv)
		s.base[name] = "http://" + ln.Addr().String()
	}
	// A port nothing listens on: a refused connection on first contact.
	ln, err := net.Listen("tcp", "127.0.0.6:0")
	if err != nil {
		t.Fatal(err)
	}
	s.base["e"] = "http://" + ln.Addr().String()
	ln.Close()
	t.Cleanup(func() {
		for _, srv := range s.srvs {
			srv.Close()
		}
	})
	return s
}

// urls are the pages seeded, one a line.
func (s *citizenSite) urls() []string {
	var out []string
	for _, p := range []string{"a/ok", "a/missing", "a/broken", "a/retired", "b/p1", "b/p2", "c/private", "c/big", "d/page", "e/page"} {
		host, path, _ := strings.Cut(p, "/")
		out = append(out, s.base[host]+"/"+path)
	}
	return out
}

func (s *citizenSite) handler(host string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		status := http.StatusOK
		defer func() {
			s.mu.Lock()
			s.hits = append(s.hits, hit{at: time.Now(), host: host, path: r.URL.Path, status: status})
			s.mu.Unlock()
		}()
		switch {
		case r.URL.Path == "/robots.txt" && host == "d":
			status = http.StatusServiceUnavailable
		case r.URL.Path == "/robots.txt":
			status = http.StatusNotFound
		case host == "a" && r.URL.Path == "/missing":
			status = http.StatusNotFound
		case host == "a" && r.URL.Path == "/broken":
			status = http.StatusInternalServerError
		case host == "a" && r.URL.Path == "/retired":
			status = http.StatusGone
		case host == "b" && time.Now().Before(s.healAt):
			status = http.StatusTooManyRequests
			w.Header().Set("Retry-After", fmt.Sprint(int(s.retryAfter/time.Second)))
		case host == "c" && r.URL.Path == "/private":
			w.Header().Set("X-Robots-Tag", "noarchive")
		}
		if status != http.StatusOK {
			w.WriteHeader(status)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<html><body><p>%s%s</p>", host, r.URL.Path)
		if r.URL.Path == "/big" {
			fmt.Fprint(w, strings.Repeat("<p>a long page, longer than max-body</p>\n", 2*s.maxBody/40))
		}
		fmt.Fprint(w, "</body></html>")
	}
}

// served returns the requests served up to until.
func (s *citizenSite) served(until time.Time) []hit {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []hit
	for _, h := range s.hits {
		if !h.at.After(until) {
			out = append(out, h)
		}
	}
	return out
}

// citizenScale is a run of the measurement: how long the crawl runs, the
// Retry-After host b sends, and the least base of the error backoff.
type citizenScale struct {
	crawl, retryAfter, minBackoff time.Duration
}

// measureCitizen crawls the site for sc.crawl at a budget that would
// allow 100 requests to each URL and checks, from the server's log, what
// a good citizen's crawl leaves there: a 404 gets at most 8 requests and
// a 410 one; host b, answering 429 with Retry-After for the first third
// of the run, gets no request inside any Retry-After it sent, and then
// its pages get their share again; the healthy page next to the failing
// ones on host a gets its share throughout. The API shows what happened:
// the 410 gone, the error kinds by what happened, robots.txt outages as
// robots-unreachable, the noarchive page without a copy, the long page
// cut and kept.
func measureCitizen(t *testing.T, sc citizenScale) {
	const maxBody = 64 << 10
	site := newCitizenSite(t, sc.retryAfter, maxBody)
	urls := site.urls()
	share := 100 / sc.crawl.Seconds() // each URL's fetches a second at the budget
	budget := share * float64(len(urls))
	settings := testSettings()
	settings.AckWait, settings.MaxDeliver = time.Minute, 5
	e := newEnv(t, settings)
	uniform, err := schedule.PolicyByName("uniform", "freshness")
	if err != nil {
		t.Fatal(err)
	}
	c := e.coordinator(t, func(o *Options) {
		o.Budget, o.HostRate, o.Policy, o.MinBackoff = budget, 4*budget, uniform, sc.minBackoff
		o.Replan = max(sc.crawl/30, time.Second)
	})
	wo := worker.DefaultOptions()
	wo.ID, wo.Concurrency, wo.Log = "citizen", 4, testutil.QuietLogger(t)
	wo.Fetch.AllowPrivate, wo.Fetch.MaxBody, wo.Fetch.Timeout = true, maxBody, 10*time.Second
	w, err := worker.New(e.nc, e.js, robots.NewMemoryStore(), wo)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	site.healAt = start.Add(sc.crawl / 3)
	stopCoord := run(t, c)
	stopWorker := testutil.Run(t, "worker", w.Run)
	addSeeds(t, c, urls...)
	// The run is the measurement: its length is the crawl time measured,
	// not a wait for something to happen.
	<-time.After(sc.crawl)
	end := time.Now()
	hits := site.served(end)
	srv := httptest.NewServer(c.Handler())
	defer srv.Close()
	var gone api.ListPage
	getJSON(t, srv.URL+"/api/urls?state=gone", &gone)
	var disallowed api.ListPage
	getJSON(t, srv.URL+"/api/urls?state=disallowed", &disallowed)
	var all api.ListPage
	getJSON(t, srv.URL+"/api/urls?limit=100", &all)
	var status Status
	getJSON(t, srv.URL+"/api/status", &status)
	type shown struct {
		Record struct {
			NoArchive bool `json:"no_archive"`
			Truncated bool `json:"truncated"`
		} `json:"record"`
	}
	stopWorker()
	stopCoord()

	count := map[string]int{}
	for _, h := range hits {
		count[h.host+h.path]++
	}
	t.Logf("%s of crawl at %.2f/s (100 a URL): requests served %v", sc.crawl, budget, count)

	// Failing pages: backed off, or retired.
	if n := count["a/missing"]; n > 8 || n == 0 {
		t.Errorf("the 404 page got %d requests, want 1 to 8", n)
	}
	if n := count["a/broken"]; n > 8 || n == 0 {
		t.Errorf("the 500 page got %d requests, want 1 to 8", n)
	}
	if n := count["a/retired"]; n != 1 {
		t.Errorf("the 410 page got %d requests, want 1: it is gone after the first", n)
	}
	if n := count["d/page"]; n != 0 {
		t.Errorf("a page of the host whose robots.txt answers 503 got %d requests", n)
	}

	// Host b: nothing inside a Retry-After, then its share again.
	var b []hit
	for _, h := range hits {
		if h.host == "b" {
			b = append(b, h)
		}
	}
	limited, least := 0, time.Duration(0)
	for i, h := range b {
		if h.status != http.StatusTooManyRequests {
			continue
		}
		limited++
		if i+1 == len(b) {
			continue
		}
		if gap := b[i+1].at.Sub(h.at); least == 0 || gap < least {
			least = gap
		}
		if b[i+1].at.Sub(h.at) < sc.retryAfter {
			t.Errorf("host b got %s %s after its 429 asked for %s", b[i+1].path, b[i+1].at.Sub(h.at), sc.retryAfter)
		}
	}
	t.Logf("host b: %d answers 429 (Retry-After %s); the shortest wait after one: %s", limited, sc.retryAfter, least.Round(time.Millisecond))
	if limited == 0 || limited > int(sc.crawl/3/sc.retryAfter)+2 {
		t.Errorf("host b answered %d 429s in the first third of the run, want one per Retry-After (%s)", limited, sc.retryAfter)
	}
	// Rates are compared with a healthy page of a healthy host over the
	// same time (the control), so that a machine too busy to keep up with
	// the budget slows both alike.
	after := func(host, path string, from time.Time) int {
		n := 0
		for _, h := range hits {
			if h.host == host && h.path == path && h.at.After(from) && h.status == http.StatusOK {
				n++
			}
		}
		return n
	}
	control := count["c/private"]
	if want := share * sc.crawl.Seconds(); float64(control) < 0.5*want {
		t.Errorf("the control page got %d requests, want about its share of %.0f", control, want)
	}
	// Host b's share once healthy: from the end of the last Retry-After.
	healed := site.healAt.Add(sc.retryAfter)
	ctl := after("c", "/private", healed)
	for _, p := range []string{"/p1", "/p2"} {
		n := after("b", p, healed)
		if float64(n) < 0.8*float64(ctl) {
			t.Errorf("host b's %s got %d requests after it healed, the control %d over the same time", p, n, ctl)
		}
		t.Logf("host b's %s: %d requests in the %s after it healed (the control %d, the share %.0f)", p, n, end.Sub(healed).Round(time.Second), ctl, share*end.Sub(healed).Seconds())
	}
	// The healthy page beside the failing ones keeps its share.
	if n := count["a/ok"]; float64(n) < 0.9*float64(control) {
		t.Errorf("the healthy page of host a got %d requests, the control %d", n, control)
	}

	// What the API shows.
	if len(gone.URLs) != 1 || gone.URLs[0].URL != site.base["a"]+"/retired" || status.Gone != 1 {
		t.Errorf("gone: %+v, status counts %d; want the 410 page alone", gone.URLs, status.Gone)
	}
	kinds := map[string]string{}
	for _, r := range all.URLs {
		kinds[strings.TrimPrefix(r.URL, "http://")] = r.LastErrKind
	}
	for url, want := range map[string]string{site.base["a"] + "/missing": "not-found", site.base["a"] + "/broken": "server-error",
		site.base["a"] + "/retired": "not-found", site.base["d"] + "/page": "robots-unreachable", site.base["e"] + "/page": "robots-unreachable"} {
		if got := kinds[strings.TrimPrefix(url, "http://")]; got != want {
			t.Errorf("%s: error kind %q, want %q", url, got, want)
		}
	}
	if len(disallowed.URLs) != 2 {
		t.Errorf("disallowed: %d URLs, want the two whose robots.txt is unreachable", len(disallowed.URLs))
	}
	for _, p := range []struct {
		url                  string
		noArchive, truncated bool
	}{{site.base["c"] + "/private", true, false}, {site.base["c"] + "/big", false, true}} {
		var show shown
		getJSON(t, srv.URL+"/api/url/show?url="+p.url, &show)
		var cp api.Copy
		getJSON(t, srv.URL+"/api/content?url="+p.url, &cp)
		if show.Record.NoArchive != p.noArchive || show.Record.Truncated != p.truncated || (cp.Text == "") != p.noArchive {
			t.Errorf("%s: noarchive %v truncated %v copy %d characters; want noarchive %v truncated %v", p.url, show.Record.NoArchive, show.Record.Truncated, len(cp.Text), p.noArchive, p.truncated)
		}
	}
	if n := count["c/big"]; float64(n) < 0.9*float64(control) {
		t.Errorf("the page cut at max-body got %d requests, the control %d: it is a success, not an error to back off", n, control)
	}
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// The measurement on a tenth of the time: 30 s of crawl, Retry-After 3 s,
// the least base of the error backoff a tenth of its default.
func TestGoodCitizenMeasured(t *testing.T) {
	measureCitizen(t, citizenScale{crawl: 30 * time.Second, retryAfter: 3 * time.Second, minBackoff: DefaultOptions().MinBackoff / 10})
}

// The measurement as the issue states it: 5 minutes of crawl, Retry-After
// 30 s, the default backoff.
func TestGoodCitizenMeasuredFiveMinutes(t *testing.T) {
	testutil.Slow(t)
	measureCitizen(t, citizenScale{crawl: 5 * time.Minute, retryAfter: 30 * time.Second, minBackoff: DefaultOptions().MinBackoff})
}
