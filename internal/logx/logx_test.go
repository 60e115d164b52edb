package logx

import (
	"bytes"
	"context"
	"log/slog"
	"math"
	"strings"
	"sync"
	"testing"
)

// TestOnChange: a condition checked over and over is logged once, again
// when its state changes, and again after it was cleared.
func TestOnChange(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	var o OnChange
	const msg = "budget exceeds what the hosts can take"
	logged := 0
	for i := range 769 {
		state := "4.2"
		if i >= 500 {
			state = "3.1"
		}
		if o.Log(log, slog.LevelWarn, msg, state, "unabsorbed_per_s", state) {
			logged++
		}
	}
	if logged != 2 || strings.Count(buf.String(), msg) != 2 {
		t.Fatalf("769 checks in two states logged %d times:\n%s", logged, buf.String())
	}
	if !o.Log(log, slog.LevelWarn, "another condition", "4.2") {
		t.Fatal("another message with the same state was not logged")
	}
	if !o.Clear(msg) || o.Clear(msg) {
		t.Fatal("Clear reports whether the message had been logged")
	}
	if !o.Log(log, slog.LevelWarn, msg, "3.1") {
		t.Fatal("a condition that comes back after Clear was not logged")
	}
}

func TestOnChangeConcurrent(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return buf.Write(p) }), nil))
	var o OnChange
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				o.Log(log, slog.LevelWarn, "same", "s")
			}
		}()
	}
	wg.Wait()
	if n := strings.Count(buf.String(), "same"); n != 1 {
		t.Fatalf("logged %d times from 8 goroutines, want once", n)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestCondition: a condition held for many checks logs once, again on a
// material change only, once when it ends, and again when it comes back.
func TestCondition(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	ctx := context.Background()
	// Material: moved by more than a tenth of the figure last logged.
	c := Condition[float64]{Material: func(last, cur float64) bool { return math.Abs(cur-last) > 0.1*last }}
	const start, end = "shortfall", "no shortfall"
	held := []float64{4, 4.1, 3.9, 4.3, 3.7} // within a tenth of 4
	for range 100 {
		for _, v := range held {
			c.Hold(ctx, log, slog.LevelWarn, v, start, "per_s", v)
		}
	}
	if n := strings.Count(buf.String(), "msg="+start); n != 1 {
		t.Fatalf("500 checks of a steady condition logged it %d times:\n%s", n, buf.String())
	}
	if !c.Hold(ctx, log, slog.LevelWarn, 5, start) || c.Hold(ctx, log, slog.LevelWarn, 5.2, start) {
		t.Fatal("a material change must log once, and the next figure is compared with it")
	}
	for range 10 {
		c.End(ctx, log, end)
	}
	if n := strings.Count(buf.String(), "msg=\""+end+"\""); n != 1 {
		t.Fatalf("the end logged %d times:\n%s", n, buf.String())
	}
	if c.Active() || !c.Hold(ctx, log, slog.LevelWarn, 5, start) {
		t.Fatal("a condition that comes back after its end must log again")
	}
	var s Condition[string]
	if !s.Hold(ctx, log, slog.LevelError, "disk full", "fold failed") || s.Hold(ctx, log, slog.LevelError, "disk full", "fold failed") ||
		!s.Hold(ctx, log, slog.LevelError, "read-only", "fold failed") {
		t.Fatal("without Material a condition logs each new state once")
	}
}
