package bench

import (
	"testing"
	"time"
)

// TestModelAfterFirstPass: the model after a cold start's first full pass
// averages exactly the samples taken from that day on, and says −1 when
// there was no first pass or no sample after it.
func TestModelAfterFirstPass(t *testing.T) {
	day := time.Hour
	var samples []modelSample
	for d := range 10 {
		samples = append(samples, modelSample{at: time.Duration(d) * day, model: float64(d)})
	}
	if got := modelAfter(samples, 6, day); got != (6.0+7+8+9)/4 {
		t.Errorf("after day 6: %v, want the mean of days 6 to 9", got)
	}
	if got := modelAfter(samples, 5.5, day); got != (6.0+7+8+9)/4 {
		t.Errorf("after day 5.5: %v, want the mean of days 6 to 9", got)
	}
	if got := modelAfter(samples, -1, day); got != -1 {
		t.Errorf("no first pass: %v, want -1", got)
	}
	if got := modelAfter(samples, 10, day); got != -1 {
		t.Errorf("first pass after the last sample: %v, want -1", got)
	}
}
