package coordinator

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/freshcrawl/freshcrawl/internal/schedule"
	"github.com/freshcrawl/freshcrawl/internal/source"
	"github.com/freshcrawl/freshcrawl/proto"
	"github.com/freshcrawl/freshcrawl/worker/probeparse"
)

// Keyword-search probes (docs/design.md §3.6, the content-freshness paper). Every round, for each
// source, the coordinator plans keyword queries with probe.GreedyProbes
// over the tracked items (or, as baselines, fetches items by id: Naive 1
// round-robin over all items, Naive 2 only items with λ < 1 per time
// unit), sends them in ascending a_i as one-off requests under the same
// host politeness and robots rules as every page, and folds the items on
// the result pages back into the tracked items.

// sourceState is a keyword-search source as the coordinator runs it: its
// planner (guarded by Coordinator.rounds), and its definition as it
// travels with every probe task (fixed).
type sourceState struct {
	*schedule.Prober
	def json.RawMessage
}

func newSourceState(src source.Source, policy string, priorRate float64) (*sourceState, error) {
	if err := schedule.CheckProbePolicy(policy); err != nil {
		return nil, err
	}
	// The planner leaves CSS to the workers' parser, which must accept
	// every selector, or every probe task of the source would fail.
	if err := src.Check(probeparse.CheckSelector); err != nil {
		return nil, err
	}
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

// probeSeen is what one folded probe result taught its source's planner:
// a result page (the total it showed and the ids it listed) or, for a
// fetch by id, that the item's page is gone. The planner learns it at its
// next round, under the rounds lock, so folds never wait on planning.
type probeSeen struct {
	query []string
	page  int
	total int
	ids   []string
	at    time.Time
	gone  string // item id whose page answered 404 or 410
}

// probeLoop starts the probe rounds of keyword-search sources when due.
func (c *Coordinator) probeLoop(ctx context.Context) error {
	every := time.Second
	for _, ss := range c.sources {
		every = min(every, max(ss.Source().TimeUnit/10, 10*time.Millisecond))
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			c.probeRounds(now)
		}
	}
}

// probeRounds starts the rounds that are due. Planning a round holds only
// the rounds lock: folds never wait for it.
func (c *Coordinator) probeRounds(now time.Time) {
	c.rounds.Lock()
	defer c.rounds.Unlock()
	for _, ss := range c.sources {
		if !ss.Due(now) {
			continue
		}
		name := ss.Source().Name
		stored, err := c.db.Items(name)
		if err != nil {
			c.log.Error("probe round: read items", "source", name, "err", err)
			continue
		}
		if len(stored) == 0 {
			ss.Idle(now)
			continue
		}
		items := make([]schedule.TrackedItem, len(stored))
		for i, it := range stored {
			items[i] = schedule.TrackedItem{ID: it.ID, Attrs: it.Attrs, Rate: it.Rate, LastSync: it.LastSync}
		}
		c.probes.Lock()
		seen := c.probes.seen[name]
		delete(c.probes.seen, name)
		c.probes.Unlock()
		for _, o := range seen {
			if o.gone != "" {
				ss.ObserveGone(o.gone)
				continue
			}
			ss.ObserveResults(o.query, o.page, o.total, o.ids, o.at)
		}
		reqs, length, rep, err := ss.Round(items, now)
		if err != nil {
			c.log.Error("probe round", "source", name, "err", err)
			continue
		}
		// Spread the round's requests over its length, in order. A request
		// is recorded before the dispatcher can hand it out.
		queued := 0
		c.probes.Lock()
		c.disp.Do(func(s *schedule.Scheduler) {
			for i, r := range reqs {
				u := ss.URL(r)
				at := now.Add(time.Duration(float64(length) * float64(i) / float64(len(reqs))))
				if s.Enqueue(u, ss.Host(), at) {
					c.probes.reqs[u] = r
					queued++
				}
			}
		})
		c.probes.Unlock()
		c.m.probeRequests.Add(float64(queued))
		c.m.contentFreshness.WithLabelValues(name).Set(rep.ContentFreshness)
		c.m.coverage.WithLabelValues(name).Set(rep.CoverageRatio)
		c.m.speedup.WithLabelValues(name).Set(rep.SpeedupRatio)
		c.log.Info("probe round", "source", name, "policy", rep.Policy, "items", rep.Items, "queries", rep.Queries,
			"requests", rep.Requests, "by_id", rep.ByID, "coverage", round(rep.CoverageRatio), "speedup", round(rep.SpeedupRatio),
			"content_freshness", round(rep.ContentFreshness), "interval_units", round(rep.Interval))
		c.disp.Poke()
	}
}

func round(v float64) float64 { return math.Round(v*1000) / 1000 }

// probeTask makes t the task of a one-off probe request, if its URL is
// one.
func (c *Coordinator) probeTask(t *proto.Task) {
	c.probes.Lock()
	r, ok := c.probes.reqs[t.URL]
	c.probes.Unlock()
	if !ok {
		return
	}
	ss := c.sourceByName(r.Source)
	if ss == nil {
		return
	}
	t.Kind = proto.KindProbe
	t.Probe = &proto.ProbeSpec{Source: r.Source, Def: ss.def, Query: r.Query, Page: r.Page, Item: r.Item}
}

// sourceByName is the source called name (nil if none); c.sources does
// not change after New.
func (c *Coordinator) sourceByName(name string) *sourceState {
	for _, ss := range c.sources {
		if ss.Source().Name == name {
			return ss
		}
	}
	return nil
}

func (c *Coordinator) probeStatus() []schedule.ProbeStatus {
	c.rounds.Lock()
	defer c.rounds.Unlock()
	var out []schedule.ProbeStatus
	for _, ss := range c.sources {
		out = append(out, ss.Status())
	}
	return out
}
