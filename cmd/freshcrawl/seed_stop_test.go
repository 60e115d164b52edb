package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/freshcrawl/freshcrawl/store"
)

// cancellingReader serves lines and cancels the context once it has
// served after of them: a ctrl-C during the read.
type cancellingReader struct {
	n, after int
	cancel   func()
	buf      bytes.Buffer
}

func (r *cancellingReader) Read(p []byte) (int, error) {
	for r.buf.Len() < len(p) {
		if r.n == r.after {
			r.cancel()
		}
		if r.n == 3*r.after {
			break
		}
		fmt.Fprintf(&r.buf, "http://h%d.example/page/%d\n", r.n%7, r.n)
		r.n++
	}
	if r.buf.Len() == 0 {
		return 0, io.EOF
	}
	return r.buf.Read(p)
}

// TestSeedStops: a seed stopped (the command's context cancelled, as
// ctrl-C or SIGTERM do) while it reads returns promptly, stores nothing,
// and says how far it got.
func TestSeedStops(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut bytes.Buffer
	root := newRoot(&out, &errOut)
	in := &cancellingReader{after: 150_000, cancel: cancel}
	root.SetIn(in)
	root.SetArgs([]string{"seed", "--data", dir, "-"})
	err := root.ExecuteContext(ctx)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "stopped") || !strings.Contains(err.Error(), "0 URLs stored") {
		t.Fatalf("stopped seed: %v, want it to say it stopped and stored nothing", err)
	}
	if in.n >= 3*in.after {
		t.Errorf("the seed read all %d lines after it was stopped", in.n)
	}
	db, err := store.OpenDir(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	n := 0
	if err := db.ForEach(func(store.URL) error { n++; return nil }); err != nil || n != 0 {
		t.Errorf("%d URLs stored by a seed stopped while reading (%v)", n, err)
	}
}
