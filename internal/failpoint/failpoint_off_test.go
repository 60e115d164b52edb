//go:build !failpoints

package failpoint

import "testing"

// Without the tag the environment arms nothing.
func TestOff(t *testing.T) {
	t.Setenv(Env, FoldBeforeCommit+"=error")
	if Enabled {
		t.Fatal("Enabled without the failpoints tag")
	}
	if err := Hit(FoldBeforeCommit); err != nil {
		t.Errorf("Hit: %v", err)
	}
}
