package estimate

import (
	"flag"
	"path/filepath"
	"testing"

	"github.com/freshcrawl/freshcrawl/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// goldenState sets every field, each observation kind among the recent
// ones, so that the layout and the kinds' numbers are in
// testdata/golden/state.bin. The values are written out rather than
// observed, so the file does not depend on floating-point rounding.
func goldenState() State {
	return State{
		last: 1_767_225_600.5, exposure: 86_400.25,
		count:     [numBuckets]float32{1, 2.5, 0.75, 4, 0.125},
		sumT:      [numBuckets]float32{3600, 18000, 2700, 345600, 900},
		lmChanges: 3.5, n: 12.25,
		recentT: [recentSize]float32{3600, 7200, 5400, 1800, 900, 450, 86400, 60},
		recentK: [recentSize]uint8{obsUnchanged, obsChanged, obsLMChange, obsLMSame, obsChanged, obsUnchanged, obsLMSame, obsChanged},
		nRecent: 7, cps: 2,
	}
}

// TestGoldenState decodes the estimator states under testdata/golden,
// which URL records keep, and compares them with the values that made
// them; then encodes and compares the bytes. state_v1.bin is a state
// from before the recent observations were kept: still read.
func TestGoldenState(t *testing.T) {
	want := goldenState()
	testutil.AllSet(t, want)
	path := filepath.Join("testdata", "golden", "state.bin")
	b, err := want.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	testutil.Golden(t, path, b, *update)
	var got State
	if err := got.UnmarshalBinary(testutil.ReadGolden(t, path)); err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
	if got != want {
		t.Errorf("%s decodes to\n%+v\nwant\n%+v", path, got, want)
	}

	// Version 1 is version 2's fields up to n, under version byte 1.
	pathV1 := filepath.Join("testdata", "golden", "state_v1.bin")
	if *update {
		testutil.Golden(t, pathV1, append([]byte{1}, b[1:encodedSizeV1]...), true)
	}
	wantV1 := want
	wantV1.recentT, wantV1.recentK, wantV1.nRecent, wantV1.cps = [recentSize]float32{}, [recentSize]uint8{}, 0, 0
	var gotV1 State
	if err := gotV1.UnmarshalBinary(testutil.ReadGolden(t, pathV1)); err != nil {
		t.Fatalf("decode %s: %v", pathV1, err)
	}
	if gotV1 != wantV1 {
		t.Errorf("%s decodes to\n%+v\nwant\n%+v", pathV1, gotV1, wantV1)
	}
}
