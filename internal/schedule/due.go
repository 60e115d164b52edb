package schedule

import (
	"crypto/sha256"
	"encoding/binary"
	"time"
)

// frac is a stable pseudo-random number in [0,1) from s, to spread phases
// deterministically.
func frac(s string) float64 {
	h := sha256.Sum256([]byte(s))
	return float64(binary.BigEndian.Uint64(h[:8])>>11) / float64(uint64(1)<<53)
}

// phase is a stable pseudo-random number in [0,1) for e: frac of its URL,
// or with a URL source, of its store id (the same across restarts, and
// no read of the source).
func (s *Scheduler) phase(e *entry) float64 {
	if s.front.urls.src == nil {
		return frac(s.front.url(e))
	}
	if id := s.front.urls.src.storeID(e); id != 0 {
		return fracID(id)
	}
	return frac(s.front.urls.src.held[e.id])
}

// fracID is a stable pseudo-random number in [0,1) from id (SplitMix64's
// finaliser: neighbouring ids land far apart).
func fracID(id uint64) float64 {
	z := id + 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	z ^= z >> 31
	return float64(z>>11) / float64(uint64(1)<<53)
}

// firstPassLeft is how long the URLs never fetched take at the budget:
// when the first pass over them ends if it runs at the budget.
func (s *Scheduler) firstPassLeft() time.Duration {
	return time.Duration(float64(max(0, s.unfetched-s.disallowed)) / s.o.Budget * float64(time.Second))
}

// phasedDue is when e is due again after the fetch fb, at the phase it
// keeps, and whether e is then between the check of a URL given up and
// its probe (flagRechecked).
//
// Keep the phase: the next fetch is one interval after this one was
// due, not after it started, so that waiting for the budget's token or a
// busy host does not stretch every interval and lose fetches. A fetch
// later than half an interval starts a new phase.
//
// A URL's first fetch has no phase to keep: its due time was when it was
// added. A cold start fetches N URLs over N/B at the budget; one interval
// after each (or after the seeding) would leave the budget idle until the
// first of them comes due, for as long as the plan's intervals exceed
// N/B. A stable random phase within the interval, counted from when the
// URLs never fetched will have been fetched at the budget, spreads them
// over it at the plan's rate and leaves the first pass the whole budget.
// (Counting the URLs with no estimate instead put it up to N/B later: a
// first fetch often gives the estimator no observation.)
func (s *Scheduler) phasedDue(e *entry, fb Feedback) (due time.Time, rechecked bool) {
	due = fb.Start.Add(e.interval)
	rechecked = e.is(flagRechecked)
	firstOK := fb.OK && e.pos >= 0 && s.prevGap[e.pos] == 0
	recheckTau := s.recheckTau(e)
	if firstOK && recheckTau == 0 {
		due = fb.Start.Add(s.firstPassLeft() + time.Duration(float64(e.interval)*s.phase(e)))
	} else if recheckTau > 0 && fb.OK && !rechecked {
		// The check of a URL given up is followed by its probe.
		rechecked = true
		due = fb.Start.Add(recheckTau)
	} else if d := fromNanos(e.nextDue).Add(e.interval); e.nextDue != 0 && e.nextDue <= nanos(fb.Start) && d.Before(due) {
		due = d
		if half := fb.Start.Add(e.interval / 2); due.Before(half) {
			due = half
		}
	}
	if recheckTau == 0 || !fb.OK || due.Sub(fb.Start) != recheckTau {
		rechecked = false
	}
	return due, rechecked
}

// replannedDue is the next fetch of a queued URL e whose interval a plan
// moves from old to iv, at now. It keeps the phase: the next fetch moves
// by the change of interval, but never further than one new interval
// away. A URL never fetched keeps its due time: the first pass is not
// pushed back by a plan.
func (s *Scheduler) replannedDue(e *entry, old, iv time.Duration, now time.Time) time.Time {
	due := fromNanos(e.nextDue).Add(iv - old)
	if s.prevGap[e.pos] == 0 {
		// Fetched once: Done put its next fetch at a random phase of its
		// interval after the first pass, not one interval after the
		// fetch. Scaling its wait past the pass's end (or now) by the
		// change of interval keeps that phase: the URLs fetched once stay
		// spread over their new intervals after the pass, at the plan's
		// rate, and none moves into the first pass to take a slot from a
		// URL not fetched yet.
		ref := now.Add(s.firstPassLeft())
		if d := fromNanos(e.nextDue); d.After(ref) {
			due = ref.Add(time.Duration(float64(d.Sub(ref)) * (float64(iv) / float64(old))))
		} else {
			due = d
		}
	}
	if due.After(now.Add(iv)) {
		due = now.Add(time.Duration(float64(iv) * s.phase(e)))
	}
	return due
}

// uniformInterval is every URL's interval under the uniform share of the
// budget: a URL's interval until a plan gives it one.
func (s *Scheduler) uniformInterval() time.Duration {
	return time.Duration(float64(s.Len()) / s.o.Budget * float64(time.Second))
}

// firstDue is when a URL never scheduled, added at now, is due: at once,
// so the first pass over a new list runs at the full budget from the
// first second (docs/design.md §3.7, cold start). The frontier
// interleaves hosts (each host is spaced by its gap), and within a host a
// stable pseudo-random order, the frac of the URL within one fetch's
// share of the budget (a time relative to the budget, not an absolute
// one, so that nothing depends on the unit of time), keeps neighbours of
// a seed file apart.
func (s *Scheduler) firstDue(url string, now time.Time) time.Time {
	return now.Add(time.Duration(frac(url) / s.o.Budget * float64(time.Second)))
}
