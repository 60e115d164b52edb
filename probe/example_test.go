package probe_test

import (
	"fmt"

	"github.com/freshcrawl/freshcrawl/probe"
)

// Four tracked papers, refreshed through a search that returns 10 results
// a page. One query for the shared author reaches three of them in one
// request; the fourth is left to a fetch by id.
func ExampleGreedyProbes() {
	items := []probe.Item{
		{ID: "p1", Keywords: []string{"cho", "freshness"}, Weight: 1, Rate: 0.2},
		{ID: "p2", Keywords: []string{"cho", "crawler"}, Weight: 1, Rate: 0.1},
		{ID: "p3", Keywords: []string{"cho", "estimating"}, Weight: 1, Rate: 0.3},
		{ID: "p4", Keywords: []string{"ashish", "capture"}, Weight: 1, Rate: 0.1},
	}
	// The server holds 8 results for "cho" and 40 for "ashish": what the
	// search pages would show as totals.
	totals := map[string]float64{"cho": 8, "ashish": 40}
	counts := probe.CounterFunc(func(q probe.Query, local int) float64 {
		if n, ok := totals[q.String()]; ok {
			return n
		}
		return float64(local) * probe.DefaultLocalRatio
	})
	plan, err := probe.GreedyProbes(items, 10, probe.Options{K: 10, Quota: 1, Counts: counts})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, q := range plan.Queries {
		fmt.Printf("query %q: %d request(s), reaches %v\n", q.Query, q.Requests, q.Group)
	}
	fmt.Printf("fetch by id: %v\n", plan.Fallback)
	fmt.Printf("content freshness before %.3f, after the queries %.3f (lower is fresher)\n", plan.Report.FreshnessBefore, plan.Report.FreshnessAfterQueries)
	// Output:
	// query "cho": 1 request(s), reaches [p1 p2 p3]
	// fetch by id: [p4]
	// content freshness before 8.750, after the queries 1.250 (lower is fresher)
}
