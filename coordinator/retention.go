package coordinator

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/freshcrawl/freshcrawl/store"
)

// retentionSteps bounds the pruning done per maintenance tick. Each step
// is one short write transaction (store.Pruner), so folds interleave with
// them; a large backlog, as when retention is first turned on, is worked
// off over successive ticks.
const retentionSteps = 4

// retention applies Options.Retention: the pruner is used by the
// maintenance loop only, the counts are read by anyone.
type retention struct {
	pruner            *store.Pruner
	versions, changes atomic.Int64
}

// applyRetention deletes versions and change-log entries that
// Options.Retention no longer allows.
func (c *Coordinator) applyRetention(now time.Time) {
	for range retentionSteps {
		n, done, err := c.prune.pruner.Step(now)
		if err != nil {
			c.cond.retain.Hold(context.Background(), c.log, slog.LevelWarn, err.Error(), "apply retention", "err", err)
			return
		}
		c.cond.retain.End(context.Background(), c.log, "retention applies again")
		if n.Versions > 0 || n.Changes > 0 {
			c.prune.versions.Add(int64(n.Versions))
			c.prune.changes.Add(int64(n.Changes))
			c.m.pruned.WithLabelValues("versions").Add(float64(n.Versions))
			c.m.pruned.WithLabelValues("changes").Add(float64(n.Changes))
			c.log.Debug("retention applied", "versions", n.Versions, "changes", n.Changes)
		}
		if done {
			return
		}
	}
}

// Pruned counts what the retention deleted since the coordinator started.
func (c *Coordinator) Pruned() store.Pruned {
	return store.Pruned{Versions: int(c.prune.versions.Load()), Changes: int(c.prune.changes.Load())}
}
