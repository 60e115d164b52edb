package main

// Config keys against their flags and variables, and the YAML examples of
// the docs against the binary. The reference tables are generated
// (gendocs.go) and checked by TestDocsGenerated; docker-compose.yml's
// variables are checked against the same flags by
// TestComposeCommandsAndEnvironment.

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/freshcrawl/freshcrawl/config"
	"github.com/freshcrawl/freshcrawl/internal/notify"
	"github.com/freshcrawl/freshcrawl/internal/source"
	"github.com/freshcrawl/freshcrawl/worker/probeparse"
)

// TestEveryKeyHasAFlagAndAVariable: Register makes a flag of every key,
// and each key's environment variable sets it.
func TestEveryKeyHasAFlagAndAVariable(t *testing.T) {
	cfg := config.Default()
	fs := pflag.NewFlagSet("all", pflag.ContinueOnError)
	cfg.Register(fs)
	var environ []string
	for _, k := range config.Keys() {
		f := fs.Lookup(k.Name)
		if f == nil {
			t.Errorf("key %q has no flag", k.Name)
			continue
		}
		if k.Name == "config" {
			continue
		}
		// Each key's own default, given through its variable, must parse.
		v := strings.TrimSuffix(strings.TrimPrefix(f.DefValue, "["), "]")
		environ = append(environ, config.EnvName(k.Name)+"="+v)
	}
	if err := config.Resolve(fs, environ); err != nil {
		t.Fatalf("the defaults, given as environment variables: %v", err)
	}
	for _, k := range config.Keys() {
		if f := fs.Lookup(k.Name); f != nil && k.Name != "config" && !f.Changed {
			t.Errorf("%s did not set --%s", config.EnvName(k.Name), k.Name)
		}
	}
}

// TestDocsYAMLExamples: every YAML example in README.md and docs/*.md is
// a config file the binary accepts, its keyword-search sources and
// webhooks included. A block whose info string names another file
// (```yaml prometheus.yml) is another program's config and is skipped.
func TestDocsYAMLExamples(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{filepath.Join(repoRoot, "README.md")}, files...)
	n := 0
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repoRoot, name)
		for i, m := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(b), -1) {
			n++
			checkYAMLExample(t, fmt.Sprintf("%s YAML example %d", rel, i+1), m[1])
		}
	}
	if n == 0 {
		t.Fatal("no YAML example found in README.md or docs/*.md")
	}
}

func checkYAMLExample(t *testing.T, what, text string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "freshcrawl.yaml")
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	fs := pflag.NewFlagSet("example", pflag.ContinueOnError)
	cfg.Register(fs)
	if err := fs.Parse([]string{"--config", file}); err != nil {
		t.Fatal(err)
	}
	if err := config.Resolve(fs, nil); err != nil {
		t.Errorf("%s: %v", what, err)
		return
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("%s: %v", what, err)
	}
	if _, err := source.Load(file, probeparse.CheckSelector); err != nil {
		t.Errorf("%s: sources: %v", what, err)
	}
	// Every secret_env is taken as set.
	if _, err := notify.LoadWebhooks(file, func(string) string { return "set" }); err != nil {
		t.Errorf("%s: webhooks: %v", what, err)
	}
}
