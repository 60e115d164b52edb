package main

// The configuration reference (docs/configuration.md) checked against the binary: every
// config key has a flag, an environment variable and one row in the table,
// and the row's default, variable and subcommands are what the binary has.
// (docker-compose.yml's variables are checked against the same flags by
// TestComposeCommandsAndEnvironment.)

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/freshcrawl/freshcrawl/config"
	"github.com/freshcrawl/freshcrawl/internal/notify"
	"github.com/freshcrawl/freshcrawl/internal/source"
)

// readmeRow is one row of the configuration table.
type readmeRow struct {
	line     int
	def      string            // the default the row states ("" for "empty")
	per      map[string]string // subcommand → its own default, from "(demo: `x`; plan: …)"
	env      string
	commands []string // the subcommands column, "all but …" expanded
}

var codeSpan = regexp.MustCompile("`([^`]*)`")

// firstCode is the first code span of s ("" if none).
func firstCode(s string) string {
	if m := codeSpan.FindStringSubmatch(s); m != nil {
		return m[1]
	}
	return ""
}

// readmeConfigTable reads the table of "## Configuration reference",
// keyed by config key.
func readmeConfigTable(t *testing.T, topLevel []string) map[string]readmeRow {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]readmeRow{}
	in, table := false, false
	for i, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "## "):
			in = line == "## Every key"
			table = false
			continue
		case !in:
			continue
		case strings.HasPrefix(line, "| key (flag) | default | env | subcommands |"):
			table = true
			continue
		case table && !strings.HasPrefix(line, "|"):
			table, in = false, false // the table ends; later tables are other flags
			continue
		case !table || strings.HasPrefix(line, "|---"):
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		if len(cells) < 5 {
			t.Errorf("docs/configuration.md:%d: want 5 cells: %s", i+1, line)
			continue
		}
		key := firstCode(cells[0])
		if _, dup := rows[key]; dup {
			t.Errorf("docs/configuration.md:%d: second row for %q", i+1, key)
		}
		r := readmeRow{line: i + 1, env: firstCode(cells[2]), per: map[string]string{}}
		def := strings.TrimSpace(cells[1])
		main, over := cutOutsideCode(def, '(')
		if !strings.HasPrefix(main, "empty") {
			r.def = firstCode(main)
			if r.def == "" {
				t.Errorf("docs/configuration.md:%d: %s: the default must start with `value` or the word empty: %q", i+1, key, def)
			}
		}
		// "(demo: `20/s`; plan: empty¹)": defaults of single subcommands.
		for _, part := range strings.Split(strings.TrimSuffix(strings.TrimSpace(over), ")"), ";") {
			name, val, ok := strings.Cut(strings.TrimSpace(part), ":")
			if ok && slices.Contains(topLevel, name) {
				r.per[name] = firstCode(val)
			}
		}
		r.commands = readmeCommands(cells[3], topLevel)
		rows[key] = r
	}
	return rows
}

// cutOutsideCode cuts s at the first sep that is not inside a code span.
func cutOutsideCode(s string, sep byte) (before, after string) {
	code := false
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '`':
			code = !code
		case s[i] == sep && !code:
			return s[:i], s[i+1:]
		}
	}
	return s, ""
}

// readmeCommands reads a subcommands cell: "run, coordinator, demo, plan¹",
// "run, worker (demo sets it)" or "all but `sim` and `bench`".
func readmeCommands(cell string, topLevel []string) []string {
	cell = regexp.MustCompile(`\([^)]*\)|[¹²³]`).ReplaceAllString(cell, "")
	if rest, ok := strings.CutPrefix(strings.TrimSpace(cell), "all but "); ok {
		var out []string
		for _, c := range topLevel {
			if !strings.Contains(rest, "`"+c+"`") {
				out = append(out, c)
			}
		}
		return out
	}
	var out []string
	for _, f := range strings.Split(cell, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	sort.Strings(out)
	return out
}

// configCommands returns, for every top-level subcommand that reads the
// config (it has --config), the flags it and its subcommands have.
func configCommands(root *cobra.Command) map[string][]*pflag.FlagSet {
	out := map[string][]*pflag.FlagSet{}
	var walk func(top string, c *cobra.Command)
	walk = func(top string, c *cobra.Command) {
		if c.Flags().Lookup("config") != nil {
			out[top] = append(out[top], c.Flags())
		}
		for _, s := range c.Commands() {
			walk(top, s)
		}
	}
	for _, c := range root.Commands() {
		walk(c.Name(), c)
	}
	return out
}

func TestConfigReference(t *testing.T) {
	root := newRoot(io.Discard, io.Discard)
	var topLevel []string
	for _, c := range root.Commands() {
		if !c.Hidden { // hidden commands (nats-server) are not documented
			topLevel = append(topLevel, c.Name())
		}
	}
	sort.Strings(topLevel)
	rows := readmeConfigTable(t, topLevel)
	cmds := configCommands(root)
	keys := map[string]bool{}
	for _, k := range config.Keys() {
		keys[k.Name] = true
		row, ok := rows[k.Name]
		if !ok {
			t.Errorf("docs/configuration.md: no row for key %q", k.Name)
			continue
		}
		if want := config.EnvName(k.Name); row.env != want {
			t.Errorf("docs/configuration.md:%d: %s: env %q, want %q", row.line, k.Name, row.env, want)
		}
		var readers []string
		for _, top := range topLevel {
			for _, fs := range cmds[top] {
				f := fs.Lookup(k.Name)
				if f == nil {
					continue
				}
				if !slices.Contains(readers, top) {
					readers = append(readers, top)
				}
				want, ok := row.per[top]
				if !ok {
					want = row.def
				}
				// What --help prints (pflag leaves an empty list as "[]").
				if got := strings.TrimSuffix(strings.TrimPrefix(f.DefValue, "["), "]"); got != want {
					t.Errorf("docs/configuration.md:%d: %s: default %q, but `freshcrawl %s --help` prints %q", row.line, k.Name, want, top, f.DefValue)
				}
			}
		}
		if len(readers) == 0 {
			t.Errorf("key %q: no subcommand has the flag --%s", k.Name, k.Name)
		}
		if !slices.Equal(readers, row.commands) {
			t.Errorf("docs/configuration.md:%d: %s: subcommands %q, but the flag is on %q", row.line, k.Name, row.commands, readers)
		}
	}
	for k, row := range rows {
		if !keys[k] {
			t.Errorf("docs/configuration.md:%d: row for %q, which is not a config key", row.line, k)
		}
	}
}

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
	if _, err := source.Load(file); err != nil {
		t.Errorf("%s: sources: %v", what, err)
	}
	// Every secret_env is taken as set.
	if _, err := notify.LoadWebhooks(file, func(string) string { return "set" }); err != nil {
		t.Errorf("%s: webhooks: %v", what, err)
	}
}
