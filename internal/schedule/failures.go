package schedule

import (
	"container/heap"
	"time"
)

// MaxHostSlowdown is the most times a host's rate is halved (its gap
// multiplied by 2^10 = 1024): a host that keeps answering 429 still gets
// a request now and then, the one that can see it recover.
const MaxHostSlowdown = 10

// hostGap is a host's gap after a fetch: the base gap (1/host rate) or its
// Crawl-delay, whichever is longer, doubled for each halving of its rate
// (Feedback.HostSlowdown).
func (s *Scheduler) hostGap(crawlDelay time.Duration, slowdown int) time.Duration {
	return max(s.baseGap(), crawlDelay) << min(max(slowdown, 0), MaxHostSlowdown)
}

// afterFailure is the due time of e after the fetch fb, whose schedule
// would make it due: a URL the fetch found gone is held, one whose fetch
// failed waits for fb.RetryAt, one that succeeded is back on its plan.
func (s *Scheduler) afterFailure(e *entry, due time.Time, fb Feedback) time.Time {
	if fb.Gone {
		s.setGone(e, true, fb.End)
		return due
	}
	backoff := fb.RetryAt.After(due)
	if backoff != e.is(flagBackoff) {
		// In or out of the plan (mirror): its share goes to the others.
		e.set(flagBackoff, backoff)
		s.moved++
	}
	if backoff {
		return fb.RetryAt
	}
	return due
}

// setGone marks e gone or brings it back, keeping the count. A URL that
// comes back has its failures forgotten (as the store forgets them) and
// is due at once, or at its old due time if later.
func (s *Scheduler) setGone(e *entry, v bool, now time.Time) {
	if e.is(flagGone) == v {
		return
	}
	e.set(flagGone, v)
	s.moved++
	if v {
		s.gone++
		return
	}
	s.gone--
	e.set(flagBackoff, false)
	if e.interval <= 0 {
		e.interval = s.uniformInterval()
	}
	due := fromNanos(e.nextDue)
	if due.Before(now) {
		due = now
	}
	s.front.schedule(e, due)
	s.mirror(e)
}

// AdoptDelivered is Adopt for a task a worker had taken and not
// acknowledged when the coordinator started: the URL is in flight (not
// dispatched again while its task may come back), but its host's slot is
// free. After a crash of the process that held it, the task comes back
// only when its AckWait runs out; holding the slot until then would stall
// every other URL of the host. The host is spaced one gap from now
// instead. It reports whether the URL is known.
func (s *Scheduler) AdoptDelivered(url string, now time.Time) bool {
	e, ok := s.front.urls.get(url)
	if !ok {
		return false
	}
	if e.is(flagInFlight) {
		return true
	}
	h := s.front.hostOf(e)
	if e.index >= 0 {
		heap.Remove(h.heap(e.is(flagStrict)), int(e.index))
	}
	e.set(flagInFlight, true)
	e.set(flagFreeSlot, true)
	if nf := now.Add(h.gap); nf.After(h.nextFree) {
		h.nextFree = nf
	}
	s.front.fixHost(h)
	return true
}

// RestoreHost gives a known host the politeness its stored record holds
// (a restart: Crawl-delay, the halvings of its rate, a Retry-After that
// has not ended), as the fetches that set them did. It reports whether
// the host is known.
func (s *Scheduler) RestoreHost(name string, crawlDelay time.Duration, slowdown int, notBefore time.Time) bool {
	h, ok := s.front.hosts[name]
	if !ok {
		return false
	}
	s.front.setGap(h, s.hostGap(crawlDelay, slowdown), notBefore)
	return true
}
