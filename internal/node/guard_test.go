package node_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/freshcrawl/freshcrawl/internal/node"
	"github.com/freshcrawl/freshcrawl/internal/testutil"
)

// TestAPIRefusesARebindingHost: an API without a token answers only to
// its own names, so a page whose name was re-pointed at loopback (DNS
// rebinding) gets 421 and reads and changes nothing; --api-host adds a
// name; with a token, the token is the guard and any Host may ask.
func TestAPIRefusesARebindingHost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := func(hosts, tokens []string) *node.Node {
		t.Helper()
		cfg := testConfig(t, t.TempDir())
		cfg.Listen, cfg.APIHosts, cfg.APITokens = "127.0.0.1:0", hosts, tokens
		n, err := node.Start(ctx, node.Options{Config: cfg, Roles: node.Roles{Coordinator: true, HTTP: true}, Log: testutil.QuietLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(n.Stop)
		return n
	}
	// do sends a request to n's listener with Host host.
	do := func(n *node.Node, method, host, path, tok, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, "http://"+n.HTTPAddr()+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		if body != "" {
			req.Header.Set("Content-Type", "application/x-ndjson")
		}
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	port := func(n *node.Node) string {
		_, p, err := net.SplitHostPort(n.HTTPAddr())
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	active := func(n *node.Node, host, tok string) {
		t.Helper()
		testutil.WaitFor(t, 30*time.Second, "GET /api/status 200 with Host "+host, func() bool {
			code, _ := do(n, "GET", host, "/api/status", tok, "")
			return code == 200
		})
	}

	open := start(nil, nil)
	p := port(open)
	for _, h := range []string{open.HTTPAddr(), "localhost:" + p, "127.0.0.1:" + p} {
		active(open, h, "")
	}
	if code, _ := do(open, "GET", "[::1]:"+p, "/healthz", "", ""); code == 421 {
		t.Errorf("Host [::1]:%s: 421", p)
	}
	for _, h := range []string{"attacker.example:" + p, "attacker.example", "localhost.attacker.example:" + p, "localhost:1"} {
		for _, path := range []string{"/api/status", "/api/export", "/healthz", "/"} {
			code, body := do(open, "GET", h, path, "", "")
			var e struct{ Error string }
			if code != http.StatusMisdirectedRequest || json.Unmarshal([]byte(body), &e) != nil || !strings.Contains(e.Error, "not a name of this API") {
				t.Errorf("GET %s with Host %s: %d %s, want 421 and why", path, h, code, body)
			}
		}
		if code, _ := do(open, "POST", h, "/api/seeds", "", "http://rebound.example/\n"); code != http.StatusMisdirectedRequest {
			t.Errorf("POST /api/seeds with Host %s: %d, want 421", h, code)
		}
	}
	if _, err := open.DB.Get("http://rebound.example/"); err == nil {
		t.Error("a request under another name added a seed")
	}

	named := start([]string{"attacker.example"}, nil)
	active(named, "attacker.example:"+port(named), "")
	if code, body := do(named, "POST", "attacker.example:"+port(named), "/api/seeds", "", "http://named.example/\n"); code != 200 {
		t.Errorf("POST /api/seeds under an --api-host name: %d %s", code, body)
	}
	if _, err := named.DB.Get("http://named.example/"); err != nil {
		t.Errorf("the seed under an --api-host name: %v", err)
	}
	if code, _ := do(named, "GET", "other.example:"+port(named), "/api/status", "", ""); code != http.StatusMisdirectedRequest {
		t.Errorf("a name not given with --api-host: %d, want 421", code)
	}

	const tok = "a-token-of-the-test-0001"
	guarded := start(nil, []string{tok})
	active(guarded, "attacker.example:"+port(guarded), tok)
	if code, _ := do(guarded, "GET", "attacker.example:"+port(guarded), "/api/status", "", ""); code != http.StatusUnauthorized {
		t.Errorf("with tokens, another Host without one: %d, want 401", code)
	}
}
