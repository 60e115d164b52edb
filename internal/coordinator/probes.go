package coordinator

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/freshcrawl/freshcrawl/internal/proto"
	"github.com/freshcrawl/freshcrawl/internal/schedule"
	"github.com/freshcrawl/freshcrawl/internal/source"
	"github.com/freshcrawl/freshcrawl/internal/store"
)

// Keyword-search probes (docs/design.md §3.6, the content-freshness paper). Every round, for each
// source, the coordinator plans keyword queries with probe.GreedyProbes
// over the tracked items (or, as baselines, fetches items by id: Naive 1
// round-robin over all items, Naive 2 only items with λ < 1 per time
// unit), sends them in ascending a_i as one-off requests under the same
// host politeness and robots rules as every page, and folds the items on
// the result pages back into the tracked items.

// sourceState is a keyword-search source as the coordinator runs it: its
// planner, and its definition as it travels with every probe task.
type sourceState struct {
	*schedule.Prober
	def json.RawMessage
}

func newSourceState(src source.Source, policy string, priorRate float64) (*sourceState, error) {
	p, err := schedule.NewProber(src, policy, priorRate)
	if err != nil {
		return nil, err
	}
	wire := *p.Source()
	wire.References = nil // only the planner needs the reference counts
	def, err := json.Marshal(wire)
	if err != nil {
		return nil, fmt.Errorf("source %s: encode definition: %w", src.Name, err)
	}
	return &sourceState{Prober: p, def: def}, nil
}

// probeRounds starts the rounds that are due; the caller holds no lock.
func (c *Coordinator) probeRounds(now time.Time) {
	for _, ss := range c.sources {
		c.mu.Lock()
		due := ss.Due(now)
		c.mu.Unlock()
		if !due {
			continue
		}
		name := ss.Source().Name
		stored, err := c.db.Items(name)
		if err != nil {
			c.log.Error("probe round: read items", "source", name, "err", err)
			continue
		}
		items := make([]schedule.TrackedItem, len(stored))
		for i, it := range stored {
			items[i] = schedule.TrackedItem{ID: it.ID, Attrs: it.Attrs, Rate: it.Rate, LastSync: it.LastSync}
		}
		c.mu.Lock()
		if len(items) == 0 {
			ss.Idle(now)
			c.mu.Unlock()
			continue
		}
		reqs, length, rep, err := ss.Round(items, now)
		if err != nil {
			c.mu.Unlock()
			c.log.Error("probe round", "source", name, "err", err)
			continue
		}
		// Spread the round's requests over its length, in order.
		queued := 0
		for i, r := range reqs {
			u := ss.URL(r)
			at := now.Add(time.Duration(float64(length) * float64(i) / float64(len(reqs))))
			if c.sched.Enqueue(u, ss.Host(), at) {
				c.probes[u] = r
				queued++
			}
		}
		c.mu.Unlock()
		c.m.probeRequests.Add(float64(queued))
		c.m.contentFreshness.WithLabelValues(name).Set(rep.ContentFreshness)
		c.m.coverage.WithLabelValues(name).Set(rep.CoverageRatio)
		c.m.speedup.WithLabelValues(name).Set(rep.SpeedupRatio)
		c.log.Info("probe round", "source", name, "policy", rep.Policy, "items", rep.Items, "queries", rep.Queries,
			"requests", rep.Requests, "by_id", rep.ByID, "coverage", round(rep.CoverageRatio), "speedup", round(rep.SpeedupRatio),
			"content_freshness", round(rep.ContentFreshness), "interval_units", round(rep.Interval))
		c.poke()
	}
}

func round(v float64) float64 { return math.Round(v*1000) / 1000 }

// probeTask is the task of a one-off probe request.
func (c *Coordinator) probeTask(url string, t *proto.Task) bool {
	r, ok := c.probes[url]
	if !ok {
		return false
	}
	ss := c.sourceByName(r.Source)
	if ss == nil {
		return false
	}
	t.Kind = proto.KindProbe
	t.Probe = &proto.ProbeSpec{Source: r.Source, Def: ss.def, Query: r.Query, Page: r.Page, Item: r.Item}
	return true
}

func (c *Coordinator) sourceByName(name string) *sourceState {
	for _, ss := range c.sources {
		if ss.Source().Name == name {
			return ss
		}
	}
	return nil
}

// foldProbe folds a probe result into the tracked items: each item seen
// gets its new value, the dissimilarity of the refresh, its sync time and
// an observation for its change-rate estimate.
func (c *Coordinator) foldProbe(tx *store.Tx, r *proto.Result, ss *sourceState) error {
	at := r.StartedAt
	for _, pi := range r.Items {
		it, found, err := tx.GetItem(ss.Source().Name, pi.ID)
		if err != nil {
			return err
		}
		if !found {
			continue // not tracked: results also show items nobody asked for
		}
		if !it.HasValue {
			// The attributes the item was added with are the first copy.
			it.Value, it.HasValue = ss.Source().Value(it.Attrs)
		}
		newV, ok := ss.Source().Value(pi.Fields)
		if !ok {
			continue
		}
		changed := it.HasValue && newV != it.Value
		if it.HasValue {
			it.Dissimilarity += ss.Source().Dissimilarity(it.Attrs, pi.Fields)
			if !it.LastSync.IsZero() && at.After(it.LastSync) {
				var st schedule.EstimateState
				if len(it.Estimate) > 0 {
					_ = st.UnmarshalBinary(it.Estimate)
				}
				it.Rate = c.est.Observe(&st, schedule.Fetch{At: at, Prev: it.LastSync, Changed: changed})
				it.Estimate, _ = st.MarshalBinary()
			}
		}
		if changed {
			it.Changes++
		}
		if it.Attrs == nil {
			it.Attrs = map[string]string{}
		}
		for k, v := range pi.Fields {
			it.Attrs[k] = v
		}
		it.Value, it.HasValue = newV, true
		it.LastSync = at
		it.Syncs++
		if err := tx.PutItem(it); err != nil {
			return err
		}
	}
	return nil
}

func (c *Coordinator) probeStatus() []schedule.ProbeStatus {
	var out []schedule.ProbeStatus
	for _, ss := range c.sources {
		out = append(out, ss.Status())
	}
	return out
}
