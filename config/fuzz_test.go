package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/freshcrawl/freshcrawl/internal/source"
	"github.com/freshcrawl/freshcrawl/worker/probeparse"
)

// FuzzConfigFile feeds arbitrary YAML files, and an arbitrary value of one
// environment variable, through what `run` does with them: resolve every
// key onto the flags, validate, and read the file's keyword-search sources.
// None may panic, and every error says where the bad value came from: the
// file, the variable, or the key.
func FuzzConfigFile(f *testing.F) {
	for _, s := range []struct {
		file string
		env  uint8
		val  string
	}{
		{"budget: 5000/h\nhost-rate: 1/s\n", 0, ""},
		{"ignore-pattern:\n  - '\\d{2}:\\d{2}'\n  - 'session=\\w+'\nsources: []\n", 3, "10/s"},
		{"max-redirects: 0\nkeep-versions: 10\nkeep-changes-for: 720h\n", 7, "-1"},
		{"budget: [1, 2]\n", 1, "0/s"},
		{"budget: {a: 1}\n", 2, "nonsense"},
		{"nope: 1\n", 4, "1h"},
		{"explore: NaN\nmin-change: -1\n", 5, "1e309"},
		{"log-level: loud\nignore-selector: 'div[['\n", 6, "::"},
		{"- a\n- b\n", 0, ""},
		{"sources:\n  - name: s\n    search: {url: 'http://a.com/?q={query}'}\n", 8, "x"},
		{"sources: 3\n", 9, ""},
		{"&a [*a]", 10, ""},
		{"timeout: 0s\nmax-body: 0\nconcurrency: 0\nworkers: -1\n", 11, "0"},
	} {
		f.Add([]byte(s.file), s.env, s.val)
	}
	keys := Keys()
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, file []byte, env uint8, val string) {
		path := filepath.Join(dir, "fuzz.yaml")
		if err := os.WriteFile(path, file, 0o600); err != nil {
			t.Fatal(err)
		}
		cfg := Default()
		fs := pflag.NewFlagSet("fuzz", pflag.ContinueOnError)
		cfg.Register(fs)
		if err := fs.Set("config", path); err != nil {
			t.Fatal(err)
		}
		k := keys[int(env)%len(keys)].Name
		var environ []string
		if k != "config" {
			environ = []string{EnvName(k) + "=" + val}
		}
		if err := Resolve(fs, environ); err != nil {
			if msg := err.Error(); !strings.Contains(msg, path) && !strings.Contains(msg, "FRESHCRAWL_") {
				t.Fatalf("resolve error names neither the file nor the variable: %v", err)
			}
			return
		}
		if err := cfg.Validate(); err != nil {
			if !strings.HasPrefix(err.Error(), "config: ") {
				t.Fatalf("validate error %q does not start with the key at fault", err)
			}
		}
		if _, err := source.Parse(file, path, probeparse.CheckSelector); err != nil && !strings.Contains(err.Error(), path) {
			t.Fatalf("sources error does not name the file: %v", err)
		}
	})
}
