package coordinator

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/freshcrawl/freshcrawl/internal/api"
	"github.com/freshcrawl/freshcrawl/internal/schedule"
	"github.com/freshcrawl/freshcrawl/proto"
	"github.com/freshcrawl/freshcrawl/store"
)

// console is the coordinator as the operator's console (internal/api)
// sees it. Each operation writes the store first and then the live
// schedule, through Dispatcher.Do: the dispatcher's lock is never held
// across a store transaction or a NATS call.
type console struct{ c *Coordinator }

var _ api.Backend = console{}

func (k console) Store() *store.DB { return k.c.db }

func (k console) Overview() api.Overview {
	s := k.c.Status()
	return api.Overview{Time: s.Time, Pending: int(s.Queue.Pending), AckPending: s.Queue.AckPending, Redelivered: s.Queue.Redelivered, Unfolded: int(s.Queue.Results),
		InFlight: s.InFlight, MaxInFlight: s.MaxInFlight, URLs: s.URLs, Hosts: s.Hosts, Disallowed: s.Disallowed, Gone: s.Gone, GivenUp: s.GivenUp, Capped: s.CappedHosts,
		Workers: nonNilStrings(s.Workers), Fetches: s.Fetches, Changes: s.Changes, Failed: s.Failed, Errors: s.Errors, Policy: s.Policy, Budget: s.Budget,
		InUse: s.BudgetInUse, Unabsorbed: s.Unabsorbed, Freshness: s.ModelFreshness, FreshnessLo: s.ModelFreshnessLo, FreshnessHi: s.ModelFreshnessHi, Age: s.ModelAge}
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (k console) URLViews(urls []string) map[string]schedule.URLView {
	now := time.Now()
	out := make(map[string]schedule.URLView, len(urls))
	k.c.disp.Do(func(s *schedule.Scheduler) {
		for _, u := range urls {
			if v, ok := s.View(u, now); ok {
				out[u] = v
			}
		}
	})
	return out
}

func (k console) URLsIn(state string) []string {
	var out []string
	k.c.disp.Do(func(s *schedule.Scheduler) { out = s.URLsIn(state, time.Now()) })
	slices.Sort(out) // outside the dispatcher's lock
	return out
}

// hostsChunk is how many URLs the hosts view counts per hold of the
// dispatcher's lock: a fifth of a millisecond's walk.
const hostsChunk = 50_000

func (k console) Hosts() []schedule.HostView {
	var t schedule.HostTally
	for done := false; !done; {
		k.c.disp.Do(func(s *schedule.Scheduler) { done = s.TallyHosts(&t, hostsChunk) })
	}
	var out []schedule.HostView
	k.c.disp.Do(func(s *schedule.Scheduler) { out = s.HostViews(&t) })
	return out
}

func (k console) Captures() []schedule.CaptureStatus {
	var out []schedule.CaptureStatus
	k.c.disp.Do(func(s *schedule.Scheduler) { out = s.CaptureStatus(math.MaxInt) })
	return out
}

func (k console) Probes() []schedule.ProbeStatus { return k.c.probeStatus() }

// opChunk is how many URLs one store transaction of a bulk operation
// takes, so pausing a host of a million URLs is not one huge commit.
const opChunk = 1000

func chunks(urls []string, fn func([]string) error) error {
	for len(urls) > 0 {
		n := min(len(urls), opChunk)
		if err := fn(urls[:n]); err != nil {
			return err
		}
		urls = urls[n:]
	}
	return nil
}

func (k console) Pause(urls []string) (int, error) {
	n := 0
	err := chunks(urls, func(part []string) error {
		recs, err := k.c.db.SetPaused(part, true, time.Now())
		if err != nil {
			return err
		}
		changed := make([]string, len(recs))
		for i, r := range recs {
			changed[i] = r.URL
		}
		k.c.disp.Do(func(s *schedule.Scheduler) { s.Pause(changed) })
		n += len(recs)
		return nil
	})
	if n > 0 {
		k.c.log.Info("URLs paused", "n", n)
	}
	return n, err
}

func (k console) Resume(urls []string) (int, error) {
	n := 0
	err := chunks(urls, func(part []string) error {
		recs, err := k.c.db.SetPaused(part, false, time.Now())
		if err != nil {
			return err
		}
		changed := make([]string, len(recs))
		for i, r := range recs {
			changed[i] = r.URL
		}
		now := time.Now()
		k.c.disp.Do(func(s *schedule.Scheduler) { s.Resume(changed, now) })
		n += len(recs)
		return nil
	})
	if n > 0 {
		k.c.log.Info("URLs resumed", "n", n)
		k.c.disp.Poke()
	}
	return n, err
}

func (k console) SetSeed(urls []string, ch store.SeedChange) (int, error) {
	n := 0
	err := chunks(urls, func(part []string) error {
		recs, err := k.c.db.SetSeed(part, ch)
		if err != nil {
			return err
		}
		k.Adopt(recs) // a known URL keeps its estimate and schedule
		n += len(recs)
		return nil
	})
	return n, err
}

// Adopt adds stored URLs to the live schedule, or updates the seed fields
// of known ones (as seeding does).
func (k console) Adopt(recs []store.URL) {
	now := time.Now()
	k.c.withIDs(recs)
	infos := make([]schedule.URLInfo, len(recs))
	for i, u := range recs {
		infos[i] = info(k.c.withPrior(u))
	}
	var n int
	k.c.disp.Do(func(s *schedule.Scheduler) {
		for _, u := range infos {
			s.Add(u, now)
		}
		n = s.Len()
	})
	k.c.m.urls.Set(float64(n))
	k.c.disp.Poke()
}

// Delete takes URLs off the store (keeping their history unless purge),
// the schedule and the task queue. A task already out for one folds into
// nothing: fold skips URLs the store does not know.
func (k console) Delete(ctx context.Context, urls []string, purge bool) (int, error) {
	var gone []string
	err := chunks(urls, func(part []string) error {
		g, err := k.c.db.Delete(part, purge, time.Now())
		gone = append(gone, g...)
		return err
	})
	if len(gone) == 0 {
		return 0, err
	}
	set := make(map[string]bool, len(gone))
	for _, u := range gone {
		set[u] = true
	}
	var n int
	k.c.disp.Do(func(s *schedule.Scheduler) {
		s.Remove(gone)
		n = s.Len()
	})
	queued := k.c.disp.InFlightOf(gone)
	k.c.m.urls.Set(float64(n))
	k.c.log.Info("URLs deleted", "n", len(gone), "purge", purge)
	if queued > 0 {
		purged, perr := k.c.purgeQueued(ctx, set)
		if perr != nil {
			k.c.log.Warn("take deleted URLs' tasks off the queue", "err", perr)
		} else if purged > 0 {
			k.c.log.Info("deleted URLs' queued tasks removed", "n", purged)
		}
	}
	return len(gone), err
}

// maxQueueScan bounds how many task messages purgeQueued reads; the queue
// holds at most what is in flight, so this is never reached in practice.
const maxQueueScan = 100000

// purgeQueued deletes the task messages of urls still on the task stream
// and releases their in-flight entries, so the URLs' hosts are not held
// until the tasks would be found lost. A task a worker already holds is
// deleted too; its result, if any, folds into nothing.
func (c *Coordinator) purgeQueued(ctx context.Context, urls map[string]bool) (int, error) {
	st, err := c.js.Stream(ctx, proto.TaskStream)
	if err != nil {
		return 0, fmt.Errorf("task stream: %w", err)
	}
	si, err := st.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("task stream info: %w", err)
	}
	first, last := si.State.FirstSeq, si.State.LastSeq
	if last >= first && last-first > maxQueueScan {
		first = last - maxQueueScan
	}
	purged := 0
	now := time.Now()
	for seq := first; seq <= last && si.State.Msgs > 0; seq++ {
		raw, err := st.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return purged, fmt.Errorf("read task %d: %w", seq, err)
		}
		t, err := proto.DecodeTask(raw.Data)
		if err != nil || t.Kind == proto.KindProbe || !urls[t.URL] {
			continue
		}
		if err := st.DeleteMsg(ctx, seq); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
			return purged, fmt.Errorf("delete task %d: %w", seq, err)
		}
		purged++
		c.disp.Release(t.ID, now, now)
	}
	return purged, nil
}

// withPrior gives a URL never estimated the prior's rate, and one without a
// stored standard error its estimator's, so the schedule and the freshness
// band count its uncertainty.
func (c *Coordinator) withPrior(u store.URL) store.URL {
	if u.Rate <= 0 {
		u.Rate = c.opts.PriorRate
	}
	if u.RateSE <= 0 {
		// A record from before errors were stored has its estimator
		// state; a URL never observed has the prior's.
		var st schedule.EstimateState
		if len(u.Estimate) > 0 {
			if err := st.UnmarshalBinary(u.Estimate); err != nil {
				st = schedule.EstimateState{}
			}
		}
		u.RateSE = c.est.RateSE(&st)
	}
	return u
}
