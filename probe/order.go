package probe

import (
	"errors"
	"fmt"
	"math"
	"sort"
)

// Slot is one unit of a refresh loop: a keyword query, or a fetch by id,
// sent in one time slot of length I (paper §4.2: "at each time slot, we
// issue exactly one query"). A Method 1 query's pages are all read in its
// slot.
type Slot struct {
	// Query is the keyword query; the zero Query for a fetch by id.
	Query Query
	// ID is the fetched item for a fetch by id; empty for a query.
	ID string
	// Items is the group g_i synchronised by the slot.
	Items []string
	// WeightRate is Σ_{e∈g_i} w_e·λ_e.
	WeightRate float64
	// A is a_i of paper §4.3 at the interval passed to [Order]:
	// (1/|L|) Σ_{e∈g_i} ½ w_e λ_e I² (λ_e I under ModelCount).
	A float64
	// Requests is the number of requests the slot sends (a Method 1
	// query reads N(q) pages); 0 counts as 1. [RoundFreshness] spreads
	// requests, not slots, over a round.
	Requests int
}

// Order returns a copy of slots sorted for sending, in ascending order of
// a_i = (1/|L|) Σ_{e∈g_i} ½ w_e λ_e I² (paper §4.3, "Greedy Query Order
// Optimization"), with A filled in. Slot i is sent at time x_i·I; the
// expected freshness at the end of the loop, t = kI, is Σ a_i (k − x_i)²
// (Eq. 4), which by the rearrangement inequality is smallest when the
// largest a_i gets the smallest remaining delay, i.e. is sent last. The
// order does not depend on I or |L| (a common factor), only the reported
// A does. Ties keep the input order. numItems is |L|; a non-positive
// numItems or a non-finite interval leaves A zero.
func Order(slots []Slot, numItems int, interval float64, m Model) []Slot {
	out := append([]Slot(nil), slots...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].WeightRate < out[j].WeightRate })
	if numItems > 0 && finite(interval) {
		c := m.delay(interval) / float64(numItems)
		for i := range out {
			out[i].A = out[i].WeightRate * c
		}
	}
	return out
}

// LoopFreshness returns the expected content freshness E[F(L; kI)] at the
// end of a loop that sends the k slots in the given order, slot i (from 1)
// at time iI, with every item last synchronised at the loop start, time
// 0 (paper §4.3 Eq. 4: Σ_i a_i (k − x_i)²; under ModelCount
// Σ_i (1/|L|)Σ w λ (k − x_i) I). Items in no slot are not counted in the
// sum but are in |L| = numItems. Returns 0 for numItems ≤ 0.
func LoopFreshness(slots []Slot, numItems int, interval float64, m Model) float64 {
	if numItems <= 0 {
		return 0
	}
	k := len(slots)
	var s float64
	for i, sl := range slots {
		s += sl.WeightRate * m.delay(float64(k-(i+1))*interval)
	}
	return s / float64(numItems)
}

// RoundFreshness returns the expected content freshness over a round that
// starts at now and sends the slots' requests in the given order, evenly
// spread over its length as the crawler sends them: the j-th of R requests
// (from 0) at now + j·length/R, a slot's items synchronised by its last
// request. Items in no slot keep ageing from their LastSync. With mean
// false it is F(L; now+length) at the round's end: §4.3's E[F(L; kI)]
// (per-request slots of length I = length/R; the paper sends query i at
// the end of slot i rather than at its start) extended to rounds that do
// not reach every item, the usual case under a quota, where the paper's
// loop sum would count only the items the round reaches. With mean true it
// is the time average of F(L; t) over the round, which the §4.3 order
// (stalest group last) does not flatter as it does the end. Items of a
// slot that are not in items are ignored; an item in several slots is
// synchronised by each. Every item of a slot counts as
// synchronised, which under Method 2 (first pages only) is optimistic.
// Returns 0 for no items or, with mean, a non-positive length.
func RoundFreshness(items []Item, slots []Slot, now, length float64, m Model, mean bool) float64 {
	if len(items) == 0 || (mean && !(length > 0)) {
		return 0
	}
	total := 0
	for _, sl := range slots {
		total += max(sl.Requests, 1)
	}
	at := make(map[string][]float64) // sync times of an item, from the round start, ascending
	done := 0
	for _, sl := range slots {
		done += max(sl.Requests, 1)
		x := length * float64(done-1) / float64(total)
		for _, id := range sl.Items {
			at[id] = append(at[id], x)
		}
	}
	var s float64
	for _, it := range items {
		if !(it.Weight > 0) || !(it.Rate > 0) {
			continue
		}
		age := now - it.LastSync // at the round's start
		xs := at[it.ID]
		var v float64
		switch {
		case !mean && len(xs) > 0:
			v = m.delay(length - xs[len(xs)-1])
		case !mean:
			v = m.delay(age + length)
		default:
			// Piecewise: ageing from the last sync before the round, then
			// from each sync in it.
			from, prev := age, 0.0
			for _, x := range xs {
				v += m.delayIntegral(from, from+x-prev)
				from, prev = 0, x
			}
			v = (v + m.delayIntegral(from, from+length-prev)) / length
		}
		if w := it.Weight * it.Rate * v; !math.IsNaN(w) {
			s += w
		}
	}
	return s / float64(len(items))
}

// Criterion says what "freshness stays below α" means for
// [Plan.FindInterval].
type Criterion int

const (
	// CriterionAbsolute requires E[F(L; kI)] ≤ α: the expected content
	// freshness at the end of a loop stays at or below α. This is the
	// default.
	CriterionAbsolute Criterion = iota
	// CriterionPaper is §4.4 verbatim: g(x̃, I) = E[F(L; kI)] / (kI|L|) ≤ α,
	// freshness relative to the kI|L| the paper takes as the cost of not
	// refreshing at all over the loop. Since Eq. 3 already divides by |L|,
	// g carries 1/|L|² as in the paper's displayed formula.
	CriterionPaper
)

// IntervalOptions configure the §4.4 interval search.
type IntervalOptions struct {
	// Start is I_0; 0 means 1 (the paper's "simple choice").
	Start float64
	// RelTol stops the bisection once hi − lo ≤ RelTol·hi; 0 means 1e-9.
	RelTol float64
	// MaxSteps bounds doublings/halvings and bisection steps each; 0 means
	// 2000 (enough to span the whole float64 range).
	MaxSteps int
	// Criterion selects the threshold test; see [Criterion].
	Criterion Criterion
}

// ErrUnbounded reports that freshness stays below α for every interval
// the search tried: nothing in the plan goes stale, so there is no finite
// largest interval.
var ErrUnbounded = errors.New("probe: freshness never exceeds alpha: no finite largest interval")

// FindInterval returns the largest interval I (within relative tolerance)
// with freshness(I) ≤ alpha, for a freshness function non-decreasing in I,
// by the paper's §4.4 procedure: starting from I_0, double (or halve)
// until the threshold is bracketed, g(2^{s−1}I_0) ≤ α < g(2^s I_0), then
// bisect. The result I satisfies freshness(I) ≤ alpha and
// freshness(I·(1+RelTol)) > alpha for monotone functions.
//
// It returns ErrUnbounded when no tried interval exceeds alpha, and an
// error when alpha or the options are invalid or even the smallest
// representable interval exceeds alpha.
func FindInterval(freshness func(interval float64) float64, alpha float64, opt IntervalOptions) (float64, error) {
	if freshness == nil {
		return 0, errors.New("probe: freshness: nil function")
	}
	if !(alpha > 0) || math.IsInf(alpha, 0) {
		return 0, fmt.Errorf("probe: alpha: must be finite and positive, got %v", alpha)
	}
	i0 := opt.Start
	if i0 == 0 {
		i0 = 1
	}
	if !(i0 > 0) || math.IsInf(i0, 0) {
		return 0, fmt.Errorf("probe: IntervalOptions.Start: must be finite and positive, got %v", opt.Start)
	}
	tol := opt.RelTol
	if tol == 0 {
		tol = 1e-9
	}
	if !(tol > 0) || tol >= 1 {
		return 0, fmt.Errorf("probe: IntervalOptions.RelTol: must be in (0,1), got %v", opt.RelTol)
	}
	steps := opt.MaxSteps
	if steps == 0 {
		steps = 2000
	}
	if steps < 0 {
		return 0, fmt.Errorf("probe: IntervalOptions.MaxSteps: must be ≥ 0, got %d", opt.MaxSteps)
	}
	ok := func(x float64) bool { return freshness(x) <= alpha } // NaN counts as too stale
	var lo, hi float64
	if ok(i0) {
		lo, hi = i0, 2*i0
		for n := 0; ; n++ {
			if n >= steps || math.IsInf(hi, 0) {
				return 0, ErrUnbounded
			}
			if !ok(hi) {
				break
			}
			lo, hi = hi, 2*hi
		}
	} else {
		lo, hi = i0/2, i0
		for n := 0; !ok(lo); n++ {
			if n >= steps || lo == 0 {
				return 0, fmt.Errorf("probe: freshness exceeds alpha=%v even for interval %v", alpha, lo)
			}
			lo, hi = lo/2, lo
		}
	}
	for n := 0; n < steps && hi-lo > tol*hi; n++ {
		mid := lo + (hi-lo)/2
		if mid <= lo || mid >= hi {
			break
		}
		if ok(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, nil
}

// RoundLength is §4.4's search applied to a round: the largest length in
// [minLength, maxLength] with freshness(length) ≤ alpha, for a freshness
// non-decreasing in the length such as [RoundFreshness] (at the end, or
// its mean over the round with the request fractions fixed): doubling from
// minLength until alpha is bracketed, then bisection to a relative relTol
// (0 means 1e-6). minLength is the shortest round the request budget
// allows, so when even it exceeds alpha the answer is minLength (the
// budget, not alpha, binds); when nothing goes stale by maxLength the
// answer is maxLength. Errors name an invalid argument.
func RoundLength(freshness func(length float64) float64, alpha, minLength, maxLength, relTol float64) (float64, error) {
	switch {
	case freshness == nil:
		return 0, errors.New("probe: RoundLength: nil freshness function")
	case !(alpha > 0) || math.IsInf(alpha, 0):
		return 0, fmt.Errorf("probe: RoundLength: alpha must be finite and positive, got %v", alpha)
	case !(minLength > 0) || math.IsInf(minLength, 0):
		return 0, fmt.Errorf("probe: RoundLength: minLength must be finite and positive, got %v", minLength)
	case !(maxLength >= minLength) || math.IsInf(maxLength, 0):
		return 0, fmt.Errorf("probe: RoundLength: maxLength must be finite and ≥ minLength %v, got %v", minLength, maxLength)
	}
	if relTol == 0 {
		relTol = 1e-6
	}
	if !(freshness(minLength) <= alpha) {
		return minLength, nil
	}
	if freshness(maxLength) <= alpha {
		return maxLength, nil
	}
	capped := func(l float64) float64 {
		if l >= maxLength {
			return math.Inf(1) // beyond the cap: treat as too stale
		}
		return freshness(l)
	}
	l, err := FindInterval(capped, alpha, IntervalOptions{Start: minLength, RelTol: relTol})
	if err != nil {
		return 0, err
	}
	return l, nil
}

// FindInterval returns the largest query interval I for which the plan's
// slots, sent in [Order] (§4.3), keep the expected freshness within alpha
// under opt.Criterion (§4.4). Every slot is assumed to be sent once per
// loop of k = len(p.Slots) slots.
func (p Plan) FindInterval(alpha float64, opt IntervalOptions) (float64, error) {
	if opt.Criterion != CriterionAbsolute && opt.Criterion != CriterionPaper {
		return 0, fmt.Errorf("probe: IntervalOptions.Criterion: unknown criterion %d", int(opt.Criterion))
	}
	if !p.Model.valid() {
		return 0, fmt.Errorf("probe: Plan.Model: unknown model %d", int(p.Model))
	}
	if p.Items <= 0 || len(p.Slots) == 0 {
		return 0, ErrUnbounded
	}
	ordered := Order(p.Slots, p.Items, 1, p.Model)
	k := float64(len(ordered))
	f := func(I float64) float64 {
		v := LoopFreshness(ordered, p.Items, I, p.Model)
		if opt.Criterion == CriterionPaper {
			v /= k * I * float64(p.Items)
		}
		return v
	}
	return FindInterval(f, alpha, opt)
}
