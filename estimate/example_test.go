package estimate_test

import (
	"fmt"

	"github.com/freshcrawl/freshcrawl/estimate"
)

// A page fetched every 6 hours, 20 times, was seen to have changed 8
// times. The naive estimate, changes seen per time watched, cannot tell
// two changes between fetches from one; the bias-reduced one can.
func ExampleRegularInterval() {
	const n, x, interval = 20, 8, 6 * 3600.0
	fmt.Printf("naive:        %.3f changes/day\n", estimate.NaiveRegular(n, x, interval)*86400)
	fmt.Printf("bias-reduced: %.3f changes/day\n", estimate.RegularInterval(n, x, interval)*86400)
	// Output:
	// naive:        1.600 changes/day
	// bias-reduced: 1.979 changes/day
}

// Fetches at irregular intervals (in hours), each of which saw a change or
// not.
func ExampleMLE() {
	obs := []estimate.Observation{
		{Interval: 2, Changed: false},
		{Interval: 12, Changed: true},
		{Interval: 4, Changed: false},
		{Interval: 24, Changed: true},
		{Interval: 6, Changed: true},
		{Interval: 3, Changed: false},
	}
	rate, err := estimate.MLE(obs)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%.4f changes/hour\n", rate)
	// Output:
	// 0.1329 changes/hour
}

// State is the online estimator the scheduler keeps for every URL: it
// takes one fetch at a time, in 112 bytes, and starts from the prior,
// whose pull fades as fetches accumulate.
func ExampleState() {
	cfg := estimate.DefaultConfig()
	prior := estimate.DefaultPrior()
	var s estimate.State
	fmt.Printf("before any fetch: %.3f changes/day\n", s.Rate(prior)*86400)
	const hour = 3600.0
	at := 0.0
	for i := range 24 {
		at += 6 * hour
		// The page changes at every other fetch.
		if err := s.Observe(at, 6*hour, i%2 == 0, cfg); err != nil {
			fmt.Println(err)
			return
		}
	}
	rate, se := s.RateUncertainty(prior)
	fmt.Printf("after 24 fetches: %.3f ± %.3f changes/day\n", rate*86400, se*86400)
	fmt.Printf("without the prior: %.3f changes/day\n", s.Rate(estimate.Prior{})*86400)
	// Output:
	// before any fetch: 0.250 changes/day
	// after 24 fetches: 1.917 ± 0.565 changes/day
	// without the prior: 2.761 changes/day
}
