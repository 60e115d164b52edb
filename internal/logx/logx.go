// Package logx holds the logging helpers freshcrawl's processes share.
package logx

import (
	"context"
	"log/slog"
	"sync"
)

// Condition logs a condition that persists (a plan that cannot be met, a
// store that refuses writes, a stream that is full) once when it starts,
// once when it changes materially and once when it ends, however often it
// is checked: a loop that logged it at every tick would bury every other
// line. It is safe for concurrent use; the zero value is ready, and
// logs a new state whenever it differs from the one last logged.
type Condition[S comparable] struct {
	// Material reports whether cur differs enough from last, the state
	// last logged, to log again; nil means whenever cur != last. Each
	// condition defines "materially" here, because only it knows which
	// changes an operator needs to hear about.
	Material func(last, cur S) bool

	mu     sync.Mutex
	active bool
	last   S
}

// Hold reports that the condition holds in state cur: it logs msg at
// level with args when the condition starts or its state changes
// materially from the one last logged, and reports whether it did.
func (c *Condition[S]) Hold(ctx context.Context, log *slog.Logger, level slog.Level, cur S, msg string, args ...any) bool {
	c.mu.Lock()
	if c.active && !c.material(c.last, cur) {
		c.mu.Unlock()
		return false
	}
	c.active, c.last = true, cur
	c.mu.Unlock()
	log.Log(ctx, level, msg, args...)
	return true
}

// End reports that the condition does not hold: it logs msg at Info with
// args if the condition had been logged as holding, and reports whether
// it did.
func (c *Condition[S]) End(ctx context.Context, log *slog.Logger, msg string, args ...any) bool {
	c.mu.Lock()
	was := c.active
	var zero S
	c.active, c.last = false, zero
	c.mu.Unlock()
	if was {
		log.Log(ctx, slog.LevelInfo, msg, args...)
	}
	return was
}

// holding reports whether the condition was last logged as holding.
func (c *Condition[S]) holding() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.active
}

func (c *Condition[S]) material(last, cur S) bool {
	if c.Material == nil {
		return last != cur
	}
	return c.Material(last, cur)
}
