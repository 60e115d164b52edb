package schedule

import (
	"math"
	"time"

	"github.com/freshcrawl/freshcrawl/estimate"
)

// Estimator turns fetch outcomes into change-rate estimates (docs/design.md
// §3.3). It is the one piece of code both the coordinator's fold and the
// virtual benchmark run, so the benchmark measures the real estimator.
// Rates are changes per second, the unit of the budget.
type Estimator struct {
	Config estimate.Config
	// Prior is the weak Gamma prior of Observe's point estimate (the
	// tracked items of keyword-search sources use it).
	Prior estimate.Prior
	Trust estimate.TrustConfig
	// Priors are the collection's population priors, under which Learn
	// computes every URL's posterior (docs/design.md §3.3); the
	// scheduler refits them. Share one PriorSet between the estimator
	// and the Scheduler (SchedulerOptions.Priors).
	Priors *PriorSet
	// Hazard is the prior rate (per second) at which a URL's change rate
	// is redrawn, for the Bayesian change-point test of Learn
	// (estimate.GridPrior.TestChange): one change in hazardPriorTime
	// half-lives.
	Hazard float64
}

// NewEstimator returns the estimator with a fading half-life, change-point
// detection, a weak Gamma prior (half a pseudo-change) centred on
// priorRate for Observe, and population priors that start from a broad
// log-normal around priorRate.
func NewEstimator(halfLife time.Duration, priorRate float64) Estimator {
	cfg := estimate.DefaultConfig()
	cfg.HalfLife = halfLife.Seconds()
	return Estimator{
		Config: cfg, Prior: estimate.NewPrior(priorRate, 0.5), Trust: estimate.DefaultTrustConfig(), Priors: newPriorSet(priorRate),
		Hazard: 1 / (hazardPriorTime * cfg.HalfLife),
	}
}

// EstimateState is what the estimator keeps per URL.
type EstimateState struct {
	State estimate.State
	Trust estimate.TrustCounter
	// PrevLM is the previous fetch's Last-Modified (zero if none).
	PrevLM time.Time
}

// minMemory is the least number of fetch intervals an observation takes to
// fade to half.
const minMemory = 8

// Fetch is one successful fetch as the estimator sees it.
type fetchObs struct {
	At           time.Time
	Prev         time.Time // the previous successful fetch (zero: first)
	Changed      bool
	LastModified time.Time // zero when the server sent none
}

// Observe folds a fetch into st and returns the new rate. A Last-Modified
// that has earned trust (estimate.CheckLastModified over this URL's
// history) gives the change times directly, which is far more informative
// than "changed or not" when fetches are rare; otherwise the bit is used.
func (e Estimator) observe(st *EstimateState, f fetchObs) float64 {
	at := secs(f.At)
	cfg := e.Config
	if e.Priors != nil {
		// Change points are found by Learn's Bayesian test, under the
		// population prior, not by the State's own likelihood ratio.
		cfg.ChangeThreshold = 0
	}
	if !f.Prev.IsZero() {
		// Fading is in time, but a URL fetched rarely sees few
		// observations per half-life: keep at least minMemory fetches'
		// worth, or its estimate would be little more than the prior.
		cfg.HalfLife = max(cfg.HalfLife, minMemory*f.At.Sub(f.Prev).Seconds())
	}
	if !f.Prev.IsZero() && !f.LastModified.IsZero() {
		prev := estimate.Fetch{At: secs(f.Prev), LastModified: secs(st.PrevLM), HasLastModified: !st.PrevLM.IsZero()}
		cur := estimate.Fetch{At: at, LastModified: secs(f.LastModified), HasLastModified: true}
		if f.Changed {
			cur.ContentHash = 1
		}
		st.Trust.Add(estimate.CheckLastModified(prev, cur, e.Trust.ClockSkew), f.Changed)
	}
	if !f.LastModified.IsZero() {
		st.PrevLM = f.LastModified
	}
	switch {
	case f.Prev.IsZero():
		// The first fetch carries no interval; with a trusted header it
		// still dates the last change.
		if !f.LastModified.IsZero() && st.Trust.Trustworthy(e.Trust) {
			_ = st.State.ObserveLastModified(at, math.Inf(1), secs(f.LastModified), cfg)
		}
	case !f.LastModified.IsZero() && st.Trust.Trustworthy(e.Trust):
		_ = st.State.ObserveLastModified(at, f.At.Sub(f.Prev).Seconds(), secs(f.LastModified), cfg)
	default:
		if iv := f.At.Sub(f.Prev).Seconds(); iv > 0 {
			_ = st.State.Observe(at, iv, f.Changed, cfg)
		}
	}
	return st.State.Rate(e.Prior)
}

// ObserveCount folds a refresh at at, whose previous refresh was at prev,
// that counted n updates in between (a tracked value that counts its own
// updates, such as a citation count: see Prober.ObserveRefresh), and
// returns the new rate. A first refresh (zero prev), a non-positive
// interval or an invalid n changes nothing.
func (e Estimator) observeCount(st *EstimateState, at, prev time.Time, n float64) float64 {
	if !prev.IsZero() && at.After(prev) {
		cfg := e.Config
		cfg.HalfLife = max(cfg.HalfLife, minMemory*at.Sub(prev).Seconds())
		_ = st.State.ObserveCount(secs(at), at.Sub(prev).Seconds(), n, cfg)
	}
	return st.State.Rate(e.Prior)
}

// MarshalBinary encodes the state for the URL record; it never fails.
func (s EstimateState) MarshalBinary() ([]byte, error) {
	b, _ := s.State.AppendBinary(nil)
	b = append(b, byte(s.Trust.Checks>>8), byte(s.Trust.Checks), byte(s.Trust.Violations>>8), byte(s.Trust.Violations), byte(s.Trust.Changes>>8), byte(s.Trust.Changes))
	ns := s.PrevLM.Unix()
	if s.PrevLM.IsZero() {
		ns = 0
	}
	for i := 7; i >= 0; i-- {
		b = append(b, byte(ns>>(8*i)))
	}
	b = append(b, byte(s.Trust.Steady>>8), byte(s.Trust.Steady))
	return b, nil
}

// UnmarshalBinary decodes a state written by MarshalBinary (or by the
// estimate package alone, from before trust was kept).
func (s *EstimateState) UnmarshalBinary(b []byte) error {
	n := estimate.EncodedLen(b)
	if n == 0 {
		return s.State.UnmarshalBinary(b)
	}
	if err := s.State.UnmarshalBinary(b[:n]); err != nil {
		return err
	}
	rest := b[n:]
	if len(rest) >= 14 {
		s.Trust.Checks = uint16(rest[0])<<8 | uint16(rest[1])
		s.Trust.Violations = uint16(rest[2])<<8 | uint16(rest[3])
		s.Trust.Changes = uint16(rest[4])<<8 | uint16(rest[5])
		var ns int64
		for i := 0; i < 8; i++ {
			ns = ns<<8 | int64(rest[6+i])
		}
		if ns != 0 {
			s.PrevLM = time.Unix(ns, 0)
		}
		if len(rest) >= 16 {
			s.Trust.Steady = uint16(rest[14])<<8 | uint16(rest[15])
		}
	}
	return nil
}

// testChange runs the Bayesian change-point test of the URL's newest
// observations (estimate.GridPrior.TestChange) under the population prior
// of its host and template, restarts its statistics when a change is more
// probable than not, and reports whether the test found a change at the
// prior hazard.
//
// Two hazards: whether to restart is decided at the collection's hazard
// (the scheduler's estimate from the change points found, when it exceeds
// the prior's), so that during a wave of rate changes across the
// collection a URL's old data are dropped on weaker evidence; but the
// change points the hazard is estimated from are those found at the prior
// hazard, so that a wave does not feed on its own false alarms.
func (e Estimator) testChange(st *EstimateState, o Observation) bool {
	prior := e.Priors.load().For(o.Host, PathTemplate(o.URL))
	// The bounded evidence costs one posterior integration, the exact one
	// 2m+1; its probabilities are upper bounds, so when they are at most
	// changeProb so are the exact ones and the decision is the same.
	h := e.Priors.hazard()
	if b, ok := prior.ChangeEvidenceBound(&st.State); ok {
		if found, ct := e.changeTests(&b, h); found.Prob <= changeProb && ct.Prob <= changeProb {
			return false
		}
	}
	ev := prior.ChangeEvidence(&st.State)
	found, ct := e.changeTests(&ev, h)
	// A restart needs a change with two observations after it (Held),
	// and keeps the older statistics at the posterior probability of no
	// change: on a steady collection every restart is a false alarm, and
	// a hard one keeps only the observations that raised it, selected by
	// their outcome (docs/design.md §3.3).
	if ct.Held > changeProb {
		st.State.Restart(ct.HeldNewest, 1-ct.Prob, e.Config)
	}
	return found.Held > changeProb
}

// changeTests is the test of ev at the prior hazard (found) and at the one
// that decides a restart, the collection's hazard h when it exceeds the
// prior's (see testChange).
func (e Estimator) changeTests(ev *estimate.ChangeEvidence, h float64) (found, ct estimate.ChangeTest) {
	found = ev.Test(e.Hazard)
	ct = found
	if h > e.Hazard {
		ct = ev.Test(h)
	}
	return found, ct
}

// changeProb is the posterior probability of a change of rate at which
// Learn restarts a URL's statistics: the Bayes decision between keeping
// and dropping the history when either mistake costs the same.
const changeProb = 0.5

// Observation is one fetch outcome as the schedule learns from it. The
// coordinator's fold builds it from a result and the URL's stored record,
// the virtual benchmark from its simulated fetch; both hand it to Learn.
type Observation struct {
	// URL and Host name the URL, for the population prior of its host and
	// path template.
	URL, Host string
	// Start and End are when the request started and finished.
	Start, End time.Time
	OK         bool
	// First is set when this fetch saw the URL's content for the first
	// time: it carries no interval to learn a rate from.
	First bool
	// Prev is the previous successful fetch (zero: none).
	Prev time.Time
	// Changed: the content differs from the previous version.
	Changed      bool
	NotModified  bool
	Disallowed   bool
	LastModified time.Time // zero if the server sent none
	// HostGap and HostNotBefore are the host's politeness after the fetch
	// (Crawl-delay; Retry-After or backoff), as Feedback has them.
	HostGap       time.Duration
	HostNotBefore time.Time
	// Content is a fingerprint of the content the fetch got (0: none),
	// passed on to Feedback.Content.
	Content uint64
	// Hinted: the fetch was made because a URL tied to this one changed
	// (Scheduler.Hinted). A fetch chosen for a likely change is not a
	// draw of the URL's change process, so no rate is learnt from it;
	// the interval after it is learnt as any other.
	Hinted bool
}

// Learn is the one step from a fetch outcome to the schedule: a
// successful fetch is folded into the URL's estimator state st (nil for a
// one-off request, which has no estimate), and the returned Feedback, for
// Scheduler.Done, carries the URL's rate after the fetch — the new
// estimate and its standard error (RateSE), or rate, the one it had, when
// there was nothing to learn.
// The caller persists st with the fetch's other effects before it hands
// the Feedback to the scheduler.
//
// The rate is the harmonic mean of the URL's posterior (docs/design.md
// §3.3) under the population prior of its host and path template, the
// rate that makes the plan's give-up decision the Bayes decision
// (estimate.RatePosterior.HarmonicMean), and the Feedback
// carries the posterior's summary and the estimator state, so that the
// scheduler can weigh what it does not know (§3.7) and recompute the
// posterior when the priors are refitted.
func (e Estimator) Learn(st *EstimateState, rate float64, o Observation) Feedback {
	fb := Feedback{
		Start: o.Start, End: o.End, OK: o.OK, Changed: o.Changed, NotModified: o.NotModified, Disallowed: o.Disallowed,
		LastModified: o.LastModified, HostGap: o.HostGap, HostNotBefore: o.HostNotBefore, First: o.OK && o.First,
		Content: o.Content,
	}
	if o.OK && st != nil && !o.Hinted {
		f := fetchObs{At: o.Start, Prev: o.Prev, Changed: o.Changed, LastModified: o.LastModified}
		if o.First {
			f.Prev = time.Time{}
		}
		n := st.State.Observations()
		rate = e.observe(st, f)
		if e.Priors != nil && st.State.Observations() != n {
			fb.ChangePoint = e.testChange(st, o)
		}
		fb.RateSE = e.RateSE(st)
		if e.Priors != nil {
			pr := e.Priors.load()
			tmpl := PathTemplate(o.URL)
			prior := pr.For(o.Host, tmpl)
			post := prior.Posterior(st.State)
			fb.Learnt, fb.Posterior, fb.State, fb.PriorVersion = true, post.Summary(), st.State, pr.revision()
			fb.Model = modelSketch(&post, prior, pr.ForModel(o.Host, tmpl))
			fb.Dated = !o.LastModified.IsZero() && st.Trust.Trustworthy(e.Trust)
			rate = fb.Posterior.Harmonic
		}
	}
	fb.Rate = rate
	return fb
}

// modelSketch is the model's posterior of a URL (docs/design.md §3.7, "An
// honest model") in a Sketch: its plan posterior post, computed under the
// plan's prior, reweighted to the model's prior, which costs no
// evaluation of the likelihood.
func modelSketch(post *estimate.RatePosterior, plan, model estimate.GridPrior) estimate.Sketch {
	m := post.Reweighted(plan, model)
	return m.Sketch(plan.Grid())
}

// RateSE returns the standard error of the rate st gives; for a URL never
// observed, that of the prior. An unknown (infinite) error is 0, as a
// record stores it: JSON has no infinity.
func (e Estimator) RateSE(st *EstimateState) float64 {
	_, se := st.State.RateUncertainty(e.Prior)
	if math.IsInf(se, 0) || math.IsNaN(se) {
		return 0
	}
	return se
}
