package schedule

import (
	"encoding/binary"
	"hash/maphash"
	"strings"
)

// urlIndex holds the URLs of the entries and finds a URL's entry. It is
// laid out for tens of millions of URLs:
//
//   - A URL is split at the end of its origin (scheme and authority). The
//     origin, shared by all the URLs of a host, is interned and the entry
//     holds its index; the rest (the path) is copied into large byte
//     chunks, so that it costs its bytes and no allocation of its own,
//     and the entry holds where it is (a pathRef, 8 bytes where a string
//     header takes 16). The paths are front coded in blocks of
//     blockLen: each is stored as the length of the prefix it shares
//     with the path stored before it in its block, then the rest. A
//     restart adds the URLs in the store's key order, so neighbours are
//     mostly of one host and share much of their paths. Reading a path
//     decodes its block up to it (at most blockLen short records, one
//     or two cache lines' worth), which only a lookup whose tag matches,
//     a dispatch and a rehash do.
//   - The index is an open-addressing table of entry ids (entryStore)
//     with linear probing: 4 bytes a slot at a load of at most 3/4,
//     where a map[string]*entry takes 24 bytes a slot (the key's string
//     header and the pointer) plus control bytes. It is never iterated, so its
//     order (random per index) cannot leak into the schedule.
//   - Each slot has a tag, 8 bits of its entry's hash that the slot
//     number does not give (tags, 1 byte a slot). A lookup compares an
//     entry's URL only where the tag matches: near the load limit a
//     probe run is several slots long, and each URL compared is a read
//     of an entry and its path elsewhere in memory, where the tags of a
//     run share a cache line. Adding millions of URLs at a restart (each
//     looked up first) was mostly those reads.
//
// Removed paths are reclaimed by copying the live ones into new chunks
// once they are more than half of the bytes (compact), which drops the
// old chunks. A removed entry loses its path: its URL is its origin.
//
// With a URL source (SchedulerOptions.URLs, newSourceIndex) the index
// holds no URL at all: an entry's path field holds its URL's 64-bit
// fingerprint and its origin field the URL's store id (see sourceIndex).
type urlIndex struct {
	seed  maphash.Seed
	src   *sourceIndex // nil: the URLs are held, front coded
	ents  *entryStore
	slots []uint32 // entry ids, 0: empty; len is a power of two
	tags  []uint8  // per slot: tagOf the hash of its entry's URL
	n     int

	origins   []string
	originIDs map[string]uint32
	chunks    [][]byte // the paths
	fill      int      // the chunk being filled (-1: none)
	block     int      // where the block being filled starts in it
	inBlock   int      // paths in that block
	prev      []byte   // the path stored last
	live      int      // bytes of the paths of the entries in the index
	dead      int      // bytes of removed paths still in the chunks
}

// pathRef says where an entry's path is: the chunk (bits 40 to 62), the
// offset of its block in it (bits 20 to 39), its place in the block
// (bits 16 to 19) and its length (bits 0 to 15); a path longer than
// that holds (bit 63) has a chunk of its own, all of it, unencoded. 0 is
// the empty path.
type pathRef uint64

const (
	refLenBits   = 16
	refPosBits   = 4
	refOffBits   = 20
	refOwnChunk  = pathRef(1) << 63
	refMaxLen    = 1<<refLenBits - 1
	refOffMask   = 1<<refOffBits - 1
	blockLen     = 1 << refPosBits // paths in a front-coded block
	maxSharedLen = 255             // the shared prefix is one byte
)

// chunkSize is the size of a chunk of paths: large next to a path, so
// the unused end of each chunk is negligible.
const chunkSize = 1 << 20

func newURLIndex(ents *entryStore) urlIndex {
	return urlIndex{seed: maphash.MakeSeed(), ents: ents, originIDs: map[string]uint32{}, fill: -1}
}

// len is the number of entries.
func (x *urlIndex) len() int { return x.n }

// pieces is the path r refers to as pieces of the chunks, in order, at
// most one a record of its block (held in buf). The block's records are
// walked up to the path's, and the pieces then taken from the back: the
// bytes past a record's shared prefix are its own, the prefix is the
// record before's. So reading a path copies nothing, and each of its
// bytes is read once, whatever the paths before it.
func (x *urlIndex) pieces(r pathRef, buf *[blockLen][]byte) [][]byte {
	switch {
	case r == 0:
		return nil
	case r&refOwnChunk != 0:
		buf[0] = x.chunks[r&^refOwnChunk]
		return buf[:1]
	}
	c := x.chunks[r>>(refLenBits+refPosBits+refOffBits)]
	off := int(r>>(refLenBits+refPosBits)) & refOffMask
	pos := int(r>>refLenBits) & (blockLen - 1)
	var shared, suffix [blockLen]int
	for k := 0; k <= pos; k++ {
		n, w := binary.Uvarint(c[off+1:])
		shared[k], suffix[k] = int(c[off]), off+1+w
		off = suffix[k] + int(n)
	}
	i, end := blockLen, int(r&refMaxLen)
	for k := pos; end > 0; k-- {
		if end > shared[k] {
			i--
			buf[i] = c[suffix[k] : suffix[k]+end-shared[k]]
			end = shared[k]
		}
	}
	return buf[i:]
}

// appendPath appends the path r refers to to dst.
func (x *urlIndex) appendPath(dst []byte, r pathRef) []byte {
	var buf [blockLen][]byte
	for _, p := range x.pieces(r, &buf) {
		dst = append(dst, p...)
	}
	return dst
}

// pathLen is the length of the path r refers to.
func (x *urlIndex) pathLen(r pathRef) int {
	switch {
	case r == 0:
		return 0
	case r&refOwnChunk != 0:
		return len(x.chunks[r&^refOwnChunk])
	}
	return int(r & refMaxLen)
}

// url is e's URL (a new string).
func (x *urlIndex) url(e *entry) string {
	o := x.origins[e.origin]
	var b strings.Builder
	b.Grow(len(o) + x.pathLen(e.path))
	b.WriteString(o)
	var buf [blockLen][]byte
	for _, p := range x.pieces(e.path, &buf) {
		b.Write(p)
	}
	return b.String()
}

// is reports whether url is e's URL.
func (x *urlIndex) is(e *entry, url string) bool {
	o := x.origins[e.origin]
	if len(url) != len(o)+x.pathLen(e.path) || url[:len(o)] != o {
		return false
	}
	rest := url[len(o):]
	var buf [blockLen][]byte
	for _, p := range x.pieces(e.path, &buf) {
		if rest[:len(p)] != string(p) {
			return false
		}
		rest = rest[len(p):]
	}
	return true
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

// hash is the hash of url: its low bits are its home slot, its top
// byte its tag. With a source it is the URL's fingerprint.
func (x *urlIndex) hash(url string) uint64 {
	if x.src != nil {
		return x.src.fingerprint(url)
	}
	return maphash.String(x.seed, url)
}

// hashOf is the hash of e's URL without building it (a maphash.Hash fed
// in parts sums as the whole would).
func (x *urlIndex) hashOf(e *entry) uint64 {
	if x.src != nil {
		return uint64(e.path) // the fingerprint
	}
	var h maphash.Hash
	h.SetSeed(x.seed)
	h.WriteString(x.origins[e.origin])
	var buf [blockLen][]byte
	for _, p := range x.pieces(e.path, &buf) {
		h.Write(p)
	}
	return h.Sum64()
}

// tagOf is a hash's tag: its top byte, which no table of fewer than
// 2^56 slots uses for the slot number.
func tagOf(h uint64) uint8 { return uint8(h >> 56) }

// homeOf is the home slot of e.
func (x *urlIndex) homeOf(e *entry) int { return int(x.hashOf(e) & uint64(len(x.slots)-1)) }

// get returns url's entry.
func (x *urlIndex) get(url string) (*entry, bool) {
	if x.src != nil {
		return x.getByFingerprint(url)
	}
	if x.n == 0 {
		return nil, false
	}
	return x.probe(x.hash(url), func(e *entry) bool { return x.is(e, url) })
}

// probe walks the table from hash h's home slot to the first empty one
// and returns the first entry whose slot's tag is h's and that match
// takes: the one probe loop of held URLs (compared by path) and of a URL
// source's fingerprints.
func (x *urlIndex) probe(h uint64, match func(*entry) bool) (*entry, bool) {
	mask := len(x.slots) - 1
	tag := tagOf(h)
	for i := int(h) & mask; ; i = (i + 1) & mask {
		id := x.slots[i]
		if id == 0 {
			return nil, false
		}
		if x.tags[i] == tag {
			if e := x.ents.at(id); match(e) {
				return e, true
			}
		}
	}
}

// slotOf is the entry in the table whose fingerprint is fp (source mode).
func (x *urlIndex) slotOf(fp uint64) (*entry, bool) {
	if len(x.slots) == 0 {
		return nil, false
	}
	return x.probe(fp, func(e *entry) bool { return uint64(e.path) == fp })
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
	e.origin, e.path = id, storePath(x, url[cut:])
	x.live += len(url) - cut
	if (x.n+1)*4 > len(x.slots)*3 {
		x.grow()
	}
	// The hash of the whole URL: the same as hashOf's, which feeds the
	// origin and the path in parts through a buffer.
	x.placeAt(e, x.hash(url))
	x.n++
}

// storePath copies path into x's chunks, front coded against the path
// stored before it in its block.
func storePath[P string | []byte](x *urlIndex, path P) pathRef {
	if len(path) == 0 {
		return 0
	}
	if len(path) > refMaxLen {
		// Rare: not worth a shared chunk's tail.
		x.chunks = append(x.chunks, append([]byte(nil), path...))
		return refOwnChunk | pathRef(len(x.chunks)-1)
	}
	// A record takes at most a byte, a 3-byte varint and the path.
	if x.fill < 0 || 4+len(path) > cap(x.chunks[x.fill])-len(x.chunks[x.fill]) {
		x.fill = len(x.chunks)
		x.chunks = append(x.chunks, make([]byte, 0, chunkSize))
		x.inBlock = blockLen
	}
	c := x.chunks[x.fill]
	shared := 0
	if x.inBlock == blockLen {
		x.block, x.inBlock = len(c), 0
	} else {
		for shared < min(len(path), len(x.prev), maxSharedLen) && path[shared] == x.prev[shared] {
			shared++
		}
	}
	c = append(c, byte(shared))
	c = binary.AppendUvarint(c, uint64(len(path)-shared))
	c = append(c, path[shared:]...)
	x.chunks[x.fill] = c
	x.prev = append(x.prev[:0], path...)
	r := pathRef(x.fill)<<(refLenBits+refPosBits+refOffBits) | pathRef(x.block)<<(refLenBits+refPosBits) | pathRef(x.inBlock)<<refLenBits | pathRef(len(path))
	x.inBlock++
	return r
}

func (x *urlIndex) place(e *entry) { x.placeAt(e, x.hashOf(e)) }

// placeAt puts e, whose URL hashes to h, in the first free slot from its
// home slot.
func (x *urlIndex) placeAt(e *entry, h uint64) {
	mask := len(x.slots) - 1
	i := int(h) & mask
	for x.slots[i] != 0 {
		i = (i + 1) & mask
	}
	x.slots[i], x.tags[i] = e.id, tagOf(h)
}

func (x *urlIndex) grow() { x.resize(max(16, 2*len(x.slots))) }

// resize re-places every entry in a table of size slots.
func (x *urlIndex) resize(size int) {
	old := x.slots
	x.slots, x.tags = make([]uint32, size), make([]uint8, size)
	for _, id := range old {
		if id != 0 {
			x.place(x.ents.at(id))
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
	if x.src != nil && x.src.unlist(x, e) {
		return // a collision's, never in the table
	}
	mask := len(x.slots) - 1
	i := x.homeOf(e)
	for x.slots[i] != e.id {
		if x.slots[i] == 0 {
			return
		}
		i = (i + 1) & mask
	}
	x.n--
	// Backward-shift deletion: move into the hole i any later entry of
	// the run whose home is not in (i, j].
	for j := (i + 1) & mask; x.slots[j] != 0; j = (j + 1) & mask {
		h := x.homeOf(x.ents.at(x.slots[j]))
		if (j > i && (h <= i || h > j)) || (j < i && h <= i && h > j) {
			x.slots[i], x.tags[i] = x.slots[j], x.tags[j]
			i = j
		}
	}
	x.slots[i] = 0
	if x.src != nil {
		x.src.forget(e) // keeps its fingerprint and id: no chunks to reclaim
		return
	}
	p := x.pathLen(e.path)
	e.path = 0
	x.live -= p
	x.dead += p
	if x.dead > chunkSize && x.dead > x.live {
		x.compact()
	}
}

// compact copies the paths of the entries in the index into new chunks
// in the order of the entries' ids (about the order they were added, so
// that neighbours still share prefixes), leaving the old chunks to the
// garbage collector. An entry out of the index has no path.
func (x *urlIndex) compact() {
	fresh := &urlIndex{fill: -1}
	var buf []byte
	for _, c := range x.ents.chunks {
		for i := range c {
			if e := &c[i]; e.path != 0 {
				buf = x.appendPath(buf[:0], e.path)
				e.path = storePath(fresh, buf)
			}
		}
	}
	x.chunks, x.fill, x.block, x.inBlock, x.prev = fresh.chunks, fresh.fill, fresh.block, fresh.inBlock, fresh.prev
	x.dead = 0
}
