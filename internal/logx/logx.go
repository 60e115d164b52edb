// Package logx holds the logging helpers freshcrawl's processes share.
package logx

import (
	"context"
	"log/slog"
	"sync"
)

// OnChange logs a condition that holds for a while once, and again only
// when what it reports changes: a warning checked at every re-plan
// ("budget exceeds what the hosts can take") would otherwise fill the log
// with the same line. It is safe for concurrent use; the zero value is
// ready.
type OnChange struct {
	mu   sync.Mutex
	last map[string]string // message → the state last logged
}

// Log logs msg at level with args if state differs from the state last
// logged for msg, and reports whether it did. state is what makes two
// records "the same": round the figures in it to what matters.
func (o *OnChange) Log(log *slog.Logger, level slog.Level, msg, state string, args ...any) bool {
	o.mu.Lock()
	if o.last == nil {
		o.last = map[string]string{}
	}
	prev, seen := o.last[msg]
	if seen && prev == state {
		o.mu.Unlock()
		return false
	}
	o.last[msg] = state
	o.mu.Unlock()
	log.Log(context.Background(), level, msg, args...)
	return true
}

// Clear forgets msg, so that the next Log of it logs, and reports whether
// it had been logged: the caller may then say that the condition ended.
func (o *OnChange) Clear(msg string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, seen := o.last[msg]
	delete(o.last, msg)
	return seen
}
