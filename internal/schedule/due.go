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
