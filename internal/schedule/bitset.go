package schedule

// bitset is a per-element yes/no array held one bit an element
// (Scheduler.blocked, probing and dated): a million URLs' flag takes
// 125 KB instead of a MB. Element i is bit i&63 of word i>>6; the bits
// past the last element are zero (truncate clears them), so extending
// the set gives new elements false.
type bitset []uint64

// bitWords is the number of words that hold n bits.
func bitWords(n int) int { return (n + 63) >> 6 }

// has reports element i; an element past the words held (a nil set) is
// false.
func (b bitset) has(i int) bool {
	w := i >> 6
	return w < len(b) && b[w]&(1<<(uint(i)&63)) != 0
}

// set sets element i, which the words held must cover (extend).
func (b bitset) set(i int, v bool) {
	if v {
		b[i>>6] |= 1 << (uint(i) & 63)
	} else {
		b[i>>6] &^= 1 << (uint(i) & 63)
	}
}

// extend returns b with words for n elements at least; the new ones are
// false.
func (b bitset) extend(n int) bitset {
	for len(b) < bitWords(n) {
		b = append(b, 0)
	}
	return b
}

// truncate returns b holding its first n elements, the bits past them
// cleared so that a later extend finds them false.
func (b bitset) truncate(n int) bitset {
	b = b[:bitWords(n)]
	if r := uint(n) & 63; r != 0 {
		b[len(b)-1] &= 1<<r - 1
	}
	return b
}

// pick is the set of the elements keep lists of b, in keep's order.
func (b bitset) pick(keep []int) bitset {
	out := make(bitset, bitWords(len(keep)))
	for k, i := range keep {
		if b.has(i) {
			out.set(k, true)
		}
	}
	return out
}
