// Package failpoint holds the named points where the fault suite
// (lab/faults) injects a fault into a running process. A point costs
// nothing in the product: Hit is a no-op the compiler removes unless the
// binary is built with the build tag failpoints,
//
//	go build -tags failpoints ./cmd/freshcrawl
//
// as bbolt and etcd do with gofail. In such a binary the points named in
// the environment variable FAILPOINTS are armed, each with an action:
//
//	FAILPOINTS='fold-before-commit=pause'
//	FAILPOINTS='fold-after-commit=1*error;fold-before-commit=exit'
//
// An armed point reached prints a line "FAULT-POINT <name> reached" on
// standard error (the mark the suite waits for), then
//
//   - pause blocks the goroutine that reached it for good: the process is
//     stopped there until it is killed;
//   - exit ends the process at once with status 3, as a crash would;
//   - error makes Hit return an error that says the failpoint injected it.
//
// N*action acts on the first N hits only; later hits pass.
package failpoint

// The points: each name says where it is placed.
const (
	// FoldBeforeCommit is inside a fold's store transaction, its writes
	// made and not committed; an error rolls the transaction back.
	FoldBeforeCommit = "fold-before-commit"
	// FoldAfterCommit is after a fold's commit, before its results are
	// acknowledged; an error leaves them unacknowledged, to come back.
	FoldAfterCommit = "fold-after-commit"
)

// Env is the environment variable that arms points.
const Env = "FAILPOINTS"

// Marker starts the line an armed point prints when it is reached.
const Marker = "FAULT-POINT"
