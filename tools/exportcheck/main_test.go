package main

import (
	"slices"
	"testing"
)

// TestSmallSurface runs the check on this module: no internal package
// exports what only it uses.
func TestSmallSurface(t *testing.T) {
	found, err := unused("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Error(f)
	}
}

// TestCheckFindsWhatIsUnused: the check lists exactly the unused exports
// of a fixture module, and none of the used ones, however they are used.
func TestCheckFindsWhatIsUnused(t *testing.T) {
	found, err := unused("testdata/fx")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range found {
		got = append(got, f.pkg+"."+f.name)
	}
	want := []string{"internal/a.Unused", "internal/a.OnlyTests", "internal/a.T.Lonely", "internal/a.Limit"}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("listed %q, want %q", got, want)
	}
}
