package robots

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const testUA = "freshcrawl/1.0 (+https://example.com/bot)"

// clock is a manually advanced clock for Options.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// robotsServer serves a settable robots.txt response and counts requests.
type robotsServer struct {
	*httptest.Server
	hits   atomic.Int64
	mu     sync.Mutex
	status int
	body   string
	uas    []string
}

func newRobotsServer(t *testing.T, status int, body string) *robotsServer {
	t.Helper()
	rs := &robotsServer{status: status, body: body}
	rs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/robots.txt" {
			http.Error(w, "unexpected request", http.StatusTeapot)
			return
		}
		rs.hits.Add(1)
		rs.mu.Lock()
		status, body := rs.status, rs.body
		rs.uas = append(rs.uas, r.UserAgent())
		rs.mu.Unlock()
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(rs.Close)
	return rs
}

func (rs *robotsServer) set(status int, body string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.status, rs.body = status, body
}

func newTestChecker(rs *robotsServer, store Store, clk *clock, opts Options) *Checker {
	opts.Now = clk.Now
	return mustChecker(store, httpFetch(rs.Client(), testUA), opts)
}

// mustChecker is NewChecker for testUA, which must accept opts.
func mustChecker(store Store, fetch FetchFunc, opts Options) *Checker {
	c, err := NewChecker(store, fetch, testUA, opts)
	if err != nil {
		panic(err)
	}
	return c
}

// withOptions are the defaults with set's changes.
func withOptions(set func(*Options)) Options {
	o := DefaultOptions()
	set(&o)
	return o
}

// NewChecker refuses what Validate refuses, naming the field.
func TestNewCheckerValidates(t *testing.T) {
	fetch := func(context.Context, string) (int, []byte, error) { return http.StatusNotFound, nil, nil }
	for field, set := range map[string]func(*Options){
		"TTL":              func(o *Options) { o.TTL = 48 * time.Hour },
		"RetryUnreachable": func(o *Options) { o.RetryUnreachable = 0 },
		"MaxOrigins":       func(o *Options) { o.MaxOrigins = 0 },
	} {
		_, err := NewChecker(NewMemoryStore(), fetch, testUA, withOptions(set))
		if err == nil || !strings.Contains(err.Error(), field+":") {
			t.Errorf("%s: NewChecker = %v, want an error naming the field", field, err)
		}
	}
	if _, err := NewChecker(nil, fetch, testUA, DefaultOptions()); err == nil {
		t.Error("NewChecker accepted a nil store")
	}
}

func mustCheck(t *testing.T, c *Checker, u string) Decision {
	t.Helper()
	d, err := c.Check(context.Background(), u)
	if err != nil {
		t.Fatalf("Check(%q): %v", u, err)
	}
	return d
}

func TestCheckerStatuses(t *testing.T) {
	tests := []struct {
		status  int
		body    string
		allowed bool
	}{
		{http.StatusOK, "user-agent: *\ndisallow: /page\n", false},
		{http.StatusOK, "user-agent: *\ndisallow: /other\n", true},
		{http.StatusNotFound, "user-agent: *\ndisallow: /\n", true}, // body ignored
		{http.StatusForbidden, "", true},                            // RFC 9309 §2.3.1.3
		{http.StatusGone, "", true},
		{http.StatusTooManyRequests, "", false},
		{http.StatusInternalServerError, "", false},
		{http.StatusServiceUnavailable, "", false},
	}
	for _, tt := range tests {
		t.Run(http.StatusText(tt.status), func(t *testing.T) {
			rs := newRobotsServer(t, tt.status, tt.body)
			c := newTestChecker(rs, NewMemoryStore(), newClock(), DefaultOptions())
			d := mustCheck(t, c, rs.URL+"/page")
			if d.Allowed != tt.allowed || !d.Fetched || d.Reason == "" {
				t.Errorf("status %d: %+v, want Allowed=%v, Fetched and a Reason", tt.status, d, tt.allowed)
			}
		})
	}
}

func TestCheckerSendsUserAgent(t *testing.T) {
	rs := newRobotsServer(t, http.StatusOK, "user-agent: freshcrawl\ndisallow: /x\n")
	c := newTestChecker(rs, NewMemoryStore(), newClock(), DefaultOptions())
	if mustCheck(t, c, rs.URL+"/x").Allowed {
		t.Error("freshcrawl group not applied")
	}
	if rs.uas[0] != testUA {
		t.Errorf("User-Agent = %q, want %q", rs.uas[0], testUA)
	}
}

func TestCheckerCachesAndExpires(t *testing.T) {
	rs := newRobotsServer(t, http.StatusOK, "user-agent: *\ndisallow: /private\ncrawl-delay: 2.5\n")
	clk := newClock()
	c := newTestChecker(rs, NewMemoryStore(), clk, DefaultOptions()) // the longest TTL RFC 9309 allows, 24h

	d := mustCheck(t, c, rs.URL+"/private/x")
	if d.Allowed || !d.Fetched || d.CrawlDelay != 2500*time.Millisecond {
		t.Fatalf("first check: %+v", d)
	}
	for i := range 100 {
		d = mustCheck(t, c, rs.URL+"/public/"+strings.Repeat("x", i))
		if !d.Allowed || d.Fetched || d.CrawlDelay != 2500*time.Millisecond {
			t.Fatalf("cached check: %+v", d)
		}
	}
	clk.Advance(24*time.Hour - time.Second)
	mustCheck(t, c, rs.URL+"/")
	if n := rs.hits.Load(); n != 1 {
		t.Fatalf("robots.txt fetched %d times within TTL, want 1", n)
	}

	rs.set(http.StatusOK, "user-agent: *\ndisallow: /public\n")
	clk.Advance(time.Second)
	d = mustCheck(t, c, rs.URL+"/public/x")
	if d.Allowed || !d.Fetched || d.CrawlDelay != 0 {
		t.Fatalf("after TTL: %+v, want refetched rules applied", d)
	}
	if n := rs.hits.Load(); n != 2 {
		t.Fatalf("robots.txt fetched %d times after TTL, want 2", n)
	}
}

func TestCheckerRetriesUnreachable(t *testing.T) {
	rs := newRobotsServer(t, http.StatusInternalServerError, "")
	clk := newClock()
	c := newTestChecker(rs, NewMemoryStore(), clk, withOptions(func(o *Options) { o.RetryUnreachable = 5 * time.Minute }))

	if d := mustCheck(t, c, rs.URL+"/a"); d.Allowed || !d.Fetched {
		t.Fatalf("500: %+v, want disallowed and fetched", d)
	}
	clk.Advance(5*time.Minute - time.Second)
	if d := mustCheck(t, c, rs.URL+"/a"); d.Allowed || d.Fetched {
		t.Fatalf("500 within retry: %+v, want cached disallow", d)
	}
	rs.set(http.StatusOK, "user-agent: *\ndisallow: /b\n")
	clk.Advance(time.Second)
	if d := mustCheck(t, c, rs.URL+"/a"); !d.Allowed || !d.Fetched {
		t.Fatalf("after retry: %+v, want refetched and allowed", d)
	}
	if n := rs.hits.Load(); n != 2 {
		t.Fatalf("robots.txt fetched %d times, want 2", n)
	}
	// A successful fetch is then kept for the full TTL, not the retry delay.
	clk.Advance(time.Hour)
	if d := mustCheck(t, c, rs.URL+"/b"); d.Allowed || d.Fetched {
		t.Fatalf("after an hour: %+v", d)
	}
}

func TestCheckerNetworkError(t *testing.T) {
	clk := newClock()
	var calls atomic.Int64
	fetch := func(ctx context.Context, robotsURL string) (int, []byte, error) {
		calls.Add(1)
		if robotsURL != "https://down.example/robots.txt" {
			t.Errorf("robotsURL = %q", robotsURL)
		}
		return 0, nil, errors.New("connection refused")
	}
	c := mustChecker(NewMemoryStore(), fetch, withOptions(func(o *Options) { o.Now = clk.Now }))
	d := mustCheck(t, c, "https://down.example/x")
	if d.Allowed || !d.Fetched || !strings.Contains(d.Reason, "unreachable") {
		t.Fatalf("unreachable: %+v", d)
	}
	clk.Advance(DefaultOptions().RetryUnreachable - time.Second)
	mustCheck(t, c, "https://down.example/y")
	clk.Advance(time.Second)
	mustCheck(t, c, "https://down.example/y")
	if n := calls.Load(); n != 2 {
		t.Fatalf("fetches = %d, want 2 (default retry %v)", n, DefaultOptions().RetryUnreachable)
	}
}

func TestCheckerConcurrentSingleFetch(t *testing.T) {
	rs := newRobotsServer(t, http.StatusOK, "user-agent: *\ndisallow: /no\n")
	started := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	inner := httpFetch(rs.Client(), testUA)
	fetch := func(ctx context.Context, u string) (int, []byte, error) {
		once.Do(func() { close(started) })
		<-release
		return inner(ctx, u)
	}
	c := mustChecker(NewMemoryStore(), fetch, withOptions(func(o *Options) { o.Now = newClock().Now }))

	const workers = 8
	var wg sync.WaitGroup
	var fetched atomic.Int64
	errs := make(chan error, workers*10)
	for w := range workers {
		wg.Go(func() {
			for i := range 10 {
				path := "/yes"
				if (w+i)%2 == 0 {
					path = "/no"
				}
				d, err := c.Check(context.Background(), rs.URL+path)
				if err != nil {
					errs <- err
					return
				}
				if d.Allowed != (path == "/yes") {
					errs <- errors.New("wrong decision for " + path)
				}
				if d.Fetched {
					fetched.Add(1)
				}
			}
		})
	}
	<-started
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := rs.hits.Load(); n != 1 {
		t.Errorf("server saw %d robots.txt requests, want 1", n)
	}
	if n := fetched.Load(); n != 1 {
		t.Errorf("%d decisions report Fetched, want 1", n)
	}
}

func TestCheckerLeaderCancelled(t *testing.T) {
	var calls atomic.Int64
	entered := make(chan struct{}, 2)
	fetch := func(ctx context.Context, u string) (int, []byte, error) {
		n := calls.Add(1)
		entered <- struct{}{}
		if n == 1 {
			<-ctx.Done() // the first caller gives up mid-fetch
			return 0, nil, ctx.Err()
		}
		return http.StatusOK, []byte("user-agent: *\ndisallow: /x\n"), nil
	}
	store := NewMemoryStore()
	c := mustChecker(store, fetch, withOptions(func(o *Options) { o.Now = newClock().Now }))

	ctx, cancel := context.WithCancel(context.Background())
	leaderErr := make(chan error, 1)
	go func() {
		_, err := c.Check(ctx, "http://h.example/a")
		leaderErr <- err
	}()
	<-entered
	waiter := make(chan Decision, 1)
	go func() {
		d, err := c.Check(context.Background(), "http://h.example/x")
		if err != nil {
			t.Errorf("waiter: %v", err)
		}
		waiter <- d
	}()
	cancel()
	if err := <-leaderErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("leader error = %v, want context.Canceled", err)
	}
	d := <-waiter
	if d.Allowed {
		t.Errorf("waiter decision %+v, want disallowed by the refetched rules", d)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("fetches = %d, want 2", n)
	}
	// The cancelled fetch must not have been cached as "unreachable".
	e, ok, _ := store.Get(context.Background(), "http://h.example")
	if !ok || e.Unreachable || e.Status != http.StatusOK {
		t.Errorf("stored entry %+v, %v", e, ok)
	}
}

func TestCheckerCancelledWaiter(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{})
	fetch := func(ctx context.Context, u string) (int, []byte, error) {
		close(entered)
		<-release
		return http.StatusNotFound, nil, nil
	}
	c := mustChecker(NewMemoryStore(), fetch, DefaultOptions())
	leader := make(chan error, 1)
	go func() {
		_, err := c.Check(context.Background(), "http://h.example/a")
		leader <- err
	}()
	<-entered
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Check(ctx, "http://h.example/b"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled waiter error = %v", err)
	}
	close(release)
	if err := <-leader; err != nil {
		t.Errorf("leader: %v", err)
	}
}

func TestCheckerSharedStore(t *testing.T) {
	rs := newRobotsServer(t, http.StatusOK, "user-agent: *\ndisallow: /x\n")
	clk := newClock()
	store := NewMemoryStore()
	a := newTestChecker(rs, store, clk, DefaultOptions())
	b := newTestChecker(rs, store, clk, DefaultOptions())
	if d := mustCheck(t, a, rs.URL+"/x"); d.Allowed || !d.Fetched {
		t.Fatalf("a: %+v", d)
	}
	if d := mustCheck(t, b, rs.URL+"/x"); d.Allowed || d.Fetched {
		t.Fatalf("b: %+v, want store reused", d)
	}
	if n := rs.hits.Load(); n != 1 {
		t.Fatalf("fetches = %d, want 1", n)
	}
}

func TestCheckerRobotsTxtAlwaysAllowed(t *testing.T) {
	fetch := func(context.Context, string) (int, []byte, error) {
		t.Error("unexpected fetch")
		return 0, nil, nil
	}
	c := mustChecker(NewMemoryStore(), fetch, DefaultOptions())
	if d := mustCheck(t, c, "http://h.example/robots.txt"); !d.Allowed || d.Fetched {
		t.Errorf("/robots.txt: %+v", d)
	}
}

func TestCheckerInvalidURL(t *testing.T) {
	fetch := func(context.Context, string) (int, []byte, error) {
		t.Error("unexpected fetch")
		return 0, nil, nil
	}
	c := mustChecker(NewMemoryStore(), fetch, DefaultOptions())
	for _, u := range []string{"ftp://h/x", "/relative", "http:///nohost", "http://h/%zz", "mailto:a@b"} {
		if _, err := c.Check(context.Background(), u); err == nil {
			t.Errorf("Check(%q) succeeded", u)
		}
	}
}

func TestOriginKey(t *testing.T) {
	for in, want := range map[string]string{
		"http://Example.COM/a":        "http://example.com",
		"http://example.com:80/a":     "http://example.com",
		"https://example.com:443/":    "https://example.com",
		"https://example.com:80/":     "https://example.com:80",
		"HTTP://example.com:8080?x":   "http://example.com:8080",
		"http://[::1]:8080/":          "http://[::1]:8080",
		"http://[::1]/":               "http://[::1]",
		"http://user:pw@example.com/": "http://example.com",
	} {
		u, err := url.Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		got, err := originKey(u)
		if err != nil || got != want {
			t.Errorf("originKey(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestCheckerOriginsSeparate(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	fetch := func(_ context.Context, u string) (int, []byte, error) {
		mu.Lock()
		defer mu.Unlock()
		seen[u]++
		return http.StatusNotFound, nil, nil
	}
	c := mustChecker(NewMemoryStore(), fetch, withOptions(func(o *Options) { o.MaxOrigins = 2 }))
	for _, u := range []string{
		"http://a.example/1", "http://A.example:80/2", "https://a.example/3",
		"http://a.example:8080/4", "http://b.example/5",
	} {
		mustCheck(t, c, u)
	}
	want := map[string]int{
		"http://a.example/robots.txt": 1, "https://a.example/robots.txt": 1,
		"http://a.example:8080/robots.txt": 1, "http://b.example/robots.txt": 1,
	}
	for k, v := range want {
		if seen[k] != v {
			t.Errorf("fetches of %s = %d, want %d (all: %v)", k, seen[k], v, seen)
		}
	}
	if c.lru.Len() != 2 {
		t.Errorf("in-memory origins = %d, want MaxOrigins 2", c.lru.Len())
	}
}

// failingStore fails every operation.
type failingStore struct{}

func (failingStore) Get(context.Context, string) (Entry, bool, error) {
	return Entry{}, false, errors.New("store down")
}
func (failingStore) Put(context.Context, string, Entry) error { return errors.New("store down") }

func TestCheckerStoreErrorsDoNotFailChecks(t *testing.T) {
	rs := newRobotsServer(t, http.StatusOK, "user-agent: *\ndisallow: /x\n")
	c := newTestChecker(rs, failingStore{}, newClock(), DefaultOptions())
	if d := mustCheck(t, c, rs.URL+"/x"); d.Allowed || !d.Fetched {
		t.Fatalf("%+v", d)
	}
	if d := mustCheck(t, c, rs.URL+"/y"); !d.Allowed || d.Fetched {
		t.Fatalf("%+v, want in-memory cache used", d)
	}
}

func TestCheckerDistrustsFutureEntries(t *testing.T) {
	clk := newClock()
	store := NewMemoryStore()
	// Written by a worker whose clock is an hour ahead.
	_ = store.Put(context.Background(), "http://h.example", Entry{
		FetchedAt: clk.Now().Add(time.Hour), Status: http.StatusOK, Body: []byte("user-agent: *\ndisallow: /\n"),
	})
	var calls atomic.Int64
	fetch := func(context.Context, string) (int, []byte, error) {
		calls.Add(1)
		return http.StatusNotFound, nil, nil
	}
	c := mustChecker(store, fetch, withOptions(func(o *Options) { o.Now = clk.Now }))
	if d := mustCheck(t, c, "http://h.example/a"); !d.Allowed || !d.Fetched {
		t.Fatalf("%+v, want refetch", d)
	}
}

func TestHTTPFetchLimitsBody(t *testing.T) {
	body := bigRobots(maxBodySize+100<<10, "disallow: /beyond")
	rs := newRobotsServer(t, http.StatusOK, string(body))
	store := NewMemoryStore()
	c := newTestChecker(rs, store, newClock(), DefaultOptions())
	if d := mustCheck(t, c, rs.URL+"/beyond"); !d.Allowed {
		t.Errorf("rule beyond the limit applied: %+v", d)
	}
	e, _, _ := store.Get(context.Background(), strings.TrimSuffix(rs.URL, "/"))
	if len(e.Body) > maxBodySize || len(e.Body) < maxBodySize-100 {
		t.Errorf("stored body is %d octets", len(e.Body))
	}
}

func TestEntryEncoding(t *testing.T) {
	for _, e := range []Entry{
		{FetchedAt: time.Unix(1700000000, 123), Status: 200, Body: []byte("user-agent: *\n")},
		{FetchedAt: time.Unix(0, 0), Unreachable: true},
		{FetchedAt: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), Status: 503},
	} {
		got, err := decodeEntry(encodeEntry(e))
		if err != nil {
			t.Fatal(err)
		}
		if !got.FetchedAt.Equal(e.FetchedAt) || got.Status != e.Status || got.Unreachable != e.Unreachable || string(got.Body) != string(e.Body) {
			t.Errorf("round trip %+v -> %+v", e, got)
		}
	}
	if _, err := decodeEntry([]byte{1, 2}); err == nil {
		t.Error("short entry decoded")
	}
	if _, err := decodeEntry(make([]byte, entryHeaderLen)); err == nil {
		t.Error("version 0 entry decoded")
	}
}

func BenchmarkCheckCached(b *testing.B) {
	fetch := func(context.Context, string) (int, []byte, error) {
		return http.StatusOK, []byte(typicalRules()), nil
	}
	c := mustChecker(NewMemoryStore(), fetch, DefaultOptions())
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Check(ctx, "https://shop.example/products/widgets/blue?color=blue"); err != nil {
			b.Fatal(err)
		}
	}
}
