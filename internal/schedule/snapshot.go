package schedule

import "github.com/freshcrawl/freshcrawl/estimate"

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
