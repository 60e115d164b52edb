package schedule

import "hash/maphash"

// urlIndex finds a URL's entry: an open-addressing table of entry
// pointers with linear probing, the key being the entry's own url. It
// takes 8 bytes a slot at a load of at most 3/4, where a
// map[string]*entry takes 24 bytes a slot (the key's string header and
// the pointer) plus its control bytes: about 10 against 35 bytes a URL.
// It is never iterated, so its order (random per index) cannot leak into
// the schedule.
type urlIndex struct {
	seed  maphash.Seed
	slots []*entry // nil: empty; len is a power of two
	n     int
}

func newURLIndex() urlIndex { return urlIndex{seed: maphash.MakeSeed()} }

// len is the number of entries.
func (x *urlIndex) len() int { return x.n }

func (x *urlIndex) home(url string) int {
	return int(maphash.String(x.seed, url) & uint64(len(x.slots)-1))
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
		if e.url == url {
			return e, true
		}
	}
}

// put adds e, whose url must not be in the index.
func (x *urlIndex) put(e *entry) {
	if (x.n+1)*4 > len(x.slots)*3 {
		x.grow()
	}
	x.place(e)
	x.n++
}

func (x *urlIndex) place(e *entry) {
	mask := len(x.slots) - 1
	i := x.home(e.url)
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

// remove takes url out of the index, if it is there. The entries after
// it in its probe run are shifted back (no tombstones), so lookups stay
// as short after removals as before.
func (x *urlIndex) remove(url string) {
	if x.n == 0 {
		return
	}
	mask := len(x.slots) - 1
	i := x.home(url)
	for {
		e := x.slots[i]
		if e == nil {
			return
		}
		if e.url == url {
			break
		}
		i = (i + 1) & mask
	}
	x.n--
	// Backward-shift deletion: move into the hole i any later entry of
	// the run whose home is not in (i, j].
	for j := (i + 1) & mask; x.slots[j] != nil; j = (j + 1) & mask {
		h := x.home(x.slots[j].url)
		if (j > i && (h <= i || h > j)) || (j < i && h <= i && h > j) {
			x.slots[i] = x.slots[j]
			i = j
		}
	}
	x.slots[i] = nil
}
