package bench

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/freshcrawl/freshcrawl/lab/sim"
)

// The workloads whose change times the bench generates itself (histModel)
// and serves through sim.Scripted: non-stationary, clustered and grouped
// pages, as real change histories are (docs/benchmarks.md, "Workloads that
// look like the web").
const (
	workloadBursty    = "bursty"
	workloadClustered = "clustered"
	workloadGroups    = "groups"
	workloadWebHist   = "webhist"
	workloadMixedHist = "mixed-hist"
)

// histSpan is the stretch of simulated days over which deaths and host
// freezes are drawn: the six years of the replayed real histories. It is
// fixed, not the run's length, so a longer run extends the same histories.
const histSpan = 6 * 365.0

// histBurn is how long before the epoch a history starts, so that the
// pages are in a steady mix of phases and renewal cycles at day 0.
const histBurn = 3000.0

// histModel is how a generated workload's change times are drawn. Pages
// are put in groups within a host; each group draws one change process
// and every member changes at exactly its times.
type histModel struct {
	// share of each host's pages that follow the model; the rest are
	// Table 6 Poisson singletons that send a true Last-Modified
	// (mixed-hist). 0 is read as 1.
	share float64
	group groupShape
	proc  procShape
	// noLM: the model's pages send an ETag and no Last-Modified.
	noLM bool
}

// groupShape is the distribution of group sizes.
type groupShape struct {
	// single is the probability that a group is one page (1: no groups).
	single float64
	// A group of two or more has 2 + ⌊X⌋ pages, X Pareto with tail index
	// alpha and scale scale (P(X > x) = (scale/(scale+x))^alpha, a Lomax),
	// at most maxSize and what is left of the host's pages.
	alpha, scale float64
	maxSize      int
	// mirror is the share of the groups of two or more whose members serve
	// one body (the same source under several names); the others only
	// change at the same times (a section and its articles, a template).
	mirror float64
}

// procShape is a group's change process.
type procShape struct {
	// table6: the group changes at one rate all along, a Table 6 class
	// (exact counts over the groups, in a seeded order); else burst.
	table6 bool
	burst  burstShape
	// sigma is the log-normal σ of the intervals between changes within a
	// stretch of constant rate (a renewal process with that mean); 0:
	// exponential intervals, a Poisson process.
	sigma float64
	// sizeExp scales a group's rates by its size to this power: a part
	// shared by more pages collects more edits.
	sizeExp float64
}

// burstShape is a non-stationary process: busy phases (weeks to months,
// frequent changes) alternate with quiet ones (years, rare or no
// changes), each phase drawing its own length and rate.
type burstShape struct {
	// busyDays and quietDays are the medians of the phases' lengths in
	// days, log-normal with σ busyDaysSigma and quietDaysSigma.
	busyDays, busyDaysSigma, quietDays, quietDaysSigma float64
	// busyRate is the median rate of a busy phase in changes a day,
	// log-normal with σ busyRateSigma; quietRate and quietRateSigma the
	// same for a quiet phase that changes at all (quietOff of them do
	// not).
	busyRate, busyRateSigma, quietRate, quietRateSigma, quietOff float64
	// die is the share of groups that go quiet for good at a time uniform
	// over histSpan, and freeze the share of hosts all of whose pages do
	// (an archived site).
	die, freeze float64
}

// history is a generated workload: every page's change times in days, and
// which pages change together.
type history struct {
	changes [][]float64
	// bodyOf is the page whose body each page serves (itself, or a
	// mirror's source); group is each page's group (pages of one group
	// share their change times).
	bodyOf, group []int
	// lm is each page's Last-Modified mode (nil: every page true).
	lm []sim.LastModifiedMode
	// frozen are the hosts frozen at once, and when.
	frozen map[int]float64
}

// newHistModel is the model of the named generated workload (nil for the
// Poisson workloads).
func newHistModel(name string) *histModel {
	// About two thirds of the pages in groups of two or more: four groups
	// in five are single pages, the others 2 + a Lomax(2.5, 9) of pages
	// (median 5, one in ten above 13), at most 40.
	groups := groupShape{single: 0.8, alpha: 2.5, scale: 9, maxSize: 40, mirror: 0.3}
	singles := groupShape{single: 1}
	switch name {
	case workloadBursty:
		// Busy for weeks to months at a change every few days, then
		// quiet for years, half of the quiet phases without a change.
		return &histModel{group: singles, proc: procShape{burst: burstShape{
			busyDays: 45, busyDaysSigma: 0.8, quietDays: 540, quietDaysSigma: 0.7,
			busyRate: 0.25, busyRateSigma: 0.8, quietRate: 1.0 / 180, quietRateSigma: 0.7, quietOff: 0.5,
			die: 0.2, freeze: 0.2,
		}}}
	case workloadClustered:
		return &histModel{group: singles, proc: procShape{table6: true, sigma: 1.7}}
	case workloadGroups:
		return &histModel{group: groups, proc: procShape{table6: true}}
	case workloadWebHist, workloadMixedHist:
		// Calibrated to the statistics of real histories (issue 30): a
		// group's clock runs about a year at a time 30 times faster than
		// in the quiet phases between (about 15 months), four quiet phases
		// in five without any change; log-normal intervals of σ 1.8 on
		// that clock; a group's pace grows as its size to the power 0.6.
		m := &histModel{group: groups, noLM: true, proc: procShape{sigma: 1.8, sizeExp: 0.6, burst: burstShape{
			busyDays: 365, busyDaysSigma: 0.8, quietDays: 450, quietDaysSigma: 0.7,
			busyRate: 0.004, busyRateSigma: 0.4, quietRate: 0.004 / 30, quietRateSigma: 0.4, quietOff: 0.8,
			die: 0.2, freeze: 0.2,
		}}}
		if name == workloadMixedHist {
			m.share = 0.5
		}
		return m
	}
	return nil
}

// generate draws the histories of pages pages on hosts hosts (page i on
// host i mod hosts, as the sim places them) up to horizon days. Every
// draw comes from seed, and a group's or page's from a stream of its own,
// so the same arguments give the same web and a longer horizon extends it.
func (m *histModel) generate(pages, hosts int, horizon float64, seed uint64) history {
	rng := rand.New(rand.NewPCG(seed, 0x68697374)) // "hist"
	h := history{changes: make([][]float64, pages), bodyOf: make([]int, pages), group: make([]int, pages)}
	if m.noLM {
		h.lm = make([]sim.LastModifiedMode, pages)
	}
	h.frozen = m.frozenHosts(rng, hosts)
	share := m.share
	if share <= 0 {
		share = 1
	}
	// Each host's pages in a seeded order: the first share of them follow
	// the model, in groups of consecutive pages of that order.
	var groups [][]int
	var poisson []int
	for host := range hosts {
		var own []int
		for i := host; i < pages; i += hosts {
			own = append(own, i)
		}
		rng.Shuffle(len(own), func(a, b int) { own[a], own[b] = own[b], own[a] })
		nm := int(math.Round(share * float64(len(own))))
		poisson = append(poisson, own[nm:]...)
		for rest := own[:nm]; len(rest) > 0; {
			k := min(m.group.size(rng), len(rest))
			groups = append(groups, rest[:k])
			rest = rest[k:]
		}
	}
	var classes []float64
	if m.proc.table6 {
		classes = table6Rates(rng, len(groups))
	}
	for g, members := range groups {
		slices.Sort(members)
		first := members[0]
		// The group's own draws come first, its change times last, so
		// that a longer horizon only adds changes at the end.
		grng := rand.New(rand.NewPCG(seed^0x67726f7570, uint64(first))) // "group"
		mirror := len(members) > 1 && grng.Float64() < m.group.mirror
		dies := grng.Float64() < m.proc.burst.die
		death := grng.Float64() * histSpan
		var times []float64
		if m.proc.table6 {
			rate := classes[g] * math.Pow(float64(len(members)), m.proc.sizeExp)
			// Twenty mean intervals at least before the epoch: a renewal
			// process far from Poisson takes several to forget its start.
			times = renewal(grng, rate, m.proc.sigma, -max(histBurn, 20/rate), horizon)
		} else {
			times = m.proc.bursty(grng, len(members), horizon)
		}
		if dies {
			times = cut(times, death)
		}
		if at, ok := h.frozen[first%hosts]; ok {
			times = cut(times, at)
		}
		for _, i := range members {
			h.changes[i] = slices.Clone(times)
			h.group[i], h.bodyOf[i] = first, i
			if mirror {
				h.bodyOf[i] = first
			}
			if h.lm != nil {
				h.lm[i] = sim.LMNone
			}
		}
	}
	slices.Sort(poisson)
	rates := table6Rates(rng, len(poisson))
	for k, i := range poisson {
		prng := rand.New(rand.NewPCG(seed^0x706f6973736f6e, uint64(i))) // "poisson"
		h.changes[i] = renewal(prng, rates[k], 0, 0, horizon)
		h.group[i], h.bodyOf[i] = i, i
		if h.lm != nil {
			h.lm[i] = sim.LMTrue
		}
	}
	return h
}

// frozenHosts picks round(freeze × hosts) hosts and the day each freezes.
func (m *histModel) frozenHosts(rng *rand.Rand, hosts int) map[int]float64 {
	out := map[int]float64{}
	if m.proc.table6 {
		return out
	}
	n := int(math.Round(m.proc.burst.freeze * float64(hosts)))
	for _, host := range rng.Perm(hosts)[:n] {
		out[host] = rng.Float64() * histSpan
	}
	return out
}

// size draws a group's size.
func (g groupShape) size(rng *rand.Rand) int {
	if rng.Float64() < g.single {
		return 1
	}
	x := g.scale * (math.Pow(1-rng.Float64(), -1/g.alpha) - 1)
	return 2 + int(math.Min(x, float64(g.maxSize-2)))
}

// table6Rates are n rates in changes a day with Table 6's shares (exact
// counts by largest remainder), in a seeded order.
func table6Rates(rng *rand.Rand, n int) []float64 {
	mix := sim.Table6Mix()
	counts := make([]int, len(mix))
	type rem struct {
		k int
		r float64
	}
	var rems []rem
	total := 0
	for k, c := range mix {
		exact := c.Share * float64(n)
		counts[k] = int(exact)
		total += counts[k]
		rems = append(rems, rem{k, exact - float64(counts[k])})
	}
	slices.SortStableFunc(rems, func(a, b rem) int { return -cmpFloat(a.r, b.r) })
	for j := 0; total < n; j++ {
		counts[rems[j%len(rems)].k]++
		total++
	}
	out := make([]float64, 0, n)
	for k, c := range counts {
		for range c {
			out = append(out, mix[k].Rate)
		}
	}
	rng.Shuffle(n, func(a, b int) { out[a], out[b] = out[b], out[a] })
	return out
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// bursty draws the change times of a group of size pages over
// (0, horizon). Phases from histBurn days before the epoch alternate busy
// and quiet, each with its own length and rate; the changes are a renewal
// process (intervals log-normal with σ sigma and mean 1, or exponential)
// on a clock that runs at the phase's rate, so a burst carries on across a
// phase's end and only its pace changes. The phases and the changes draw
// from streams of their own.
func (p procShape) bursty(rng *rand.Rand, size int, horizon float64) []float64 {
	b := p.burst
	mult := math.Pow(float64(size), p.sizeExp)
	prng := rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64()))
	logn := func(median, sigma float64) float64 { return median * math.Exp(sigma*prng.NormFloat64()) }
	type phase struct{ from, to, rate float64 }
	var phases []phase
	busy := prng.IntN(2) == 0
	for t := -histBurn; t < horizon; busy = !busy {
		ph := phase{from: t}
		if busy {
			ph.to, ph.rate = t+logn(b.busyDays, b.busyDaysSigma), logn(b.busyRate, b.busyRateSigma)*mult
		} else {
			ph.to = t + logn(b.quietDays, b.quietDaysSigma)
			if prng.Float64() >= b.quietOff {
				ph.rate = logn(b.quietRate, b.quietRateSigma) * mult
			}
		}
		phases = append(phases, ph)
		t = ph.to
	}
	var out []float64
	clock := 0.0 // the renewal clock at the start of the current phase
	next := p.interval(rng)
	for _, ph := range phases {
		end := clock + ph.rate*(ph.to-ph.from)
		for ; next < end; next += p.interval(rng) {
			t := ph.from + (next-clock)/ph.rate
			if t >= horizon {
				return out
			}
			if t > 0 {
				out = append(out, t)
			}
		}
		clock = end
	}
	return out
}

// interval is one interval of a renewal process of rate 1: log-normal
// with σ sigma and mean 1, or exponential when sigma is 0.
func (p procShape) interval(rng *rand.Rand) float64 {
	if p.sigma > 0 {
		return math.Exp(p.sigma*rng.NormFloat64() - p.sigma*p.sigma/2)
	}
	return rng.ExpFloat64()
}

// renewal draws the change times in (max(from, 0), to) of a renewal
// process that starts at from with rate changes a day: intervals
// log-normal with σ sigma and mean 1/rate, or exponential when sigma is 0
// (a Poisson process).
func renewal(rng *rand.Rand, rate, sigma, from, to float64) []float64 {
	if !(rate > 0) {
		return nil
	}
	mean := 1 / rate
	var out []float64
	for t := from; ; {
		if sigma > 0 {
			t += mean * math.Exp(sigma*rng.NormFloat64()-sigma*sigma/2)
		} else {
			t += mean * rng.ExpFloat64()
		}
		if t >= to {
			return out
		}
		if t > 0 {
			out = append(out, t)
		}
	}
}

// cut drops the times at or after at.
func cut(times []float64, at float64) []float64 {
	k, _ := slices.BinarySearch(times, at)
	return times[:k]
}

// scripted is h as the sim serves it, each page reporting its mean rate
// over [from, to) days (the measured window: there is no single true rate
// of a page whose rate changes).
func (h history) scripted(from, to float64) *sim.Scripted {
	sc := &sim.Scripted{Changes: h.changes, BodyOf: h.bodyOf, LastModified: h.lm, RatePerDay: make([]float64, len(h.changes))}
	for i, ch := range h.changes {
		lo, _ := slices.BinarySearch(ch, from)
		hi, _ := slices.BinarySearch(ch, to)
		sc.RatePerDay[i] = float64(hi-lo) / (to - from)
	}
	return sc
}

// simConfig is the sim of w under o (its size, seed and length), a
// simulated day lasting day: w's Poisson mix, or the histories w.hist
// generates up to a tenth past the run (a live run starts a little after
// the sim), each page reporting its mean rate over the measured window.
func (w Workload) simConfig(o Options, day time.Duration) sim.Config {
	cfg := sim.Config{Hosts: o.Hosts, Pages: o.Pages, Mix: w.Mix, Day: day, Seed: o.Seed, LastModified: w.LastModified,
		Signals: sim.Signals{Sitemap: o.Sitemap}}
	if w.hist != nil {
		h := w.hist.generate(o.Pages, o.Hosts, 1.1*o.Days+10, o.Seed)
		cfg.Mix, cfg.Scripted = nil, h.scripted(o.Warmup, o.Days)
	}
	return cfg
}
