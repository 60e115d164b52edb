package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/freshcrawl/freshcrawl/config"
	"github.com/freshcrawl/freshcrawl/internal/api"
	"github.com/freshcrawl/freshcrawl/internal/node"
	"github.com/freshcrawl/freshcrawl/internal/testutil"
	"github.com/freshcrawl/freshcrawl/store"
)

// runCmd executes the command line as main would.
func runCLI(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	root := newRoot(&out, &errOut)
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), errOut.String(), err
}

// Without a coordinator the commands read and write the store in --data.
func TestURLCommandsOffline(t *testing.T) {
	dir := t.TempDir()
	// Nothing listens there, so reads fall back to the store.
	off := []string{"--data", dir, "--listen", "127.0.0.1:1"}
	seeds := "http://a.example/1\nhttp://a.example/2\nhttp://b.example/1\n" + `{"url":"http://b.example/cap","mode":"capture"}` + "\n"
	if _, errOut, err := runCLI(t, seeds, append([]string{"seed", "-"}, off...)...); err != nil {
		t.Fatalf("seed: %v %s", err, errOut)
	}
	db, err := store.OpenDir(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// A stored copy, written as a fold writes it.
	if _, err := db.Fold("test-copy", func(tx *store.Tx) error { return tx.SetContent("http://a.example/1", "the stored text") }); err != nil {
		t.Fatal(err)
	}
	db.Close()

	out, _, err := runCLI(t, "", append([]string{"urls", "--json"}, off...)...)
	if err != nil {
		t.Fatal(err)
	}
	var page api.ListPage
	if err := json.Unmarshal([]byte(out), &page); err != nil || page.Total != 4 || len(page.URLs) != 4 {
		t.Fatalf("urls --json: %v total %d %d rows\n%s", err, page.Total, len(page.URLs), out)
	}
	out, errOut, err := runCLI(t, "", append([]string{"urls", "--host", "A.example", "--limit", "1"}, off...)...)
	if err != nil || !strings.Contains(out, "http://a.example/1") || strings.Contains(out, "a.example/2") || !strings.Contains(errOut, "more: --after ") {
		t.Errorf("urls --host --limit 1: %v\n%s%s", err, out, errOut)
	}
	cursor := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(errOut), "more: --after "))
	if out, _, err := runCLI(t, "", append([]string{"urls", "--host", "a.example", "--after", cursor}, off...)...); err != nil || !strings.Contains(out, "http://a.example/2") {
		t.Errorf("second page: %v\n%s", err, out)
	}
	if _, _, err := runCLI(t, "", append([]string{"urls", "--state", "given up"}, off...)...); err == nil || !strings.Contains(err.Error(), "running coordinator") {
		t.Errorf("given up offline: %v", err)
	}

	if out, _, err := runCLI(t, "", append([]string{"url", "pause", "http://a.example/1"}, off...)...); err != nil || !strings.Contains(out, "paused 1 of 1") {
		t.Errorf("pause: %v %s", err, out)
	}
	if out, _, err := runCLI(t, "", append([]string{"url", "set", "--host", "b.example", "--weight", "3"}, off...)...); err != nil || !strings.Contains(out, "changed 2 of 2") {
		t.Errorf("set --host: %v %s", err, out)
	}
	if _, _, err := runCLI(t, "", append([]string{"url", "set", "http://b.example/1", "--selector", "div[["}, off...)...); err == nil || !strings.Contains(err.Error(), `"selector"`) {
		t.Errorf("bad selector: %v", err)
	}
	if _, _, err := runCLI(t, "", append([]string{"url", "pause"}, off...)...); err == nil {
		t.Error("pause with no selection succeeded")
	}
	file := filepath.Join(t.TempDir(), "urls.txt")
	if err := os.WriteFile(file, []byte("# to resume\nhttp://a.example/1\nnot a url\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runCLI(t, "", append([]string{"url", "resume", "--file", file}, off...)...); err == nil || !strings.Contains(err.Error(), file+":3:") {
		t.Errorf("bad line in --file: %v", err)
	}
	out, _, err = runCLI(t, "", append([]string{"url", "show", "http://a.example/1"}, off...)...)
	if err != nil || !strings.Contains(out, "state        paused") {
		t.Errorf("show: %v\n%s", err, out)
	}
	if out, _, err := runCLI(t, "", append([]string{"get", "http://a.example/1"}, off...)...); err != nil || out != "the stored text\n" {
		t.Errorf("get: %v %q", err, out)
	}
	if _, _, err := runCLI(t, "", append([]string{"get", "--raw", "http://a.example/1"}, off...)...); err == nil || !strings.Contains(err.Error(), "no raw body kept") {
		t.Errorf("get --raw without a raw body: %v", err)
	}

	// Export, and import into a new store with a bad line.
	exp := filepath.Join(t.TempDir(), "export.jsonl")
	if _, errOut, err := runCLI(t, "", append([]string{"export", exp}, off...)...); err != nil || !strings.Contains(errOut, "exported 4 URLs") {
		t.Fatalf("export: %v %s", err, errOut)
	}
	b, _ := os.ReadFile(exp)
	if err := os.WriteFile(exp, append(b, []byte("{\"url\": \"http://c.example/\", \"weight\": -1}\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	dir2 := t.TempDir()
	out, errOut, err = runCLI(t, "", "import", exp, "--data", dir2, "--listen", "127.0.0.1:1")
	var ec exitCode
	if !errors.As(err, &ec) || ec != 2 || !strings.Contains(out, "4 good lines (4 added, 0 kept), 1 bad") || !strings.Contains(errOut, exp+":5: ") || !strings.Contains(errOut, `"weight"`) {
		t.Errorf("import: %v\n%s%s", err, out, errOut)
	}
	if out, _, err := runCLI(t, "", "url", "show", "http://a.example/1", "--data", dir2, "--listen", "127.0.0.1:1"); err != nil || !strings.Contains(out, "state        paused") {
		t.Errorf("imported record lost its pause: %v\n%s", err, out)
	}
	if out, _, err := runCLI(t, "", "get", "http://a.example/1", "--data", dir2, "--listen", "127.0.0.1:1"); err != nil || out != "the stored text\n" {
		t.Errorf("imported copy: %v %q", err, out)
	}

	if out, _, err := runCLI(t, "", append([]string{"url", "delete", "--prefix", "http://a.example/"}, off...)...); err != nil || !strings.Contains(out, "deleted 2 of 2") {
		t.Errorf("delete --prefix: %v %s", err, out)
	}
	if out, _, err := runCLI(t, "", append([]string{"url", "show", "http://a.example/1"}, off...)...); err != nil || !strings.Contains(out, "state        deleted") {
		t.Errorf("show after delete (history kept): %v\n%s", err, out)
	}
	if out, _, err := runCLI(t, "", append([]string{"url", "delete", "--purge", "http://a.example/1"}, off...)...); err != nil || !strings.Contains(out, "deleted and purged 1 of 1") {
		t.Errorf("purge: %v %s", err, out)
	}
	if _, _, err := runCLI(t, "", append([]string{"get", "http://a.example/1"}, off...)...); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("get after purge: %v", err)
	}
}

// With a coordinator holding the store, the commands go through its API and
// the change takes effect in its live schedule.
func TestURLCommandsThroughAPI(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "<html><body><p>page %s</p></body></html>", r.URL.Path)
	}))
	defer site.Close()
	cfg := config.Default()
	cfg.Data = t.TempDir()
	cfg.NATSListen = "127.0.0.1:-1"
	cfg.Listen = "127.0.0.1:0"
	cfg.Budget, cfg.HostRate = 20, 20
	cfg.PriorRate = 1
	cfg.AllowPrivate = true
	cfg.Workers, cfg.Concurrency = 1, 2
	cfg.Replan = time.Second
	n, err := node.Start(ctx, node.Options{Config: cfg, Roles: node.Roles{Coordinator: true, Workers: 1, HTTP: true}, Log: testutil.QuietLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	on := []string{"--data", cfg.Data, "--listen", n.HTTPAddr()}
	seeds := fmt.Sprintf("%s/a\n{\"url\":%q,\"keep_raw\":true}\n", site.URL, site.URL+"/raw")
	if _, errOut, err := runCLI(t, seeds, append([]string{"seed", "-"}, on...)...); err != nil {
		t.Fatalf("seed: %v %s", err, errOut)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, _, err := runCLI(t, "", append([]string{"get", "--raw", site.URL + "/raw"}, on...)...)
		if err == nil && strings.Contains(out, "<p>page /raw</p>") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("raw body never served: %v %q", err, out)
		}
		time.Sleep(50 * time.Millisecond) // polling interval, not synchronisation
	}
	if out, _, err := runCLI(t, "", append([]string{"url", "pause", site.URL + "/a"}, on...)...); err != nil || !strings.Contains(out, "paused 1 of 1") {
		t.Fatalf("pause through the API: %v %s", err, out)
	}
	out, _, err := runCLI(t, "", append([]string{"url", "show", "--json", site.URL + "/a"}, on...)...)
	var d api.Detail
	if err != nil || json.Unmarshal([]byte(out), &d) != nil || d.Schedule == nil || !d.Schedule.Paused || d.State != "paused" {
		t.Errorf("the live schedule did not pause: %v %+v", err, d.Schedule)
	}
	out, _, err = runCLI(t, "", append([]string{"urls", "--state", "paused"}, on...)...)
	if err != nil || !strings.Contains(out, site.URL+"/a") || strings.Contains(out, "/raw") {
		t.Errorf("urls --state paused: %v\n%s", err, out)
	}
	var exp bytes.Buffer
	apiCfg := cfg
	apiCfg.Listen = n.HTTPAddr()
	if _, err := export(apiCfg, &exp); err != nil || strings.Count(exp.String(), "\n") != 2 {
		t.Errorf("export through the API: %v\n%s", err, exp.String())
	}
	out, _, err = runCLI(t, exp.String(), append([]string{"import", "-"}, on...)...)
	if err != nil || !strings.Contains(out, "2 good lines (0 added, 2 kept), 0 bad") {
		t.Errorf("import through the API: %v %s", err, out)
	}
}
