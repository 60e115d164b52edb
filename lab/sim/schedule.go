package sim

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"time"
)

// horizon is the largest change offset ever generated; beyond it a page is
// treated as never changing again (about 146 years, far past any run).
const horizon = time.Duration(1 << 62)

// schedule generates the change times of one page lazily and
// deterministically: the n-th change time depends only on (seed, page), never
// on when or how often it is asked for, so versions are reproducible and the
// change log is implicit in the schedule. Methods need external locking (the
// owning page's mutex).
type schedule struct {
	// rate is the Poisson rate in changes per real second; used when
	// periodic is nil.
	rate     float64
	periodic *PeriodicClass // phases sorted ascending

	rng   *rand.Rand
	times []time.Duration // change offsets from the epoch, strictly increasing, all > 0
	done  bool            // no change will ever be generated again

	last  time.Duration // Poisson: offset of the last generated change
	cycle int64         // periodic: current cycle
	phase int           // periodic: next phase index within the cycle
}

func newSchedule(seed uint64, page int, rate float64, periodic *PeriodicClass) *schedule {
	s := &schedule{
		rate:     rate,
		periodic: periodic,
		rng:      rand.New(rand.NewPCG(splitmix(seed^uint64(page)<<1), splitmix(seed+uint64(page)*0x9e3779b97f4a7c15+1))),
	}
	if periodic == nil && rate <= 0 {
		s.done = true
	}
	return s
}

// splitmix is the SplitMix64 finaliser, used to derive independent per-page
// RNG streams from one seed.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// ensure generates changes until one lies strictly after off (or the page
// stops changing), so the count of changes ≤ off is final.
func (s *schedule) ensure(off time.Duration) {
	for !s.done && (len(s.times) == 0 || s.times[len(s.times)-1] <= off) {
		next, ok := s.next()
		if !ok {
			s.done = true
			return
		}
		s.times = append(s.times, next)
	}
}

func (s *schedule) next() (time.Duration, bool) {
	if s.periodic == nil {
		gap := s.rng.ExpFloat64() / s.rate * float64(time.Second)
		if math.IsInf(gap, 0) || float64(s.last)+gap >= float64(horizon) {
			return 0, false
		}
		s.last += max(time.Duration(gap), 1) // strictly increasing even at ns resolution
		return s.last, true
	}
	p := s.periodic
	for {
		if s.cycle*int64(p.Period) >= int64(horizon) {
			return 0, false
		}
		jitter := time.Duration((2*s.rng.Float64() - 1) * float64(p.Jitter))
		t := time.Duration(s.cycle)*p.Period + p.Phases[s.phase] + jitter
		s.phase++
		if s.phase == len(p.Phases) {
			s.phase = 0
			s.cycle++
		}
		// The site starts at the epoch with version 0: updates scheduled at
		// or before it (a phase 0 with negative jitter) never happen.
		// Validation keeps 2·Jitter below every phase gap, so t is always
		// after the previous update.
		if t > 0 {
			return t, true
		}
	}
}

// countAt returns the number of changes at or before off: the version
// current at off (version 0 is the initial content).
func (s *schedule) countAt(off time.Duration) int {
	s.ensure(off)
	return sort.Search(len(s.times), func(i int) bool { return s.times[i] > off })
}

// until returns the change offsets generated so far, covering every change
// ≤ off. The returned slice is never modified afterwards (appends only write
// past its length), so it may be read without the lock.
func (s *schedule) until(off time.Duration) []time.Duration {
	s.ensure(off)
	return slices.Clip(s.times)
}
