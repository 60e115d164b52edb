package api

import (
	"testing"
	"time"
)

// A coordinator that stepped down closes its series and, when it takes
// its lease back, runs the console again: samples are recorded again and
// the ones before are kept.
func TestSeriesReopensAfterClose(t *testing.T) {
	s := newSeries(time.Second, time.Minute)
	t0 := time.Unix(1000, 0)
	s.add(Overview{Time: t0})
	ch, cancel := s.subscribe()
	s.close()
	if _, ok := <-ch; ok {
		t.Fatal("a subscription outlived close")
	}
	cancel()
	s.add(Overview{Time: t0.Add(time.Second)})
	if n := len(s.snapshot()); n != 1 {
		t.Fatalf("%d samples after a sample while closed, want 1", n)
	}
	s.open()
	s.add(Overview{Time: t0.Add(2 * time.Second)})
	if n := len(s.snapshot()); n != 2 {
		t.Fatalf("%d samples after reopening, want 2 (the old one kept)", n)
	}
}
