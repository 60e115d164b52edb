package store

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A second writer on a held store fails fast with ErrLocked, whose message
// says what to do; a reader of a missing key gets ErrNotFound.
func TestOpenLockedAndNotFound(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = Open(path, Options{Timeout: 50 * time.Millisecond})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second open: %v, want ErrLocked", err)
	}
	if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "--api") {
		t.Errorf("error %q should name the file and the way out (--api)", err)
	}
	if _, err := db.Get("http://nowhere.example/"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get of an unknown URL: %v, want ErrNotFound", err)
	}
}
