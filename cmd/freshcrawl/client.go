package main

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/freshcrawl/freshcrawl/config"
)

// apiHTTP is the client the commands talk to the coordinator's API with:
// it trusts the certificate --tls-cert names (so a self-signed one works
// when the command shares the coordinator's config) besides the system's
// roots.
func apiHTTP(cfg config.Config, timeout time.Duration) *http.Client {
	c := &http.Client{Timeout: timeout}
	if cfg.TLSCert == "" {
		return c
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if pem, err := os.ReadFile(cfg.TLSCert); err == nil {
		pool.AppendCertsFromPEM(pem)
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}
	c.Transport = t
	return c
}

// apiDo sends a request to the API with cfg's token.
func apiDo(cfg config.Config, timeout time.Duration, method, u, contentType string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		return nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if tok := cfg.ClientToken(); tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	return apiHTTP(cfg, timeout).Do(req)
}

// apiPost posts body to the API; an upload has no time limit.
func apiPost(cfg config.Config, u, contentType string, body io.Reader) (*http.Response, error) {
	return apiDo(cfg, 0, http.MethodPost, u, contentType, body)
}
