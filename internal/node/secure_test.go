package node_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/freshcrawl/freshcrawl/config"
	"github.com/freshcrawl/freshcrawl/internal/broker"
	"github.com/freshcrawl/freshcrawl/internal/node"
	"github.com/freshcrawl/freshcrawl/internal/testutil"
)

// pki writes a CA, a server certificate for 127.0.0.1 and a client
// certificate as PEM files.
func pki(t *testing.T) (ca, srvCert, srvKey, cliCert, cliKey string) {
	t.Helper()
	dir := t.TempDir()
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	caKey := newKey()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	leaf := func(n int64, cn string, usage x509.ExtKeyUsage) (string, string) {
		k := newKey()
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(n), Subject: pkix.Name{CommonName: cn}, NotBefore: time.Now().Add(-time.Hour),
			NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kb, _ := x509.MarshalECPrivateKey(k)
		return write(cn+".pem", "CERTIFICATE", der), write(cn+"-key.pem", "EC PRIVATE KEY", kb)
	}
	ca = write("ca.pem", "CERTIFICATE", caDER)
	srvCert, srvKey = leaf(2, "server", x509.ExtKeyUsageServerAuth)
	cliCert, cliKey = leaf(3, "client", x509.ExtKeyUsageClientAuth)
	return
}

// TestSecuredClusterAndWorkerMetrics runs a coordinator and a worker
// process against a NATS server that requires mutual TLS and a password,
// crawls a page, and scrapes the worker's /metrics and /healthz on its
// --listen; both registries pass Prometheus's linter.
func TestSecuredClusterAndWorkerMetrics(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ca, srvCert, srvKey, cliCert, cliKey := pki(t)
	tc, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: srvCert, KeyFile: srvKey, CaFile: ca, Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: filepath.Join(t.TempDir(), "js"),
		NoSigs: true, NoLog: true, TLS: true, TLSVerify: true, TLSConfig: tc, TLSTimeout: 5,
		Users: []*server.User{{Username: "freshcrawl", Password: "cluster-password"}}})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server did not start")
	}
	defer func() { ns.Shutdown(); ns.WaitForShutdown() }()

	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintf(w, "<html><body><p>%s at %d</p></body></html>", r.URL.Path, time.Now().UnixNano())
	}))
	defer web.Close()

	cfg := testConfig(t, t.TempDir())
	cfg.NATS = ns.ClientURL()
	cfg.NATSUser, cfg.NATSPassword = "freshcrawl", "cluster-password"
	cfg.NATSCA, cfg.NATSCert, cfg.NATSKey = ca, cliCert, cliKey
	cfg.Listen = "127.0.0.1:0"

	// The server takes nobody without the password and a client
	// certificate (internal/broker's tests show the refusals), so the
	// processes below get in only with what the config gives them.
	coord, err := node.Start(ctx, node.Options{Config: cfg, Roles: node.Roles{Coordinator: true, HTTP: true}, Log: testutil.QuietLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer coord.Stop()
	wcfg := cfg
	wcfg.WorkerID = "metered"
	wk, err := node.Start(ctx, node.Options{Config: wcfg, Roles: node.Roles{Workers: 1, HTTP: true}, Log: testutil.QuietLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer wk.Stop()
	if _, err := coord.Coordinator.AddSeeds(strings.NewReader(web.URL+"/a\n"+web.URL+"/b\n"), "test"); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 30*time.Second, "two fetches", func() bool { return coord.Coordinator.Status().Fetches >= 2 })

	get := func(base, path string) string {
		t.Helper()
		resp, err := http.Get("http://" + base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
		}
		return string(b)
	}
	if got := get(wk.HTTPAddr(), "/healthz"); !strings.HasPrefix(got, "ok\nnats: connected") || !strings.Contains(got, "worker metered:") {
		t.Errorf("worker /healthz: %q", got)
	}
	// Every fetch is timed: the pages' (one a finished task) and the
	// robots.txt fetches (the cache misses). Read from one scrape taken
	// while no task is half done.
	var wm string
	var fetches, results, misses, hits, ok2xx float64
	testutil.WaitFor(t, 20*time.Second, "two pages and their robots.txt in the worker's metrics", func() bool {
		wm = get(wk.HTTPAddr(), "/metrics")
		fams := parseMetrics(t, wm)
		fetches = sample(fams, "freshcrawl_worker_fetch_duration_seconds", nil)
		results = sample(fams, "freshcrawl_worker_results_total", nil)
		ok2xx = sample(fams, "freshcrawl_worker_results_total", map[string]string{"status": "2xx", "kind": "none"})
		misses = sample(fams, "freshcrawl_worker_robots_cache_misses_total", nil)
		hits = sample(fams, "freshcrawl_worker_robots_cache_hits_total", nil)
		return sample(fams, "freshcrawl_worker_tasks_in_progress", nil) == 0 && ok2xx >= 2
	})
	if misses != 1 || hits != results-1 || fetches != results+misses || ok2xx != results {
		t.Errorf("worker metrics: %v fetches timed, %v results (%v 2xx), robots cache %v misses and %v hits; want one miss, a hit for every later task, and a timed fetch for each result and miss", fetches, results, ok2xx, misses, hits)
	}
	for _, want := range []string{"freshcrawl_worker_fetched_bytes_total ", "go_goroutines ", "process_resident_memory_bytes "} {
		if !strings.Contains(wm, want) {
			t.Errorf("worker /metrics lacks %q", want)
		}
	}
	cm := get(coord.HTTPAddr(), "/metrics")
	for _, want := range []string{"freshcrawl_fold_latency_seconds_count ", "freshcrawl_webhook_deliveries_total 0", "go_goroutines "} {
		if !strings.Contains(cm, want) {
			t.Errorf("coordinator /metrics lacks %q", want)
		}
	}
	for name, text := range map[string]string{"worker": wm, "coordinator": cm} {
		problems, err := promlint.New(bytes.NewReader([]byte(text))).Lint()
		if err != nil {
			t.Fatalf("%s metrics: %v", name, err)
		}
		for _, p := range problems {
			t.Errorf("%s metric %s: %s", name, p.Metric, p.Text)
		}
	}
}

// TestWarnsOfAnOpenAPIBeyondLoopback: an API listening beyond loopback
// without a token says so in the log; with a token, or on loopback, it
// does not.
func TestWarnsOfAnOpenAPIBeyondLoopback(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, c := range []struct {
		listen string
		tokens []string
		warn   bool
	}{
		{"0.0.0.0:0", nil, true},
		{"0.0.0.0:0", []string{"a-token-of-the-test-0001"}, false},
		{"127.0.0.1:0", nil, false},
	} {
		var logs lockedBuffer
		cfg := testConfig(t, t.TempDir())
		cfg.Listen, cfg.APITokens = c.listen, c.tokens
		n, err := node.Start(ctx, node.Options{Config: cfg, Roles: node.Roles{Coordinator: true, HTTP: true}, Log: slog.New(slog.NewTextHandler(&logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		n.Stop()
		if got := strings.Contains(logs.String(), "beyond loopback without a token"); got != c.warn {
			t.Errorf("listen %s, %d tokens: warned %v, want %v:\n%s", c.listen, len(c.tokens), got, c.warn, logs.String())
		}
	}
}

// lockedBuffer is a log sink for the node's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *lockedBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// TestCoordinatorAndWorkerWithTokenAndNKey connects a coordinator and a
// worker process through the config's NATS keys to servers that require
// a token, and an NKey.
func TestCoordinatorAndWorkerWithTokenAndNKey(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := kp.Seed()
	pub, _ := kp.PublicKey()
	seedFile := filepath.Join(t.TempDir(), "user.nk")
	if err := os.WriteFile(seedFile, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		server func(*server.Options)
		client func(*config.Config)
	}{
		{"token", func(o *server.Options) { o.Authorization = "nats-token-of-the-test" }, func(c *config.Config) { c.NATSToken = "nats-token-of-the-test" }},
		{"nkey", func(o *server.Options) { o.Nkeys = []*server.NkeyUser{{Nkey: pub}} }, func(c *config.Config) { c.NATSNKey = seedFile }},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := &server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: filepath.Join(t.TempDir(), "js"), NoSigs: true, NoLog: true}
			c.server(o)
			ns, err := server.NewServer(o)
			if err != nil {
				t.Fatal(err)
			}
			ns.Start()
			if !ns.ReadyForConnections(10 * time.Second) {
				t.Fatal("nats-server did not start")
			}
			defer func() { ns.Shutdown(); ns.WaitForShutdown() }()
			cfg := testConfig(t, t.TempDir())
			cfg.NATS = ns.ClientURL()
			// The server takes nobody without the credentials
			// (internal/broker's tests show the refusals).
			c.client(&cfg)
			coord, err := node.Start(ctx, node.Options{Config: cfg, Roles: node.Roles{Coordinator: true}, Log: testutil.QuietLogger(t)})
			if err != nil {
				t.Fatal(err)
			}
			defer coord.Stop()
			cfg.WorkerID = "w-" + c.name
			wk, err := node.Start(ctx, node.Options{Config: cfg, Roles: node.Roles{Workers: 1}, Log: testutil.QuietLogger(t)})
			if err != nil {
				t.Fatal(err)
			}
			defer wk.Stop()
			testutil.WaitFor(t, 20*time.Second, "the worker's heartbeat at the coordinator", func() bool {
				return slices.Contains(coord.Coordinator.Status().Workers, cfg.WorkerID)
			})

			// Wrong credentials are not retried forever: nats.go closes
			// the connection after the second refusal, and Start says why
			// instead of waiting for NATS until ctx ends.
			bad := cfg
			bad.NATSToken, bad.NATSNKey, bad.WorkerID = "not-the-token", "", "w-bad-"+c.name
			wb, err := node.Start(ctx, node.Options{Config: bad, Roles: node.Roles{Workers: 1}, Log: testutil.QuietLogger(t)})
			if err == nil {
				wb.Stop()
				t.Fatal("a worker with wrong credentials started")
			}
			if !errors.Is(err, broker.ErrNATSRefused) || !strings.Contains(err.Error(), "--nats-token") {
				t.Fatalf("a worker with wrong credentials: %v, want broker.ErrNATSRefused naming the credential flags", err)
			}
		})
	}
}

func parseMetrics(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	return fams
}

// sample sums the series of family name whose labels include want: a
// counter's or gauge's value, a histogram's count.
func sample(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	f, ok := fams[name]
	if !ok {
		return -1
	}
	sum := 0.0
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			match = match && labels[k] == v
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Histogram != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum
}

// TestRunServesWorkerMetrics: `run` (a coordinator with in-process
// workers) serves the workers' series on the coordinator's /metrics, the
// runtime collectors once, and the whole passes the linter.
func TestRunServesWorkerMetrics(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := testConfig(t, t.TempDir())
	cfg.Listen = "127.0.0.1:0"
	n, err := node.Start(ctx, node.Options{Config: cfg, Roles: node.Roles{Coordinator: true, Workers: 1, HTTP: true}, Log: testutil.QuietLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	resp, err := http.Get("http://" + n.HTTPAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: %d %s", resp.StatusCode, b)
	}
	fams := parseMetrics(t, string(b))
	for _, name := range []string{"freshcrawl_worker_tasks_in_progress", "freshcrawl_fold_latency_seconds", "go_goroutines", "process_open_fds"} {
		if _, ok := fams[name]; !ok {
			t.Errorf("/metrics lacks %s", name)
		}
	}
	problems, err := promlint.New(bytes.NewReader(b)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("metric %s: %s", p.Metric, p.Text)
	}
}
