package schedule

import "slices"

// Grow reserves room for n more URLs, like slices.Grow: the per-URL
// arrays, the URL index and the list of path chunks take their final size
// at once instead of doubling while a restart adds millions of URLs one
// by one (each doubling copies everything so far and leaves the old
// array to the collector). It changes nothing the scheduler does: a
// grown scheduler plans and hands out exactly what an ungrown one does.
func (s *Scheduler) Grow(n int) {
	if n <= 0 {
		return
	}
	s.list = slices.Grow(s.list, n)
	s.rates = slices.Grow(s.rates, n)
	s.rateSEs = slices.Grow(s.rateSEs, n)
	s.weights = slices.Grow(s.weights, n)
	s.blocked = slices.Grow(s.blocked, bitWords(len(s.list)+n)-len(s.blocked))
	if s.adaptive {
		s.freqs = slices.Grow(s.freqs, n)
		s.adModified = slices.Grow(s.adModified, n)
	}
	if s.fixed != nil {
		s.fixed = slices.Grow(s.fixed, n)
	}
	s.hosts = slices.Grow(s.hosts, n)
	s.posts = slices.Grow(s.posts, n)
	s.models = slices.Grow(s.models, n)
	s.lastOK = slices.Grow(s.lastOK, n)
	s.prevGap = slices.Grow(s.prevGap, n)
	s.probing = slices.Grow(s.probing, bitWords(len(s.list)+n)-len(s.probing))
	s.dated = slices.Grow(s.dated, bitWords(len(s.list)+n)-len(s.dated))
	s.probes = slices.Grow(s.probes, n)
	s.front.urls.reserve(n)
	s.front.ents.reserve(n)
}

// reserve sizes the index for n more entries at its load limit (3/4), so
// that adding them never rehashes, and the list of chunks for their paths
// at a typical path length.
func (x *urlIndex) reserve(n int) {
	want := x.n + n
	size := max(16, len(x.slots))
	for want*4 > size*3 {
		size *= 2
	}
	if size > len(x.slots) {
		x.resize(size)
	}
	// A path is some tens of bytes; the chunk list is small either way,
	// this only saves its doublings.
	x.chunks = slices.Grow(x.chunks, n/(chunkSize/64)+1)
}
