//go:build unix

package store

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// fileLock is a flock held while the file is checked before bbolt opens it.
type fileLock struct{ f *os.File }

// lockFile takes the lock bbolt takes (exclusive to write, shared to read),
// waiting up to opt.Timeout, so that the file is not read while another
// process writes it. A file that does not exist yet needs no lock.
func lockFile(path string, opt Options) (fileLock, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return fileLock{}, nil
	}
	if err != nil {
		return fileLock{}, fmt.Errorf("open store %s: %w", path, err)
	}
	how := syscall.LOCK_EX
	if opt.ReadOnly {
		how = syscall.LOCK_SH
	}
	deadline := time.Now().Add(opt.Timeout)
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err == nil {
			return fileLock{f: f}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return fileLock{}, fmt.Errorf("lock store %s: %w", path, err)
		}
		if time.Now().After(deadline) {
			f.Close()
			return fileLock{}, fmt.Errorf("open store %s: %w", path, ErrLocked)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// release drops the lock (closing the descriptor releases it).
func (l fileLock) release() {
	if l.f != nil {
		_ = l.f.Close()
	}
}
