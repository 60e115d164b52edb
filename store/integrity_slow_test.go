//go:build slow

package store

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Random damage (bytes overwritten anywhere, whole pages zeroed) either is
// refused at open with a clear error or leaves a store whose reads return
// errors at worst: never a panic, never a fault. Hundreds of damaged copies
// take a while under -race, so the case runs with the slow tests.
func TestScrambledStoreNeverCrashes(t *testing.T) {
	src := buildStore(t, t.TempDir(), 300)
	r, err := Check(src)
	if err != nil {
		t.Fatal(err)
	}
	ps := r.PageSize
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	trials := 48
	if testing.Short() {
		trials = 24
	}
	detected := 0
	for i := range trials {
		path := filepath.Join(dir, fmt.Sprintf("scrambled-%d.db", i))
		copyFile(t, src, path, func(b []byte) []byte {
			switch i % 3 {
			case 0: // a few random bytes
				for range 1 + rng.IntN(8) {
					b[rng.IntN(len(b))] = byte(rng.Uint32())
				}
			case 1: // a page header
				p := rng.IntN(len(b) / ps)
				for k := range 16 {
					b[p*ps+k] = byte(rng.Uint32())
				}
			default: // a whole page zeroed
				p := rng.IntN(len(b) / ps)
				clear(b[p*ps : (p+1)*ps])
			}
			return b
		})
		db, err := Open(path, Options{})
		if err != nil {
			detected++
			if strings.Contains(err.Error(), "panic") && !errors.Is(err, ErrCorrupt) {
				t.Errorf("trial %d: %v", i, err)
			}
			os.Remove(path)
			continue
		}
		if err := readAll(db); err != nil {
			detected++
			if !errors.Is(err, ErrCorrupt) {
				t.Errorf("trial %d: read error %v, want one matching ErrCorrupt", i, err)
			}
		}
		db.Close()
		rep, err := Check(path)
		if err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, os.ErrNotExist) {
			t.Errorf("trial %d: Check: %v (%+v)", i, err, rep)
		}
		os.Remove(path)
	}
	t.Logf("%d of %d damaged copies detected at open or read", detected, trials)
	if detected == 0 {
		t.Error("no damage detected at all")
	}
}
