package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
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
