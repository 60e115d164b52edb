package schedule

// SetFingerprint replaces the URL fingerprint of s, which must have a URL
// source and no URLs yet (a weak one makes URLs collide).
func SetFingerprint(s *Scheduler, f func(string) uint64) { s.front.urls.src.fingerprintOf = f }
