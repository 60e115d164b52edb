package robots

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/freshcrawl/freshcrawl/internal/optcheck"
)

// FetchFunc fetches robotsURL, following redirects (RFC 9309 §2.3.1.2 asks
// for at least five), and returns the final status and body. An error means
// no HTTP response was obtained; the Checker then treats the origin as
// unreachable. Bodies longer than MaxBodySize may be truncated.
type FetchFunc func(ctx context.Context, robotsURL string) (status int, body []byte, err error)

// Options tune a Checker. Start from DefaultOptions: a field's value is
// its value, and NewChecker refuses what Validate refuses.
type Options struct {
	// TTL is how long a fetched robots.txt is used. RFC 9309 §2.4: crawlers
	// SHOULD NOT use a cached copy for more than 24 hours, so 24h is both
	// the default and the maximum.
	TTL time.Duration
	// RetryUnreachable is how long a server error or unreachable result
	// (which means "disallow all", §2.3.1.4) is kept before robots.txt is
	// fetched again, at most TTL. 10 minutes by default: soon enough that
	// a brief outage does not stall a host for long, rare enough not to
	// add load to a struggling server.
	RetryUnreachable time.Duration
	// Now returns the current time; nil is time.Now. Tests inject a clock.
	Now func() time.Time
	// MaxOrigins bounds the parsed rules kept in memory (least recently
	// used origins are dropped, to be re-read from the Store).
	MaxOrigins int
	// Logger receives Store errors, which do not fail a Check (the Store is
	// a cache); nil discards them.
	Logger *slog.Logger
}

// DefaultOptions are the defaults of a Checker.
func DefaultOptions() Options {
	return Options{TTL: maxTTL, RetryUnreachable: 10 * time.Minute, MaxOrigins: 10000}
}

// Validate reports every field NewChecker would refuse, each by its name.
func (o Options) Validate() error {
	var errs optcheck.Errors
	if o.TTL <= 0 || o.TTL > maxTTL {
		errs.Check("TTL", fmt.Errorf("must be > 0 and at most %s (RFC 9309 §2.4), got %s", maxTTL, o.TTL))
	}
	if o.RetryUnreachable <= 0 || o.RetryUnreachable > o.TTL {
		errs.Check("RetryUnreachable", fmt.Errorf("must be > 0 and at most TTL %s, got %s", o.TTL, o.RetryUnreachable))
	}
	if o.MaxOrigins <= 0 {
		errs.Check("MaxOrigins", fmt.Errorf("must be > 0, got %d", o.MaxOrigins))
	}
	return errs.Err()
}

const (
	maxTTL = 24 * time.Hour
	// maxClockSkew is how far in the future a shared entry's FetchedAt may
	// be (another worker's clock running ahead) before it is distrusted.
	maxClockSkew = 5 * time.Minute
)

// Decision is the outcome of a Check.
type Decision struct {
	Allowed    bool
	CrawlDelay time.Duration // from the applicable group; 0 if none
	Fetched    bool          // this call made a robots.txt request
	// Unreachable: the URL is disallowed because robots.txt could not be
	// read (no response, a 429 or a 5xx: RFC 9309 §2.3.1.4), not by a
	// rule. It lets the caller tell an outage from an exclusion.
	Unreachable bool
	Reason      string // human-readable, for logs and results
	// Sitemaps are the file's Sitemap: lines (RFC 9309 §2.2.4), in order,
	// at most maxSitemaps: how a crawler learns a host's sitemaps. The
	// slice is the cache's own: read it, do not modify it.
	Sitemaps []string
}

// maxSitemaps bounds the Sitemap: lines kept of one robots.txt: real
// files list a few, and a file of nothing else would otherwise put
// thousands on every result that reports them.
const maxSitemaps = 1000

// Checker decides whether URLs may be crawled. It fetches robots.txt at most
// once per origin per TTL in this process (concurrent Checks for one origin
// share a single fetch) and shares results with other processes through its
// Store. A Checker is safe for concurrent use and starts no goroutines.
type Checker struct {
	store Store
	fetch FetchFunc
	token string
	ttl   time.Duration
	retry time.Duration
	now   func() time.Time
	log   *slog.Logger

	mu       sync.Mutex
	inflight map[string]*call
	lru      *list.List // of *origin, most recently used first
	byKey    map[string]*list.Element
	maxLRU   int
}

// origin is the parsed robots.txt state of one origin, as used by Check.
type origin struct {
	key     string
	entry   Entry // Body dropped after parsing
	expires time.Time
	verdict verdict
	group   ruleSet
	// sitemaps are the Sitemap: lines of a 2xx file, whichever group
	// applies: they belong to no group (RFC 9309 §2.2.4).
	sitemaps []string
}

type verdict int

const (
	useRules verdict = iota
	allowAll
	disallowAll
)

// call is one in-flight load shared by concurrent Checks of an origin.
type call struct {
	done chan struct{}
	o    *origin
	err  error
}

// NewChecker returns a Checker for a crawler sending userAgent, whose
// product token (see tokenOf) selects robots.txt groups. It refuses a
// nil store or fetch, and options Validate refuses.
func NewChecker(store Store, fetch FetchFunc, userAgent string, opts Options) (*Checker, error) {
	if store == nil || fetch == nil {
		return nil, errors.New("robots: NewChecker needs a Store and a FetchFunc")
	}
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("robots options: %w", err)
	}
	c := &Checker{
		store:    store,
		fetch:    fetch,
		token:    tokenOf(userAgent),
		ttl:      opts.TTL,
		retry:    opts.RetryUnreachable,
		now:      opts.Now,
		log:      opts.Logger,
		inflight: make(map[string]*call),
		lru:      list.New(),
		byKey:    make(map[string]*list.Element),
		maxLRU:   opts.MaxOrigins,
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

// Token is the product token the checker selects robots.txt groups by:
// the same token names the crawler in X-Robots-Tag headers and robots
// <meta> elements.
func (c *Checker) Token() string { return c.token }

// Check decides whether pageURL may be fetched, fetching the origin's
// robots.txt if no fresh copy is cached. An error means no decision could
// be made (invalid URL, cancelled context); a failed robots.txt fetch is
// not an error but a "disallow all" decision (RFC 9309 §2.3.1.4).
func (c *Checker) Check(ctx context.Context, pageURL string) (Decision, error) {
	u, err := url.Parse(pageURL)
	if err != nil {
		return Decision{}, fmt.Errorf("robots: check %q: %w", pageURL, err)
	}
	key, err := originKey(u)
	if err != nil {
		return Decision{}, fmt.Errorf("robots: check %q: %w", pageURL, err)
	}
	pq := pathAndQuery(u)
	if normalize(pq) == "/robots.txt" {
		return Decision{Allowed: true, Reason: "robots.txt itself is always allowed (RFC 9309 §2.2.2)"}, nil
	}
	o, fetched, err := c.load(ctx, key)
	if err != nil {
		return Decision{}, fmt.Errorf("robots: check %q: %w", pageURL, err)
	}
	d := Decision{Fetched: fetched, Sitemaps: o.sitemaps}
	switch o.verdict {
	case allowAll:
		d.Allowed = true
		d.Reason = fmt.Sprintf("%s/robots.txt status %d: allow all (RFC 9309 §2.3.1.3)", key, o.entry.Status)
	case disallowAll:
		d.Unreachable = true
		cause := "unreachable"
		if !o.entry.Unreachable {
			cause = fmt.Sprintf("status %d", o.entry.Status)
		}
		d.Reason = fmt.Sprintf("%s/robots.txt %s: disallow all until %s (RFC 9309 §2.3.1.4)",
			key, cause, o.expires.UTC().Format(time.RFC3339))
	default:
		allowed, rule, matched := o.group.match(pq)
		d.Allowed = allowed
		d.CrawlDelay, _ = o.group.delay()
		switch {
		case matched:
			d.Reason = fmt.Sprintf("%s/robots.txt: %s", key, rule)
		default:
			d.Reason = fmt.Sprintf("%s/robots.txt: no matching rule", key)
		}
	}
	return d, nil
}

// load returns the fresh state of an origin, from memory, the Store or a
// fetch, in that order. Concurrent loads of one origin share a single call:
// the first caller does the work in its own goroutine while the others wait.
// If that caller's context ends, its waiters whose contexts are still live
// retry rather than inherit its cancellation.
func (c *Checker) load(ctx context.Context, key string) (*origin, bool, error) {
	for {
		c.mu.Lock()
		if o := c.cachedLocked(key); o != nil {
			c.mu.Unlock()
			return o, false, nil
		}
		if cl, ok := c.inflight[key]; ok {
			c.mu.Unlock()
			select {
			case <-cl.done:
			case <-ctx.Done():
				return nil, false, ctx.Err()
			}
			if cl.err != nil && isContextErr(cl.err) && ctx.Err() == nil {
				continue
			}
			return cl.o, false, cl.err
		}
		cl := &call{done: make(chan struct{})}
		c.inflight[key] = cl
		c.mu.Unlock()
		return c.lead(ctx, key, cl)
	}
}

// lead performs the load for cl and publishes the result to its waiters,
// even if the Store or FetchFunc panics, so no waiter is left blocked.
func (c *Checker) lead(ctx context.Context, key string, cl *call) (o *origin, fetched bool, err error) {
	cl.err = errLoadAborted
	defer func() {
		c.mu.Lock()
		delete(c.inflight, key)
		if cl.err == nil {
			c.addLocked(cl.o)
		}
		c.mu.Unlock()
		close(cl.done)
	}()
	o, fetched, err = c.refresh(ctx, key)
	cl.o, cl.err = o, err
	return o, fetched, err
}

var errLoadAborted = errors.New("robots.txt load aborted")

// ErrRefused, wrapped in a FetchFunc's error, says the fetch was refused
// on this side (the host's address is one the crawler must not connect
// to): Check fails with that error and caches nothing, rather than
// reading the origin as unreachable and its pages as disallowed.
var ErrRefused = errors.New("robots.txt fetch refused")

// refresh reads the origin from the Store, fetching and storing it if the
// Store has no fresh entry.
func (c *Checker) refresh(ctx context.Context, key string) (*origin, bool, error) {
	e, ok, err := c.store.Get(ctx, key)
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, ctx.Err()
		}
		// The Store is a cache: fetching is correct, only less efficient.
		c.log.WarnContext(ctx, "robots store get failed", "origin", key, "err", err)
	}
	if ok && err == nil {
		if o := c.newOrigin(key, e); c.now().Before(o.expires) && !c.fromFuture(e) {
			return o, false, nil
		}
	}

	status, body, ferr := c.fetch(ctx, key+"/robots.txt")
	if ferr != nil && ctx.Err() != nil {
		// Our caller gave up; that says nothing about the host.
		return nil, false, ctx.Err()
	}
	if errors.Is(ferr, ErrRefused) {
		// Nor does a fetch we refused to make: the caller reports it as
		// what it is, and nothing is cached.
		return nil, false, ferr
	}
	e = Entry{FetchedAt: c.now(), Status: status}
	switch {
	case ferr != nil:
		e.Status, e.Unreachable = 0, true
		c.log.DebugContext(ctx, "robots.txt unreachable", "origin", key, "err", ferr)
	case status < 100 || status > 999:
		// Not an HTTP status: no usable response.
		e.Status, e.Unreachable = 0, true
	case status >= 200 && status < 300:
		e.Body = limitBody(body)
	}
	if err := c.store.Put(ctx, key, e); err != nil {
		c.log.WarnContext(ctx, "robots store put failed", "origin", key, "err", err)
	}
	return c.newOrigin(key, e), true, nil
}

// newOrigin interprets a fetch result per RFC 9309 §2.3.1.
func (c *Checker) newOrigin(key string, e Entry) *origin {
	o := &origin{key: key, entry: e}
	switch {
	case e.Unreachable:
		o.verdict = disallowAll
	case e.Status >= 200 && e.Status < 300: // §2.3.1.1
		o.verdict = useRules
		f := parse(e.Body)
		o.group = f.forAgent(c.token)
		if sm := f.sitemapURLs(); len(sm) > 0 {
			// Clipped, so that a caller's append cannot write into
			// the cache.
			o.sitemaps = slices.Clip(sm[:min(len(sm), maxSitemaps)])
		}
	case e.Status == http.StatusTooManyRequests:
		// A 4xx, but it says the server is overloaded: like 5xx, back off
		// (as Google does) rather than read it as "no robots.txt".
		o.verdict = disallowAll
	case e.Status >= 300 && e.Status < 500:
		// §2.3.1.3 for 4xx; a 3xx here means the FetchFunc gave up after
		// too many redirects, which §2.3.1.2 also lets us read as
		// "unavailable".
		o.verdict = allowAll
	default: // 5xx and nonsense (§2.3.1.4)
		o.verdict = disallowAll
	}
	life := c.ttl
	if o.verdict == disallowAll {
		life = c.retry
	}
	o.expires = e.FetchedAt.Add(life)
	o.entry.Body = nil
	return o
}

func (c *Checker) fromFuture(e Entry) bool {
	return e.FetchedAt.After(c.now().Add(maxClockSkew))
}

// cachedLocked returns the origin from memory if fresh. c.mu must be held.
func (c *Checker) cachedLocked(key string) *origin {
	el, ok := c.byKey[key]
	if !ok {
		return nil
	}
	o := el.Value.(*origin)
	if !c.now().Before(o.expires) || c.fromFuture(o.entry) {
		c.lru.Remove(el)
		delete(c.byKey, key)
		return nil
	}
	c.lru.MoveToFront(el)
	return o
}

// addLocked records o in memory, evicting the least recently used origin
// beyond MaxOrigins. c.mu must be held.
func (c *Checker) addLocked(o *origin) {
	if el, ok := c.byKey[o.key]; ok {
		el.Value = o
		c.lru.MoveToFront(el)
		return
	}
	c.byKey[o.key] = c.lru.PushFront(o)
	for c.lru.Len() > c.maxLRU {
		el := c.lru.Back()
		c.lru.Remove(el)
		delete(c.byKey, el.Value.(*origin).key)
	}
}

// originKey returns "scheme://host[:port]" in canonical form (lower case,
// default port dropped), which RFC 9309 §2.3 makes the scope of a robots.txt
// file.
func originKey(u *url.URL) (string, error) {
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return "", fmt.Errorf("unsupported scheme %q", u.Scheme)
	}
	host := strings.ToLower(u.Hostname())
	if host == "" {
		return "", errors.New("no host")
	}
	port := u.Port()
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	if port != "" {
		host = net.JoinHostPort(host, port)
	} else if strings.Contains(host, ":") {
		host = "[" + host + "]" // IPv6 literal
	}
	return scheme + "://" + host, nil
}

func isContextErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// httpFetch returns a FetchFunc that fetches robots.txt with client (whose
// redirect policy applies; http.Client's default follows up to 10, above
// the five RFC 9309 §2.3.1.2 asks for) and the given User-Agent, reading
// at most MaxBodySize+1 octets of the body (the extra octet tells the parser
// that the last line may have been cut).
func httpFetch(client *http.Client, userAgent string) FetchFunc {
	return func(ctx context.Context, robotsURL string) (int, []byte, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, robotsURL, nil)
		if err != nil {
			return 0, nil, fmt.Errorf("robots: fetch %s: %w", robotsURL, err)
		}
		req.Header.Set("User-Agent", userAgent)
		resp, err := client.Do(req)
		if err != nil {
			return 0, nil, fmt.Errorf("robots: fetch %s: %w", robotsURL, err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxBodySize+1))
		if err != nil {
			return 0, nil, fmt.Errorf("robots: read %s: %w", robotsURL, err)
		}
		return resp.StatusCode, body, nil
	}
}
