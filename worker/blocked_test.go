package worker

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/freshcrawl/freshcrawl/proto"
	"github.com/freshcrawl/freshcrawl/worker/fetch"
)

// dnsServer answers A queries for the names in a from a UDP socket on
// loopback, and every other query with no answer.
func dnsServer(t *testing.T, a map[string][4]byte) *net.Resolver {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			var p dnsmessage.Parser
			h, err := p.Start(buf[:n])
			if err != nil {
				continue
			}
			q, err := p.Question()
			if err != nil {
				continue
			}
			b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true})
			_ = b.StartQuestions()
			_ = b.Question(q)
			_ = b.StartAnswers()
			if ip, ok := a[strings.ToLower(q.Name.String())]; ok && q.Type == dnsmessage.TypeA {
				_ = b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 60}, dnsmessage.AResource{A: ip})
			}
			msg, err := b.Finish()
			if err == nil {
				_, _ = pc.WriteTo(msg, from)
			}
		}
	}()
	addr := pc.LocalAddr().String()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", addr)
	}}
}

// TestBlockedHostName: a host name (not an address literal) that resolves
// to a loopback address gets error kind blocked-address with a clear
// message, whether robots.txt is the first request or robots are ignored,
// and the server is never reached. With the address allowed the same
// name is fetched.
func TestBlockedHostName(t *testing.T) {
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits++
		_, _ = w.Write([]byte("<html><body>inside</body></html>"))
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	res := dnsServer(t, map[string][4]byte{"intranet.example.": {127, 0, 0, 1}})
	page := "http://intranet.example:" + port + "/secret"
	task := proto.Task{ID: "t1", Kind: proto.KindFetch, URL: page, Host: "intranet.example"}

	for _, ignoreRobots := range []bool{false, true} {
		w := newWorker(t, nil, nil, testOptions(func(o *Options) {
			o.IgnoreRobots, o.Fetch.Resolver, o.Fetch.Timeout = ignoreRobots, res, 5*time.Second
		}))
		r := w.process(context.Background(), task)
		if r.ErrKind != proto.ErrBlocked {
			t.Fatalf("ignore robots %v: kind %q (%s), want %q", ignoreRobots, r.ErrKind, r.Err, proto.ErrBlocked)
		}
		if !strings.Contains(r.Err, "127.0.0.1") || !strings.Contains(r.Err, "--allow-private") {
			t.Errorf("ignore robots %v: message %q should name the address and --allow-private", ignoreRobots, r.Err)
		}
		if !ignoreRobots && !strings.Contains(r.Err, "intranet.example resolves to") {
			t.Errorf("message %q should say the host name resolves to a refused address", r.Err)
		}
	}
	if hits != 0 {
		t.Fatalf("the blocked server was reached %d times", hits)
	}

	// Allowed: loopback but for this one server, which the name reaches.
	w := newWorker(t, nil, nil, testOptions(func(o *Options) {
		o.Fetch.Resolver, o.Fetch.Timeout = res, 5*time.Second
		o.Fetch.Refuse = func(a netip.Addr) bool { return a != netip.MustParseAddr("127.0.0.1") && fetch.IsBlockedIP(a) }
	}))
	if r := w.process(context.Background(), task); r.ErrKind != proto.ErrNone || hits != 2 {
		t.Fatalf("allowed: kind %q (%s), %d requests (want robots.txt and the page)", r.ErrKind, r.Err, hits)
	}
}
