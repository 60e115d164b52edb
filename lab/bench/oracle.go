package bench

import (
	"errors"
	"fmt"
	"time"

	"github.com/freshcrawl/freshcrawl/alloc"
	"github.com/freshcrawl/freshcrawl/lab/sim"
)

// RateSegment is a stretch of a measured window over which every page's
// true change rate is constant.
type RateSegment struct {
	// Length is how much of the window the segment covers, in any unit:
	// the oracle weighs the segments by it.
	Length float64
	// Rates are the true change rates by page index.
	Rates []float64
}

// OracleInput is what the oracle is computed from. Rates, host caps and
// fetches are per the same unit of time, and the age comes out in it.
type OracleInput struct {
	// Segments of the window, one when the rates do not drift.
	Segments []RateSegment
	// Weights are the importance weights by page index (nil: all 1).
	Weights []float64
	// Hosts are the host of each page, an index into HostCaps.
	Hosts []int32
	// HostCaps are the most fetches per unit of time of each host (≤ 0 or
	// +Inf: no cap).
	HostCaps []float64
	// Fetches is the fetch rate the crawler achieved in the window.
	Fetches float64
}

// Oracle is the best any crawler could have done with the same number of
// fetches, knowing the true rates.
type Oracle struct {
	// Freshness is the optimum of docs/design.md §3.2 (the freshness
	// objective) with the true rates and the host caps, averaged over the
	// segments by their length.
	Freshness float64
	// Age is the least age any allocation of the same fetches achieves (the
	// age objective's optimum), averaged likewise. The freshness optimum
	// gives up on pages that change too fast, so its own age is unbounded.
	Age float64
}

// SolveOracle computes the oracle: the optimal allocation with the true
// rates and the host caps at in.Fetches, for each rate segment, averaged
// over the segments by length. Every benchmark and the demo compare with
// this one function. An input the allocation rejects, or a window of no
// length, is an error: an oracle is never silently zero.
func SolveOracle(in OracleInput) (Oracle, error) {
	n := len(in.Hosts)
	if in.Weights != nil && len(in.Weights) != n {
		return Oracle{}, fmt.Errorf("bench: oracle: %d weights for %d pages", len(in.Weights), n)
	}
	var out Oracle
	total := 0.0
	for si, sg := range in.Segments {
		if len(sg.Rates) != n {
			return Oracle{}, fmt.Errorf("bench: oracle: segment %d: %d rates for %d pages", si, len(sg.Rates), n)
		}
		if !(sg.Length >= 0) {
			return Oracle{}, fmt.Errorf("bench: oracle: segment %d: length %v", si, sg.Length)
		}
		if sg.Length == 0 {
			continue
		}
		el := make([]alloc.Element, n)
		for i := range el {
			el[i] = alloc.Element{Rate: sg.Rates[i], Weight: 1, Host: in.Hosts[i]}
			if in.Weights != nil {
				el[i].Weight = in.Weights[i]
			}
		}
		p := alloc.Problem{Elements: el, Budget: in.Fetches, HostCaps: in.HostCaps}
		fresh, err := alloc.Solve(p)
		if err != nil {
			return Oracle{}, fmt.Errorf("bench: oracle: segment %d: freshness: %w", si, err)
		}
		p.Objective = alloc.Age
		age, err := alloc.Solve(p)
		if err != nil {
			return Oracle{}, fmt.Errorf("bench: oracle: segment %d: age: %w", si, err)
		}
		out.Freshness += sg.Length * fresh.Freshness
		out.Age += sg.Length * age.Age
		total += sg.Length
	}
	if total == 0 {
		return Oracle{}, errors.New("bench: oracle: the window has no length")
	}
	out.Freshness /= total
	out.Age /= total
	return out, nil
}

// SimOracleInput is the oracle input of a sim whose rates do not drift:
// one segment with the true rates of pages (as sim.Sim.Pages returns them)
// per unit of time, and each page's host. The caller sets the weights, the
// host caps and the fetch rate in the same unit.
func SimOracleInput(pages []sim.PageInfo, unit time.Duration) OracleInput {
	in := OracleInput{Segments: []RateSegment{{Length: 1, Rates: make([]float64, len(pages))}}, Hosts: make([]int32, len(pages))}
	for i, p := range pages {
		in.Segments[0].Rates[i] = p.Rate * unit.Seconds()
		in.Hosts[i] = int32(p.HostIndex)
	}
	return in
}
