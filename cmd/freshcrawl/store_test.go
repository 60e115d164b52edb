package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/freshcrawl/freshcrawl/config"
	"github.com/freshcrawl/freshcrawl/internal/broker"
	"github.com/freshcrawl/freshcrawl/internal/node"
	"github.com/freshcrawl/freshcrawl/internal/testutil"
	"github.com/freshcrawl/freshcrawl/store"
)

// execCmd executes a subcommand as main would, with stdin.
func execCmd(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	root := newRoot(&out, &errOut)
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(args)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := root.ExecuteContext(ctx)
	return out.String(), errOut.String(), err
}

// seededStore makes a data directory with a store of n URLs.
func seededStore(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	var lines []string
	for i := range n {
		lines = append(lines, fmt.Sprintf("http://h%d.example/page/%d", i%5, i))
	}
	if _, _, err := execCmd(t, strings.Join(lines, "\n"), "seed", "--data", dir, "-"); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A truncated store makes every command that opens it fail with a clear
// error and the damaged-store exit status: never a panic, never a crash.
func TestTruncatedStoreCommands(t *testing.T) {
	dir := seededStore(t, 3000)
	path := filepath.Join(dir, store.FileName)
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int64{st.Size() / 2, 3 * 4096, 100} {
		if err := os.Truncate(path, size); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{
			{"plan", "--data", dir},
			{"seed", "--data", dir, "-"},
			{"versions", "--data", dir, "http://h0.example/page/0"},
			{"items", "list", "--data", dir, "--source", "s"},
			{"store", "check", "--data", dir},
			{"backup", "--data", dir, filepath.Join(t.TempDir(), "b.db")},
			{"urls", "--data", dir, "--listen", "127.0.0.1:1"},
			{"export", "--data", dir, "--listen", "127.0.0.1:1"},
		} {
			out, _, err := execCmd(t, "http://new.example/\n", args...)
			if !errors.Is(err, store.ErrCorrupt) || exitStatus(err) != exitDamaged {
				t.Errorf("%v on a store cut to %d bytes: %v (exit %d), want the damaged-store error (exit %d)", args, size, err, exitStatus(err), exitDamaged)
				continue
			}
			msg := err.Error()
			if args[0] == "store" {
				msg = out
			}
			if !strings.Contains(msg, path) && !strings.Contains(msg, "DAMAGED") {
				t.Errorf("%v: error %q does not name the file", args, msg)
			}
		}
	}
	// The recovery the message gives works: a store from a backup.
	dir2 := seededStore(t, 10)
	backup := filepath.Join(t.TempDir(), "backup.db")
	out, _, err := execCmd(t, "", "backup", "--data", dir2, backup)
	if err != nil || !strings.Contains(out, "10 URLs, checked sound") {
		t.Fatalf("backup: %v\n%s", err, out)
	}
	b, err := os.ReadFile(backup)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, _, err := execCmd(t, "", "store", "check", "--data", dir); err != nil || !strings.Contains(out, "sound") {
		t.Errorf("store check after restoring the backup: %v\n%s", err, out)
	}
}

// Next to a running coordinator, the read-only commands go through its
// API (found in the data directory), and a backup is a consistent copy.
func TestReadOnlyCommandsNextToCoordinator(t *testing.T) {
	dir := seededStore(t, 50)
	cfg := config.Default()
	cfg.Data = dir
	cfg.NATSListen = "127.0.0.1:-1"
	cfg.Listen = "127.0.0.1:0" // not the default: the commands must find it
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n, err := node.Start(ctx, node.Options{Config: cfg, Roles: node.Roles{Coordinator: true, HTTP: true}, Log: testutil.QuietLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()

	out, _, err := execCmd(t, "", "status", "--listen", n.HTTPAddr())
	if err != nil || !strings.Contains(out, "role           active coordinator") || !strings.Contains(out, "nats           connected nats://") ||
		!strings.Contains(out, "store          "+filepath.Join(dir, store.FileName)) {
		t.Errorf("status next to a coordinator does not show its role, NATS connection and store: %v\n%s", err, out)
	}
	out, _, err = execCmd(t, "", "plan", "--data", dir, "--json")
	if err != nil || !strings.Contains(out, `"elements"`) {
		t.Errorf("plan --data next to a coordinator: %v\n%s", err, out)
	}
	m := decodePlan(t, out)
	if els, _ := m["elements"].([]any); len(els) != 50 {
		t.Errorf("plan listed %d elements, want the store's 50", len(els))
	}
	if _, _, err := execCmd(t, "", "versions", "--data", dir, "http://h0.example/page/0"); err != nil {
		t.Errorf("versions next to a coordinator: %v", err)
	}
	out, _, err = execCmd(t, "", "store", "check", "--data", dir)
	if err != nil || !strings.Contains(out, "checked   a consistent copy from http://") || !strings.Contains(out, "50 URLs") {
		t.Errorf("store check next to a coordinator: %v\n%s", err, out)
	}
	backup := filepath.Join(t.TempDir(), "b.db")
	out, _, err = execCmd(t, "", "backup", "--data", dir, backup)
	if err != nil || !strings.Contains(out, "50 URLs, checked sound") || !strings.Contains(out, "/api/backup") {
		t.Errorf("backup next to a coordinator: %v\n%s", err, out)
	}
	// A write that is not allowed: the store stays the coordinator's.
	_, _, err = execCmd(t, "", "backup", "--data", dir, filepath.Join(dir, store.FileName))
	if err == nil {
		t.Error("backup onto the live store was accepted")
	}
}

// run with a busy --nats-listen fails at once, saying so, with the in-use
// exit status; a second run on the same data directory fails on the
// store's lock.
func TestRunBusyPortAndLockedData(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	start := time.Now()
	_, _, err = execCmd(t, "", "run", "--data", t.TempDir(), "--nats-listen", ln.Addr().String(), "--listen", "127.0.0.1:0", "--workers", "0")
	if !errors.Is(err, broker.ErrAddrInUse) || exitStatus(err) != exitInUse || !strings.Contains(err.Error(), ln.Addr().String()) {
		t.Errorf("run on a busy NATS port: %v (exit %d)", err, exitStatus(err))
	}
	t.Logf("failed after %s", time.Since(start))

	dir := t.TempDir()
	db, err := store.OpenDir(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, _, err = execCmd(t, "", "run", "--data", dir, "--nats-listen", ln.Addr().String(), "--listen", "127.0.0.1:0", "--workers", "0")
	if !errors.Is(err, store.ErrLocked) || exitStatus(err) != exitInUse {
		t.Errorf("second run on a held data directory: %v, want the lock error first (exit %d)", err, exitInUse)
	}
}

// A store written by a newer freshcrawl is refused by every command that
// opens it, with the message that says to upgrade and an exit status of
// its own, and the file is left as it was.
func TestNewerStoreRefused(t *testing.T) {
	dir := seededStore(t, 10)
	path := filepath.Join(dir, store.FileName)
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The store's meta bucket keeps its format under "schema", 8 bytes
	// big-endian; 1000 is far beyond any format this code writes.
	err = db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("meta")).Put([]byte("schema"), binary.BigEndian.AppendUint64(nil, 1000))
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"plan", "--data", dir},
		{"seed", "--data", dir, "-"},
		{"versions", "--data", dir, "http://h0.example/page/0"},
	} {
		_, _, err := execCmd(t, "http://new.example/\n", args...)
		if !errors.Is(err, store.ErrNewerFormat) || exitStatus(err) != exitNewerStore {
			t.Errorf("%v on a store of format 1000: %v (exit %d), want the newer-format error (exit %d)", args, err, exitStatus(err), exitNewerStore)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, "store format 1000 is newer") || !strings.Contains(msg, "upgrade freshcrawl") {
			t.Errorf("%v: message %q does not name the file, the format and the remedy", args, msg)
		}
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Error("a refused open changed the store file")
	}
}
