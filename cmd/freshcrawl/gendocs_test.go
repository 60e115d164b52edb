package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/freshcrawl/freshcrawl/config"
)

// TestDocsGenerated regenerates docs/cli.md and the key table of
// docs/configuration.md in memory and fails, naming the command that
// writes them, when the files differ: a flag, default or help text
// changed without the docs.
func TestDocsGenerated(t *testing.T) {
	dir := filepath.Join(repoRoot, "docs")
	files, err := generatedDocs(dir)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("docs/%s: %v; run `%s`", name, err, genCommand)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("docs/%s is not what the command tree gives: run `%s`\n%s", name, genCommand, firstDifference(got, want))
		}
	}
}

// firstDifference shows the first line where got and want differ.
func firstDifference(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl || i >= len(g) || i >= len(w) {
			return fmt.Sprintf("line %d:\n  file:      %q\n  generated: %q", i+1, gl, wl)
		}
	}
	return "(same lines)"
}

// TestDocsConfigTableHasEveryKey: one row per config key, with its flag
// and variable, so the table cannot lose a key.
func TestDocsConfigTableHasEveryKey(t *testing.T) {
	table, err := configTable(newRoot(nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(strings.TrimSpace(string(table)), "\n")[2:]
	keys := config.Keys()
	if len(rows) != len(keys) {
		t.Fatalf("%d rows for %d keys", len(rows), len(keys))
	}
	for i, k := range keys {
		want := fmt.Sprintf("| `%s` | `--%s` | `%s` |", k.Name, k.Name, config.EnvName(k.Name))
		if !strings.HasPrefix(rows[i], want) {
			t.Errorf("row %d: %s, want it to start %s", i+1, rows[i], want)
		}
	}
}

func TestDocsSpliceNeedsMarkers(t *testing.T) {
	if _, err := spliceGenerated([]byte("# no markers\n"), []byte("x\n")); err == nil {
		t.Fatal("no error without markers")
	}
	doc := "a\n" + genBegin + "\nold\n" + genEnd + "\nb\n"
	got, err := spliceGenerated([]byte(doc), []byte("new\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "a\n" + genBegin + "\n\nnew\n\n" + genEnd + "\nb\n"; string(got) != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
