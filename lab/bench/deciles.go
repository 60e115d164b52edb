package bench

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/freshcrawl/freshcrawl/alloc"
	"github.com/freshcrawl/freshcrawl/lab/sim"
)

// Decile is one tenth of the pages of a rate segment of the measured
// window, ordered by true rate, with what the run gave them against what
// the full-budget oracle gives them: the diagnostic that shows where a
// policy loses to the oracle (`freshcrawl bench policies --deciles`).
type Decile struct {
	// Segment is the rate segment (0 unless the workload drifts), Days its
	// length in the window.
	Segment int
	Days    float64
	// RateLo and RateHi bound the true rates of the decile's pages, in
	// changes per simulated day.
	RateLo, RateHi float64
	// Fetches and OracleFetches are fetches per page per simulated day.
	Fetches, OracleFetches float64
	// Freshness and OracleFreshness are the decile's mean freshness over
	// the segment (weighted where the workload has weights): the run's
	// truth, and the oracle's fixed-order freshness at its frequencies.
	Freshness, OracleFreshness float64
	// Unfetched counts the pages the run never fetched in the segment and
	// OracleGivenUp those the oracle gives up.
	Unfetched, OracleGivenUp int
	// Loss is the decile's part of the freshness the run lost to the
	// full-budget oracle over the whole window: the rows of a run sum to
	// FullOracle − Freshness.
	Loss float64
}

// deciles computes the Decile rows of a virtual run's window [from, end)
// at the configured budget.
func deciles(w Workload, ts *truthSet, pages []vpage, o Options, from, end time.Duration) ([]Decile, error) {
	daySec := o.Day.Seconds()
	in := ts.oracleInput(w, o, from, end, o.Budget)
	total := 0.0
	for _, sg := range in.Segments {
		total += sg.Length
	}
	var wsum float64
	for i := range pages {
		wsum += w.weight(i)
	}
	var out []Decile
	seg := 0
	for si, tsg := range ts.segments {
		lo, hi := max(tsg.from, from), min(tsg.to, end)
		if hi <= lo {
			continue
		}
		sg := in.Segments[seg]
		el := make([]alloc.Element, len(pages))
		for i := range el {
			el[i] = alloc.Element{Rate: sg.Rates[i], Weight: w.weight(i), Host: in.Hosts[i]}
		}
		sol, err := alloc.Solve(alloc.Problem{Elements: el, Budget: in.Fetches, HostCaps: in.HostCaps})
		if err != nil {
			return nil, fmt.Errorf("bench: deciles: segment %d: %w", si, err)
		}
		days := (hi - lo).Seconds() / daySec
		order := make([]int, len(pages))
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(a, b int) int {
			switch {
			case sg.Rates[a] < sg.Rates[b]:
				return -1
			case sg.Rates[a] > sg.Rates[b]:
				return 1
			}
			return 0
		})
		for d := range 10 {
			part := order[d*len(order)/10 : (d+1)*len(order)/10]
			if len(part) == 0 {
				continue
			}
			row := Decile{Segment: seg, Days: days, RateLo: sg.Rates[part[0]], RateHi: sg.Rates[part[len(part)-1]]}
			var ws float64
			for _, i := range part {
				wt := w.weight(i)
				pt := sim.IntegratePage(ts.pages[i].changes, pages[i].fetches, lo, hi, nil)
				fresh := pt.Freshness / (hi - lo).Seconds()
				orc := alloc.FixedOrder.Freshness(sg.Rates[i], sol.Freq[i])
				row.Fetches += float64(pt.Fetches) / days
				row.OracleFetches += sol.Freq[i]
				row.Freshness += wt * fresh
				row.OracleFreshness += wt * orc
				ws += wt
				if pt.Fetches == 0 {
					row.Unfetched++
				}
				if sol.Freq[i] <= 0 {
					row.OracleGivenUp++
				}
				row.Loss += wt * (orc - fresh) * sg.Length / total
			}
			n := float64(len(part))
			row.Fetches /= n
			row.OracleFetches /= n
			row.Freshness /= ws
			row.OracleFreshness /= ws
			row.Loss /= wsum
			out = append(out, row)
		}
		seg++
	}
	return out, nil
}

// WriteDeciles prints a run's Decile rows (nothing if it has none).
func WriteDeciles(w io.Writer, r Result) error {
	if len(r.Deciles) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\n%s on %s, by decile of the true rate (fetches per page per day; loss = its part of the freshness lost to the full-budget oracle):\n", r.Policy, r.Workload)
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "segment\trates/day\tfetches\toracle\tfreshness\toracle\tunfetched\toracle gives up\tloss\t")
	for _, d := range r.Deciles {
		fmt.Fprintf(tw, "%d\t%.3g–%.3g\t%.4f\t%.4f\t%.4f\t%.4f\t%d\t%d\t%+.4f\t\n",
			d.Segment, d.RateLo, d.RateHi, d.Fetches, d.OracleFetches, d.Freshness, d.OracleFreshness, d.Unfetched, d.OracleGivenUp, d.Loss)
	}
	return tw.Flush()
}
