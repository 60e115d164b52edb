package testutil

import (
	"context"
	"sync"
	"testing"
)

// Run runs run (a coordinator's, a dispatcher's, a worker's Run) in a
// goroutine until the returned stop is called or the test ends. stop
// cancels run's context, waits for it to return and fails the test,
// naming what, on its error; calling it again does nothing.
func Run(tb testing.TB, what string, run func(context.Context) error) (stop func()) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				tb.Errorf("%s: %v", what, err)
			}
		})
	}
	tb.Cleanup(stop)
	return stop
}
