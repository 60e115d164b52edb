package logx

import (
	"bytes"
	"context"
	"log/slog"
	"math"
	"strings"
	"testing"
)

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
	if c.holding() || !c.Hold(ctx, log, slog.LevelWarn, 5, start) {
		t.Fatal("a condition that comes back after its end must log again")
	}
	var s Condition[string]
	if !s.Hold(ctx, log, slog.LevelError, "disk full", "fold failed") || s.Hold(ctx, log, slog.LevelError, "disk full", "fold failed") ||
		!s.Hold(ctx, log, slog.LevelError, "read-only", "fold failed") {
		t.Fatal("without Material a condition logs each new state once")
	}
}
