package bench

import (
	"math"
	"strings"
	"testing"

	"github.com/freshcrawl/freshcrawl/alloc"
)

// oracleWeb is a small web of two hosts, the second capped: rates per day.
func oracleWeb() OracleInput {
	return OracleInput{
		Segments: []RateSegment{{Length: 1, Rates: []float64{0.01, 0.1, 1, 5, 0.3, 0.03}}},
		Weights:  []float64{1, 2, 1, 1, 0.5, 3},
		Hosts:    []int32{0, 0, 0, 1, 1, 1},
		HostCaps: []float64{0, 0.4},
		Fetches:  1.2,
	}
}

// The oracle is the optimum: at least as fresh and at most as old as the
// uniform and proportional allocations of the same fetches under the same
// caps, finite in age even where the freshness optimum gives a page up,
// and averaged over segments by their length.
func TestSolveOracle(t *testing.T) {
	in := oracleWeb()
	orc, err := SolveOracle(in)
	if err != nil {
		t.Fatal(err)
	}
	el := make([]alloc.Element, len(in.Hosts))
	for i := range el {
		el[i] = alloc.Element{Rate: in.Segments[0].Rates[i], Weight: in.Weights[i], Host: in.Hosts[i]}
	}
	p := alloc.Problem{Elements: el, Budget: in.Fetches, HostCaps: in.HostCaps}
	for name, baseline := range map[string]func(alloc.Problem) (alloc.Solution, error){"uniform": alloc.Uniform, "proportional": alloc.Proportional} {
		b, err := baseline(p)
		if err != nil {
			t.Fatal(err)
		}
		if orc.Freshness < b.Freshness-1e-12 || orc.Age > b.Age+1e-12 {
			t.Errorf("oracle freshness %v age %v; %s %v and %v", orc.Freshness, orc.Age, name, b.Freshness, b.Age)
		}
	}
	if sol, _ := alloc.Solve(p); sol.GivenUp == 0 || !math.IsInf(sol.Age, 1) {
		t.Fatalf("the web should make the freshness optimum give up a page: %+v", sol)
	}
	if math.IsInf(orc.Age, 0) || math.IsNaN(orc.Age) || orc.Age <= 0 {
		t.Errorf("oracle age %v", orc.Age)
	}

	// Two segments: the length-weighted mean of their oracles.
	slow := oracleWeb()
	for i := range slow.Segments[0].Rates {
		slow.Segments[0].Rates[i] /= 4
	}
	so, err := SolveOracle(slow)
	if err != nil {
		t.Fatal(err)
	}
	both := oracleWeb()
	both.Segments[0].Length = 1
	both.Segments = append(both.Segments, RateSegment{Length: 3, Rates: slow.Segments[0].Rates}, RateSegment{Length: 0, Rates: []float64{1, 1, 1, 1, 1, 1}})
	bo, err := SolveOracle(both)
	if err != nil {
		t.Fatal(err)
	}
	if want := (orc.Freshness + 3*so.Freshness) / 4; math.Abs(bo.Freshness-want) > 1e-12 {
		t.Errorf("two segments: freshness %v, want %v", bo.Freshness, want)
	}
	if want := (orc.Age + 3*so.Age) / 4; math.Abs(bo.Age-want) > 1e-12 {
		t.Errorf("two segments: age %v, want %v", bo.Age, want)
	}
}

// Every input the oracle cannot solve is an error naming the oracle.
func TestSolveOracleErrors(t *testing.T) {
	cases := map[string]func(*OracleInput){
		"NaN rate":            func(in *OracleInput) { in.Segments[0].Rates[2] = math.NaN() },
		"infinite rate":       func(in *OracleInput) { in.Segments[0].Rates[2] = math.Inf(1) },
		"negative fetches":    func(in *OracleInput) { in.Fetches = -1 },
		"NaN fetches":         func(in *OracleInput) { in.Fetches = math.NaN() },
		"NaN cap":             func(in *OracleInput) { in.HostCaps[1] = math.NaN() },
		"host out of range":   func(in *OracleInput) { in.Hosts[0] = 7 },
		"rates per page":      func(in *OracleInput) { in.Segments[0].Rates = in.Segments[0].Rates[:3] },
		"weights per page":    func(in *OracleInput) { in.Weights = in.Weights[:2] },
		"no segment":          func(in *OracleInput) { in.Segments = nil },
		"window of no length": func(in *OracleInput) { in.Segments[0].Length = 0 },
		"negative length":     func(in *OracleInput) { in.Segments[0].Length = -1 },
	}
	for name, spoil := range cases {
		in := oracleWeb()
		spoil(&in)
		orc, err := SolveOracle(in)
		if err == nil || !strings.Contains(err.Error(), "oracle") {
			t.Errorf("%s: %+v, err %v", name, orc, err)
		}
	}
}
