package worker

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine is left running after
// them: whatever starts one waits for it when it stops.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
