package capture_test

import (
	"fmt"

	"github.com/freshcrawl/freshcrawl/capture"
)

// A feed publishes at 09:00 and 17:30 every day, a few minutes either
// way. DetectPeriod finds the day among the default candidates (an hour,
// a day, a week) from two weeks of update times.
func ExampleDetectPeriod() {
	const hour, day = 3600.0, 86400.0
	var times []float64
	for d := range 14 {
		jitter := float64(d%5-2) * 60 // within ±2 minutes
		times = append(times, float64(d)*day+9*hour+jitter, float64(d)*day+17.5*hour-jitter)
	}
	best, all, err := capture.DetectPeriod(capture.Exact(times), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range all {
		fmt.Printf("period %6.0f s: strength %.3f\n", s.Period, s.Strength)
	}
	fmt.Printf("best: %.0f h\n", best.Period/hour)
	// Output:
	// period   3600 s: strength 0.028
	// period  86400 s: strength 0.485
	// period 604800 s: strength 0.000
	// best: 24 h
}

// With updates at 09:00, 12:00 and 17:30 each day and two polls a day,
// one update must be lost; Plan places the polls to lose only one.
func ExamplePlan() {
	const hour, day = 3600.0, 86400.0
	s, err := capture.Plan([]float64{9 * hour, 12 * hour, 17.5 * hour}, 2, day)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range s.Polls {
		fmt.Printf("poll at %05.2f h\n", p/hour)
	}
	fmt.Printf("expected recall %.3f (%s)\n", s.Expected, s.Strategy)
	// Output:
	// poll at 12.00 h
	// poll at 17.50 h
	// expected recall 0.667 (exhaustive)
}
