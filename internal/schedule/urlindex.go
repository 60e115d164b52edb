package schedule

import (
	"hash/maphash"
	"strings"
	"unsafe"
)

// urlIndex holds the URLs of the entries and finds a URL's entry. It is
// laid out for tens of millions of URLs:
//
//   - A URL is split at the end of its origin (scheme and authority). The
//     origin, shared by all the URLs of a host, is interned and the entry
//     holds its index; the rest (the path) is copied into large byte
//     chunks, so that it costs its bytes and no allocation of its own.
//   - The index is an open-addressing table of entry pointers with linear
//     probing: 8 bytes a slot at a load of at most 3/4, where a
//     map[string]*entry takes 24 bytes a slot (the key's string header
//     and the pointer) plus control bytes. It is never iterated, so its
//     order (random per index) cannot leak into the schedule.
//
// The paths are strings over the chunks' memory (unsafe.String): a chunk's
// bytes are written once, before the string over them exists, and never
// again, so the strings are as immutable as any. Removed paths are
// reclaimed by copying the live ones into new chunks once they are more
// than half of the bytes (compact); the old chunks are freed when no entry
// refers to them any more.
type urlIndex struct {
	seed  maphash.Seed
	slots []*entry // nil: empty; len is a power of two
	n     int

	origins   []string
	originIDs map[string]uint32
	chunk     []byte // the chunk paths are being copied into
	live      int    // bytes of the paths of the entries in the index
	dead      int    // bytes of removed paths still in the chunks
}

// chunkSize is the size of a chunk of paths: large next to a path, so
// the unused end of each chunk is negligible.
const chunkSize = 1 << 20

func newURLIndex() urlIndex {
	return urlIndex{seed: maphash.MakeSeed(), originIDs: map[string]uint32{}}
}

// len is the number of entries.
func (x *urlIndex) len() int { return x.n }

// url is e's URL (a new string).
func (x *urlIndex) url(e *entry) string { return x.origins[e.origin] + e.path }

// is reports whether url is e's URL.
func (x *urlIndex) is(e *entry, url string) bool {
	o := x.origins[e.origin]
	return len(url) == len(o)+len(e.path) && url[:len(o)] == o && url[len(o):] == e.path
}

// originEnd is where the origin of url ends: the first '/' after "://"
// (or the end), 0 if url has no scheme.
func originEnd(url string) int {
	i := strings.Index(url, "://")
	if i < 0 {
		return 0
	}
	if j := strings.IndexByte(url[i+3:], '/'); j >= 0 {
		return i + 3 + j
	}
	return len(url)
}

func (x *urlIndex) home(url string) int {
	return int(maphash.String(x.seed, url) & uint64(len(x.slots)-1))
}

// homeOf is the home slot of e: the hash of its URL without building it
// (a maphash.Hash fed in parts sums as the whole would).
func (x *urlIndex) homeOf(e *entry) int {
	var h maphash.Hash
	h.SetSeed(x.seed)
	h.WriteString(x.origins[e.origin])
	h.WriteString(e.path)
	return int(h.Sum64() & uint64(len(x.slots)-1))
}

// get returns url's entry.
func (x *urlIndex) get(url string) (*entry, bool) {
	if x.n == 0 {
		return nil, false
	}
	mask := len(x.slots) - 1
	for i := x.home(url); ; i = (i + 1) & mask {
		e := x.slots[i]
		if e == nil {
			return nil, false
		}
		if x.is(e, url) {
			return e, true
		}
	}
}

// put gives e the URL url, which must not be in the index, and adds it.
func (x *urlIndex) put(e *entry, url string) {
	cut := originEnd(url)
	id, ok := x.originIDs[url[:cut]]
	if !ok {
		o := strings.Clone(url[:cut])
		id = uint32(len(x.origins))
		x.origins = append(x.origins, o)
		x.originIDs[o] = id
	}
	e.origin, e.path = id, x.store(url[cut:])
	x.live += len(e.path)
	if (x.n+1)*4 > len(x.slots)*3 {
		x.grow()
	}
	x.place(e)
	x.n++
}

// store copies path into the chunks.
func (x *urlIndex) store(path string) string {
	switch {
	case path == "":
		return ""
	case len(path) > chunkSize/16:
		return strings.Clone(path) // rare: not worth a chunk's tail
	case len(path) > cap(x.chunk)-len(x.chunk):
		x.chunk = make([]byte, 0, chunkSize)
	}
	at := len(x.chunk)
	x.chunk = append(x.chunk, path...)
	return unsafe.String(&x.chunk[at], len(path))
}

func (x *urlIndex) place(e *entry) {
	mask := len(x.slots) - 1
	i := x.homeOf(e)
	for x.slots[i] != nil {
		i = (i + 1) & mask
	}
	x.slots[i] = e
}

func (x *urlIndex) grow() {
	old := x.slots
	x.slots = make([]*entry, max(16, 2*len(old)))
	for _, e := range old {
		if e != nil {
			x.place(e)
		}
	}
}

// remove takes e out of the index. The entries after it in its probe run
// are shifted back (no tombstones), so lookups stay as short after
// removals as before. e keeps its URL.
func (x *urlIndex) remove(e *entry) {
	if x.n == 0 {
		return
	}
	mask := len(x.slots) - 1
	i := x.homeOf(e)
	for x.slots[i] != e {
		if x.slots[i] == nil {
			return
		}
		i = (i + 1) & mask
	}
	x.n--
	// Backward-shift deletion: move into the hole i any later entry of
	// the run whose home is not in (i, j].
	for j := (i + 1) & mask; x.slots[j] != nil; j = (j + 1) & mask {
		h := x.homeOf(x.slots[j])
		if (j > i && (h <= i || h > j)) || (j < i && h <= i && h > j) {
			x.slots[i] = x.slots[j]
			i = j
		}
	}
	x.slots[i] = nil
	x.live -= len(e.path)
	x.dead += len(e.path)
	if x.dead > chunkSize && x.dead > x.live {
		x.compact()
	}
}

// compact copies the paths of the entries in the index into new chunks,
// leaving the removed ones' bytes to the garbage collector.
func (x *urlIndex) compact() {
	x.chunk = nil
	for _, e := range x.slots {
		if e != nil {
			e.path = x.store(e.path)
		}
	}
	x.dead = 0
}
