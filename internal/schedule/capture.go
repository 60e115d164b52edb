package schedule

import (
	"crypto/sha256"
	"encoding/binary"
	"math"
	"slices"
	"sort"
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
// Every poll is kept in the URL's history: when it happened and whether it
// saw a new version, with the exact update times when the source gives
// them (a trustworthy Last-Modified, a feed's item dates). A poll that saw
// a change without an exact time says "an update happened in (previous
// poll, this poll]"; one that saw none rules its interval out. The period
// (unless configured) and the phases are learnt from this history, exact
// and censored alike (capture.DetectPeriodRange, capture.LearnPolls).

// Capture learning parameters.
const (
	captureMinLearn  = 8    // changes seen before the first plan, and between re-plans
	captureKeepPolls = 4096 // polls remembered per URL (weeks of a daily rhythm polled half-hourly)
	captureDriftMin  = 20   // changes since the plan before drift is judged
	captureMinDetect = 12   // changes before a period is looked for
	// captureMinStrength is the least strength of a detected period
	// to plan on; below it the URL keeps learning.
	captureMinStrength = 0.3
	// captureLearnPolls is how many polls a period a URL with configured
	// polls makes while it learns (at least its configured number): the
	// sweep pins the phases down faster than its final polls would.
	captureLearnPolls = 8
)

// captureState is the capture schedule of one URL.
type captureState struct {
	period     float64 // seconds; 0 until configured or detected
	configured bool
	polls      int // per period; 0 = from the URL's share of the budget
	hist       capture.History
	// sweep holds the polls made while learning, which land all around
	// the period: the period is looked for in them only, since the
	// learnt polls' own intervals repeat with the period they were
	// planned for, right or wrong.
	sweep      capture.History
	pending    []float64 // exact update times told before their poll was recorded
	planFrom   int       // index in hist of the first poll under the current plan
	lastLearn  int       // changes in hist at the last learning attempt
	exactLearn int       // exact changes counted at the last plan
	sched      *capture.Schedule
	pattern    capture.Pattern
	fit        capture.PeriodFit // period detection (or the configured period's strength)
	exact      int               // changes with an exact time
	intervals  int               // changes known only as intervals
	replayed   float64
	uniform    bool // baseline: fixed uniform phases, never learn
	polled     int  // polls made in all (for the unknown-period spread)
	drifts     int  // drifts since the last fresh start
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

// learnN is the polls per period while learning: more than the final
// number for a URL with few configured polls.
func (cs *captureState) learnN(interval time.Duration) int {
	n := cs.n(interval)
	if cs.polls > 0 && !cs.uniform {
		n = max(n, captureLearnPolls)
	}
	return n
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
		return float64(cs.learnN(0)) / cs.period
	}
	return 0
}

// poll records a poll made at t (its start), which saw a new version or
// not; it then learns or checks for drift as the history grows.
func (cs *captureState) poll(t time.Time, changed bool, interval time.Duration) {
	at := secs(t)
	if n := len(cs.hist); n > 0 && at <= cs.hist[n-1].At {
		return // a result older than the last poll: nothing to add
	}
	p := capture.Poll{At: at, Changed: changed && len(cs.hist) > 0}
	if len(cs.hist) > 0 {
		prev := cs.hist[len(cs.hist)-1].At
		var keep []float64
		for _, x := range cs.pending {
			switch {
			case x > prev && x <= at:
				p.Exact = append(p.Exact, x)
			case x > at:
				keep = append(keep, x)
			}
		}
		cs.pending = keep
		if len(p.Exact) > 0 {
			p.Changed = true
		}
	}
	cs.add(p)
	if cs.sched == nil {
		cs.sweep = append(cs.sweep, p)
		if over := len(cs.sweep) - captureKeepPolls; over > 0 {
			cs.sweep = append(cs.sweep[:0], cs.sweep[over:]...)
		}
	}
	cs.polled++
	cs.maybeLearn(interval)
}

// add appends p to the history, counting its change, and keeps the
// history bounded.
func (cs *captureState) add(p capture.Poll) {
	switch {
	case len(p.Exact) > 0:
		cs.exact++
	case p.Changed:
		cs.intervals++
	}
	cs.hist = append(cs.hist, p)
	if over := len(cs.hist) - captureKeepPolls; over > 0 {
		cs.hist = append(cs.hist[:0], cs.hist[over:]...)
		cs.planFrom = max(0, cs.planFrom-over)
	}
}

// exactAt records an update known to have happened at x: it becomes an
// exact time of the change the last poll saw, or waits for the poll that
// will see it; an update older than the last poll's interval is dropped.
func (cs *captureState) exactAt(x float64) {
	n := len(cs.hist)
	if n >= 2 && x > cs.hist[n-2].At && x <= cs.hist[n-1].At {
		p := &cs.hist[n-1]
		if slices.Contains(p.Exact, x) {
			return // told twice
		}
		if len(p.Exact) == 0 {
			if p.Changed {
				cs.intervals--
			}
			cs.exact++
		}
		p.Exact = append(p.Exact, x)
		p.Changed = true
		if m := len(cs.sweep); m > 0 && cs.sweep[m-1].At == p.At {
			cs.sweep[m-1] = *p
		}
		return
	}
	if n == 0 || x > cs.hist[n-1].At {
		cs.pending = append(cs.pending, x)
		if len(cs.pending) > captureKeepPolls {
			cs.pending = cs.pending[len(cs.pending)-captureKeepPolls:]
		}
	}
}

// changedIn records that an update happened somewhere in (from, to]: the
// last poll's change when it is that interval, else (a history rebuilt
// from stored versions) a poll at from and one at to that saw a change.
func (cs *captureState) changedIn(from, to float64) {
	n := len(cs.hist)
	if n >= 2 && math.Abs(cs.hist[n-1].At-to) < 1e-3 {
		if p := &cs.hist[n-1]; !p.Changed {
			p.Changed = true
			cs.intervals++
		}
		return
	}
	if n > 0 && to <= cs.hist[n-1].At {
		return
	}
	if n == 0 || from > cs.hist[n-1].At {
		cs.add(capture.Poll{At: from})
	}
	cs.add(capture.Poll{At: to, Changed: true})
}

// changes counts the polls in h that saw a change.
func changes(h capture.History) int { return h.Updates() }

// maybeLearn plans once captureMinLearn changes are seen, re-plans as
// exactly timed changes come (the windows learnt from the first few widen
// to the true ones: after captureMinLearn more, then each time their count
// grew by a quarter), and goes back to learning on drift.
// Changes seen only as intervals by the learnt polls are not re-planned
// on: each says "an update between two learnt polls", which the plan
// already assumes, and the learning sweep's finer intervals would only be
// blurred by them.
func (cs *captureState) maybeLearn(interval time.Duration) {
	if cs.uniform {
		return
	}
	seen := changes(cs.hist)
	if seen-cs.lastLearn < captureMinLearn {
		return
	}
	cs.lastLearn = seen
	if cs.sched != nil {
		since := cs.hist[max(0, cs.planFrom-1):]
		if changes(since) >= captureDriftMin {
			rep, err := capture.CheckDriftPolls(cs.pattern, since, capture.DriftConfig{})
			if err == nil && rep.Drifted {
				cs.drifted(interval, changes(since))
				return
			}
		}
		if cs.exact-cs.exactLearn < max(captureMinLearn, cs.exactLearn/4) {
			return
		}
	}
	cs.learn(interval)
}

// drifted answers a drift of the plan. A detected period is known only
// to the precision of the learning sweep, and a small error in it moves
// the updates across the learnt polls after a few dozen periods, which is
// the usual drift: the period is sharpened on the whole history's
// likelihood (the polls that missed a crossing update pin it down) and
// the phases re-planned at once. Drifting again soon after, the URL sweeps
// the period anew, keeping its history; a third time, the rhythm itself
// changed, and it starts afresh.
func (cs *captureState) drifted(interval time.Duration, sincePlan int) {
	if sincePlan >= 3*captureDriftMin {
		cs.drifts = 0 // the plan held a good while: a new drift
	}
	cs.drifts++
	cs.lastLearn = changes(cs.hist)
	switch {
	case cs.drifts == 1 && !cs.configured:
		if T, err := capture.RefinePeriod(cs.hist, cs.period, cs.period/200, 6); err == nil {
			cs.period, cs.fit.Period = T, T
		}
		cs.sched = nil
		cs.learnPhases(interval)
	case cs.drifts <= 2:
		cs.sched = nil
	default:
		cs.hist = append(capture.History(nil), cs.hist[len(cs.hist)-1])
		cs.sweep = append(capture.History(nil), cs.hist...)
		cs.sched, cs.planFrom, cs.lastLearn, cs.drifts = nil, 0, 0, 0
		if !cs.configured {
			cs.period, cs.fit = 0, capture.PeriodFit{}
		}
	}
}

// learn finds the period (when not configured) and plans the polls.
func (cs *captureState) learn(interval time.Duration) {
	if !cs.configured && cs.period > 0 {
		// Known but not planned on (a drift sent the URL sweeping
		// again): sharpen it on the whole history, which the coarse
		// search over the sweeps alone would not beat.
		if T, err := capture.RefinePeriod(cs.hist, cs.period, cs.period/200, 6); err == nil {
			cs.period, cs.fit.Period = T, T
		}
	} else if !cs.configured {
		if changes(cs.sweep) < captureMinDetect {
			return
		}
		fit, err := capture.DetectPeriodRange(cs.sweep, 0, 0)
		if err != nil || fit.Strength < captureMinStrength {
			return // no rhythm found yet: keep polling at the plan's interval
		}
		if T, err := capture.RefinePeriod(cs.hist, fit.Period, fit.Period/200, 6); err == nil {
			fit.Period = T // sharper on the EM's finer histogram
		}
		if cs.period > 0 && math.Abs(fit.Period-cs.period) > cs.period/1000 {
			cs.sched = nil // a new period: plan afresh
		}
		cs.period, cs.fit = fit.Period, fit
	} else if fit, err := capture.PeriodStrength(cs.sweep, cs.period); err == nil {
		cs.fit = fit
	}
	cs.learnPhases(interval)
}

// learnPhases plans the polls on the history at the period known.
func (cs *captureState) learnPhases(interval time.Duration) {
	p, _, err := capture.LearnPolls(cs.hist, cs.period)
	if err != nil || len(p.Updates) == 0 {
		return
	}
	s, err := capture.PlanPattern(p, cs.n(interval))
	if err != nil || len(s.Polls) == 0 {
		return
	}
	// Windows learnt from a few updates are narrower than the truth: poll
	// a little into the quiet stretch after each, not at its very end.
	if w, err := s.WithSlack(p); err == nil {
		s = w
	}
	if cs.sched == nil {
		cs.planFrom = len(cs.hist)
	}
	cs.sched, cs.pattern, cs.exactLearn = &s, p, cs.exact
	var times []float64
	for _, q := range cs.hist {
		times = append(times, q.Exact...)
	}
	cs.replayed = 0
	if r, _, err := capture.ReplayRecall(s.Polls, s.Period, times); err == nil && len(times) > 0 {
		cs.replayed = r
	}
}

// next is the next poll strictly after t.
func (cs *captureState) next(url string, t time.Time, interval time.Duration) time.Time {
	if cs.period <= 0 {
		// Period unknown: the plan's interval, each step drawn in
		// [0.75, 1.25] of it so that the polls cannot keep step with
		// the rhythm they are to find.
		return t.Add(time.Duration(float64(interval) * (0.75 + 0.5*offset(url, int64(cs.polled)))))
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
	n := cs.learnN(interval)
	if cs.uniform {
		n = cs.n(interval)
	}
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
	URL      string `json:"url"`
	Period   string `json:"period"` // "" while unknown
	Detected bool   `json:"detected"`
	// Strength is how much better the period explains the changes than a
	// constant rate (0..1; capture.PeriodFit), and Observations how many
	// changes, over PolledTimes polls, it rests on.
	Strength     float64  `json:"strength"`
	Observations int      `json:"observations"`
	PolledTimes  int      `json:"polls_observed"`
	Polls        int      `json:"polls_per_period"`
	Phases       []string `json:"phases,omitempty"` // learnt poll phases; empty while learning
	Learning     bool     `json:"learning"`
	// ExpectedRecall is the model's change recall of the learnt polls;
	// ReplayedRecall replays the exactly timed updates against them
	// (an upper bound: updates no poll saw are not in the history).
	ExpectedRecall float64 `json:"expected_recall"`
	ReplayedRecall float64 `json:"replayed_recall"`
	ExactUpdates   int     `json:"exact_updates"`
	IntervalOnly   int     `json:"interval_only_updates"`
}

func (cs *captureState) status(url string, interval time.Duration) CaptureStatus {
	st := CaptureStatus{URL: url, Detected: !cs.configured && cs.period > 0, Strength: cs.fit.Strength,
		Observations: cs.fit.Changes, PolledTimes: cs.fit.Polls, Polls: cs.n(interval),
		Learning: cs.sched == nil && !cs.uniform, ExactUpdates: cs.exact, IntervalOnly: cs.intervals}
	if st.Learning {
		st.Polls = cs.learnN(interval)
	}
	if cs.sched != nil {
		st.Polls = len(cs.sched.Polls)
	}
	if cs.period > 0 {
		st.Period = time.Duration(cs.period * float64(time.Second)).Round(time.Millisecond).String()
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
// trustworthy Last-Modified). capturedAt is the poll that stored it. Live,
// the poll is already in the history (Done came first) and the version
// only adds its exact time; on a restart the stored versions rebuild the
// history: the polls between two versions saw no change.
func (s *Scheduler) ObserveVersion(url string, after, before time.Time, exact bool, capturedAt time.Time) {
	e, ok := s.front.urls.get(url)
	if !ok || s.capOf(e) == nil {
		return
	}
	cs := s.capOf(e)
	at := secs(capturedAt)
	rate := cs.rate()
	rebuild := false
	if n := len(cs.hist); n == 0 || cs.hist[n-1].At < at-1e-3 {
		// Not polled live: rebuild from the stored version.
		rebuild = true
		if !after.IsZero() && (n == 0 || cs.hist[n-1].At < secs(after)) {
			cs.add(capture.Poll{At: secs(after)})
		}
		cs.add(capture.Poll{At: at, Changed: !after.IsZero() && len(cs.hist) > 0})
	}
	if !after.IsZero() && exact {
		// HTTP dates drop the sub-second part: the update happened in
		// [Last-Modified, +1s), and a poll must come after it.
		cs.exactAt(secs(earliest(before.Add(time.Second), capturedAt)))
	}
	if rebuild {
		cs.maybeLearn(e.interval)
		s.captureMoved(e, rate)
	}
}

// ObserveExact records updates known to have happened exactly at times
// (a feed's item dates): each becomes an exact time of the change of the
// poll whose interval holds it.
func (s *Scheduler) ObserveExact(url string, times []time.Time) {
	e, ok := s.front.urls.get(url)
	if !ok || s.capOf(e) == nil {
		return
	}
	for _, t := range times {
		s.capOf(e).exactAt(secs(t))
	}
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// observeCapture records an update a poll of a capture URL saw: exactly at
// `to` (trustworthy Last-Modified) or somewhere in (from, to].
func (s *Scheduler) observeCapture(url string, from, to time.Time, exact bool) {
	e, ok := s.front.urls.get(url)
	if !ok || s.capOf(e) == nil {
		return
	}
	cs := s.capOf(e)
	before := cs.rate()
	if exact {
		cs.exactAt(secs(to))
	} else {
		cs.changedIn(secs(from), secs(to))
	}
	cs.maybeLearn(e.interval)
	s.captureMoved(e, before)
}

// CaptureStatus lists the capture URLs' schedules (at most limit).
func (s *Scheduler) CaptureStatus(limit int) []CaptureStatus {
	var out []CaptureStatus
	var es []*entry
	var css []*captureState
	for id, cs := range s.captures {
		es, css = append(es, s.front.entry(id)), append(css, cs)
	}
	// A URL the source cannot spell is left out (the source logs why).
	_ = s.front.urls.spellAll(es, func(i int, url string) {
		out = append(out, css[i].status(url, es[i].interval))
	})
	sort.Slice(out, func(i, j int) bool { return out[i].URL < out[j].URL })
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}
