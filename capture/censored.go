package capture

import (
	"fmt"
	"math"
	"sort"
)

// Poll is one poll of a source in a History: when it happened, whether it
// saw a version newer than the previous poll's, and the exact times of the
// updates since the previous poll when the source tells them (a
// trustworthy Last-Modified gives the last one; a feed's item dates give
// each item's).
type Poll struct {
	At      float64   // seconds
	Changed bool      // a new version since the previous poll
	Exact   []float64 // update times in (previous poll, At], if known
}

// History is a source's polls in time order. Between consecutive polls a
// and b it says either "no update in (a, b]" or "at least one update in
// (a, b]" (censored), or gives the updates' exact times. The first poll
// only opens the record.
type History []Poll

// Validate reports the first poll that is not finite, out of order, or has
// an exact time outside its interval.
func (h History) Validate() error {
	for i, p := range h {
		if !finite(p.At) {
			return invalid("poll %d: time %v is not finite", i, p.At)
		}
		if i > 0 && p.At < h[i-1].At {
			return invalid("poll %d: time %v before the previous poll %v", i, p.At, h[i-1].At)
		}
		for _, x := range p.Exact {
			if !finite(x) || x > p.At || (i > 0 && x <= h[i-1].At) {
				return invalid("poll %d: exact update time %v outside its interval", i, x)
			}
		}
	}
	return nil
}

// Updates counts the polls that saw a change (exact or not).
func (h History) Updates() int {
	n := 0
	for i, p := range h {
		if i > 0 && (p.Changed || len(p.Exact) > 0) {
			n++
		}
	}
	return n
}

// Span is the time from the first poll to the last.
func (h History) Span() float64 {
	if len(h) < 2 {
		return 0
	}
	return h[len(h)-1].At - h[0].At
}

// PhaseHistogram is the learnt update behaviour within one period: Q[k] is
// the expected number of updates in bin k, [k·T/B, (k+1)·T/B), in a
// period (at most 1: bins are narrow, and a source that updates twice in
// one bin loses the first version to any poller).
type PhaseHistogram struct {
	Period float64
	Q      []float64
	// LogLik is the log-likelihood of the history under Q.
	LogLik float64
	// Iterations is how many EM steps were run.
	Iterations int
}

// DefaultBins is the histogram resolution EstimatePhases uses when asked
// for 0 bins: T/240, a quarter of a second for a minute, six minutes for a
// day.
const DefaultBins = 240

// coverage is how much of each bin one interval covers: bin-periods, so a
// bin covered in full once counts 1, an interval longer than T covers
// every bin at least once.
type coverage struct {
	bin []int32
	amt []float64
}

// cover returns the bins (a, b] covers, in periods of T with B bins.
func cover(a, b, T float64, B int) coverage {
	var c coverage
	L := b - a
	if L <= 0 {
		return c
	}
	w := T / float64(B)
	whole := math.Floor(L / T)
	rest := L - whole*T
	amt := make(map[int32]float64)
	if whole > 0 {
		for k := range B {
			amt[int32(k)] += whole
		}
	}
	if rest > 0 {
		s := mod(a, T)
		k := min(B-1, int(s/w)) // unwrapped bin index, see spreadArc
		for x, i := s, 0; x < s+rest && i <= B+1; i++ {
			if hi := math.Min(float64(k+1)*w, s+rest); hi > x {
				amt[int32(k%B)] += (hi - x) / w
				x = hi
			}
			k++
		}
	}
	c.bin = make([]int32, 0, len(amt))
	for k := range amt {
		c.bin = append(c.bin, k)
	}
	sort.Slice(c.bin, func(i, j int) bool { return c.bin[i] < c.bin[j] })
	c.amt = make([]float64, len(c.bin))
	for i, k := range c.bin {
		c.amt[i] = amt[k]
	}
	return c
}

// emData is a History laid out for EM.
type emData struct {
	exposure []float64  // bin-periods observed per bin
	fixed    []float64  // exactly located updates per bin
	censored []coverage // intervals with at least one update, times unknown
}

func prepare(h History, T float64, B int) emData {
	d := emData{exposure: make([]float64, B), fixed: make([]float64, B)}
	w := T / float64(B)
	for i := 1; i < len(h); i++ {
		a, b := h[i-1].At, h[i].At
		c := cover(a, b, T, B)
		for j, k := range c.bin {
			d.exposure[k] += c.amt[j]
		}
		switch {
		case len(h[i].Exact) > 0:
			for _, x := range h[i].Exact {
				d.fixed[min(B-1, int(mod(x, T)/w))]++
			}
		case h[i].Changed:
			d.censored = append(d.censored, c)
		}
	}
	return d
}

// EstimatePhases learns where in the period updates happen from a poll
// history, by expectation–maximisation over a phase histogram of B bins
// (DefaultBins when B is 0). The model: in every period an update happens
// in bin k with mean Q[k] ≤ 1, independently of other bins and periods
// (the paper's recurring updates, §3.1.2, discretised; counted as Poisson
// within a bin, so that a poll inside a bin splits it). A poll interval
// with no change says no bin it covers had an update; one with a change
// says at least one did ("an update happened in (previous poll, this
// poll]"); exact times place an update in its bin. EM's E step spreads
// each censored change over the bins it covers in proportion to their
// expected share of it; its M step sets Q[k] to expected updates over
// bin-periods observed, capped at 1 (a constrained M step, so the
// likelihood still never decreases). Polls that sweep the period (the learning schedule shifts its
// offset every period) pin the phases down: each censored change narrows
// where the update can be, each quiet interval rules a stretch out.
//
// With only exact times it reduces to counting: Q[k] = updates in bin k
// over periods observed.
func EstimatePhases(h History, T float64, B int) (PhaseHistogram, error) {
	return estimatePhases(h, T, B, 0)
}

func estimatePhases(h History, T float64, B, smooth int) (PhaseHistogram, error) {
	if err := checkPeriod(T); err != nil {
		return PhaseHistogram{}, fmt.Errorf("capture: estimate phases: %w", err)
	}
	if B == 0 {
		B = DefaultBins
	}
	if B < 2 || B > 1<<16 {
		return PhaseHistogram{}, invalid("capture: estimate phases: %d bins, must be in [2, %d]", B, 1<<16)
	}
	if err := h.Validate(); err != nil {
		return PhaseHistogram{}, fmt.Errorf("capture: estimate phases: %w", err)
	}
	d := prepare(h, T, B)
	ph := PhaseHistogram{Period: T, Q: make([]float64, B)}
	// Start from the uniform rate: changes over bin-periods observed.
	tot, exp := 0.0, 0.0
	for k := range B {
		tot += d.fixed[k]
		exp += d.exposure[k]
	}
	tot += float64(len(d.censored))
	q0 := 0.5
	if exp > 0 {
		q0 = math.Min(0.5, math.Max(1e-6, tot/exp))
	}
	for k := range ph.Q {
		ph.Q[k] = q0
	}
	counts, tmp, prevQ := make([]float64, B), make([]float64, B), make([]float64, B)
	for it := 1; it <= 200; it++ {
		copy(prevQ, ph.Q)
		copy(counts, d.fixed)
		for _, c := range d.censored {
			// Expected updates in the interval, and given at least one,
			// each bin's expected share.
			lam := 0.0
			for j, k := range c.bin {
				lam += ph.Q[k] * c.amt[j]
			}
			pAny := -math.Expm1(-lam)
			if pAny <= 1e-300 {
				// The current Q says nothing could have happened here:
				// spread the change by coverage alone.
				s := 0.0
				for _, a := range c.amt {
					s += a
				}
				for j, k := range c.bin {
					counts[k] += c.amt[j] / s
				}
				continue
			}
			for j, k := range c.bin {
				counts[k] += ph.Q[k] * c.amt[j] / pAny
			}
		}
		for k := range ph.Q {
			if d.exposure[k] > 0 {
				ph.Q[k] = math.Min(1, counts[k]/d.exposure[k])
			} else {
				ph.Q[k] = q0 // never observed: keep the prior rate
			}
		}
		if smooth > 0 {
			smoothCircular(ph.Q, tmp, smooth)
		}
		ph.Iterations = it
		// Converged when no bin moved by more than 1e-4 of the largest.
		top, moved := 0.0, 0.0
		for k, q := range ph.Q {
			top = math.Max(top, q)
			moved = math.Max(moved, math.Abs(q-prevQ[k]))
		}
		if moved <= 1e-4*top {
			break
		}
	}
	ph.LogLik = logLik(d, ph.Q)
	return ph, nil
}

// logLik is the log-likelihood of the data under q (up to a constant):
// exact updates, quiet intervals (no update), censored changes (at least
// one), with updates in a bin-period a Poisson count of mean q.
func logLik(d emData, q []float64) float64 {
	const tiny = 1e-300
	ll := 0.0
	// Every interval's "no update" term is −Λ, summed through the
	// exposure; exact updates add ln q.
	for k := range q {
		ll += d.fixed[k]*math.Log(math.Max(tiny, q[k])) - q[k]*d.exposure[k]
	}
	for _, c := range d.censored {
		lam := 0.0
		for j, k := range c.bin {
			lam += c.amt[j] * q[k]
		}
		// Replace the interval's "no update" term by "at least one".
		ll += math.Log(math.Max(tiny, -math.Expm1(-lam))) + lam
	}
	return ll
}

// clusters returns the runs of bins whose expected updates stand out (at
// least minQ and a twentieth of the largest, joined across single quiet
// bins), each as unwrapped bin indices (a run across the period's end
// continues past B−1), with the tails holding 2.5 % of the run's mass
// trimmed off.
func (ph PhaseHistogram) clusters(minQ float64) [][]int {
	B := len(ph.Q)
	top := 0.0
	for _, q := range ph.Q {
		top = math.Max(top, q)
	}
	thr := math.Max(minQ, top/20)
	on := make([]bool, B)
	for k, q := range ph.Q {
		on[k] = q >= thr && q > 0
	}
	joined := append([]bool(nil), on...)
	for k := range B {
		if !on[k] && on[(k+B-1)%B] && on[(k+1)%B] {
			joined[k] = true
		}
	}
	start := -1
	for k := range B {
		if !joined[k] {
			start = (k + 1) % B
			break
		}
	}
	if start < 0 {
		if top <= 0 {
			return nil
		}
		all := make([]int, B) // updates everywhere: one cluster
		for k := range all {
			all[k] = k
		}
		return [][]int{all}
	}
	var out [][]int
	for i := 0; i < B; {
		if !joined[(start+i)%B] {
			i++
			continue
		}
		var run []int
		for i < B && joined[(start+i)%B] {
			run = append(run, start+i)
			i++
		}
		for _, bins := range splitAtDips(run, ph.Q) {
			out = append(out, trimTails(bins, ph.Q))
		}
	}
	return out
}

// splitAtDips splits a run of bins (unwrapped indices) between two peaks
// where the histogram falls below half the lower peak: two updates a few
// seconds apart are two clusters even when their tails touch.
func splitAtDips(run []int, q []float64) [][]int {
	B := len(q)
	at := func(i int) float64 { return q[run[i]%B] }
	var out [][]int
	from := 0
	peak := at(0) // highest since from
	for i := 1; i < len(run); i++ {
		peak = math.Max(peak, at(i))
		if at(i) >= at(i-1) || at(i) >= peak/2 {
			continue
		}
		// falling below half the peak: find the valley and the next peak
		v := i
		for v+1 < len(run) && at(v+1) <= at(v) {
			v++
		}
		next := v
		for next+1 < len(run) && at(next+1) >= at(next) {
			next++
		}
		if at(v) < math.Min(peak, at(next))/2 {
			out = append(out, run[from:v+1])
			from, peak = v+1, at(next)
		}
		i = next
	}
	return append(out, run[from:])
}

// trimTails drops the ends of a cluster that hold 2.5 % of its mass each.
func trimTails(bins []int, q []float64) []int {
	B := len(q)
	mass := 0.0
	for _, b := range bins {
		mass += q[b%B]
	}
	lo, hi := 0, len(bins)-1
	for acc := 0.0; lo < hi; lo++ {
		if acc+q[bins[lo]%B] > 0.025*mass {
			break
		}
		acc += q[bins[lo]%B]
	}
	for acc := 0.0; hi > lo; hi-- {
		if acc+q[bins[hi]%B] > 0.025*mass {
			break
		}
		acc += q[bins[hi]%B]
	}
	return bins[lo : hi+1]
}

// nearestCluster maps every bin to the cluster of the nearest core bin
// around the circle (−1 everywhere when there is none).
func nearestCluster(core []int) []int {
	B := len(core)
	out := make([]int, B)
	dist := make([]int, B)
	for k := range out {
		out[k], dist[k] = core[k], B
		if core[k] >= 0 {
			dist[k] = 0
		}
	}
	// two sweeps each way around the circle settle every distance
	for range 2 {
		for k := range 2 * B {
			i, j := k%B, (k+1)%B
			if dist[i]+1 < dist[j] {
				dist[j], out[j] = dist[i]+1, out[i]
			}
		}
		for k := 2*B - 1; k >= 0; k-- {
			i, j := (k+1)%B, k%B
			if dist[i]+1 < dist[j] {
				dist[j], out[j] = dist[i]+1, out[i]
			}
		}
	}
	return out
}

// smoothCircular applies the kernel (1/4, 1/2, 1/4) r times around the
// circle: the S of EMS (Silverman, Jones, Wilson & Nychka 1990), which
// keeps EM on censored data from piling its mass into the narrowest
// stretches every interval shares.
func smoothCircular(q, tmp []float64, r int) {
	B := len(q)
	for range r {
		for k := range q {
			tmp[k] = 0.25*q[(k+B-1)%B] + 0.5*q[k] + 0.25*q[(k+1)%B]
		}
		copy(q, tmp)
	}
}

// wrapHalf maps x into [−T/2, T/2).
func wrapHalf(x, T float64) float64 {
	return mod(x+T/2, T) - T/2
}

// spreadUpdates appends the updates of a cluster of the given mass over
// [a, b] (unwrapped phases).
func spreadUpdates(us []Update, a, b, mass, T float64) []Update {
	k := math.Max(1, math.Ceil(mass-0.15))
	half := math.Min((b-a)/2, T/2*(1-1e-9))
	for range int(k) {
		us = append(us, Update{Phase: mod(a+(b-a)/2, T), Jitter: half, Weight: math.Min(1, mass/k)})
	}
	return us
}

// LearnPolls learns a Pattern for period T from a poll history. The
// shape comes from EstimatePhases (DefaultBins); its clusters of bins are
// the recurring updates. How many updates a cluster holds and how often
// they come is read off the history rather than the histogram's mass
// (which a censored change, "at least one update", leaves unbounded):
// each change is shared among the clusters its interval covers, each
// cluster counted at its chance of having fired at least once given the
// change, P(N_c ≥ 1)/P(N ≥ 1); an exact time counts for its cluster. A
// cluster's weight is its count over the periods the polls observed it.
// A cluster that fires more than 1.15 times a period is that many
// overlapping updates.
func LearnPolls(h History, T float64) (Pattern, PhaseHistogram, error) {
	ph, err := estimatePhases(h, T, 0, 4)
	if err != nil {
		return Pattern{}, PhaseHistogram{}, err
	}
	B := len(ph.Q)
	w := T / float64(B)
	cl := ph.clusters(0.02)
	// core: bin → cluster, −1 outside every cluster; of: bin → the
	// nearest cluster, so that a change's share of the tails below the
	// threshold still counts for the cluster they belong to.
	core := make([]int, B)
	for k := range core {
		core[k] = -1
	}
	for c, bins := range cl {
		for _, b := range bins {
			core[b%B] = c
		}
	}
	of := nearestCluster(core)
	hits := make([]float64, len(cl))
	seen := make([]float64, len(cl)) // bin-periods of each cluster observed
	// Each cluster's range, unwrapped phases [lo, hi); widened below by
	// what the changes it alone explains say of its ends.
	lo, hi := make([]float64, len(cl)), make([]float64, len(cl))
	for c, bins := range cl {
		lo[c], hi[c] = float64(bins[0])*w, float64(bins[len(bins)-1]+1)*w
	}
	// the exact times in each cluster: their range and count
	exLo, exHi, exN := make([]float64, len(cl)), make([]float64, len(cl)), make([]int, len(cl))
	for i := 1; i < len(h); i++ {
		cv := cover(h[i-1].At, h[i].At, T, B)
		for j, k := range cv.bin {
			if c := core[k]; c >= 0 {
				seen[c] += cv.amt[j]
			}
		}
		switch {
		case len(h[i].Exact) > 0:
			for _, x := range h[i].Exact {
				if c := of[min(B-1, int(mod(x, T)/w))]; c >= 0 {
					hits[c]++
					mid := (lo[c] + hi[c]) / 2
					u := mid + wrapHalf(x-mid, T)
					if exN[c] == 0 {
						exLo[c], exHi[c] = u, u
					}
					exLo[c], exHi[c] = math.Min(exLo[c], u), math.Max(exHi[c], u)
					exN[c]++
				}
			}
		case h[i].Changed:
			lamC := make([]float64, len(cl))
			lam := 0.0
			for j, k := range cv.bin {
				x := ph.Q[k] * cv.amt[j]
				lam += x
				if c := of[k]; c >= 0 {
					lamC[c] += x
				}
			}
			if lam <= 0 {
				continue
			}
			pAny := -math.Expm1(-lam)
			for c, l := range lamC {
				if l <= 0 {
					continue
				}
				r := -math.Expm1(-l) / pAny
				hits[c] += r
				if l < 0.95*lam || h[i].At-h[i-1].At >= T/2 {
					continue // another cluster may have made the change
				}
				// The update came after the interval's start and by its
				// end: the cluster reaches at least that late, and at
				// least that early. The EM's histogram, a maximum of the
				// likelihood, puts its mass where the changes' intervals
				// overlap most, narrower than the updates' true spread.
				mid := (lo[c] + hi[c]) / 2
				a := mid + wrapHalf(h[i-1].At-mid, T)
				b := mid + wrapHalf(h[i].At-mid, T)
				hi[c] = math.Max(hi[c], math.Min(a, b))
				lo[c] = math.Min(lo[c], math.Max(b, a))
			}
		}
	}
	for c := range cl {
		if exN[c] >= 2 {
			// m exact times from a window of width W span W·(m−1)/(m+1)
			// on average: widen by a gap at each end, so that a poll at
			// the end of the window does not miss the updates that come a
			// little later than any seen so far.
			gap := (exHi[c] - exLo[c]) / float64(exN[c]-1)
			lo[c], hi[c] = math.Min(lo[c], exLo[c]-gap), math.Max(hi[c], exHi[c]+gap)
		}
	}
	p := Pattern{Period: T}
	for c, bins := range cl {
		periods := seen[c] / float64(len(bins)) // each bin once a period
		if periods <= 0 {
			continue
		}
		rate := hits[c] / periods
		if rate < 0.1 {
			continue
		}
		p.Updates = spreadUpdates(p.Updates, lo[c], math.Min(hi[c], lo[c]+T*(1-1e-9)), rate, T)
	}
	if err := p.Validate(); err != nil {
		return Pattern{}, ph, fmt.Errorf("capture: learn polls: %w", err)
	}
	return p, ph, nil
}

// RefinePeriod sharpens a period found by DetectPeriodRange: it maximises
// the EM log-likelihood of the history's phase histogram (EstimatePhases,
// DefaultBins, a far finer histogram than the search's) over periods
// within ±delta of T, on a grid of 2·steps+1 periods and then a grid ten
// times finer around the best. Over a history of many periods a small
// error in the period becomes a large error in phase, which the coarse
// search cannot see.
func RefinePeriod(h History, T, delta float64, steps int) (float64, error) {
	if err := checkPeriod(T); err != nil {
		return 0, fmt.Errorf("capture: refine period: %w", err)
	}
	if !finite(delta) || delta < 0 || delta >= T || steps < 1 || steps > 1000 {
		return 0, invalid("capture: refine period: delta %v, steps %d", delta, steps)
	}
	best, bestLL := T, math.Inf(-1)
	try := func(x float64) error {
		ph, err := estimatePhases(h, x, 0, 4)
		if err != nil {
			return fmt.Errorf("capture: refine period: %w", err)
		}
		if ph.LogLik > bestLL {
			best, bestLL = x, ph.LogLik
		}
		return nil
	}
	for _, d := range []float64{delta, delta / 10} {
		centre := best
		for k := -steps; k <= steps; k++ {
			x := centre + float64(k)*d/float64(steps)
			if x <= 0 {
				continue
			}
			if err := try(x); err != nil {
				return 0, err
			}
		}
	}
	return best, nil
}
