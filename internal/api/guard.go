package api

import (
	"fmt"
	"mime"
	"net"
	"net/http"
	"slices"
	"strings"
)

// bodyTypes are the media types a request that changes something may
// carry. None of them is one a browser sends across sites without a
// CORS preflight (which the API never grants): a form or a no-cors fetch
// can only send text/plain, application/x-www-form-urlencoded or
// multipart/form-data. Each route checks its own types too (RequireType).
var bodyTypes = []string{"application/json", "application/x-ndjson", "application/jsonl"}

// StreamTypes are the media types of a line-by-line upload (seeds, items,
// imports): JSON lines under either name, or one JSON document.
var StreamTypes = []string{"application/x-ndjson", "application/jsonl", "application/json"}

// Guard keeps web pages the operator's browser visits away from the API,
// which on the default setup has no token and trusts loopback:
//
//   - A request whose Host is not a name of the API is refused with 421
//     unless tokens guard the API. A page of another site whose name the
//     attacker re-points at 127.0.0.1 (DNS rebinding) is same-origin to
//     the browser and may read every answer; its requests still carry
//     the attacker's name in Host.
//   - A request that changes something is refused with 403 when the
//     browser says (Sec-Fetch-Site, or Origin against Host) that another
//     site sent it, and with 415 unless its body is JSON (bodyTypes):
//     a page may make a browser send a form or a no-cors fetch anywhere,
//     though never with those types, and never read the answer.
type Guard struct {
	hosts *HostList // nil: any Host
	cop   *http.CrossOriginProtection
}

// NewGuard returns the guard of an API whose Host names are hosts; nil
// hosts lets any Host through (tokens guard the API).
func NewGuard(hosts *HostList) *Guard {
	return &Guard{hosts: hosts, cop: http.NewCrossOriginProtection()}
}

// Wrap guards next.
func (g *Guard) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.hosts != nil && !g.hosts.allows(r.Host) {
			WriteError(w, http.StatusMisdirectedRequest, fmt.Errorf("the Host %q is not a name of this API: open it as %s, or name the host with --api-host (a web page of another site re-pointed at this address is refused so)", r.Host, g.hosts.example()))
			return
		}
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			next.ServeHTTP(w, r)
			return
		}
		if err := g.cop.Check(r); err != nil {
			why := fmt.Sprintf("Sec-Fetch-Site is %q", r.Header.Get("Sec-Fetch-Site"))
			if r.Header.Get("Sec-Fetch-Site") == "" {
				why = fmt.Sprintf("Origin %q is not this API's (Host %q)", r.Header.Get("Origin"), r.Host)
			}
			WriteError(w, http.StatusForbidden, fmt.Errorf("%s %s: refused, a page of another site sent it: %s", r.Method, r.URL.Path, why))
			return
		}
		if !RequireType(w, r, bodyTypes...) {
			return
		}
		next.ServeHTTP(w, r)
	})
}

// RequireType refuses, with 415, a request whose body is not one of the
// given media types, and reports whether it let the request through.
func RequireType(w http.ResponseWriter, r *http.Request, types ...string) bool {
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil && slices.Contains(types, mt) {
		return true
	}
	WriteError(w, http.StatusUnsupportedMediaType, fmt.Errorf("%s %s: Content-Type %q: want %s", r.Method, r.URL.Path, ct, strings.Join(types, " or ")))
	return false
}

// HostList is the names an API answers to: its listening address, the
// loopback names at its port and the operator's extra names.
type HostList struct {
	addr  string   // the listener's host:port
	port  string   // its port
	any   bool     // it listens on every address: any IP literal is its own
	names []string // lower case; "name" any port, "name:port" that one
}

// NewHostList returns the names of an API listening on addr (the
// listener's actual address, so a random port is known), under the name
// of its listen setting (clients dial "crawler.internal:8080" when told
// to listen there) and under extra, each a name or name:port
// (config.Validate checked them).
func NewHostList(addr net.Addr, listen string, extra []string) *HostList {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		host, port = addr.String(), ""
	}
	ip := net.ParseIP(host)
	l := &HostList{addr: net.JoinHostPort(host, port), port: port, any: ip != nil && ip.IsUnspecified()}
	if h, _, err := net.SplitHostPort(listen); err == nil && h != "" {
		l.names = append(l.names, strings.ToLower(net.JoinHostPort(h, port)))
	}
	for _, e := range extra {
		if e = strings.ToLower(strings.TrimSpace(e)); e != "" {
			l.names = append(l.names, e)
		}
	}
	return l
}

// allows reports whether hostport, a request's Host, names this API.
func (l *HostList) allows(hostport string) bool {
	hostport = strings.ToLower(hostport)
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, ""
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	for _, n := range l.names {
		if n == host || n == hostport || (port != "" && n == net.JoinHostPort(host, port)) {
			return true
		}
	}
	if port == "" && (l.port == "80" || l.port == "443") {
		port = l.port // the scheme's port, left out
	}
	if port != l.port {
		return false
	}
	if net.JoinHostPort(host, port) == l.addr {
		return true
	}
	switch host {
	case "localhost", "127.0.0.1", "::1":
		return true
	}
	// A name can be re-pointed at this address by whoever owns it; an IP
	// literal cannot, so when the API listens on every address any of
	// them is its own.
	return l.any && net.ParseIP(host) != nil
}

// example is a Host the API answers to.
func (l *HostList) example() string { return "localhost:" + l.port }
