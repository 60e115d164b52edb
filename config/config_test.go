package config

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/freshcrawl/freshcrawl/coordinator"
	"github.com/freshcrawl/freshcrawl/internal/broker"
	"github.com/freshcrawl/freshcrawl/store"
	"github.com/freshcrawl/freshcrawl/worker"
)

func TestParseRate(t *testing.T) {
	cases := map[string]float64{"20/s": 20, "300/m": 5, "5000/h": 5000.0 / 3600, "1000/d": 1000.0 / 86400, "2.5": 2.5, " 6 / min ": 0.1}
	for in, want := range cases {
		got, err := ParseRate(in)
		if err != nil || float64(got) < want*0.999999 || float64(got) > want*1.000001 {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "x/s", "20/w", "-1/s", "NaN", "1/"} {
		if _, err := ParseRate(bad); err == nil {
			t.Errorf("ParseRate(%q) accepted", bad)
		}
	}
	if s := Rate(10.0 / 86400).String(); s != "10/d" {
		t.Errorf("String = %q", s)
	}
}

// Flags win over the environment, which wins over the file, which wins
// over the defaults; every key has the same name in all three.
func TestLayering(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(file, []byte("budget: 300/m\nhost-rate: 2/s\nworkers: 3\nuser-agent: from-file\nignore-pattern:\n  - '\\d+:\\d+'\n  - 'session=\\w+'\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := Default()
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	cfg.Register(fs)
	if err := fs.Parse([]string{"--config", file, "--workers", "7"}); err != nil {
		t.Fatal(err)
	}
	env := []string{"FRESHCRAWL_HOST_RATE=5/s", "FRESHCRAWL_WORKERS=9", "PATH=/bin"}
	if err := Resolve(fs, env); err != nil {
		t.Fatal(err)
	}
	if cfg.Workers != 7 {
		t.Errorf("workers %d: the flag must win", cfg.Workers)
	}
	if cfg.HostRate != 5 {
		t.Errorf("host-rate %v: the environment must win over the file", cfg.HostRate)
	}
	if cfg.Budget != 5 || cfg.UserAgent != "from-file" {
		t.Errorf("budget %v, user-agent %q: the file must win over defaults", cfg.Budget, cfg.UserAgent)
	}
	if len(cfg.IgnorePatterns) != 2 {
		t.Errorf("ignore patterns from a YAML list: %q", cfg.IgnorePatterns)
	}
	if cfg.Replan != 30*time.Second {
		t.Errorf("replan %v: default expected", cfg.Replan)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("valid config rejected: %v", err)
	}
}

func TestUnknownAndBadValues(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(file, []byte("budgit: 5/s\nhost-rate: fast\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := Default()
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	cfg.Register(fs)
	_ = fs.Parse([]string{"--config", file})
	err := Resolve(fs, []string{"FRESHCRAWL_WROKERS=3"})
	if err == nil || !strings.Contains(err.Error(), `unknown key "budgit"`) || !strings.Contains(err.Error(), "FRESHCRAWL_WROKERS") {
		t.Fatalf("unknown keys must be named: %v", err)
	}
	os.WriteFile(file, []byte("host-rate: fast\n"), 0o600)
	cfg = Default()
	fs = pflag.NewFlagSet("t", pflag.ContinueOnError)
	cfg.Register(fs)
	_ = fs.Parse([]string{"--config", file})
	if err := Resolve(fs, nil); err == nil || !strings.Contains(err.Error(), `"host-rate"`) {
		t.Fatalf("bad value must name the key: %v", err)
	}
	cfg = Default()
	cfg.Policy, cfg.IgnoreSelector, cfg.IgnorePatterns = "fastest", "div[[", []string{"(["}
	err = cfg.Validate()
	for _, want := range []string{"policy", "ignore-selector", "ignore-pattern"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate should name %s: %v", want, err)
		}
	}
}

// Every check names the key at fault; a 0 the key allows is 0, not an
// error and not the default.
func TestValidateNamesTheKey(t *testing.T) {
	ok := Default()
	ok.MaxRedirects, ok.Workers, ok.MinChange = 0, 0, 0
	if err := ok.Validate(); err != nil {
		t.Fatalf("zeros that mean zero refused: %v", err)
	}
	if ok.MaxRedirects != 0 {
		t.Fatal("Validate must not fill in defaults")
	}
	for _, c := range []struct {
		key string
		set func(*Config)
	}{
		{"budget", func(c *Config) { c.Budget = 0 }},
		{"host-rate", func(c *Config) { c.HostRate = 0 }},
		{"max-in-flight", func(c *Config) { c.MaxInFlight = 0 }},
		{"policy", func(c *Config) { c.Policy = "nutch" }},
		{"objective", func(c *Config) { c.Objective = "speed" }},
		{"probe-policy", func(c *Config) { c.ProbePolicy = "naive3" }},
		{"replan", func(c *Config) { c.Replan = 0 }},
		{"prior-rate", func(c *Config) { c.PriorRate = 0 }},
		{"half-life", func(c *Config) { c.HalfLife = -time.Hour }},
		{"explore", func(c *Config) { c.Explore = 0 }},
		{"explore", func(c *Config) { c.Explore = math.NaN() }},
		{"explore", func(c *Config) { c.Explore = 1.5 }},
		{"lm-skew", func(c *Config) { c.LMSkew = time.Millisecond }},
		{"ack-wait", func(c *Config) { c.AckWait = 500 * time.Millisecond }},
		{"max-deliver", func(c *Config) { c.MaxDeliver = 0 }},
		{"replicas", func(c *Config) { c.Replicas = 6 }},
		{"workers", func(c *Config) { c.Workers = -1 }},
		{"concurrency", func(c *Config) { c.Concurrency = 0 }},
		{"user-agent", func(c *Config) { c.UserAgent = "freshcrawl\r\nX-Evil: 1" }},
		{"user-agent", func(c *Config) { c.UserAgent = "/1.0" }},
		{"timeout", func(c *Config) { c.Timeout = 0 }},
		{"max-body", func(c *Config) { c.MaxBody = 0 }},
		{"max-redirects", func(c *Config) { c.MaxRedirects = -1 }},
		{"ignore-selector", func(c *Config) { c.IgnoreSelector = "div[[" }},
		{"ignore-pattern", func(c *Config) { c.IgnorePatterns = []string{`\d+`, ""} }},
		{"ignore-pattern", func(c *Config) { c.IgnorePatterns = []string{"(["} }},
		{"min-change", func(c *Config) { c.MinChange = -0.1 }},
		{"min-change", func(c *Config) { c.MinChange = math.NaN() }},
		{"log-level", func(c *Config) { c.LogLevel = "loud" }},
		{"lease-ttl", func(c *Config) { c.LeaseTTL = time.Second }},
		{"stop-grace", func(c *Config) { c.StopGrace = -time.Second }},
		{"keep-versions", func(c *Config) { c.KeepVersions = -1 }},
		{"keep-changes-for", func(c *Config) { c.KeepChangesFor = -time.Hour }},
		{"keep-fold-marks-for", func(c *Config) { c.KeepFoldMarks = time.Minute }},
		{"keep-fold-marks-for", func(c *Config) { c.KeepFoldMarks = 0 }},
		{"change-stream-max-age", func(c *Config) { c.ChangeMaxAge = time.Second }},
		{"change-stream-max-bytes", func(c *Config) { c.ChangeMaxBytes = 0 }},
		{"change-stream-max-msgs", func(c *Config) { c.ChangeMaxMsgs = -2 }},
		{"webhook-attempts", func(c *Config) { c.WebhookAttempts = 0 }},
		{"webhook-backoff", func(c *Config) { c.WebhookBackoff = 0 }},
		{"webhook-max-backoff", func(c *Config) { c.WebhookBackoff, c.WebhookMaxBackoff = time.Hour, time.Minute }},
		{"webhook-timeout", func(c *Config) { c.WebhookTimeout = 0 }},
	} {
		cfg := Default()
		c.set(&cfg)
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), c.key) {
			t.Errorf("%s: Validate = %v, want an error naming %s", c.key, err, c.key)
		}
	}
}

// The defaults are the packages' DefaultOptions, and the options the keys
// make of them are those DefaultOptions again: one encoding, no
// translation on the way.
func TestDefaultsAreThePackagesDefaults(t *testing.T) {
	cfg := Default()
	co, err := cfg.CoordinatorOptions()
	if err != nil {
		t.Fatal(err)
	}
	want := coordinator.DefaultOptions()
	if co.Policy.Name() != want.Policy.Name() {
		t.Errorf("policy %s, want %s", co.Policy.Name(), want.Policy.Name())
	}
	co.Policy, want.Policy = nil, nil
	if !reflect.DeepEqual(co, want) {
		t.Errorf("coordinator options of the defaults:\n%+v\nwant\n%+v", co, want)
	}
	if wo, want := cfg.WorkerOptions("", nil), worker.DefaultOptions(); !reflect.DeepEqual(wo, want) {
		t.Errorf("worker options of the defaults:\n%+v\nwant\n%+v", wo, want)
	}
	bs, want2 := cfg.BrokerSettings(), broker.DefaultSettings()
	bs.MaxAckPending, want2.MaxAckPending = 0, 0 // sized from max-in-flight and the workers
	if bs != want2 {
		t.Errorf("broker settings of the defaults:\n%+v\nwant\n%+v", bs, want2)
	}
	if r := cfg.retention(); r != store.DefaultRetention() {
		t.Errorf("retention of the defaults %+v", r)
	}
}

// A key two packages check is named once; a policy no operator may
// choose is named by CoordinatorOptions as by Validate.
func TestKeyNamedOnce(t *testing.T) {
	cfg := Default()
	cfg.AckWait = 0
	err := cfg.Validate()
	if err == nil || strings.Count(err.Error(), "ack-wait:") != 1 {
		t.Errorf("Validate = %v, want ack-wait named once", err)
	}
	cfg = Default()
	cfg.Policy = "nutch"
	if _, err := cfg.CoordinatorOptions(); err == nil || !strings.Contains(err.Error(), "policy:") {
		t.Errorf("CoordinatorOptions = %v, want the policy key named", err)
	}
}
