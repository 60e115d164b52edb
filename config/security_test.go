package config

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestTokensFromEveryLayer: API tokens come from repeated flags, a
// comma-separated environment variable or a YAML list; a webhooks: list
// in the file is not an unknown key.
func TestTokensFromEveryLayer(t *testing.T) {
	resolve := func(args, env []string, file string) Config {
		t.Helper()
		cfg := Default()
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		cfg.Register(fs)
		if file != "" {
			p := filepath.Join(t.TempDir(), "c.yaml")
			if err := os.WriteFile(p, []byte(file), 0o600); err != nil {
				t.Fatal(err)
			}
			args = append(args, "--config", p)
		}
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		if err := Resolve(fs, env); err != nil {
			t.Fatal(err)
		}
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	a, b, r := "admin-token-aaaaaaaaaa", "admin-token-bbbbbbbbbb", "read-token-rrrrrrrrrrr"
	if c := resolve([]string{"--api-token", a, "--api-token", b, "--api-read-token", r}, nil, ""); strings.Join(c.APITokens, ",") != a+","+b || c.APIReadTokens[0] != r || c.ClientToken() != a {
		t.Errorf("flags: %q %q", c.APITokens, c.APIReadTokens)
	}
	if c := resolve(nil, []string{"FRESHCRAWL_API_TOKEN=" + a + "," + b, "FRESHCRAWL_API_READ_TOKEN=" + r}, ""); len(c.APITokens) != 2 || c.APIReadTokens[0] != r {
		t.Errorf("environment: %q %q", c.APITokens, c.APIReadTokens)
	}
	c := resolve(nil, nil, "api-token: ["+a+"]\napi-read-token:\n  - "+r+"\nwebhooks:\n  - url: https://h.example/\n")
	if len(c.APITokens) != 1 || c.APITokens[0] != a || c.ClientToken() != a {
		t.Errorf("file: %q %q", c.APITokens, c.APIReadTokens)
	}
	if c := resolve(nil, []string{"FRESHCRAWL_API_READ_TOKEN=" + r}, ""); c.ClientToken() != r {
		t.Errorf("a read token alone is the client's: %q", c.ClientToken())
	}
}

func TestSecuritySettingsValidated(t *testing.T) {
	for _, c := range []struct {
		set  func(*Config)
		want string
	}{
		{func(c *Config) { c.APITokens = []string{"short"} }, "api-token"},
		{func(c *Config) { c.APIReadTokens = []string{"has a space in it, sadly"} }, "api-token"},
		{func(c *Config) { c.APIHosts = []string{"http://crawler.example/"} }, "api-host"},
		{func(c *Config) { c.APIHosts = []string{"crawler.example:http"} }, "api-host"},
		{func(c *Config) { c.APIHosts = []string{"crawler.example:99999"} }, "api-host"},
		{func(c *Config) { c.APIHosts = []string{"*.example"} }, "api-host"},
		{func(c *Config) { c.APIHosts = []string{""} }, "api-host"},
		{func(c *Config) { c.TLSCert = "c.pem" }, "tls-cert"},
		{func(c *Config) { c.NATSCert = "c.pem" }, "nats-cert"},
		{func(c *Config) { c.NATSUser = "u" }, "nats-user"},
		{func(c *Config) { c.LogFormat = "xml" }, "log-format"},
		{func(c *Config) { c.WebhookAttempts = 0 }, "webhook-attempts"},
		{func(c *Config) { c.WebhookMaxBackoff = c.WebhookBackoff / 2 }, "webhook-max-backoff"},
		{func(c *Config) { c.ChangeMaxAge = 0 }, "change-stream-max-age"},
		{func(c *Config) { c.ChangeMaxBytes = 0 }, "change-stream-max-bytes"},
	} {
		cfg := Default()
		c.set(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", c.want, err)
		}
	}
}

func TestAPIHostsAccepted(t *testing.T) {
	for _, h := range []string{"crawler.internal", "crawler.internal:8080", "10.0.0.5", "fd00::1", "[fd00::1]:8080"} {
		cfg := Default()
		cfg.APIHosts = []string{h}
		if err := cfg.Validate(); err != nil {
			t.Errorf("api-host %q: %v", h, err)
		}
	}
}

func TestLogFormatJSON(t *testing.T) {
	cfg := Default()
	cfg.LogFormat = "json"
	var buf bytes.Buffer
	log, err := cfg.Logger(&buf)
	if err != nil {
		t.Fatal(err)
	}
	log.Info("hello", "n", 3)
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil || rec["msg"] != "hello" || rec["n"] != 3.0 || rec["level"] != "INFO" {
		t.Fatalf("json log line %q: %v", buf.String(), err)
	}
	cfg.LogFormat = "text"
	buf.Reset()
	log, _ = cfg.Logger(&buf)
	log.Info("hello")
	if !strings.Contains(buf.String(), "level=INFO msg=hello") {
		t.Fatalf("text log line %q", buf.String())
	}
}

func TestAPIBase(t *testing.T) {
	for _, c := range []struct {
		listen, cert, want string
	}{
		{"127.0.0.1:8080", "", "http://127.0.0.1:8080"},
		{"0.0.0.0:8080", "", "http://127.0.0.1:8080"},
		{"[::]:8443", "c.pem", "https://127.0.0.1:8443"},
		{":9000", "", "http://127.0.0.1:9000"},
		{"crawler.internal:8443", "c.pem", "https://crawler.internal:8443"},
	} {
		cfg := Default()
		cfg.Listen, cfg.TLSCert = c.listen, c.cert
		if got := cfg.APIBase(); got != c.want {
			t.Errorf("listen %s cert %q: %s, want %s", c.listen, c.cert, got, c.want)
		}
	}
}

// TestAllowPrivateWebhooks: the webhook switch reaches the webhook
// options, from the environment as from a flag, and --allow-private,
// the fetchers' switch, does not turn it on.
func TestAllowPrivateWebhooks(t *testing.T) {
	for _, c := range []struct {
		args, env []string
		want      bool
	}{
		{nil, nil, false},
		{[]string{"--allow-private"}, nil, false},
		{[]string{"--allow-private-webhooks"}, nil, true},
		{nil, []string{"FRESHCRAWL_ALLOW_PRIVATE_WEBHOOKS=true"}, true},
	} {
		cfg := Default()
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		cfg.Register(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		if err := Resolve(fs, c.env); err != nil {
			t.Fatal(err)
		}
		co, err := cfg.CoordinatorOptions()
		if err != nil {
			t.Fatal(err)
		}
		if co.Webhooks.AllowPrivate != c.want {
			t.Errorf("%q %q: webhooks allow private = %v, want %v", c.args, c.env, co.Webhooks.AllowPrivate, c.want)
		}
	}
}
