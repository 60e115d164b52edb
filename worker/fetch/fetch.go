// Package fetch performs one HTTP fetch per call, safely and politely by
// construction: it refuses private and metadata addresses on every
// connection it makes (so neither a redirect nor a DNS rebinding reaches the
// worker's own network), caps the decompressed body (so a gzip bomb is cut,
// not unpacked), bounds the whole fetch (connect, TLS, headers and body)
// with one timeout, sends conditional requests so unchanged pages cost a
// 304, and classifies every failure into a proto.ErrorKind the coordinator
// can back off on.
//
// A Fetcher keeps no state between calls other than its http.Client's
// connection pool; it is safe for concurrent use. Per-host rate limiting is
// not done here: the coordinator spaces a host's tasks and the worker keeps a
// safety-net limiter.
package fetch

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/freshcrawl/freshcrawl/internal/optcheck"
	"github.com/freshcrawl/freshcrawl/proto"
)

// defaultUserAgent names the crawler and where to read about it; its
// first token, "freshcrawl", is the robots.txt product token.
const defaultUserAgent = "freshcrawl/0.1 (+https://github.com/freshcrawl/freshcrawl)"

const (
	// maxRetryAfter caps a server's Retry-After so that a broken or hostile
	// server cannot park a host for years; the coordinator re-learns the
	// host's state after a day anyway.
	maxRetryAfter = 24 * time.Hour
	// drainLimit is how much of an error or 304 body is read and discarded
	// so the connection can go back to the pool; beyond it, closing the
	// connection is cheaper than reading on.
	drainLimit = 64 << 10
	// maxHeaderBytes caps a response's status line and headers together,
	// as browsers do (Chromium allows 256 KiB): real responses need a few
	// KiB, and each concurrent fetch may hold this much before its body.
	// A server that sends more gets proto.ErrTooLarge.
	maxHeaderBytes = 256 << 10
)

// Class says how the body of a response should be treated downstream.
type Class uint8

const (
	// Binary bodies are kept raw and compared by hash only. It is the zero
	// value so that anything not positively recognised as text is opaque.
	Binary Class = iota
	// HTML is text/html or application/xhtml+xml, converted to UTF-8.
	HTML
	// Text is any other text/* type, JSON or XML, converted to UTF-8.
	Text
)

// String returns "binary", "html" or "text".
func (c Class) String() string {
	switch c {
	case HTML:
		return "html"
	case Text:
		return "text"
	default:
		return "binary"
	}
}

// Options configure a Fetcher. Start from DefaultOptions: every field is
// taken as it is, and New refuses what Validate refuses.
type Options struct {
	// UserAgent is sent with every request. Sites identify and contact
	// crawler operators through it, so it should name the operator.
	UserAgent string
	// Timeout bounds a whole fetch: name resolution, connect, TLS,
	// redirects, the wait for headers and the body. It is the one time
	// limit of a fetch, so that an operator's --timeout is what a slow or
	// hanging server costs a worker's slot, whichever phase it stalls.
	Timeout time.Duration
	// MaxBody caps the decompressed body; a longer body is cut there: the
	// fetch succeeds with its first MaxBody bytes and Truncated set.
	MaxBody int64
	// MaxRedirects is how many redirects are followed (0: none).
	// Revisiting a URL already seen in the chain is an error whatever
	// the count.
	MaxRedirects int
	// AllowPrivate turns off the address check. Only tests against local
	// servers and deliberate intranet crawls should set it.
	AllowPrivate bool
	// Refuse, if set, replaces the address policy: a connection to an
	// address for which it returns true is refused (proto.ErrBlocked).
	// Nil means IsBlockedIP. It lets an embedder (or a test whose servers
	// all live on loopback) allow some private addresses and not others;
	// AllowPrivate overrides it.
	Refuse func(netip.Addr) bool
	// Resolver resolves host names (nil: the pure-Go resolver of the
	// system's configuration). Tests point it at a DNS server of their
	// own, to map a name to a loopback address.
	Resolver *net.Resolver
}

// DefaultOptions are the defaults of the user-agent, timeout, max-body
// and max-redirects settings everywhere (the config takes them from
// here).
func DefaultOptions() Options {
	return Options{
		UserAgent:    defaultUserAgent,
		Timeout:      30 * time.Second,
		MaxBody:      4 << 20,
		MaxRedirects: 5,
	}
}

// Validate reports every field New would refuse, each by its name.
func (o Options) Validate() error {
	var errs optcheck.Errors
	errs.Check("UserAgent", checkUserAgent(o.UserAgent))
	errs.Check("Timeout", checkTimeout(o.Timeout))
	if o.MaxBody <= 0 {
		errs.Check("MaxBody", fmt.Errorf("must be > 0, got %d", o.MaxBody))
	}
	if o.MaxRedirects < 0 {
		errs.Check("MaxRedirects", fmt.Errorf("must be ≥ 0, got %d", o.MaxRedirects))
	}
	return errs.Err()
}

// checkUserAgent reports whether ua can be sent as a User-Agent: a valid
// header value (no control characters) whose first token, the robots.txt
// product token, is not empty.
func checkUserAgent(ua string) error {
	if !httpguts.ValidHeaderFieldValue(ua) {
		return fmt.Errorf("%q is not a valid header value", ua)
	}
	if tok, _, _ := strings.Cut(strings.TrimSpace(ua), "/"); strings.TrimSpace(tok) == "" {
		return fmt.Errorf("%q: want a product token first, such as %q", ua, defaultUserAgent)
	}
	return nil
}

// checkTimeout reports whether d is a valid timeout: > 0.
func checkTimeout(d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("must be > 0, got %s", d)
	}
	return nil
}

// Request is one fetch. ETag and LastModified are the validators of the
// previous fetch; when set they make the request conditional.
type Request struct {
	URL          string
	ETag         string
	LastModified string
}

// Response is the outcome of a fetch. A failed fetch has ErrKind and Err
// set and may still carry Status, headers and part of the body.
type Response struct {
	Status      int
	FinalURL    string // after redirects
	NotModified bool   // 304: the validators matched, Body is empty

	ContentType string // media type, lowercased, without parameters
	Class       Class
	// Body is decompressed; for HTML and Text it is converted to valid
	// UTF-8, for Binary it is raw. When Truncated it is the first MaxBody
	// bytes.
	Body []byte

	// ETag and LastModified are the validators to send next time. On a 304
	// that omits them, the request's validators are carried over so the
	// next fetch stays conditional.
	ETag, LastModified string
	// RetryAfter is the server's Retry-After on a 429 or 503, capped at a
	// day.
	RetryAfter time.Duration
	// RobotsTags are the values of the response's X-Robots-Tag headers,
	// as sent (the caller reads the directives for its product token).
	RobotsTags []string

	Bytes int64 // decompressed body bytes read, before charset conversion
	// Truncated: the body was longer than MaxBody; Body holds its first
	// MaxBody bytes and the fetch is a success.
	Truncated bool

	ErrKind proto.ErrorKind
	Err     error

	Started time.Time
	Elapsed time.Duration

	// buf holds the buffer Body was read into, for Recycle.
	buf *[]byte
}

// OK reports whether the fetch succeeded (a 304 is a success).
func (r *Response) OK() bool { return r.ErrKind == proto.ErrNone }

// Fetcher performs fetches. Create it with New; it is safe for concurrent
// use.
type Fetcher struct {
	opts      Options
	client    *http.Client
	transport *http.Transport
	// blocked decides whether a resolved address may be dialled. It is nil
	// when Options.AllowPrivate is set; tests in this package replace it to
	// allow one loopback server and refuse another.
	blocked func(netip.AddrPort) bool
	// bodies recycles the buffers bodies are read into (see Recycle).
	bodies sync.Pool
}

// maxPooledBody keeps a rare huge body from pinning its buffer in the
// pool.
const maxPooledBody = 1 << 20

// Recycle hands the buffer r's body was read into back to f, for a later
// fetch: r.Body (and whatever still refers to it) must not be used after.
// A response not recycled is left to the garbage collector.
func (f *Fetcher) Recycle(r *Response) {
	bp := r.buf
	r.buf, r.Body = nil, nil
	if bp == nil || cap(*bp) > maxPooledBody {
		return
	}
	*bp = (*bp)[:0]
	f.bodies.Put(bp)
}

// New returns a Fetcher, or Validate's error.
func New(o Options) (*Fetcher, error) {
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("fetch options: %w", err)
	}
	f := &Fetcher{opts: o, bodies: sync.Pool{New: func() any { return new([]byte) }}}
	switch refuse := o.Refuse; {
	case o.AllowPrivate:
	case refuse != nil:
		f.blocked = func(ap netip.AddrPort) bool { return refuse(ap.Addr()) }
	default:
		f.blocked = func(ap netip.AddrPort) bool { return IsBlockedIP(ap.Addr()) }
	}
	dialer := &net.Dialer{
		// A dial outlives the request that started it (net/http keeps it
		// for the pool when the request gives up), so it is bounded on
		// its own, by the same timeout as the fetch.
		Timeout:   o.Timeout,
		KeepAlive: 30 * time.Second,
		// Control runs after name resolution for every address actually
		// dialled, so the check sees the IP the socket connects to: a
		// hostname that resolves (or rebinds) to a private address is
		// refused, and so is every redirect hop.
		Control: f.control,
		// The pure-Go resolver behaves the same in every container and
		// refuses syntactically invalid names without a query.
		Resolver: o.Resolver,
	}
	if dialer.Resolver == nil {
		dialer.Resolver = &net.Resolver{PreferGo: true}
	}
	f.transport = &http.Transport{
		// No proxy: with one, the address check would vet the proxy, not
		// the target. Operators who need egress proxies enforce policy there.
		Proxy:                  nil,
		DialContext:            dialer.DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           256,
		MaxIdleConnsPerHost:    4,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    o.Timeout,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: maxHeaderBytes,
		// We decompress ourselves, to count decompressed bytes and cut at
		// MaxBody.
		DisableCompression: true,
		TLSClientConfig:    &tls.Config{MinVersion: tls.VersionTLS12},
	}
	f.client = &http.Client{
		Transport:     f.transport,
		CheckRedirect: f.checkRedirect,
		// No Client.Timeout and no header timeout: the per-fetch context
		// bounds the whole fetch, body included, and keeps the deadline
		// error classifiable.
	}
	return f, nil
}

// RefusesHost reports whether host, an IP literal or a localhost name,
// is an address this fetcher refuses to connect to. Other names are
// checked on every connection, after resolution; this only lets a caller
// say plainly why a task cannot be fetched before it tries.
func (f *Fetcher) RefusesHost(host string) bool {
	if f.blocked == nil {
		return false
	}
	ip, ok := literalAddr(host)
	return ok && f.blocked(netip.AddrPortFrom(ip, 0))
}

// CloseIdleConnections closes pooled connections, e.g. at worker shutdown.
func (f *Fetcher) CloseIdleConnections() { f.transport.CloseIdleConnections() }

// control is the net.Dialer hook that vets each resolved address.
func (f *Fetcher) control(_, address string, _ syscall.RawConn) error {
	if f.blocked == nil {
		return nil
	}
	return vet(address, f.blocked)
}

// checkRedirect enforces the redirect cap, loop detection and the scheme
// rule on every hop.
func (f *Fetcher) checkRedirect(req *http.Request, via []*http.Request) error {
	if s := req.URL.Scheme; s != "http" && s != "https" {
		return &redirectError{msg: fmt.Sprintf("redirect to unsupported scheme %q", s)}
	}
	next := req.URL.String()
	for _, v := range via {
		if v.URL.String() == next {
			return &redirectError{msg: fmt.Sprintf("redirect loop at %s after %d redirects", next, len(via))}
		}
	}
	if len(via) > f.opts.MaxRedirects {
		return &redirectError{msg: fmt.Sprintf("more than %d redirects", f.opts.MaxRedirects)}
	}
	return nil
}

// defaultAccept is what a fetch accepts unless its caller says otherwise.
const defaultAccept = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"

// get sends the conditional GET of u for req (accept: the Accept header,
// "" for defaultAccept) through the fetcher's client, so with its address
// screening and redirect policy. On failure it fills resp and reports
// false; on success the caller closes the body.
func (f *Fetcher) get(ctx context.Context, u *url.URL, req Request, accept string, resp *Response) (*http.Response, bool) {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		resp.fail(proto.ErrBadURL, fmt.Errorf("fetch %s: %w", req.URL, err))
		return nil, false
	}
	if accept == "" {
		accept = defaultAccept
	}
	h := hreq.Header
	h.Set("User-Agent", f.opts.UserAgent)
	h.Set("Accept", accept)
	h.Set("Accept-Encoding", "gzip, deflate")
	if req.ETag != "" {
		h.Set("If-None-Match", req.ETag)
	}
	if req.LastModified != "" {
		h.Set("If-Modified-Since", req.LastModified)
	}
	hresp, err := f.client.Do(hreq)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) && ue.URL != "" {
			resp.FinalURL = ue.URL
		}
		resp.fail(classifyCtx(ctx, err), fmt.Errorf("fetch: %w", err))
		return nil, false
	}
	return hresp, true
}

// Get is a plain GET under the same safety rules, e.g. for robots.txt.
func (f *Fetcher) Get(ctx context.Context, rawURL string) Response {
	return f.Fetch(ctx, Request{URL: rawURL})
}

// Fetch performs req. It never panics and always returns a Response; a
// failure is described by ErrKind and Err.
func (f *Fetcher) Fetch(ctx context.Context, req Request) (resp Response) {
	resp.Started = time.Now()
	resp.FinalURL = req.URL
	defer func() {
		// Safety net at the API boundary: a worker must report a hostile
		// page as a failed task, not die on it.
		if p := recover(); p != nil {
			resp.ErrKind = proto.ErrOther
			resp.Err = fmt.Errorf("fetch %s: internal error: %v", req.URL, p)
		}
		resp.Elapsed = time.Since(resp.Started)
	}()
	if ctx == nil {
		ctx = context.Background()
	}

	u, err := parseURL(req.URL)
	if err != nil {
		resp.fail(proto.ErrBadURL, err)
		return resp
	}
	resp.FinalURL = u.String()

	ctx, cancel := context.WithTimeout(ctx, f.opts.Timeout)
	defer cancel()

	hresp, ok := f.get(ctx, u, req, "", &resp)
	if !ok {
		return resp
	}
	defer hresp.Body.Close()

	resp.Status = hresp.StatusCode
	resp.FinalURL = hresp.Request.URL.String()
	resp.ETag = hresp.Header.Get("ETag")
	resp.RobotsTags = hresp.Header.Values("X-Robots-Tag")
	resp.LastModified = hresp.Header.Get("Last-Modified")
	ctHeader := hresp.Header.Get("Content-Type")
	resp.ContentType = mediaType(ctHeader)

	switch {
	case hresp.StatusCode == http.StatusNotModified:
		resp.NotModified = true
		if resp.ETag == "" {
			resp.ETag = req.ETag
		}
		if resp.LastModified == "" {
			resp.LastModified = req.LastModified
		}
		drain(hresp.Body)
		return resp
	case hresp.StatusCode >= 400:
		if hresp.StatusCode == http.StatusTooManyRequests || hresp.StatusCode == http.StatusServiceUnavailable {
			resp.RetryAfter = parseRetryAfter(hresp.Header.Get("Retry-After"), hresp.Header.Get("Date"), time.Now())
		}
		resp.fail(proto.StatusKind(hresp.StatusCode), fmt.Errorf("fetch %s: http status %d", resp.FinalURL, hresp.StatusCode))
		drain(hresp.Body)
		return resp
	}

	bp := f.bodies.Get().(*[]byte)
	body, truncated, err := readBodyInto(*bp, hresp, f.opts.MaxBody)
	*bp = body
	resp.buf = bp
	resp.Bytes = int64(len(body))
	if err != nil {
		kind := classifyCtx(ctx, err)
		if kind == proto.ErrOther && isDecodeError(err) {
			kind = proto.ErrContent
		}
		resp.fail(kind, fmt.Errorf("fetch %s: reading body: %w", resp.FinalURL, err))
		return resp
	}
	if resp.ContentType == "" {
		resp.ContentType = mediaType(http.DetectContentType(body))
	}
	resp.Class = classOf(resp.ContentType)
	if resp.Class != Binary {
		body = toUTF8(body, ctHeader, resp.Class)
	}
	// A body cut at MaxBody is kept: its first MaxBody bytes are the page
	// as far as the crawler reads it, the same prefix on every fetch, so
	// its hash tells a change as well as the whole page's would (within
	// the prefix) and no refetch can read more.
	resp.Body, resp.Truncated = body, truncated
	return resp
}

func (r *Response) fail(kind proto.ErrorKind, err error) {
	r.ErrKind, r.Err = kind, err
}

// parseURL accepts only absolute http and https URLs with a host.
func parseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return nil, &badURLError{url: raw, err: err}
	}
	u.Scheme = strings.ToLower(u.Scheme)
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, &badURLError{url: raw, err: fmt.Errorf("unsupported scheme %q", u.Scheme)}
	}
	if u.Hostname() == "" {
		return nil, &badURLError{url: raw, err: errors.New("missing host")}
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, &badURLError{url: raw, err: fmt.Errorf("invalid port %q", p)}
		}
	}
	u.Fragment, u.RawFragment = "", ""
	return u, nil
}

// drain reads and discards a little of body so the connection can be
// reused. Errors are irrelevant: the response is already decided.
func drain(body io.Reader) {
	_, _ = io.CopyN(io.Discard, body, drainLimit)
}

// parseRetryAfter parses a Retry-After value: delay-seconds or an HTTP date.
// A date is measured against the server's Date header when present, so
// clock skew between server and worker does not distort it.
func parseRetryAfter(v, date string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		if secs > int64(maxRetryAfter/time.Second) {
			return maxRetryAfter
		}
		return time.Duration(secs) * time.Second
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0
	}
	if d, err := http.ParseTime(date); err == nil {
		now = d
	}
	return min(max(t.Sub(now), 0), maxRetryAfter)
}
