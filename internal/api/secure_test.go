package api_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/freshcrawl/freshcrawl/coordinator"
	"github.com/freshcrawl/freshcrawl/internal/node"
	"github.com/freshcrawl/freshcrawl/internal/notify"
	"github.com/freshcrawl/freshcrawl/internal/testutil"
	"github.com/freshcrawl/freshcrawl/store"
)

// selfSigned writes a self-signed certificate for 127.0.0.1 and its key.
func selfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "freshcrawl test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

const (
	adminToken = "admin-token-for-the-test-0001"
	readToken  = "read-token-for-the-test-00001"
)

// TestSecuredAPIAndDeadLetters runs a coordinator with tokens and TLS and a
// webhook whose receiver always fails: the API answers only with a token
// (and only reads with the read token), status shows the version and the
// dead letter, and the dashboard signs in and retries it.
func TestSecuredAPIAndDeadLetters(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var mu sync.Mutex
	failing, got := true, 0
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if failing {
			http.Error(w, "receiver broken", http.StatusBadGateway)
			return
		}
		got++
	}))
	defer hook.Close()

	dir := t.TempDir()
	certFile, keyFile, pool := selfSigned(t)
	cfgFile := filepath.Join(dir, "freshcrawl.yaml")
	if err := os.WriteFile(cfgFile, fmt.Appendf(nil, "webhooks:\n  - name: broken\n    url: %s/hook\n    secret: test-secret\n", hook.URL), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(filepath.Join(dir, "data"))
	cfg.ConfigFile = cfgFile
	cfg.APITokens, cfg.APIReadTokens = []string{adminToken}, []string{readToken}
	cfg.TLSCert, cfg.TLSKey = certFile, keyFile
	cfg.WebhookAttempts, cfg.WebhookBackoff, cfg.WebhookMaxBackoff = 2, 10*time.Millisecond, 20*time.Millisecond
	cfg.AllowPrivateWebhooks = true // the receiver is on loopback
	n, err := node.Start(ctx, node.Options{Config: cfg, Roles: node.Roles{Coordinator: true, HTTP: true, ConsoleEvery: 300 * time.Millisecond}, Log: testutil.QuietLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	base := "https://" + n.HTTPAddr()
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	call := func(method, path, tok, body string) (int, []byte) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		if method != "GET" {
			req.Header.Set("Content-Type", "application/json")
			if !strings.HasPrefix(body, "{") {
				req.Header.Set("Content-Type", "application/x-ndjson")
			}
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	// Plain HTTP is not served.
	if resp, err := http.Get("http://" + n.HTTPAddr() + "/healthz"); err == nil {
		if resp.StatusCode == http.StatusOK {
			t.Error("the API answered plain HTTP")
		}
		resp.Body.Close()
	}
	// /healthz answers 503 until the coordinator holds its lease, which
	// on a loaded machine comes after Start returns.
	testutil.WaitFor(t, 30*time.Second, "healthz 200 without a token", func() bool {
		code, _ := call("GET", "/healthz", "", "")
		return code == 200
	})
	for _, p := range []string{"/api/status", "/api/overview", "/api/urls", "/api/webhooks", "/metrics", "/api/export"} {
		if code, _ := call("GET", p, "", ""); code != 401 {
			t.Errorf("GET %s without a token: %d, want 401", p, code)
		}
		if code, _ := call("GET", p, readToken, ""); code != 200 {
			t.Errorf("GET %s with the read token: %d, want 200", p, code)
		}
	}
	if code, b := call("POST", "/api/seeds", readToken, "http://a.example/\n"); code != 403 || !strings.Contains(string(b), "may only read") {
		t.Errorf("POST /api/seeds with the read token: %d %s", code, b)
	}
	if code, b := call("POST", "/api/seeds", adminToken, "http://a.example/\n"); code != 200 {
		t.Errorf("POST /api/seeds with the admin token: %d %s", code, b)
	}

	// A change: the webhook fails twice and the event is a dead letter.
	if _, err := n.DB.Fold("task-1", func(tx *store.Tx) error {
		_, err := tx.AddChange(store.Change{URL: "http://a.example/", Host: "a.example", At: time.Now(), TaskID: "task-1", Hash: "h1"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var st coordinator.Status
	testutil.WaitFor(t, 20*time.Second, "a dead letter in /api/status", func() bool {
		_, b := call("GET", "/api/status", readToken, "")
		st = coordinator.Status{}
		return json.Unmarshal(b, &st) == nil && st.Webhooks != nil && st.Webhooks.Dead == 1
	})
	if st.Version == "" {
		t.Error("status has no version")
	}
	if dl := st.Webhooks.DeadLetters; len(dl) != 1 || dl[0].EventID != "task-1" || dl[0].Attempts != 2 || !strings.Contains(dl[0].LastErr, "502") {
		t.Fatalf("dead letters: %+v", dl)
	}
	if code, _ := call("POST", "/api/webhooks/retry", readToken, `{"all":true}`); code != 403 {
		t.Errorf("retry with the read token: %d, want 403", code)
	}
	for body, want := range map[string]string{`{}`: "for every dead letter", `{"ids":["zz"]}`: "32 hex digits", `{"idz":[]}`: "unknown field"} {
		if code, b := call("POST", "/api/webhooks/drop", adminToken, body); code != 400 || !strings.Contains(string(b), want) {
			t.Errorf("drop %s: %d %s, want 400 mentioning %q", body, code, b, want)
		}
	}

	// The dashboard: sign in with the read token, see the dead letter and a
	// URL but no action on them (the API refuses them anyway, above); sign
	// in as admin, see the actions, and retry it once the receiver works.
	exe := chromium(t)
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.UserDataDir(t.TempDir()), chromedp.Flag("headless", true), chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true), chromedp.Flag("ignore-certificate-errors", true), chromedp.NoFirstRun)...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(alloc)
	defer cancelBrowser()
	// Start the browser on bctx: started by a step's shorter context, it
	// would close with that step.
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	poll := func(js string) chromedp.Action[chromedp.Void] {
		return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
			_, err := chromedp.Poll[bool](js, chromedp.WithPollingTimeout(15*time.Second))(ctx, tg)
			return chromedp.Void{}, err
		}
	}
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, cancel := context.WithTimeout(bctx, 20*time.Second)
		defer cancel()
		if err := chromedp.Do(sctx, steps...); err != nil {
			html, _ := chromedp.Run(bctx, chromedp.Evaluate[string](`document.body.dataset.page + " " + location.href + " inputs=" + document.querySelectorAll("input").length + " value=" + document.querySelector("input").value + " " + document.querySelector("main").innerText`))
			t.Fatalf("%s: %v; the page: %s", what, err, html)
		}
	}
	signIn := func(tok string) {
		t.Helper()
		// The form of the webhooks route: a sign-out re-renders the page
		// it was on first.
		do("sign in", poll(`document.body.dataset.page === "signin" && document.body.dataset.route === "#/webhooks"`),
			chromedp.SetValue(chromedp.CSS(`form.signin input[name="token"]`), tok), chromedp.Click(chromedp.CSS(`form.signin button`)),
			poll(`document.body.dataset.page === "webhooks"`))
	}
	do("open the webhooks page", chromedp.Navigate(base+"/#/webhooks"), poll(`document.body.dataset.page === "signin"`))
	do("a wrong token", chromedp.SetValue(chromedp.CSS(`form.signin input[name="token"]`), "not-the-token-0000000"), chromedp.Click(chromedp.CSS(`form.signin button`)),
		poll(`document.querySelector("main p.err").textContent.includes("not one of")`))
	signIn(readToken)
	do("the dead letter", poll(`document.querySelectorAll('[data-table="dead-letters"] tbody tr').length === 1 && document.querySelector('[data-table="dead-letters"] tbody').textContent.includes("task-1")`))
	do("no actions for the read token", poll(`document.body.dataset.role === "read" && document.querySelectorAll("main [data-action]").length === 0`))
	do("a URL with the read token", eval(`location.hash = "#/url?u=" + encodeURIComponent("http://a.example/")`),
		poll(`document.body.dataset.page === "url" && document.querySelector("main [data-readonly]") !== null && document.querySelectorAll("main [data-action]").length === 0`))
	do("back to webhooks as reader", eval(`location.hash = "#/webhooks"`), poll(`document.body.dataset.page === "webhooks"`))
	// Live updates reach a signed-in page (they carry the token too).
	do("live updates", eval(`location.hash = "#/"`), poll(`document.getElementById("live").classList.contains("on")`))
	do("sign out", chromedp.Click(chromedp.CSS(`#signout`)), poll(`document.body.dataset.page === "signin" && document.body.dataset.route === "#/"`))
	mu.Lock()
	failing = false
	mu.Unlock()
	do("back to webhooks", eval(`location.hash = "#/webhooks"`))
	signIn(adminToken)
	do("retry as admin", chromedp.Click(chromedp.CSS(`[data-action="retry"]`)), poll(`document.getElementById("toast").textContent.includes("requeued 1")`))
	do("a URL as admin", eval(`location.hash = "#/url?u=" + encodeURIComponent("http://a.example/")`),
		poll(`document.body.dataset.role === "admin" && document.body.dataset.page === "url" && document.querySelector("main [data-readonly]") === null`),
		chromedp.WaitVisible(chromedp.CSS(`[data-action="pause"]`)), chromedp.WaitVisible(chromedp.CSS(`[data-action="delete"]`)))
	var ws notify.Status
	testutil.WaitFor(t, 20*time.Second, "the retried event delivered", func() bool {
		_, b := call("GET", "/api/webhooks", readToken, "")
		ws = notify.Status{}
		return json.Unmarshal(b, &ws) == nil && ws.Delivered == 1
	})
	mu.Lock()
	defer mu.Unlock()
	if ws.Dead != 0 || got != 1 {
		t.Fatalf("after the retry: %d dead letters, the receiver got %d events", ws.Dead, got)
	}
}

func eval(js string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := chromedp.Evaluate[any](js)(ctx, tg)
		return chromedp.Void{}, err
	}
}
