package alloc_test

import (
	"fmt"

	"github.com/freshcrawl/freshcrawl/alloc"
)

// Five pages of equal weight that change 1 to 5 times a day share a budget
// of 5 fetches a day (the paper's Table 5). The optimum is not
// proportional to the rates: the fastest page is given up, because a copy
// of it would be stale almost as soon as it was fetched.
func ExampleSolve() {
	p := alloc.Problem{Budget: 5}
	for rate := 1.0; rate <= 5; rate++ {
		p.Elements = append(p.Elements, alloc.Element{Rate: rate, Weight: 1, Host: -1})
	}
	sol, err := alloc.Solve(p)
	if err != nil {
		fmt.Println(err)
		return
	}
	for i, f := range sol.Freq {
		fmt.Printf("page changing %.0f/day: fetch %.2f/day\n", p.Elements[i].Rate, f)
	}
	fmt.Printf("freshness %.3f, pages given up %d\n", sol.Freshness, sol.GivenUp)
	// Output:
	// page changing 1/day: fetch 1.15/day
	// page changing 2/day: fetch 1.36/day
	// page changing 3/day: fetch 1.35/day
	// page changing 4/day: fetch 1.14/day
	// page changing 5/day: fetch 0.00/day
	// freshness 0.374, pages given up 1
}

// Two hosts, the second with a politeness cap of one fetch a day: its
// pages share that one fetch, and the rest of the budget goes to the
// first host's pages.
func ExampleSolve_hostCaps() {
	p := alloc.Problem{
		Elements: []alloc.Element{
			{Rate: 1, Weight: 1, Host: 0},
			{Rate: 2, Weight: 1, Host: 0},
			{Rate: 1, Weight: 1, Host: 1},
			{Rate: 2, Weight: 1, Host: 1},
		},
		Budget:   4,
		HostCaps: []float64{0, 1}, // host 0 uncapped
	}
	sol, err := alloc.Solve(p)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("fetches/day: %.3f\n", sol.Freq)
	fmt.Printf("capped hosts %d, freshness %.3f\n", sol.CappedHosts, sol.Freshness)
	// Output:
	// fetches/day: [1.348 1.652 0.616 0.384]
	// capped hosts 1, freshness 0.493
}

// The inverse question: how many fetches a day the five pages of the
// paper's Table 5 need for a weighted freshness of 0.5.
func ExampleMinBudgetFor() {
	var p alloc.Problem
	for rate := 1.0; rate <= 5; rate++ {
		p.Elements = append(p.Elements, alloc.Element{Rate: rate, Weight: 1, Host: -1})
	}
	b, err := alloc.MinBudgetFor(p, 0.5)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("budget %.3f fetches/day\n", b)
	// Output:
	// budget 8.322 fetches/day
}
