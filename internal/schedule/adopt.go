package schedule

import "container/heap"

// Adopt marks url in flight without dispatching it: a task for it is
// already in the task stream, left by a previous coordinator, and will
// come back through Done or Abort like a task this one dispatched. It
// reports whether the URL is known. A URL is in flight once, however many
// of its tasks are adopted.
func (s *Scheduler) Adopt(url string) bool {
	e, ok := s.front.urls.get(url)
	if !ok {
		return false
	}
	s.front.adopt(e)
	return true
}

// adopt takes e out of its host's queue and counts it in flight on the
// host, as next does for a dispatch.
func (f *frontier) adopt(e *entry) {
	if e.is(flagInFlight) {
		return
	}
	h := f.hostOf(e)
	if e.index >= 0 {
		heap.Remove(&h.urls, int(e.index))
	}
	e.set(flagInFlight, true)
	h.inFlight++
	f.fixHost(h)
}
