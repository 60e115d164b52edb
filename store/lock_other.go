//go:build !unix

package store

// fileLock is a no-op where flock is not available; bbolt's own lock still
// guards the file once it is open.
type fileLock struct{}

func lockFile(string, Options) (fileLock, error) { return fileLock{}, nil }

func (fileLock) release() {}
