package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// A clean close is remembered in a marker file next to the store
// (FileName + ".clean"), so that the next open can skip the walk of every
// page (verifyFile), which at ten million URLs reads gigabytes. The walk
// exists for a file that a crash, a full disk or a bad copy left damaged:
// a file that was closed cleanly and not changed since cannot be one.
//
// The marker records the file's size, its modification time and a
// SHA-256 of both header (meta) pages, which name the last transaction,
// the root and the high-water mark. A writable open removes the marker
// before bbolt writes anything, so a process that dies leaves none and
// the next open walks the file again. Any change to the file after the
// close (a copy over it, a truncation, another tool's commit) changes
// the size, the time or the header pages, and the walk runs again.
// `freshcrawl store check` always walks (Check).

const cleanMagic = "freshcrawl clean close v1\n"

// cleanPath is the marker of the store file at path.
func cleanPath(path string) string { return path + ".clean" }

// fileStamp is what a clean-close marker records about the store file.
type fileStamp struct {
	size, mtime int64
	meta        [sha256.Size]byte
}

func (s fileStamp) encode() []byte {
	b := append([]byte(cleanMagic), make([]byte, 0, 16+sha256.Size)...)
	b = binary.BigEndian.AppendUint64(b, uint64(s.size))
	b = binary.BigEndian.AppendUint64(b, uint64(s.mtime))
	return append(b, s.meta[:]...)
}

// stampOf reads the stamp of the store file at path.
func stampOf(path string) (fileStamp, error) {
	f, err := os.Open(path)
	if err != nil {
		return fileStamp{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fileStamp{}, err
	}
	s := fileStamp{size: st.Size(), mtime: st.ModTime().UnixNano()}
	m, err := readMeta(f, s.size)
	if err != nil {
		return fileStamp{}, err
	}
	head := make([]byte, 2*int64(m.pageSize))
	if _, err := io.ReadFull(io.NewSectionReader(f, 0, s.size), head); err != nil {
		return fileStamp{}, err
	}
	s.meta = sha256.Sum256(head)
	return s, nil
}

// markClean writes the clean-close marker of the store file at path
// (after bbolt closed it): written aside, synced, then renamed, so a
// marker is whole or absent.
func markClean(path string) error {
	s, err := stampOf(path)
	if err != nil {
		return err
	}
	tmp := cleanPath(path) + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(s.encode())
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, cleanPath(path))
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync() // the rename; without it the next open only walks again
		d.Close()
	}
	return nil
}

// closedCleanly reports whether the store file at path carries a marker of
// a clean close that still matches it.
func closedCleanly(path string) bool {
	want, err := os.ReadFile(cleanPath(path))
	if err != nil || !bytes.HasPrefix(want, []byte(cleanMagic)) {
		return false
	}
	s, err := stampOf(path)
	return err == nil && bytes.Equal(want, s.encode())
}

// unmarkClean removes the marker before a writable open changes the file.
func unmarkClean(path string) error {
	if err := os.Remove(cleanPath(path)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove the clean-close marker: %w", err)
	}
	return nil
}
