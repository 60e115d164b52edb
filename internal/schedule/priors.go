package schedule

import (
	"math"
	"strings"
	"sync/atomic"

	"github.com/freshcrawl/freshcrawl/estimate"
)

// rateGridFor is the grid of change rates, per second, the population
// priors of a collection whose configured prior rate is priorRate live on:
// 72 nodes (a factor of 1.32 apart) from priorRate/2737.5 to
// priorRate·345 600, which with the default prior (a change every 4 days)
// is once in 30 years to once a second. Rates outside it are held at its
// ends. The grid is relative to the prior rate, not fixed in seconds, so
// that the estimator does not depend on the unit of time: a collection
// whose day lasts half a second (the live bench) is estimated exactly as
// one whose day lasts a day. The bounds matter beyond resolution: a
// plan's rate is a posterior's harmonic mean, which the prior's low tail
// weighs, so they are kept where the estimator was tuned.
func rateGridFor(priorRate float64) estimate.LogGrid {
	g, err := estimate.NewLogGrid(priorRate/2737.5, priorRate*345_600, 72)
	if err != nil {
		panic(err) // priorRate validated by newPriors
	}
	return g
}

// basePriorSigma is the spread, in ln λ, of the prior a collection starts
// from: a log-normal centred on the configured prior rate, a factor e^2.5
// (about 12) either way at one standard deviation, so that it commits to
// nothing until the collection has been observed (docs/design.md §3.3).
const basePriorSigma = 2.5

// Shrinkage of each level of the population priors toward its parent, in
// pseudo-URLs (docs/design.md §3.3): a host's prior needs the data of
// about this many of its URLs to move halfway from the collection's, and
// a path template's from its host's.
const (
	kappaPopulation = 1
	kappaHost       = 30
	kappaTemplate   = 15
)

// Priors are the collection's population priors (docs/design.md §3.3,
// "Priors from the collection"): one for the whole collection, one per
// host and one per (host, path template) with data enough to tell, each
// fitted by empirical Bayes and shrunk toward its parent. A Priors is
// immutable once built; a refit makes a new one.
type Priors struct {
	version uint64
	base    estimate.GridPrior
	pop     estimate.GridPrior
	hosts   map[string]estimate.GridPrior
	tmpls   map[groupKey]estimate.GridPrior
	// informed counts the URLs each level was fitted on (population).
	informed int
	// model holds the model's priors, level for level beside the plan's
	// (estimate.FitSilentGridPrior): the model freshness is computed
	// under them (docs/design.md §3.7, "An honest model"), the plan under
	// the ones above. Nil before the first fit: the plan's then.
	model *Priors
}

// groupKey names a path template on a host.
type groupKey struct{ host, template string }

// newPriors are the priors before anything was observed: the log-normal
// around priorRate (per second) everywhere.
func newPriors(priorRate float64) *Priors {
	if !(priorRate/2737.5 > 0) || math.IsInf(priorRate*345_600, 1) {
		priorRate = 0.25 / 86400
	}
	base, err := estimate.LogNormalGridPrior(rateGridFor(priorRate), priorRate, basePriorSigma)
	if err != nil {
		panic(err) // validated arguments
	}
	return &Priors{base: base, pop: base}
}

// For is the prior of a URL of host with path template tmpl: the most
// specific level fitted.
func (p *Priors) For(host, tmpl string) estimate.GridPrior {
	if g, ok := p.tmpls[groupKey{host, tmpl}]; ok {
		return g
	}
	if g, ok := p.hosts[host]; ok {
		return g
	}
	return p.pop
}

// ForModel is the prior of the model's posterior of a URL of host with
// path template tmpl (For's level, of the model's fit).
func (p *Priors) ForModel(host, tmpl string) estimate.GridPrior {
	if p.model == nil {
		return p.For(host, tmpl)
	}
	return p.model.For(host, tmpl)
}

// grid is the grid every prior of p lives on.
func (p *Priors) grid() estimate.LogGrid { return p.base.Grid() }

// population is the collection-wide prior.
func (p *Priors) population() estimate.GridPrior { return p.pop }

// revision increases with every refit.
func (p *Priors) revision() uint64 { return p.version }

// PriorSet holds the current Priors for the estimator, which reads them
// on every fold, and the scheduler, which replaces them after a refit.
// Safe for concurrent use.
type PriorSet struct {
	cur atomic.Pointer[Priors]
	// hazard is the collection's rate of rate changes per URL per second
	// (math.Float64bits), as the scheduler last estimated it from the
	// change points found (0: none yet).
	hazardBits atomic.Uint64
}

// hazard is the collection's estimated rate of rate changes per URL per
// second (0 before the scheduler's first estimate).
func (s *PriorSet) hazard() float64 { return math.Float64frombits(s.hazardBits.Load()) }

func (s *PriorSet) setHazard(h float64) {
	if h >= 0 && !math.IsInf(h, 1) {
		s.hazardBits.Store(math.Float64bits(h))
	}
}

// newPriorSet starts from the uncommitted prior around priorRate (changes
// per second).
func newPriorSet(priorRate float64) *PriorSet {
	s := &PriorSet{}
	s.cur.Store(newPriors(priorRate))
	return s
}

// load is the current Priors.
func (s *PriorSet) load() *Priors { return s.cur.Load() }

func (s *PriorSet) store(p *Priors) { s.cur.Store(p) }

// PathTemplate is the path template of a URL, the finest level of the
// population priors: its first path segment with every run of digits
// collapsed to '#' ("/news/2024/05/x" → "/news/", "/p/17" → "/p/",
// "/item-42" → "/item-#", "/2024/x" → "/#/"). Pages under one template
// tend to change alike: the news against the archive.
func PathTemplate(rawURL string) string {
	s := rawURL
	if i := strings.Index(s, "://"); i >= 0 {
		s = s[i+3:]
	}
	i := strings.IndexByte(s, '/')
	if i < 0 {
		return "/"
	}
	s = s[i+1:]
	end := strings.IndexAny(s, "/?#")
	last := "/"
	if end < 0 {
		end, last = len(s), ""
	} else if s[end] != '/' {
		last = ""
	}
	seg := s[:end]
	var b strings.Builder
	b.Grow(len(seg) + 2)
	b.WriteByte('/')
	digits := false
	for j := 0; j < len(seg); j++ {
		c := seg[j]
		if c >= '0' && c <= '9' {
			if !digits {
				b.WriteByte('#')
			}
			digits = true
			continue
		}
		digits = false
		b.WriteByte(c)
	}
	b.WriteString(last)
	return b.String()
}

// refitInput is what a refit needs of the URLs: a sample of their
// estimator states with their host and template.
type refitInput struct {
	states []estimate.State
	hosts  []string
	tmpls  []string
}

// refit fits new priors from a sample of the collection (docs/design.md
// §3.3): the population's toward the configured start, each host's with
// data toward the population's, each path template's toward its host's.
// Each level is warm-started from the previous fit. It runs in
// PlanJob.Solve, on a snapshot, never under a lock.
func (p *Priors) refit(in refitInput, iters int) *Priors {
	out, fitted := p.fit(in, iters, estimate.FitGridPrior)
	prev := p.model
	if prev == nil {
		prev = &Priors{base: p.base, pop: p.base}
	}
	out.model, _ = prev.fit(in, iters, estimate.FitSilentGridPrior)
	if !fitted {
		return out
	}
	// A refit that moved no prior of the plan materially keeps the
	// version, so that posteriors computed under the previous fit are not
	// recomputed for nothing. The model's priors follow the plan's: a
	// posterior's model is recomputed with its plan (or when its URL is
	// next fetched).
	if !p.movedFrom(out) {
		out.version = p.version
	}
	return out
}

// fitter is estimate.FitGridPrior or estimate.FitSilentGridPrior.
type fitter func(parent, start estimate.GridPrior, states []estimate.State, kappa float64, iters int) (estimate.GridPrior, int, error)

// fit is refit's fit of every level by fit, warm-started from p's, and
// whether the population had data to fit (if not, p's priors are kept).
func (p *Priors) fit(in refitInput, iters int, fit fitter) (*Priors, bool) {
	out := &Priors{version: p.version + 1, base: p.base, hosts: map[string]estimate.GridPrior{}, tmpls: map[groupKey]estimate.GridPrior{}}
	pop, used, err := fit(p.base, p.pop, in.states, kappaPopulation, iters)
	if err != nil || used == 0 {
		out.pop, out.hosts, out.tmpls, out.informed = p.pop, p.hosts, p.tmpls, p.informed
		return out, false
	}
	out.pop, out.informed = pop, used
	byHost := map[string][]int{}
	byTmpl := map[groupKey][]int{}
	for i := range in.states {
		byHost[in.hosts[i]] = append(byHost[in.hosts[i]], i)
		k := groupKey{in.hosts[i], in.tmpls[i]}
		byTmpl[k] = append(byTmpl[k], i)
	}
	pick := func(idx []int) []estimate.State {
		st := make([]estimate.State, len(idx))
		for j, i := range idx {
			st[j] = in.states[i]
		}
		return st
	}
	// A level is worth its own prior only with data enough to move it;
	// with one template a host's prior is its template's, and with one
	// host the population's is the host's.
	const minGroup = 10
	if len(byHost) > 1 {
		for h, idx := range byHost {
			if len(idx) < minGroup {
				continue
			}
			if g, n, err := fit(pop, p.hosts[h], pick(idx), kappaHost, iters); err == nil && n > 0 {
				out.hosts[h] = g
			}
		}
	}
	for k, idx := range byTmpl {
		if len(idx) < minGroup || len(idx) == len(byHost[k.host]) {
			continue
		}
		parent := out.For(k.host, "")
		if g, n, err := fit(parent, p.tmpls[k], pick(idx), kappaTemplate, iters); err == nil && n > 0 {
			out.tmpls[k] = g
		}
	}
	return out, true
}

// priorShift is how far (largest difference of the distribution
// functions at the grid's nodes) a prior must move for the posteriors
// computed under it to be recomputed.
const priorShift = 0.02

// movedFrom reports whether some prior of q differs materially from p's.
func (p *Priors) movedFrom(q *Priors) bool {
	if p.version == 0 || len(p.hosts) != len(q.hosts) || len(p.tmpls) != len(q.tmpls) {
		return true
	}
	if shift(p.pop, q.pop) > priorShift {
		return true
	}
	for h, g := range q.hosts {
		if old, ok := p.hosts[h]; !ok || shift(old, g) > priorShift {
			return true
		}
	}
	for k, g := range q.tmpls {
		if old, ok := p.tmpls[k]; !ok || shift(old, g) > priorShift {
			return true
		}
	}
	return false
}

// shift is the largest difference between the distribution functions of
// two priors on one grid.
func shift(a, b estimate.GridPrior) float64 {
	wa, wb := a.Weights(), b.Weights()
	if len(wa) != len(wb) {
		return 1
	}
	ca, cb, d := 0.0, 0.0, 0.0
	for k := range wa {
		ca += wa[k]
		cb += wb[k]
		d = math.Max(d, math.Abs(ca-cb))
	}
	return d
}

// FitPriors fits the collection's priors (docs/design.md §3.3) to the
// estimator states of its URLs, as the scheduler's plans do, for a caller
// outside the scheduler (freshcrawl plan --data). urls, hosts and states
// are parallel; states with no observation are ignored. It samples at
// most 20 000 states, evenly strided.
func FitPriors(priorRate float64, urls, hosts []string, states []estimate.State) *Priors {
	p := newPriors(priorRate)
	in := refitInput{}
	n := 0
	for _, st := range states {
		if st.Observations() > 0 {
			n++
		}
	}
	stride := max(1, n/refitSample)
	k := 0
	for i, st := range states {
		if st.Observations() <= 0 {
			continue
		}
		if k++; k%stride != 0 {
			continue
		}
		in.states = append(in.states, st)
		in.hosts = append(in.hosts, hosts[i])
		in.tmpls = append(in.tmpls, PathTemplate(urls[i]))
	}
	if len(in.states) == 0 {
		return p
	}
	return p.refit(in, 300)
}

// RateSwitch is what the model freshness needs to weigh a change of a
// URL's rate since its posterior (docs/design.md §3.7, "An honest
// model"): the switch at the collection's hazard h of a rate change (per
// URL per second, CollectionHazard) to a draw from the model's population
// prior, for the Sketches of posteriors under ForModel's priors.
func (p *Priors) RateSwitch(h float64) *estimate.RateSwitch {
	pop := p.pop
	if p.model != nil {
		pop = p.model.pop
	}
	post := pop.Posterior(estimate.State{})
	return estimate.NewRateSwitch(p.grid(), h, post.Sketch(p.grid()))
}
