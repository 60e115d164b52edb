package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/freshcrawl/freshcrawl/config"
	"github.com/freshcrawl/freshcrawl/internal/node"
	"github.com/freshcrawl/freshcrawl/internal/testutil"
)

// TestClientsSendTokensOverTLS: the client commands reach a coordinator
// that serves HTTPS with a self-signed certificate (trusted through
// --tls-cert) and requires tokens, which they take from the environment.
func TestClientsSendTokensOverTLS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(k)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	_ = os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	_ = os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)

	const admin, read = "cli-admin-token-0123456789", "cli-read-token-0123456789"
	cfg := config.Default()
	cfg.Data = filepath.Join(dir, "data")
	cfg.NATSListen, cfg.Listen = "127.0.0.1:-1", "127.0.0.1:0"
	cfg.Workers = 0
	cfg.APITokens, cfg.APIReadTokens = []string{admin}, []string{read}
	cfg.TLSCert, cfg.TLSKey = certFile, keyFile
	n, err := node.Start(ctx, node.Options{Config: cfg, Roles: node.Roles{Coordinator: true, HTTP: true}, Log: testutil.QuietLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	// The commands share the coordinator's settings but the data
	// directory: they reach it through its API only.
	on := []string{"--listen", n.HTTPAddr(), "--tls-cert", certFile}

	_, _, err = runCLI(t, "", append([]string{"status"}, on...)...)
	if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "needs a token") {
		t.Fatalf("status without a token: %v", err)
	}
	t.Setenv("FRESHCRAWL_API_READ_TOKEN", read)
	out, _, err := runCLI(t, "", append([]string{"status"}, on...)...)
	if err != nil || !strings.Contains(out, "version ") || !strings.Contains(out, "queue ") {
		t.Fatalf("status with the read token: %v\n%s", err, out)
	}
	seedOn := append([]string{"seed", "-", "--data", cfg.Data}, on...)
	if _, _, err := runCLI(t, "http://a.example/\n", seedOn...); err == nil || !strings.Contains(err.Error(), "403") || !strings.Contains(err.Error(), "may only read") {
		t.Fatalf("seed with the read token: %v", err)
	}
	t.Setenv("FRESHCRAWL_API_TOKEN", admin)
	if out, errOut, err := runCLI(t, "http://a.example/\n", seedOn...); err != nil || !strings.Contains(out, "1 new") {
		t.Fatalf("seed with the admin token: %v\n%s%s", err, out, errOut)
	}
}
