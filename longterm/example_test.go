package longterm_test

import (
	"fmt"

	"github.com/freshcrawl/freshcrawl/longterm"
)

// A page that changes once a day, worth 10 per day while the stored copy
// is correct, costs 1 per fetch. Optimal gives the refresh interval that
// earns the most net of the fetches.
func ExampleOptimal() {
	r, err := longterm.Optimal(1, 10, 1, longterm.Exponential)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("refresh every %.3f days (%.3f fetches/day)\n", r.Interval, r.Rate())
	fmt.Printf("freshness %.3f, net income %.3f/day\n", r.Freshness, r.NetIncome)
	// Output:
	// refresh every 0.532 days (1.880 fetches/day)
	// freshness 0.776, net income 5.875/day
}

// Plan sums the optima of several pages into the fetch rate to provision.
// The third page changes so fast that no refresh pays for itself.
func ExamplePlan() {
	s, err := longterm.Plan([]longterm.Element{
		{Rate: 0.1, Benefit: 10, Cost: 1},
		{Rate: 1, Benefit: 10, Cost: 1},
		{Rate: 20, Benefit: 10, Cost: 1},
	}, longterm.Exponential)
	if err != nil {
		fmt.Println(err)
		return
	}
	for i, r := range s.Results {
		fmt.Printf("page %d: interval %.3f, futile %v\n", i, r.Interval, r.Futile)
	}
	fmt.Printf("budget %.3f fetches/day, net income %.3f/day, futile %d\n", s.TotalBudget, s.NetIncome, s.Futile)
	// Output:
	// page 0: interval 1.486, futile false
	// page 1: interval 0.532, futile false
	// page 2: interval +Inf, futile true
	// budget 2.554 fetches/day, net income 14.495/day, futile 1
}
