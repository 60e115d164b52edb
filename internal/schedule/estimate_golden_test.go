package schedule

import (
	"flag"
	"path/filepath"
	"testing"
	"time"

	"github.com/freshcrawl/freshcrawl/estimate"
	"github.com/freshcrawl/freshcrawl/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// TestGoldenEstimateState pins the bytes of a URL record's estimator
// state: the estimate package's State (its own golden file, reused here)
// followed by the Last-Modified trust counters and the previous
// Last-Modified. The file is decoded and compared field by field, then
// the value encoded and compared with the file.
func TestGoldenEstimateState(t *testing.T) {
	var st estimate.State
	if err := st.UnmarshalBinary(testutil.ReadGolden(t, filepath.Join("..", "..", "estimate", "testdata", "golden", "state.bin"))); err != nil {
		t.Fatal(err)
	}
	want := EstimateState{
		State:  st,
		Trust:  estimate.TrustCounter{Checks: 300, Violations: 2, Changes: 41, Steady: 259},
		PrevLM: time.Unix(1_767_220_000, 0),
	}
	testutil.AllSet(t, want)
	path := filepath.Join("testdata", "golden", "estimate_state.bin")
	b, err := want.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	testutil.Golden(t, path, b, *update)
	var got EstimateState
	if err := got.UnmarshalBinary(testutil.ReadGolden(t, path)); err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
	testutil.SameFields(t, got, want)
}
