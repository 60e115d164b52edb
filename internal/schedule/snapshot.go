package schedule

import "github.com/freshcrawl/freshcrawl/estimate"

// copyInput copies into j, made for s's list (Snapshot), the plan's input
// and what the exploration reads of every URL: its rate and error,
// weight, host, model posterior, last fetches and probe session, and
// every host's capacity. It reads s and writes only j.
func (s *Scheduler) copyInput(j *PlanJob) {
	n := len(j.list)
	j.in = PlanInput{
		Budget:  s.o.Budget,
		Rates:   append([]float64(nil), s.rates...),
		Weights: make([]float64, n),
		// Appends never touch the first n elements, so the slice is
		// shared; the cap stops the policy from appending into it.
		Hosts:    s.hosts[:n:n],
		HostCaps: make([]float64, len(s.planHosts)),
	}
	j.blocked = append(bitset(nil), s.blocked...)
	for i, w := range s.weights {
		if !j.blocked.has(i) {
			j.in.Weights[i] = w
		}
	}
	if s.fixed != nil {
		j.fixed = append([]float64(nil), s.fixed...)
	}
	j.rateSE = append([]float32(nil), s.rateSEs...)
	j.models = append([]estimate.Sketch(nil), s.models...)
	j.lastOK = append([]int64(nil), s.lastOK...)
	j.probing = append(bitset(nil), s.probing...)
	j.probes = append([]uint8(nil), s.probes...)
	j.dated = append(bitset(nil), s.dated...)
	j.lastIv = make([]float64, n)
	for i, last := range s.lastOK {
		if g := s.prevGap[i]; last != 0 && g > 0 {
			j.lastIv[i] = float64(g)
		}
	}
	for i, h := range s.planHosts {
		// The cap is what the host can take given its gap (host rate,
		// Crawl-delay) and how long its requests last.
		j.in.HostCaps[i] = h.capacity()
	}
	if j.adaptive {
		j.freq = append([]float64(nil), s.freqs...)
	}
}

// sampleStates is a sample of at most refitSample estimator states of
// URLs with observations, evenly strided over the collection, and with a
// URL source the store ids to read them by in Solve (0: the state is
// copied here; urlIndex.stateID).
func (s *Scheduler) sampleStates() (*refitInput, []uint64) {
	stride := max(1, s.learnt/refitSample)
	m := s.learnt/stride + 1 // about the sample's size: sized once, not doubled
	in := &refitInput{states: make([]estimate.State, 0, m), hosts: make([]string, 0, m), tmpls: make([]string, 0, m)}
	var ids []uint64
	if s.o.URLs != nil {
		ids = make([]uint64, 0, m)
	}
	k := 0
	for _, id := range s.list {
		e := s.front.entry(id)
		if !e.observed() || e.is(flagDisallowed) {
			continue
		}
		if k++; k%stride != 0 {
			continue
		}
		var st estimate.State
		if id := s.front.urls.stateID(e); id != 0 {
			ids = append(ids, id)
		} else {
			st = s.front.ents.state(e)
			if ids != nil {
				ids = append(ids, 0)
			}
		}
		in.states = append(in.states, st)
		in.hosts = append(in.hosts, s.front.hostOf(e).name)
		in.tmpls = append(in.tmpls, s.tmplNames[e.tmpl])
	}
	return in, ids
}
