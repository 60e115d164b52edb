package schedule

import (
	"math"
	"sync"
	"time"

	"github.com/freshcrawl/freshcrawl/estimate"
)

// PlanJob is one re-plan, split so that a caller sharing the Scheduler
// under a lock holds the lock only for the cheap steps:
//
//	j := s.Snapshot(now) // locked: copies the plan input, O(n) memcpy
//	err := j.Solve()     // unlocked: runs the policy, the slow part
//	s.Apply(j, now, k)   // locked, repeated until it returns true: sets k intervals a call
//
// URLs added after the snapshot keep their interval until the next plan;
// estimates that move meanwhile count towards the next one (ReplanDue).
// Only one PlanJob of a Scheduler may be in progress at a time.
type PlanJob struct {
	at       time.Time
	policy   Policy
	adaptive bool
	explore  float64
	in       PlanInput
	rateSE   []float32 // per element: the standard error of its rate
	blocked  bitset
	fixed    []float64 // per element: a capture URL's own rate, 0 if planned
	moved    int       // Scheduler.moved at the snapshot
	posts    []estimate.Summary
	models   []estimate.Sketch // the model's posteriors (Scheduler.models), on priors.grid()
	lastOK   []int64
	probing  bitset    // explored by the previous plan
	probes   []uint8   // fetches in each URL's probe session
	dated    bitset    // each URL's Last-Modified is trusted: one fetch dates its last change
	lastIv   []float64 // each URL's last interval between successful fetches, seconds (0: none)
	horizon  float64   // seconds a rate is expected to last (1/hazard)
	halfLife float64   // the estimator's half-life, seconds
	hazard   float64   // rate changes per URL per second
	// list is the scheduler's list at the snapshot (entry ids), element
	// i of the plan. Appends never touch it and Remove builds a new list,
	// so it is shared, not copied; a URL removed meanwhile has pos < 0
	// (its id is not reused until a later plan takes effect).
	list     []uint32
	snapshot uint64 // snapshots made before this one

	// Priors: the current ones, a sample to refit them from (nil: no
	// refit due), and URLs whose posterior is recomputed under the
	// (refitted) priors.
	priors   *Priors
	refit    *refitInput
	resum    []resummary
	newPrior *Priors
	// With a URL source (nil: none), the states the snapshot left to it
	// (stateID ≠ 0) are read in Solve: refitIDs[k] is the store id of
	// refit.states[k] (0: the snapshot copied it), resummary.id the
	// same. On a failed read (stateErr) Apply restores the refit's
	// count (refitSince) and the re-summaries' round robin (resumStart)
	// so that the next plan picks them again.
	states     URLSource
	refitIDs   []uint64
	stateErr   error
	refitSince int
	resumStart int

	out          PlanOutput
	band         freshnessBand
	freq         []float64 // per element, exploration included
	recheckTau   []float64 // per element: a recheck's probe interval (0: none)
	probe        []bool    // per element: probed for what it teaches
	sessionsOver []int     // elements whose probe session ended: resolved
	sat          []bool    // per host: the plan gives it all it can take
	inUse        float64
	next         int // elements applied so far
	// liftGuess is the previous plan's lift, the ratio of exploration's
	// multiplier to the full plan's (exploreByValue's warm start; 0:
	// none), and lift this plan's (0: exploration did not move it).
	liftGuess, lift float64
	// itemsHint is how many items the last exploreItems listed (0:
	// none yet), to size the next list.
	itemsHint int
	around    aroundScratch // planAround's scratch arrays
}

// aroundScratch holds planAround's per-element scratch arrays between the
// evaluations of one plan.
type aroundScratch struct{ weights []float64 }

// reuse returns *buf as n zeros, reallocating it only when it is too short.
func reuse(buf *[]float64, n int) []float64 {
	if cap(*buf) < n {
		*buf = make([]float64, n)
	}
	*buf = (*buf)[:n]
	clear(*buf)
	return *buf
}

// resummary is one URL's posterior to recompute under the priors.
type resummary struct {
	i          int
	seq        uint16
	id         uint64 // store id to read st by (0: st copied by the snapshot)
	st         estimate.State
	host, tmpl string
	post       estimate.Summary
	model      estimate.Sketch
}

// Budgets of the work a plan does on the estimates, so that a re-plan of
// millions of URLs stays cheap: the priors are refitted on a sample, and
// the posteriors of at most resumPerPlan URLs are recomputed per plan
// (the rest follow in later plans, or when they are next fetched).
const (
	refitSample  = 20_000
	resumPerPlan = 20_000
)

// size is the number of URLs the plan covers.
func (j *PlanJob) size() int { return len(j.in.Rates) }

// Output is the policy's plan once solved.
func (j *PlanJob) Output() PlanOutput { return j.out }

// Solve runs the policy over the snapshot. It touches nothing of the
// Scheduler, so it runs without the caller's lock. Before planning it
// refits the priors and recomputes the posteriors picked by the snapshot;
// after, it adds exploration (docs/design.md §3.7).
func (j *PlanJob) Solve() error {
	j.readStates()
	pr := j.resummarise()
	in := j.in
	now := j.at.UnixNano()
	if j.adaptive {
		j.inUse = 0
		for _, f := range j.freq {
			j.inUse += f
		}
		j.out = PlanOutput{Freq: j.freq}
		j.out.Freshness, j.out.Age = modelFreshness(in, j.freq)
		j.out.ModelFreshness = modelNow(in.Weights, j.blocked, j.models, pr.RateSwitch(j.hazard), j.lastOK, now)
		return nil
	}
	// Capture URLs that poll at their own rate take it off the budget
	// and off their host's capacity; the policy shares out the rest
	// among the other URLs.
	in, keep, fixedHost := withoutFixed(in, j.fixed, j.blocked)
	out, err := j.policy.Plan(in)
	if err != nil {
		return err
	}
	// The exploration below works on the planned elements only: a
	// restricted view of the job when capture URLs were taken out.
	ej := j
	if len(keep) != len(j.fixed) {
		ej = j.restricted(keep)
	}
	var freq []float64
	if out.Mu > 0 && !math.IsInf(out.Mu, 1) {
		freq, out, err = ej.exploreByValue(in, out)
		if err != nil {
			return err
		}
	} else {
		freq, out = ej.exploreFloor(in, out)
	}
	sum := withinHostCaps(in, freq)
	if ej != j {
		freq, out.Freq = j.unrestrict(ej, keep, freq, out.Freq)
	}
	// Saturated against the whole capacity: the capture polls' share
	// included, the rest is what the freshness URLs may fill.
	j.sat = make([]bool, len(in.HostCaps))
	for h := range j.sat {
		whole := in.HostCaps[h] + fixedHost[h]
		j.sat[h] = whole > 0 && sum[h]+fixedHost[h] >= 0.98*whole
	}
	j.inUse = 0
	for _, f := range freq {
		if f > 0 {
			j.inUse += f
		}
	}
	// Three passes over every URL that read the plan and write nothing
	// shared: the plan's expected freshness on one core, the model's
	// freshness now and the band on the other. Each sums in element
	// order, so the figures do not depend on the split.
	var wg sync.WaitGroup
	wg.Go(func() { out.Freshness = expectedFreshness(j.in.Weights, j.posts, freq) })
	model := modelNow(j.in.Weights, j.blocked, j.models, pr.RateSwitch(j.hazard), j.lastOK, now)
	band := bandOf(j.in, j.rateSE, out.Freq) // every element: out.Freq is spread back above
	wg.Wait()
	out.ModelFreshness = model
	j.out, j.freq, j.band = out, freq, band
	return nil
}

// resummarise refits the priors when the snapshot took a sample for it,
// and recomputes under them the posteriors the snapshot picked, in the
// job's input; it returns the priors the plan goes on with.
func (j *PlanJob) resummarise() *Priors {
	pr := j.priors
	if j.refit != nil {
		iters := 30
		if pr.revision() == 0 {
			iters = 300
		}
		pr = pr.refit(*j.refit, iters)
		j.newPrior = pr
	}
	for k := range j.resum {
		r := &j.resum[k]
		prior := pr.For(r.host, r.tmpl)
		post := prior.Posterior(r.st)
		r.post = post.Summary()
		r.model = modelSketch(&post, prior, pr.ForModel(r.host, r.tmpl))
		j.posts[r.i], j.models[r.i] = r.post, r.model
		j.in.Rates[r.i] = r.post.Harmonic
	}
	return pr
}

// withinHostCaps scales down the frequencies of the URLs of any host that
// freq pushes past its capacity, as exploration may: a host over it would
// queue and fetch every URL late. It returns each host's sum of freq
// before the scaling.
func withinHostCaps(in PlanInput, freq []float64) []float64 {
	sum := make([]float64, len(in.HostCaps))
	for i, f := range freq {
		sum[in.Hosts[i]] += f
	}
	for i := range freq {
		if h := in.Hosts[i]; sum[h] > in.HostCaps[h] && in.HostCaps[h] > 0 {
			freq[i] *= in.HostCaps[h] / sum[h]
		}
	}
	return sum
}

// unrestrict maps what the exploration of ej, a view of j restricted to
// the elements keep lists (restricted), set back onto all of j's
// elements: the frequencies freq and the plan's planFreq, where the
// planned elements were, the capture URLs at their own rate, and the
// exploration's probes and rechecks.
func (j *PlanJob) unrestrict(ej *PlanJob, keep []int, freq, planFreq []float64) (all, allPlan []float64) {
	n := len(j.fixed)
	all = make([]float64, n)
	for k, f := range freq {
		all[keep[k]] = f
	}
	for i, fx := range j.fixed {
		if fx > 0 && !j.blocked.has(i) {
			all[i] = fx
		}
	}
	allPlan = spread(planFreq, keep, n)
	j.recheckTau = spread(ej.recheckTau, keep, n)
	if ej.probe != nil {
		j.probe = make([]bool, n)
		for k, p := range ej.probe {
			j.probe[keep[k]] = p
		}
	}
	for _, k := range ej.sessionsOver {
		j.sessionsOver = append(j.sessionsOver, keep[k])
	}
	return all, allPlan
}

// readStates reads from the URL source, in one call, the estimator states
// the snapshot left to it (refitIDs, resummary.id). A URL the source no
// longer holds, or whose state it cannot decode, is left out of the
// refit's sample and of the re-summaries (the latter is picked again by
// a later plan: it is still stale). A failed read leaves out all of them
// and the refit, and Apply has the next plan pick them again (stateErr).
func (j *PlanJob) readStates() {
	if j.states == nil {
		return
	}
	// ask[k] is where the k-th id asked goes: the refit sample's element
	// ask[k] when ≥ 0, else the re-summary −ask[k]−1.
	var ids []uint64
	var ask []int
	for k, id := range j.refitIDs {
		if id != 0 {
			ids, ask = append(ids, id), append(ask, k)
		}
	}
	for k := range j.resum {
		if id := j.resum[k].id; id != 0 {
			ids, ask = append(ids, id), append(ask, -k-1)
		}
	}
	if len(ids) == 0 {
		return
	}
	read := make([]bool, len(ids))
	err := j.states.Estimates(ids, func(i int, est []byte) {
		var st EstimateState
		if len(est) > 0 && st.UnmarshalBinary(est) != nil {
			return // unreadable: left out, as if not held
		}
		read[i] = true
		if k := ask[i]; k >= 0 {
			j.refit.states[k] = st.State
		} else {
			j.resum[-k-1].st = st.State
		}
	})
	if err != nil {
		j.stateErr = err
		clear(read)
		j.refit = nil
	}
	keepRefit := make([]bool, len(j.refitIDs))
	keepResum := make([]bool, len(j.resum))
	for k := range keepRefit {
		keepRefit[k] = j.refitIDs[k] == 0
	}
	for k := range keepResum {
		keepResum[k] = j.resum[k].id == 0
	}
	for i, ok := range read {
		if !ok {
			continue
		}
		if k := ask[i]; k >= 0 {
			keepRefit[k] = true
		} else {
			keepResum[-k-1] = true
		}
	}
	if j.refit != nil {
		in := j.refit
		n := 0
		for k, keep := range keepRefit {
			if keep {
				in.states[n], in.hosts[n], in.tmpls[n] = in.states[k], in.hosts[k], in.tmpls[k]
				n++
			}
		}
		in.states, in.hosts, in.tmpls = in.states[:n], in.hosts[:n], in.tmpls[:n]
		if n == 0 {
			j.refit = nil
		}
	}
	n := 0
	for k, keep := range keepResum {
		if keep {
			j.resum[n] = j.resum[k]
			n++
		}
	}
	j.resum = j.resum[:n]
}

// restricted is a copy of j whose per-element arrays hold only the
// elements keep lists (the planned ones), for the exploration of a plan
// made without the capture URLs; what exploration sets on it is mapped
// back by Solve.
func (j *PlanJob) restricted(keep []int) *PlanJob {
	r := *j
	r.posts = make([]estimate.Summary, len(keep))
	r.lastOK = make([]int64, len(keep))
	r.probes = make([]uint8, len(keep))
	r.lastIv = make([]float64, len(keep))
	r.blocked, r.probing, r.dated = j.blocked.pick(keep), j.probing.pick(keep), j.dated.pick(keep)
	for k, i := range keep {
		r.posts[k], r.lastOK[k] = j.posts[i], j.lastOK[i]
		r.probes[k], r.lastIv[k] = j.probes[i], j.lastIv[i]
	}
	r.recheckTau, r.probe, r.sessionsOver = nil, nil, nil
	return &r
}

// withoutFixed returns the plan input without the elements that poll at a
// fixed rate (capture URLs with their own polls), with the budget and each
// host's capacity less those rates; keep maps the returned elements to the
// input's, and fixedHost is each host's fixed rate. With no fixed element
// it returns in itself and keep is the identity (empty for a nil fixed:
// no URL has a fixed rate).
func withoutFixed(in PlanInput, fixed []float64, blocked bitset) (out PlanInput, keep []int, fixedHost []float64) {
	fixedHost = make([]float64, len(in.HostCaps))
	n := 0
	for i, fx := range fixed {
		if fx > 0 && !blocked.has(i) {
			fixedHost[in.Hosts[i]] += fx
			n++
		}
	}
	keep = make([]int, 0, len(fixed)-n)
	for i, fx := range fixed {
		if fx <= 0 || blocked.has(i) {
			keep = append(keep, i)
		}
	}
	if n == 0 {
		return in, keep, fixedHost
	}
	out = PlanInput{
		Rates:    make([]float64, len(keep)),
		Weights:  make([]float64, len(keep)),
		Hosts:    make([]int32, len(keep)),
		HostCaps: make([]float64, len(in.HostCaps)),
		Budget:   in.Budget,
	}
	for k, i := range keep {
		out.Rates[k], out.Weights[k], out.Hosts[k] = in.Rates[i], in.Weights[i], in.Hosts[i]
	}
	for h, c := range in.HostCaps {
		out.HostCaps[h] = math.Max(0, c-fixedHost[h])
		out.Budget -= fixedHost[h]
	}
	out.Budget = math.Max(0, out.Budget)
	return out, keep, fixedHost
}

// spread scatters the per-kept-element xs back to n elements (0 elsewhere).
func spread(xs []float64, keep []int, n int) []float64 {
	if xs == nil {
		return nil
	}
	all := make([]float64, n)
	for k, i := range keep {
		all[i] = xs[k]
	}
	return all
}

// givenUp counts the elements that matter (weight > 0) and get no fetches.
func givenUp(freq, weights []float64) int {
	n := 0
	for i, f := range freq {
		if f <= 0 && weights[i] > 0 {
			n++
		}
	}
	return n
}
