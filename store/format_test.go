package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// setMeta writes (or with v nil, deletes) a meta key of the closed store
// at path with bbolt alone, as another binary would have.
func setMeta(t *testing.T, path string, key, v []byte) {
	t.Helper()
	b, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = b.Update(func(tx *bolt.Tx) error {
		if v == nil {
			return tx.Bucket(bucketMeta).Delete(key)
		}
		return tx.Bucket(bucketMeta).Put(key, v)
	})
	if cerr := b.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
}

// storedFormat reads the format version of the closed store at path.
func storedFormat(t *testing.T, path string) uint64 {
	t.Helper()
	b, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var v []byte
	_ = b.View(func(tx *bolt.Tx) error {
		v = bytes.Clone(tx.Bucket(bucketMeta).Get(metaFormat))
		return nil
	})
	if len(v) != 8 {
		t.Fatalf("format version %x", v)
	}
	return binary.BigEndian.Uint64(v)
}

// newStoreWith creates a store at a new path holding one URL, closed.
func newStoreWith(t *testing.T) (path string, u URL) {
	t.Helper()
	path = filepath.Join(t.TempDir(), FileName)
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	u = URL{URL: "https://a.example/p", Host: "a.example", Weight: 1, Mode: "freshness", AddedAt: time.Unix(1, 0).UTC()}
	if _, err := db.Upsert([]URL{u}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return path, u
}

// A new store is written in this format; a store without a format
// version, or of an older format, opens and is this format from then on.
func TestOpenWritesFormat(t *testing.T) {
	path, _ := newStoreWith(t)
	if got := storedFormat(t, path); got != formatVersion {
		t.Fatalf("new store of format %d, want %d", got, formatVersion)
	}
	for name, v := range map[string][]byte{"no version": nil, "format 2": u64(2)} {
		t.Run(name, func(t *testing.T) {
			path, u := newStoreWith(t)
			setMeta(t, path, metaFormat, v)
			db, err := Open(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := db.Get(u.URL)
			if err != nil || got.Host != u.Host {
				t.Errorf("record after open: %+v, %v", got, err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			if got := storedFormat(t, path); got != formatVersion {
				t.Errorf("format %d after open, want %d", got, formatVersion)
			}
		})
	}
}

// A store written by a newer freshcrawl is refused, to write and to
// read, with an error that names the file and both formats, and the
// file, its clean-close marker included, stays as it was.
func TestOpenRefusesNewerFormat(t *testing.T) {
	path, _ := newStoreWith(t)
	setMeta(t, path, metaFormat, u64(formatVersion+1))
	if err := markClean(path); err != nil {
		t.Fatal(err)
	}
	type snapshot struct {
		file, marker []byte
		mtime        time.Time
	}
	snap := func() snapshot {
		file, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		marker, err := os.ReadFile(cleanPath(path))
		if err != nil {
			t.Fatalf("clean-close marker: %v", err)
		}
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return snapshot{file, marker, st.ModTime()}
	}
	before := snap()
	for _, readOnly := range []bool{false, true} {
		db, err := Open(path, Options{ReadOnly: readOnly, Timeout: time.Second})
		if err == nil {
			db.Close()
			t.Fatalf("read-only %v: a store of format %d opened", readOnly, formatVersion+1)
		}
		if !errors.Is(err, ErrNewerFormat) {
			t.Errorf("read-only %v: %v, want ErrNewerFormat", readOnly, err)
		}
		want := fmt.Sprintf("open %s: store format %d is newer than this freshcrawl understands (format %d): upgrade freshcrawl", path, formatVersion+1, formatVersion)
		if err.Error() != want {
			t.Errorf("read-only %v: error\n%q\nwant\n%q", readOnly, err, want)
		}
		after := snap()
		if !bytes.Equal(after.file, before.file) || !after.mtime.Equal(before.mtime) {
			t.Errorf("read-only %v: the refused open changed the file", readOnly)
		}
		if !bytes.Equal(after.marker, before.marker) {
			t.Errorf("read-only %v: the refused open changed the clean-close marker", readOnly)
		}
	}
	if !closedCleanly(path) {
		t.Error("the file no longer counts as closed cleanly")
	}
}

// A format version that is not 8 bytes is damage, not a format.
func TestOpenBadFormatVersion(t *testing.T) {
	path, _ := newStoreWith(t)
	setMeta(t, path, metaFormat, []byte{3})
	_, err := Open(path, Options{})
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "format version") {
		t.Fatalf("open: %v, want ErrCorrupt naming the format version", err)
	}
}
