package schedule

import (
	"crypto/sha256"
	"encoding/binary"
	"math"
	"time"

	"github.com/freshcrawl/freshcrawl/capture"
)

// Capture mode (docs/design.md §3.5, Ashish, Kulkarni & Wang): a capture URL is polled N times
// per period T at phases chosen to capture every version, not at a fixed
// interval. Until enough history exists it polls uniformly, with a
// different random offset every period so that, over time, the polls land
// all around the period and the update phases can be learnt; then it
// switches to the learnt phases, and goes back to learning when the
// pattern drifts.
//
// Update times are learnt from a trustworthy Last-Modified (the exact time
// of the version captured). A source without one gives only "changed
// between two polls", which cannot locate the phases; such a URL keeps
// polling uniformly, and status says so.

// Capture learning parameters.
const (
	captureMinLearn = 8   // exact update times before the first plan
	captureKeep     = 256 // update times remembered per URL
	captureDriftMin = 20  // recent updates before drift is judged
)

// capturePeriods are tried when a URL's period is not configured.
var capturePeriods = []float64{3600, 86400, 7 * 86400}

// captureState is the capture schedule of one URL.
type captureState struct {
	period     float64 // seconds; 0 until configured or detected
	configured bool
	polls      int // per period; 0 = from the URL's share of the budget
	times      []float64
	recent     []float64 // exact update times since the last plan
	sched      *capture.Schedule
	pattern    capture.Pattern
	strength   float64
	exact      int // how many observations were exact
	intervals  int // how many were intervals only
	replayed   float64
	uniform    bool // baseline: fixed uniform phases, never learn
}

func newCaptureState(period time.Duration, polls int) *captureState {
	cs := &captureState{polls: polls}
	if period > 0 {
		cs.period, cs.configured = period.Seconds(), true
	}
	return cs
}

// n is the number of polls per period: configured, or the URL's share of
// the budget (its planned frequency times the period).
func (cs *captureState) n(interval time.Duration) int {
	if cs.polls > 0 {
		return cs.polls
	}
	if interval <= 0 || cs.period <= 0 {
		return 1
	}
	return max(1, int(math.Round(cs.period/interval.Seconds())))
}

// rate is the polls per second the URL makes whatever the plan gives it:
// its learnt polls, or its configured polls while learning; 0 while its
// polls per period come from its share of the budget.
func (cs *captureState) rate() float64 {
	switch {
	case cs.period <= 0:
		return 0
	case cs.sched != nil:
		return float64(len(cs.sched.Polls)) / cs.period
	case cs.polls > 0:
		return float64(cs.polls) / cs.period
	}
	return 0
}

// observe records an update seen by a poll: exactly at `exact` when the
// server's Last-Modified is trustworthy, else somewhere in (from, to].
func (cs *captureState) observe(from, to time.Time, exact bool, interval time.Duration) {
	if !exact {
		cs.intervals++
		return
	}
	cs.exact++
	t := secs(to)
	cs.times = append(cs.times, t)
	if len(cs.times) > captureKeep {
		cs.times = cs.times[len(cs.times)-captureKeep:]
	}
	if cs.sched != nil {
		cs.recent = append(cs.recent, t)
		if len(cs.recent) >= captureDriftMin {
			rep, err := capture.CheckDrift(*cs.sched, cs.pattern, cs.recent, capture.DriftConfig{})
			if err == nil && rep.Drifted {
				// Re-learn from what happens now, not from the old rhythm.
				cs.times = append([]float64(nil), cs.recent...)
				cs.sched, cs.recent = nil, nil
				if !cs.configured {
					cs.period = 0
				}
			} else if len(cs.recent) > captureKeep {
				cs.recent = cs.recent[len(cs.recent)-captureKeep:]
			}
		}
		if cs.sched != nil && len(cs.recent)%captureMinLearn == 0 {
			// Keep refining: polls at the learnt phases see every update,
			// so the windows learnt from the first few (with Last-Modified
			// cut to whole seconds) widen to the true ones.
			recent := cs.recent
			cs.learn(interval)
			cs.recent = recent
		}
	}
	if cs.sched == nil && !cs.uniform && len(cs.times) >= captureMinLearn {
		cs.learn(interval)
	}
}

// learn finds the period (when not configured) and plans the polls.
func (cs *captureState) learn(interval time.Duration) {
	if !cs.configured {
		best, _, err := capture.DetectPeriod(capture.Exact(cs.times), capturePeriods)
		if err != nil || best.Strength < 0.3 {
			return // no rhythm found yet: keep polling at the plan's interval
		}
		cs.period, cs.strength = best.Period, best.Strength
	}
	p, err := capture.LearnPattern(cs.times, cs.period, cs.period/30)
	if err != nil {
		return
	}
	s, err := capture.PlanPattern(p, cs.n(interval))
	if err != nil || len(s.Polls) == 0 {
		return
	}
	if cs.configured {
		if best, _, err := capture.DetectPeriod(capture.Exact(cs.times), []float64{cs.period}); err == nil {
			cs.strength = best.Strength
		}
	}
	cs.sched, cs.pattern, cs.recent = &s, p, nil
	if r, _, err := capture.ReplayRecall(s.Polls, s.Period, cs.times); err == nil {
		cs.replayed = r
	}
}

// next is the next poll strictly after t.
func (cs *captureState) next(url string, t time.Time, interval time.Duration) time.Time {
	if cs.period <= 0 {
		return t.Add(interval)
	}
	T := cs.period
	now := secs(t)
	k := math.Floor(now / T)
	if cs.sched != nil {
		for ; ; k++ {
			for _, p := range cs.sched.Polls {
				if at := k*T + p; at > now+1e-3 {
					return fromSecs(at)
				}
			}
		}
	}
	// Learning: n uniform polls a period at an offset that changes every
	// period, so the polls sweep the whole period over time.
	n := cs.n(interval)
	step := T / float64(n)
	for ; ; k++ {
		off := offset(url, int64(k)) * step
		if cs.uniform {
			off = 0
		}
		for j := 0; j < n; j++ {
			if at := k*T + off + float64(j)*step; at > now+1e-3 {
				return fromSecs(at)
			}
		}
	}
}

// offset is a stable pseudo-random number in [0,1) for (url, period k).
func offset(url string, k int64) float64 {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(k))
	h := sha256.Sum256(append([]byte(url), b[:]...))
	return float64(binary.BigEndian.Uint64(h[:8])>>11) / float64(uint64(1)<<53)
}

func secs(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

func fromSecs(s float64) time.Time {
	sec, frac := math.Modf(s)
	return time.Unix(int64(sec), int64(frac*1e9))
}

// CaptureStatus is what status shows of one capture URL.
type CaptureStatus struct {
	URL      string   `json:"url"`
	Period   string   `json:"period"` // "" while unknown
	Detected bool     `json:"detected"`
	Strength float64  `json:"strength"` // how strongly updates concentrate in phase (0..1)
	Polls    int      `json:"polls_per_period"`
	Phases   []string `json:"phases,omitempty"` // learnt poll phases; empty while learning
	Learning bool     `json:"learning"`
	// ExpectedRecall is the model's change recall of the learnt polls;
	// ReplayedRecall replays the observed update history against them
	// (an upper bound: updates no poll saw are not in the history).
	ExpectedRecall float64 `json:"expected_recall"`
	ReplayedRecall float64 `json:"replayed_recall"`
	ExactUpdates   int     `json:"exact_updates"`
	IntervalOnly   int     `json:"interval_only_updates"`
}

func (cs *captureState) status(url string, interval time.Duration) CaptureStatus {
	st := CaptureStatus{URL: url, Detected: !cs.configured && cs.period > 0, Strength: cs.strength, Polls: cs.n(interval),
		Learning: cs.sched == nil && !cs.uniform, ExactUpdates: cs.exact, IntervalOnly: cs.intervals}
	if cs.period > 0 {
		st.Period = time.Duration(cs.period * float64(time.Second)).String()
	}
	if cs.sched != nil {
		st.ExpectedRecall, st.ReplayedRecall = cs.sched.Expected, cs.replayed
		for _, p := range cs.sched.Polls {
			st.Phases = append(st.Phases, time.Duration(p*float64(time.Second)).Round(time.Millisecond).String())
		}
	}
	return st
}

// ObserveVersion records a capture version stored with the interval it
// appeared in: (after, before], or exactly at before when exact (from a
// trustworthy Last-Modified). capturedAt is the poll that stored it.
func (s *Scheduler) ObserveVersion(url string, after, before time.Time, exact bool, capturedAt time.Time) {
	if after.IsZero() {
		return // the first version: no interval to learn from
	}
	to := before
	if exact {
		// HTTP dates drop the sub-second part: the update happened in
		// [Last-Modified, +1s), and a poll must come after it.
		to = earliest(to.Add(time.Second), capturedAt)
	}
	s.ObserveCapture(url, after, to, exact)
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
