package worker

// Hostile servers against a running worker: each one must end in a named
// error kind (or, for bad text, in repaired text) before the fetch timeout
// while the worker goes on serving a normal task alongside. The worker runs
// its real loop (Run) on an embedded NATS server with JetStream; tasks and
// results go through the real streams.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/freshcrawl/freshcrawl/internal/broker"
	"github.com/freshcrawl/freshcrawl/internal/testutil"
	"github.com/freshcrawl/freshcrawl/proto"
	"github.com/freshcrawl/freshcrawl/worker/fetch"
)

// Limits of the worker under test: short, so that the slow cases take
// seconds; the production defaults differ only in size.
const (
	hostileTimeout = 2 * time.Second
	hostileMaxBody = 1 << 20
	// hostileGuard bounds every wait of these tests: far above the
	// timeouts tested, it only turns a hang into a failure.
	hostileGuard = 30 * time.Second
)

// hostileWeb is the set of servers the tests fetch from. The "public" site
// lives on 127.0.0.1, which the worker's address policy lets through; the
// "internal" one on 127.0.0.2, which the policy refuses like every other
// private address.
type hostileWeb struct {
	public   *httptest.Server
	internal *httptest.Server
	tlsHang  net.Listener // accepts and never answers a TLS ClientHello

	internalHits atomic.Int64
	written      sync.Map // path → *atomic.Int64: body bytes the server wrote
	started      sync.Map // path → *event: a request arrived
	gone         sync.Map // path → *event: the client hung up
}

// event is closed once, by whichever goroutine sees it first.
type event struct {
	once sync.Once
	ch   chan struct{}
}

func (e *event) fire() { e.once.Do(func() { close(e.ch) }) }

func (h *hostileWeb) counter(path string) *atomic.Int64 {
	v, _ := h.written.LoadOrStore(path, new(atomic.Int64))
	return v.(*atomic.Int64)
}

func (h *hostileWeb) signal(m *sync.Map, path string) *event {
	v, _ := m.LoadOrStore(path, &event{ch: make(chan struct{})})
	return v.(*event)
}

const nestDepth = 100000

func (h *hostileWeb) serve(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	h.signal(&h.started, p).fire()
	defer func() {
		if r.Context().Err() != nil {
			h.signal(&h.gone, p).fire()
		}
	}()
	// stream writes zeros until the client stops reading.
	stream := func() {
		buf := make([]byte, 64<<10)
		n := h.counter(p)
		for r.Context().Err() == nil {
			k, err := w.Write(buf)
			n.Add(int64(k))
			if err != nil {
				h.signal(&h.gone, p).fire()
				return
			}
		}
	}
	switch {
	case p == "/robots.txt":
		fmt.Fprint(w, "User-agent: *\nDisallow: /private/\n")
	case strings.HasPrefix(p, "/normal/"):
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<html><body><p>a normal page %s</p></body></html>", p)
	case p == "/trickle":
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Content-Length", "100000")
		w.WriteHeader(http.StatusOK)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			if _, err := w.Write([]byte("x")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-t.C:
			}
		}
	case p == "/endless":
		// No Content-Length: net/http sends chunks for as long as we write.
		w.Header().Set("Content-Type", "text/html")
		stream()
	case p == "/gigabyte":
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", fmt.Sprint(1<<30))
		stream()
	case p == "/nested":
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		// Never closed, as broken pages do; 500 KB.
		fmt.Fprint(w, strings.Repeat("<div>", nestDepth)+`<p id="deep">deep text</p>`)
	case p == "/invalid-utf8":
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte("<html><body><p>caf\xe9 \xff\xfe\xc3 ok</p></body></html>"))
	case p == "/wrong-charset":
		// Declared UTF-16, sent as UTF-8, with an odd length: decoded as
		// declared, it is nonsense, and its last byte is half a unit.
		w.Header().Set("Content-Type", "text/html; charset=utf-16le")
		w.Write([]byte("<html><body><p>naïve résumé</p></body></html>!"))
	case p == "/unknown-charset":
		w.Header().Set("Content-Type", "text/html; charset=x-no-such-charset")
		w.Write([]byte("<html><body><p>naïve résumé</p></body></html>"))
	case p == "/huge-headers":
		v := strings.Repeat("h", 1023)
		for i := range 1024 { // 1 MiB of headers
			w.Header().Set(fmt.Sprintf("X-Filler-%d", i), v)
		}
		fmt.Fprint(w, "never read")
	case p == "/loop/a":
		http.Redirect(w, r, "/loop/b", http.StatusFound)
	case p == "/loop/b":
		http.Redirect(w, r, "/loop/a", http.StatusFound)
	case p == "/inward":
		http.Redirect(w, r, h.internal.URL+"/secret", http.StatusFound)
	case strings.HasPrefix(p, "/private/"):
		fmt.Fprint(w, "robots.txt forbids this")
	default:
		http.NotFound(w, r)
	}
}

func startHostileWeb(t *testing.T) *hostileWeb {
	t.Helper()
	h := &hostileWeb{}
	h.public = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(h.public.Close)

	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("127.0.0.2 is not a local address here: %v", err)
	}
	h.internal = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.internalHits.Add(1)
		fmt.Fprint(w, "internal secret")
	}))
	h.internal.Listener.Close()
	h.internal.Listener = ln
	h.internal.Start()
	t.Cleanup(h.internal.Close)

	// A TLS server that accepts connections and never answers: the
	// ClientHello is read and left unanswered.
	if h.tlsHang, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	var conns sync.WaitGroup
	t.Cleanup(func() {
		h.tlsHang.Close()
		conns.Wait()
	})
	go func() {
		for {
			c, err := h.tlsHang.Accept()
			if err != nil {
				return
			}
			h.signal(&h.started, "tls").fire()
			conns.Add(1)
			go func() {
				defer conns.Done()
				defer c.Close()
				_, _ = io.Copy(io.Discard, c) // until the client hangs up
				h.signal(&h.gone, "tls").fire()
			}()
		}
	}()
	return h
}

// hostileRig is a worker running its loop against an embedded NATS server,
// and a reader of the result stream.
type hostileRig struct {
	js      jetstream.JetStream
	results jetstream.Consumer
	tasks   jetstream.Consumer
	worker  *Worker
}

func startHostileRig(t *testing.T, ignoreRobots bool) *hostileRig {
	t.Helper()
	return startRig(t, ignoreRobots, 10*time.Second, hostileTimeout)
}

// startRig is startHostileRig with the task consumer's AckWait and the
// fetch timeout.
func startRig(t *testing.T, ignoreRobots bool, ackWait, timeout time.Duration) *hostileRig {
	t.Helper()
	quiet := testutil.QuietLogger(t)
	srv := testutil.StartNATS(t)
	nc, js, err := broker.Connect(srv.ClientURL(), "hostile-test", quiet)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hostileGuard)
	defer cancel()
	s := broker.DefaultSettings()
	s.AckWait = ackWait
	if err := broker.Ensure(ctx, js, s); err != nil {
		t.Fatal(err)
	}
	results, err := js.Consumer(ctx, proto.ResultStream, proto.ResultConsumer)
	if err != nil {
		t.Fatal(err)
	}
	public := netip.MustParseAddr("127.0.0.1")
	w := newWorker(t, nc, js, testOptions(func(o *Options) {
		o.ID, o.Concurrency, o.IgnoreRobots, o.Log = "hostile", 2, ignoreRobots, quiet
		o.Fetch.Timeout, o.Fetch.MaxBody = timeout, hostileMaxBody
		// The production policy, except for the address the test's
		// public servers listen on.
		o.Fetch.Refuse = func(ip netip.Addr) bool { return ip != public && fetch.IsBlockedIP(ip) }
	}))
	// Cleanups run last first: the worker stops before its connection.
	t.Cleanup(nc.Close)
	testutil.Run(t, "worker", w.Run)
	tasks, err := js.Consumer(ctx, proto.TaskStream, proto.TaskConsumer)
	if err != nil {
		t.Fatal(err)
	}
	return &hostileRig{js: js, results: results, tasks: tasks, worker: w}
}

func (r *hostileRig) publish(t *testing.T, id, url, selector string) {
	t.Helper()
	task := proto.Task{V: proto.Version, ID: id, Kind: proto.KindFetch, URL: url, Host: "127.0.0.1", IssuedAt: time.Now(), Selector: selector}
	b, err := proto.Encode(task)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hostileGuard)
	defer cancel()
	if _, err := r.js.Publish(ctx, proto.TaskSubject(task.Kind), b, jetstream.WithMsgID(id)); err != nil {
		t.Fatal(err)
	}
}

// collect reads results until it has one for every id, in the order they
// were stored.
func (r *hostileRig) collect(t *testing.T, ids ...string) []proto.Result {
	t.Helper()
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	var out []proto.Result
	deadline := time.Now().Add(hostileGuard)
	for len(out) < len(ids) {
		if time.Now().After(deadline) {
			t.Fatalf("results for %v: got %d after %s", ids, len(out), hostileGuard)
		}
		batch, err := r.results.Fetch(1, jetstream.FetchMaxWait(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for m := range batch.Messages() {
			res, err := proto.DecodeResult(m.Data())
			if err != nil {
				t.Fatal(err)
			}
			_ = m.Ack()
			if want[res.TaskID] {
				out = append(out, res)
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
			t.Fatal(err)
		}
	}
	return out
}

// waitClosed waits for e, failing the test after hostileGuard.
func waitClosed(t *testing.T, e *event, what string) {
	t.Helper()
	select {
	case <-e.ch:
	case <-time.After(hostileGuard):
		t.Fatalf("%s: not after %s", what, hostileGuard)
	}
}

func TestHostileServers(t *testing.T) {
	web := startHostileWeb(t)
	rig := startHostileRig(t, true)
	base := web.public.URL
	tlsURL := "https://" + web.tlsHang.Addr().String() + "/"

	cases := []struct {
		name, url string
		selector  string
		kind      proto.ErrorKind
		// slow cases hold their worker goroutine until the timeout; the
		// normal task is published once the hostile request has arrived
		// and must be done first.
		slow   string // key of the started signal
		verify func(t *testing.T, r proto.Result)
	}{
		{name: "trickled body", url: base + "/trickle", kind: proto.ErrTimeout, slow: "/trickle", verify: func(t *testing.T, r proto.Result) {
			if r.Duration < hostileTimeout {
				t.Errorf("gave up after %s, before the %s timeout", r.Duration, hostileTimeout)
			}
			waitClosed(t, web.signal(&web.gone, "/trickle"), "the trickling server sees the worker hang up")
		}},
		{name: "endless chunked body", url: base + "/endless", kind: proto.ErrNone, verify: func(t *testing.T, r proto.Result) {
			if !r.Truncated || r.Bytes != hostileMaxBody {
				t.Errorf("Truncated=%v Bytes=%d, want the body cut at %d", r.Truncated, r.Bytes, hostileMaxBody)
			}
			waitClosed(t, web.signal(&web.gone, "/endless"), "the server sees the worker hang up")
			if n := web.counter("/endless").Load(); n > 64<<20 {
				t.Errorf("the server wrote %d bytes before the worker hung up", n)
			}
		}},
		{name: "1 GiB body", url: base + "/gigabyte", kind: proto.ErrNone, verify: func(t *testing.T, r proto.Result) {
			if !r.Truncated || r.Bytes != hostileMaxBody {
				t.Errorf("Truncated=%v Bytes=%d, want the body cut at %d", r.Truncated, r.Bytes, hostileMaxBody)
			}
			waitClosed(t, web.signal(&web.gone, "/gigabyte"), "the server sees the worker hang up")
			// Streamed, never buffered: the worker stopped reading at the
			// cap, so the server could write little more than the cap and
			// the sockets' buffers.
			if n := web.counter("/gigabyte").Load(); n > 64<<20 {
				t.Errorf("the server wrote %d of 1 GiB before the worker hung up", n)
			}
		}},
		{name: "100 000 nested elements", url: base + "/nested", kind: proto.ErrNone, verify: func(t *testing.T, r proto.Result) {
			// Without a selector the visible text is read off the token
			// stream (the tree builder stops at 512 open elements).
			if r.Text != "deep text" {
				t.Errorf("text %q, want %q", r.Text, "deep text")
			}
		}},
		{name: "100 000 nested elements, with a selector", url: base + "/nested", selector: "#deep", kind: proto.ErrContent, verify: func(t *testing.T, r proto.Result) {
			// A selector needs the tree, which the parser refuses to build
			// past 512 open elements.
			if !strings.Contains(r.Err, "512") {
				t.Errorf("err %q does not say the page nests too deep", r.Err)
			}
		}},
		{name: "invalid UTF-8", url: base + "/invalid-utf8", kind: proto.ErrNone, verify: func(t *testing.T, r proto.Result) {
			if !utf8.ValidString(r.Text) || !strings.Contains(r.Text, "caf\uFFFD") || !strings.HasSuffix(r.Text, " ok") {
				t.Errorf("text %q: want valid UTF-8 with U+FFFD for the bad bytes", r.Text)
			}
		}},
		{name: "wrong charset", url: base + "/wrong-charset", kind: proto.ErrNone, verify: func(t *testing.T, r proto.Result) {
			// Decoded as declared: valid UTF-8, none of the intended
			// words, and the half unit at the end a U+FFFD.
			if !utf8.ValidString(r.Text) || strings.Contains(r.Text, "résumé") || !strings.HasSuffix(r.Text, "\uFFFD") {
				t.Errorf("text %q: want the body decoded as UTF-16LE, as valid UTF-8", r.Text)
			}
		}},
		{name: "unknown charset", url: base + "/unknown-charset", kind: proto.ErrNone, verify: func(t *testing.T, r proto.Result) {
			if r.Text != "naïve résumé" {
				t.Errorf("text %q: an unknown label falls back to sniffing, which finds UTF-8", r.Text)
			}
		}},
		{name: "1 MiB of headers", url: base + "/huge-headers", kind: proto.ErrTooLarge, verify: func(t *testing.T, r proto.Result) {
			if !strings.Contains(r.Err, "headers") {
				t.Errorf("err %q does not say the headers were too large", r.Err)
			}
		}},
		{name: "redirect loop", url: base + "/loop/a", kind: proto.ErrRedirects, verify: func(t *testing.T, r proto.Result) {
			if !strings.Contains(r.Err, "loop") {
				t.Errorf("err %q does not name the loop", r.Err)
			}
		}},
		{name: "redirect to a blocked address", url: base + "/inward", kind: proto.ErrBlocked, verify: func(t *testing.T, r proto.Result) {
			if n := web.internalHits.Load(); n != 0 {
				t.Errorf("the internal server was reached %d times", n)
			}
			if !strings.Contains(r.FinalURL, "127.0.0.2") {
				t.Errorf("FinalURL %q, want the refused hop", r.FinalURL)
			}
		}},
		{name: "TLS handshake that never completes", url: tlsURL, kind: proto.ErrTimeout, slow: "tls", verify: func(t *testing.T, r proto.Result) {
			// The fetch's one timeout bounds the handshake too.
			if r.Duration < hostileTimeout {
				t.Errorf("gave up after %s, before the %s timeout", r.Duration, hostileTimeout)
			}
			waitClosed(t, web.signal(&web.gone, "tls"), "the TLS server sees the worker hang up")
		}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hostile, normal := fmt.Sprintf("hostile-%d", i), fmt.Sprintf("normal-%d", i)
			rig.publish(t, hostile, c.url, c.selector)
			if c.slow != "" {
				waitClosed(t, web.signal(&web.started, c.slow), "the hostile request arrives")
			}
			rig.publish(t, normal, fmt.Sprintf("%s/normal/%d", base, i), "")
			got := rig.collect(t, hostile, normal)
			byID := map[string]proto.Result{}
			for _, r := range got {
				byID[r.TaskID] = r
			}
			n := byID[normal]
			if !n.OK() || !strings.Contains(n.Text, "a normal page") {
				t.Fatalf("the normal task alongside: kind %q err %q text %q", n.ErrKind, n.Err, n.Text)
			}
			if c.slow != "" && got[0].TaskID != normal {
				t.Errorf("the normal task finished after the hostile one: the worker stopped serving while it waited")
			}
			h := byID[hostile]
			if h.ErrKind != c.kind {
				t.Fatalf("kind %q (err %q), want %q", h.ErrKind, h.Err, c.kind)
			}
			if c.kind != proto.ErrNone && h.Err == "" {
				t.Errorf("kind %q without a message", h.ErrKind)
			}
			c.verify(t, h)
		})
	}
	// Every task was answered and acknowledged (the count follows the
	// ack, which follows the result).
	want := int64(2 * len(cases))
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(hostileGuard); rig.worker.Processed() != want && time.Now().Before(deadline); {
		<-tick.C
	}
	if got := rig.worker.Processed(); got != want {
		t.Errorf("worker processed %d tasks, want %d", got, want)
	}
}

// A robots.txt that breaks off mid-body is not read as the rules that
// arrived: the origin counts as unreachable (disallow all), so a path the
// missing part may have forbidden is never fetched.
func TestTrickledRobotsIsUnreachable(t *testing.T) {
	var pageHits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/robots.txt" {
			pageHits.Add(1)
			fmt.Fprint(w, "<p>secret</p>")
			return
		}
		w.Header().Set("Content-Length", "1000")
		fmt.Fprint(w, "User-agent: *\nAllow: /public\n")
		w.(http.Flusher).Flush()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for _, c := range []byte("Disallow: /secret\n") {
			select {
			case <-r.Context().Done():
				return
			case <-t.C:
			}
			if _, err := w.Write([]byte{c}); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	}))
	defer srv.Close()
	w := newWorker(t, nil, nil, testOptions(func(o *Options) { o.Fetch.AllowPrivate, o.Fetch.Timeout = true, hostileTimeout }))
	ctx, cancel := context.WithTimeout(context.Background(), hostileGuard)
	defer cancel()
	r := w.process(ctx, task(srv.URL+"/secret/page", proto.Result{}, proto.IgnoreRules{}, ""))
	if r.ErrKind != proto.ErrRobotsUnreachable || !r.Disallowed || !strings.Contains(r.Err, "unreachable") {
		t.Fatalf("kind %q disallowed %v err %q, want robots-unreachable, disallowed", r.ErrKind, r.Disallowed, r.Err)
	}
	if n := pageHits.Load(); n != 0 {
		t.Fatalf("the page was fetched %d times", n)
	}
}
