package main

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/freshcrawl/freshcrawl/coordinator"
	"github.com/freshcrawl/freshcrawl/internal/notify"
	"github.com/freshcrawl/freshcrawl/internal/version"
)

// TestEveryCommandHasExamples: every command that runs has examples in its
// --help, and every example command line names a command and flags that
// exist.
func TestEveryCommandHasExamples(t *testing.T) {
	root := newRoot(io.Discard, io.Discard)
	root.InitDefaultVersionFlag() // added by Execute otherwise
	var walk func(c *cobra.Command)
	checked := 0
	walk = func(c *cobra.Command) {
		for _, s := range c.Commands() {
			walk(s)
		}
		if !c.Runnable() && c != root {
			return
		}
		if strings.TrimSpace(c.Example) == "" {
			t.Errorf("%s: no examples in --help", c.CommandPath())
			return
		}
		var help bytes.Buffer
		c.SetOut(&help)
		_ = c.Help()
		if !strings.Contains(help.String(), "Examples:\n"+c.Example) {
			t.Errorf("%s --help does not show its examples", c.CommandPath())
		}
		for _, line := range strings.Split(c.Example, "\n") {
			line = strings.TrimSpace(line)
			if i := strings.Index(line, "freshcrawl "); i >= 0 && !strings.HasPrefix(line, "#") {
				line = line[i:]
			} else {
				continue
			}
			if i := strings.IndexAny(line, "|#>"); i >= 0 {
				line = strings.TrimSpace(line[:i])
			}
			args := strings.Fields(line)[1:]
			cmd, rest, err := root.Find(args)
			if err != nil {
				t.Errorf("%s: example %q: %v", c.CommandPath(), line, err)
				continue
			}
			if err := cmd.ParseFlags(rest); err != nil {
				t.Errorf("%s: example %q: %v", c.CommandPath(), line, err)
			}
			checked++
		}
	}
	walk(root)
	if checked < 30 {
		t.Fatalf("only %d example lines checked", checked)
	}
}

func TestVersionFlag(t *testing.T) {
	var out bytes.Buffer
	root := newRoot(&out, io.Discard)
	root.SetArgs([]string{"--version"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "freshcrawl "+version.String()+"\n"; got != want || version.String() == "" {
		t.Fatalf("--version printed %q, want %q", got, want)
	}
}

func TestPrintStatusShowsDeadLetters(t *testing.T) {
	var out bytes.Buffer
	printStatus(&out, coordinator.Status{Version: "v9.9.9", Webhooks: &notify.Status{
		Webhooks: []notify.WebhookView{{Name: "a", URL: "https://h.example/a"}}, Queued: map[string]int{"https://h.example/a": 3},
		Delivered: 7, Failed: 12, Dead: 3,
		DeadLetters: []notify.DeadLetter{{ID: "00ff", URL: "https://h.example/a", EventID: "task-1", Attempts: 10, LastErr: "webhook answered 502 Bad Gateway"}},
	}})
	for _, want := range []string{
		"version        v9.9.9",
		"webhooks       1 configured, 7 delivered, 12 failed attempts, 3 queued, 3 dead letters",
		`dead letter  00ff  event task-1 to https://h.example/a, 10 attempts, last: webhook answered 502 Bad Gateway`,
		"and 2 more dead letters",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, out.String())
		}
	}
}
