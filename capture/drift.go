package capture

import (
	"fmt"
	"math"
)

// DriftConfig tunes CheckDrift; zero fields take the defaults noted.
type DriftConfig struct {
	MinUpdates      int     // fewest recent updates to judge on; default 20
	RecallMargin    float64 // minimum tolerated recall drop; default 0.1
	Z               float64 // binomial standard errors tolerated; default 3
	OutsideFraction float64 // largest share of off-pattern updates; default 0.2
	Slack           float64 // widening of learned windows; default T/120
}

func (c DriftConfig) withDefaults(T float64) DriftConfig {
	if c.MinUpdates <= 0 {
		c.MinUpdates = 20
	}
	if c.RecallMargin <= 0 {
		c.RecallMargin = 0.1
	}
	if c.Z <= 0 {
		c.Z = 3
	}
	if c.OutsideFraction <= 0 {
		c.OutsideFraction = 0.2
	}
	if c.Slack <= 0 {
		c.Slack = T / 120
	}
	return c
}

// DriftReport is the outcome of CheckDrift.
type DriftReport struct {
	Drifted  bool
	Reason   string  // empty unless Drifted
	Updates  int     // recent updates judged
	Observed float64 // replayed recall of the recent updates under the schedule
	Expected float64 // the schedule's expected recall
	Outside  float64 // share of recent updates outside every learned window
}

// CheckDrift tells the scheduler whether to re-learn a source's pattern.
// The paper's premise is that "the historical pattern of updates ... is a
// good predictor of the future pattern" (§3); this checks that premise on
// recent, exactly timed updates (feed entry dates, Last-Modified), which
// must be the updates the source actually published, not only the captured
// ones. With fewer than MinUpdates recent updates it never reports drift.
// Otherwise the pattern has drifted when either
//
//   - recall dropped: replaying the recent updates against s.Polls
//     (ReplayRecall) gives Observed < Expected − max(RecallMargin,
//     Z·√(Expected(1−Expected)/n)), a drop beyond both a practical margin and
//     binomial noise for n updates; or
//   - the phases moved: more than OutsideFraction of recent updates have a
//     phase outside every learned window [Phase−Jitter−Slack,
//     Phase+Jitter+Slack], which catches new update times even while the
//     current polls happen to still capture them.
func CheckDrift(s Schedule, p Pattern, recent []float64, cfg DriftConfig) (DriftReport, error) {
	if err := p.Validate(); err != nil {
		return DriftReport{}, fmt.Errorf("capture: drift: %w", err)
	}
	if s.Period != p.Period {
		return DriftReport{}, invalid("capture: drift: schedule period %v differs from pattern period %v", s.Period, p.Period)
	}
	if !finite(s.Expected) || s.Expected < 0 || s.Expected > 1 {
		return DriftReport{}, invalid("capture: drift: expected recall %v outside [0, 1]", s.Expected)
	}
	obs, n, err := ReplayRecall(s.Polls, p.Period, recent)
	if err != nil {
		return DriftReport{}, fmt.Errorf("capture: drift: %w", err)
	}
	T := p.Period
	cfg = cfg.withDefaults(T)
	r := DriftReport{Updates: n, Observed: obs, Expected: s.Expected}
	if n == 0 {
		return r, nil
	}
	outside := 0
	for _, t := range recent {
		ph := mod(t, T)
		in := false
		for _, u := range p.Updates {
			d := math.Abs(ph - u.Phase)
			if math.Min(d, T-d) <= u.Jitter+cfg.Slack {
				in = true
				break
			}
		}
		if !in {
			outside++
		}
	}
	r.Outside = float64(outside) / float64(n)
	if n < cfg.MinUpdates {
		return r, nil
	}
	e := s.Expected
	tol := math.Max(cfg.RecallMargin, cfg.Z*math.Sqrt(e*(1-e)/float64(n)))
	switch {
	case obs < e-tol:
		r.Drifted = true
		r.Reason = fmt.Sprintf("recall %.3f below expected %.3f by more than %.3f over %d updates", obs, e, tol, n)
	case r.Outside > cfg.OutsideFraction:
		r.Drifted = true
		r.Reason = fmt.Sprintf("%.0f%% of %d updates outside the learned update windows", 100*r.Outside, n)
	}
	return r, nil
}

// CheckDriftPolls is CheckDrift for sources without exact update times:
// it judges the pattern by the polls made since it was learnt. Each poll
// interval (a, b] sees a change with probability P(N ≥ 1) under the
// pattern; the pattern has drifted when the changes seen differ from the
// expected count by more than Z binomial standard errors and by more than
// RecallMargin of the expected count (an update that moved to the other
// side of a poll shows as a change where none was due, or as one fewer
// where two were). Exact times count as changes. With fewer than
// MinUpdates changes seen it never reports drift.
func CheckDriftPolls(p Pattern, h History, cfg DriftConfig) (DriftReport, error) {
	if err := p.Validate(); err != nil {
		return DriftReport{}, fmt.Errorf("capture: drift: %w", err)
	}
	if err := h.Validate(); err != nil {
		return DriftReport{}, fmt.Errorf("capture: drift: %w", err)
	}
	cfg = cfg.withDefaults(p.Period)
	m := newModel(p)
	var seen, want, v float64
	for i := 1; i < len(h); i++ {
		a, b := h[i-1].At, h[i].At
		var q float64
		if b-a >= p.Period {
			q = anyUpdate(m, 0, p.Period)
			// a longer interval holds a whole period: at least as likely
		} else {
			q = anyUpdate(m, mod(a, p.Period), mod(a, p.Period)+(b-a))
		}
		want += q
		v += q * (1 - q)
		if h[i].Changed || len(h[i].Exact) > 0 {
			seen++
		}
	}
	r := DriftReport{Updates: int(seen), Observed: seen, Expected: want}
	if int(seen) < cfg.MinUpdates {
		return r, nil
	}
	tol := math.Max(cfg.RecallMargin*want, cfg.Z*math.Sqrt(v))
	if math.Abs(seen-want) > tol {
		r.Drifted = true
		r.Reason = fmt.Sprintf("%.0f polls saw a change where the pattern expects %.1f (tolerance %.1f)", seen, want, tol)
	}
	return r, nil
}

// anyUpdate is the probability of at least one update in (a, b], a in
// [0, T), b ≤ a+T, under the model.
func anyUpdate(m *model, a, b float64) float64 {
	none := 1.0
	for _, e := range m.ev {
		none *= 1 - e.w*m.mass(e, a, b)
	}
	return 1 - none
}
