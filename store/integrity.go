package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"runtime/debug"
)

// ErrCorrupt is matched (errors.Is) by every error that says the store file
// is damaged: truncated, a header page that fails its checksum, a page tree
// that points outside the file, a record that does not decode. The CLI maps
// it to its own exit status.
var ErrCorrupt = errors.New("store is damaged")

// CorruptError says what is wrong with which store file, and how to recover.
type CorruptError struct {
	Path   string
	Detail string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("store %s is damaged: %s. Nothing was written to it. To recover, stop every process using this data directory, keep the damaged file for inspection, and restore a backup in its place (one made with `freshcrawl backup FILE`); `freshcrawl store check` shows what is wrong", e.Path, e.Detail)
}

// Is makes errors.Is(err, ErrCorrupt) true.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

func corrupt(path, format string, args ...any) error {
	return &CorruptError{Path: path, Detail: fmt.Sprintf(format, args...)}
}

// bbolt's on-disk format (version 2), read here without bbolt: the page
// header is id u64, flags u16, count u16, overflow u32; a meta page holds
// magic, version, page size, flags (u32 each), the root bucket (root pgid,
// sequence), the freelist pgid, the high-water mark pgid, the txid and an
// FNV-64a checksum of everything before it.
const (
	boltMagic          = 0xED0CDAED
	boltVersion        = 2
	pageHeaderSize     = 16
	metaSize           = 64
	branchElemSize     = 16
	leafElemSize       = 16
	bucketHeaderSize   = 16
	flagBranch         = 0x01
	flagLeaf           = 0x02
	flagMeta           = 0x04
	flagFreelist       = 0x10
	bucketLeafFlag     = 0x01
	noFreelist         = ^uint64(0)
	minPageSize        = 512
	maxPageSize        = 1 << 24
	maxTreeDepth       = 64
	verifyReadChunkMax = 64 << 20
)

// meta is a decoded meta page.
type meta struct {
	pageSize uint32
	root     uint64
	freelist uint64
	pgid     uint64 // high-water mark: pages in use
	txid     uint64
}

func parseMeta(b []byte) (meta, error) {
	if len(b) < pageHeaderSize+metaSize {
		return meta{}, errors.New("short page")
	}
	if f := binary.NativeEndian.Uint16(b[8:]); f != flagMeta {
		return meta{}, fmt.Errorf("page flags %#x, not a meta page", f)
	}
	m := b[pageHeaderSize : pageHeaderSize+metaSize]
	if binary.NativeEndian.Uint32(m[0:]) != boltMagic {
		return meta{}, errors.New("no bbolt magic number")
	}
	if v := binary.NativeEndian.Uint32(m[4:]); v != boltVersion {
		return meta{}, fmt.Errorf("bbolt format version %d, want %d", v, boltVersion)
	}
	h := fnv.New64a()
	_, _ = h.Write(m[:56])
	if h.Sum64() != binary.NativeEndian.Uint64(m[56:]) {
		return meta{}, errors.New("checksum mismatch")
	}
	out := meta{
		pageSize: binary.NativeEndian.Uint32(m[8:]),
		root:     binary.NativeEndian.Uint64(m[16:]),
		freelist: binary.NativeEndian.Uint64(m[32:]),
		pgid:     binary.NativeEndian.Uint64(m[40:]),
		txid:     binary.NativeEndian.Uint64(m[48:]),
	}
	if ps := out.pageSize; ps < minPageSize || ps > maxPageSize || ps&(ps-1) != 0 {
		return meta{}, fmt.Errorf("page size %d", ps)
	}
	return out, nil
}

// readMeta returns the meta page bbolt would use: the valid one with the
// higher transaction id.
func readMeta(f io.ReaderAt, size int64) (meta, error) {
	buf := make([]byte, pageHeaderSize+metaSize)
	var metas []meta
	var errs []error
	read := func(off int64) {
		if off+int64(len(buf)) > size {
			errs = append(errs, fmt.Errorf("meta page at %d: beyond the end of the file", off))
			return
		}
		if _, err := f.ReadAt(buf, off); err != nil {
			errs = append(errs, fmt.Errorf("meta page at %d: %w", off, err))
			return
		}
		m, err := parseMeta(buf)
		if err != nil {
			errs = append(errs, fmt.Errorf("meta page at %d: %w", off, err))
			return
		}
		metas = append(metas, m)
	}
	read(0)
	// The second meta page is one page in; without a valid first page the
	// page size is unknown, so try each size bbolt could have used.
	if len(metas) == 1 {
		read(int64(metas[0].pageSize))
	} else {
		for ps := int64(minPageSize); ps <= maxPageSize && ps < size; ps *= 2 {
			n := len(metas)
			read(ps)
			if len(metas) > n {
				break
			}
		}
	}
	switch {
	case len(metas) == 0:
		return meta{}, fmt.Errorf("neither of its two header (meta) pages is valid (%w)", errors.Join(errs...))
	case len(metas) == 2 && metas[1].txid > metas[0].txid:
		return metas[1], nil
	}
	return metas[0], nil
}

// verifyFile checks a store file before bbolt maps it: bbolt trusts the
// file's page tree and reads it through a memory map, so a truncated or
// scrambled file would make it panic or fault (a segmentation fault no
// recover can catch), in goroutines of its own. This check reads the file
// with plain reads: both meta pages, the file size against the high-water
// mark of the meta bbolt will use, and every page reachable from the root
// (ids below the mark, page types, element offsets within their page, no
// page reached twice). It costs one read of the pages in use, as much as
// bbolt's own scan when it rebuilds its free list on open. A file of size
// 0 is a new store. Without walk, only the header pages and the size are
// checked (a file closed cleanly since: clean.go).
func verifyFile(path string, walk bool) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil // a new store
	}
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	size := st.Size()
	if size == 0 {
		return nil
	}
	m, err := readMeta(f, size)
	if err != nil {
		return corrupt(path, "%v", err)
	}
	if need := int64(m.pgid) * int64(m.pageSize); need > size || m.pgid < 2 {
		return corrupt(path, "the file is truncated: it is %d bytes, and its last committed transaction uses %d pages of %d bytes (%d bytes)", size, m.pgid, m.pageSize, need)
	}
	if !walk {
		return nil
	}
	w := walker{f: f, m: m, path: path, seen: map[uint64]bool{0: true, 1: true}}
	if m.freelist != noFreelist {
		if err := w.freelist(m.freelist); err != nil {
			return err
		}
	}
	return w.bucket(m.root, 0)
}

// walker checks the page tree of one file.
type walker struct {
	f    io.ReaderAt
	m    meta
	path string
	seen map[uint64]bool
}

// page reads page id with its overflow pages, checking that it lies below
// the high-water mark and was not reached before.
func (w *walker) page(id uint64) ([]byte, error) {
	ps := uint64(w.m.pageSize)
	if id < 2 || id >= w.m.pgid {
		return nil, corrupt(w.path, "a page reference (%d) points outside the pages in use (2..%d)", id, w.m.pgid-1)
	}
	if w.seen[id] {
		return nil, corrupt(w.path, "page %d is reached twice", id)
	}
	hdr := make([]byte, pageHeaderSize)
	if _, err := w.f.ReadAt(hdr, int64(id*ps)); err != nil {
		return nil, corrupt(w.path, "page %d: %v", id, err)
	}
	if got := binary.NativeEndian.Uint64(hdr); got != id {
		return nil, corrupt(w.path, "page %d identifies itself as page %d", id, got)
	}
	over := uint64(binary.NativeEndian.Uint32(hdr[12:]))
	if id+over >= w.m.pgid || (over+1)*ps > verifyReadChunkMax {
		return nil, corrupt(w.path, "page %d claims %d overflow pages, beyond the pages in use", id, over)
	}
	for i := id; i <= id+over; i++ {
		if w.seen[i] {
			return nil, corrupt(w.path, "page %d is reached twice", i)
		}
		w.seen[i] = true
	}
	b := make([]byte, (over+1)*ps)
	if _, err := w.f.ReadAt(b, int64(id*ps)); err != nil {
		return nil, corrupt(w.path, "page %d: %v", id, err)
	}
	return b, nil
}

func (w *walker) freelist(id uint64) error {
	b, err := w.page(id)
	if err != nil {
		return err
	}
	if f := binary.NativeEndian.Uint16(b[8:]); f != flagFreelist {
		return corrupt(w.path, "the free list page %d has type %#x", id, f)
	}
	return nil
}

// bucket checks the tree of a bucket whose root page is id.
func (w *walker) bucket(id uint64, depth int) error {
	if depth > maxTreeDepth {
		return corrupt(w.path, "buckets nested deeper than %d", maxTreeDepth)
	}
	b, err := w.page(id)
	if err != nil {
		return err
	}
	_, err = w.node(id, b, depth, 0, nil, nil)
	return err
}

// node checks one branch or leaf page (b, whose header says id) and what
// it references, as bbolt's own check does: elements within the page, keys
// in strictly increasing order, each key of the subtree in [lo, hi) (nil:
// unbounded), child pages and sub-buckets. level counts branch pages above
// it within its bucket. It returns the largest key of the subtree.
func (w *walker) node(id uint64, b []byte, depth, level int, lo, hi []byte) ([]byte, error) {
	if level > maxTreeDepth {
		return nil, corrupt(w.path, "page %d: a tree deeper than %d", id, maxTreeDepth)
	}
	flags := binary.NativeEndian.Uint16(b[8:])
	count := int(binary.NativeEndian.Uint16(b[10:]))
	order := func(i int, key, prev []byte) error {
		switch {
		case prev != nil && bytes.Compare(prev, key) > 0 || i > 0 && bytes.Equal(prev, key):
			return corrupt(w.path, "page %d: key %d is out of order", id, i)
		case hi != nil && bytes.Compare(key, hi) >= 0:
			return corrupt(w.path, "page %d: key %d lies beyond its parent's range", id, i)
		}
		return nil
	}
	var maxKey []byte
	switch flags {
	case flagBranch:
		// bbolt never writes an empty branch page, and its cursor indexes
		// the first element of any branch it descends.
		if count == 0 || pageHeaderSize+count*branchElemSize > len(b) {
			return nil, corrupt(w.path, "branch page %d: %d elements do not fit in it", id, count)
		}
		prev := lo
		for i := range count {
			e := pageHeaderSize + i*branchElemSize
			key, err := w.key(id, i, b, e, 0)
			if err != nil {
				return nil, err
			}
			if err := order(i, key, prev); err != nil {
				return nil, err
			}
			next := hi
			if i < count-1 {
				if next, err = w.key(id, i+1, b, e+branchElemSize, 0); err != nil {
					return nil, err
				}
			}
			child := binary.NativeEndian.Uint64(b[e+8:])
			cb, err := w.page(child)
			if err != nil {
				return nil, err
			}
			if maxKey, err = w.node(child, cb, depth, level+1, key, next); err != nil {
				return nil, err
			}
			prev = maxKey
		}
	case flagLeaf:
		if pageHeaderSize+count*leafElemSize > len(b) {
			return nil, corrupt(w.path, "leaf page %d: %d elements do not fit in it", id, count)
		}
		prev := lo
		for i := range count {
			e := pageHeaderSize + i*leafElemSize
			vsize := int(binary.NativeEndian.Uint32(b[e+12:]))
			key, err := w.key(id, i, b, e, vsize)
			if err != nil {
				return nil, err
			}
			if err := order(i, key, prev); err != nil {
				return nil, err
			}
			prev, maxKey = key, key
			if binary.NativeEndian.Uint32(b[e:])&bucketLeafFlag == 0 {
				continue
			}
			start := e + int(binary.NativeEndian.Uint32(b[e+4:])) + len(key)
			if err := w.subBucket(id, i, b[start:start+vsize], depth); err != nil {
				return nil, err
			}
		}
	default:
		return nil, corrupt(w.path, "page %d has type %#x, neither branch nor leaf", id, flags)
	}
	return maxKey, nil
}

// key returns the key of the element at offset e of page b (id), whose
// value of vsize bytes follows it (leaf pages), checking both lie within
// the page.
func (w *walker) key(id uint64, i int, b []byte, e, vsize int) ([]byte, error) {
	pos, ksize := int(binary.NativeEndian.Uint32(b[e+4:])), int(binary.NativeEndian.Uint32(b[e+8:]))
	if binary.NativeEndian.Uint16(b[8:]) == flagBranch {
		pos, ksize = int(binary.NativeEndian.Uint32(b[e:])), int(binary.NativeEndian.Uint32(b[e+4:]))
	}
	start := e + pos
	end := start + ksize + vsize
	if pos < 0 || ksize < 0 || vsize < 0 || start < e || end < start || end > len(b) {
		return nil, corrupt(w.path, "page %d: element %d lies outside the page", id, i)
	}
	return b[start : start+ksize], nil
}

// subBucket checks the value v of a bucket element: a header, then either
// the root page id of the bucket's tree or, inline, its single leaf page.
func (w *walker) subBucket(id uint64, i int, v []byte, depth int) error {
	if len(v) < bucketHeaderSize {
		return corrupt(w.path, "leaf page %d: element %d is a bucket with a short header", id, i)
	}
	if root := binary.NativeEndian.Uint64(v); root != 0 {
		return w.bucket(root, depth+1)
	}
	inline := v[bucketHeaderSize:]
	if len(inline) < pageHeaderSize {
		return corrupt(w.path, "leaf page %d: element %d is an inline bucket without a page", id, i)
	}
	if f := binary.NativeEndian.Uint16(inline[8:]); f != flagLeaf {
		return corrupt(w.path, "leaf page %d: element %d is an inline bucket whose page has type %#x", id, i, f)
	}
	if depth+1 > maxTreeDepth {
		return corrupt(w.path, "buckets nested deeper than %d", maxTreeDepth)
	}
	_, err := w.node(id, inline, depth+1, 0, nil, nil)
	return err
}

// guard runs fn with faults on the memory map turned into panics, and any
// panic (bbolt asserts on pages it finds inconsistent) into a CorruptError.
// bbolt rolls its transaction back on a panic, so the store stays usable
// for the caller to close.
func guard(path string, fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			err = corrupt(path, "reading it failed: %v", p)
		}
	}()
	return fn()
}
