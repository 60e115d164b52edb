package store

import (
	"bytes"
	"cmp"
	"math"
	"math/rand/v2"
	"testing"
)

// TestOrderedKeysSortAsNumbers: the variable-length index numbers sort as
// bytes exactly as the numbers do, alone and as a sort key's value then
// id, and read back whole; damaged forms are refused.
func TestOrderedKeysSortAsNumbers(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	draw := func() uint64 {
		switch rng.IntN(4) {
		case 0:
			return uint64(rng.IntN(300))
		case 1:
			return rng.Uint64() >> rng.IntN(64)
		case 2:
			return orderedFloat(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(20)-10)))
		}
		return rng.Uint64()
	}
	for range 20000 {
		a, b := draw(), draw()
		ka, kb := appendOrdered(nil, a), appendOrdered(nil, b)
		if got, want := bytes.Compare(ka, kb), cmp.Compare(a, b); got != want {
			t.Fatalf("%d vs %d: bytes compare %d, numbers %d", a, b, got, want)
		}
		v, rest, ok := readOrdered(append(ka, 7))
		if !ok || v != a || !bytes.Equal(rest, []byte{7}) {
			t.Fatalf("read %x: %d %x %v, want %d", ka, v, rest, ok, a)
		}
		ia, ib := uint64(1+rng.IntN(1<<20)), uint64(1+rng.IntN(1<<20))
		sa, sb := sortKey('r', a, ia), sortKey('r', b, ib)
		want := cmp.Or(cmp.Compare(a, b), cmp.Compare(ia, ib))
		if got := bytes.Compare(sa, sb); got != want {
			t.Fatalf("sort keys (%d,%d) vs (%d,%d): %d, want %d", a, ia, b, ib, got, want)
		}
		fa, fb := filterKey(ixHost, "h.example", ia), filterKey(ixHost, "h.example", ib)
		if got := bytes.Compare(fa, fb); got != cmp.Compare(ia, ib) {
			t.Fatalf("filter keys of ids %d, %d compare %d", ia, ib, got)
		}
	}
	for _, bad := range [][]byte{nil, {9}, {2, 1}, {1, 0}, {2, 0, 5}} {
		if _, _, ok := readOrdered(bad); ok {
			t.Errorf("readOrdered(%x) accepted", bad)
		}
	}
}
