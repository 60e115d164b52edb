package schedule

import (
	"math"
	"testing"
	"time"
)

const day = 24 * time.Hour

func near(a, b time.Duration) bool { return (a - b).Abs() <= time.Millisecond }

// TestNutchRule checks the port against Nutch ≥ 1.13's
// AdaptiveFetchSchedule and CrawlDbReducer, case by case. (An earlier
// version of this test encoded the pre-1.13 rule, under which a changed
// page kept its Last-Modified as modifiedTime, so sync_delta could raise
// a changed page's interval; since 1.13 a modified page's modifiedTime is
// the fetch time.)
func TestNutchRule(t *testing.T) {
	p := NewNutch(day)
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name        string
		st          adaptiveState
		fb          Feedback
		want        adaptiveState
		wantDueFrom time.Duration // due − start
	}{
		{"first fetch leaves the interval", adaptiveState{Interval: 30 * day}, Feedback{Start: start, OK: true, First: true}, adaptiveState{Interval: 30 * day, Modified: start}, 30 * day},
		{"changed ×0.8, modified now", adaptiveState{Interval: 10 * day}, Feedback{Start: start, OK: true, Changed: true}, adaptiveState{Interval: 8 * day, Modified: start}, 8 * day},
		{"unchanged ×1.4", adaptiveState{Interval: 10 * day}, Feedback{Start: start, OK: true}, adaptiveState{Interval: 14 * day, Modified: start}, 14 * day},
		{"304 is unchanged", adaptiveState{Interval: 10 * day}, Feedback{Start: start, OK: true, NotModified: true}, adaptiveState{Interval: 14 * day, Modified: start}, 14 * day},
		// Unchanged, last modified 20 days back (its Last-Modified):
		// delta 20 > 14 days, so the interval becomes 20 days and the
		// fetch is pulled 0.3×20 = 6 days earlier.
		{"sync_delta raises interval", adaptiveState{Interval: 10 * day}, Feedback{Start: start, OK: true, LastModified: start.Add(-20 * day)}, adaptiveState{Interval: 20 * day, Modified: start.Add(-20 * day)}, 14 * day},
		// The stored modifiedTime serves when the server sends none.
		{"stored modifiedTime", adaptiveState{Interval: 10 * day, Modified: start.Add(-5 * day)}, Feedback{Start: start, OK: true}, adaptiveState{Interval: 14 * day, Modified: start.Add(-5 * day)}, 12*day + 12*time.Hour},
		// Changed: modifiedTime is the fetch time whatever the header
		// says, so sync_delta neither raises nor shifts.
		{"changed ignores Last-Modified", adaptiveState{Interval: 10 * day}, Feedback{Start: start, OK: true, Changed: true, LastModified: start.Add(-9 * day)}, adaptiveState{Interval: 8 * day, Modified: start}, 8 * day},
		{"clamp to min 60s", adaptiveState{Interval: 50 * time.Second}, Feedback{Start: start, OK: true, Changed: true}, adaptiveState{Interval: time.Minute, Modified: start}, time.Minute},
		// 70 × 1.4 = 98 days > db.fetch.interval.max (90 days): forced
		// refetch at once, interval 81 days, signature cleared.
		{"interval.max forces a refetch", adaptiveState{Interval: 70 * day}, Feedback{Start: start, OK: true}, adaptiveState{Interval: 81 * day, Reset: true}, 0},
		// After a forced refetch the next fetch is STATUS_UNKNOWN.
		{"after the forced refetch", adaptiveState{Interval: 81 * day, Reset: true}, Feedback{Start: start, OK: true, Changed: true}, adaptiveState{Interval: 81 * day, Modified: start}, 81 * day},
		{"future Last-Modified ignored", adaptiveState{Interval: 10 * day}, Feedback{Start: start, OK: true, LastModified: start.Add(day)}, adaptiveState{Interval: 14 * day, Modified: start}, 14 * day},
		{"failure retried in a day", adaptiveState{Interval: 10 * day}, Feedback{Start: start}, adaptiveState{Interval: 10 * day}, day},
	}
	for _, c := range cases {
		got, due := p.Next(c.st, c.fb)
		if !near(got.Interval, c.want.Interval) || !got.Modified.Equal(c.want.Modified) || got.Reset != c.want.Reset || !near(due.Sub(start), c.wantDueFrom) {
			t.Errorf("%s: got %+v due +%v, want %+v due +%v", c.name, got, due.Sub(start), c.want, c.wantDueFrom)
		}
	}
	if p.Initial() != 30*day {
		t.Errorf("initial %v, want 30 days", p.Initial())
	}
	// A sequence from the first fetch: unchanged, unchanged, changed.
	st := adaptiveState{Interval: p.Initial()}
	st, _ = p.Next(st, Feedback{Start: start, OK: true, First: true})
	for _, ch := range []bool{false, false, true} {
		st, _ = p.Next(st, Feedback{Start: start, OK: true, Changed: ch})
	}
	if want := time.Duration(float64(30*day) * 1.4 * 1.4 * 0.8); !near(st.Interval, want) {
		t.Errorf("sequence: %v, want %v", st.Interval, want)
	}
	// A page that never changes cycles: 81 days, ×1.4 beyond 90, forced
	// refetch, 81 days again: it is never left alone longer than that.
	st = adaptiveState{Interval: 81 * day}
	for range 6 {
		var due time.Time
		st, due = p.Next(st, Feedback{Start: start, OK: true})
		if due.Sub(start) > 90*day {
			t.Fatalf("steady page due +%v, beyond db.fetch.interval.max", due.Sub(start))
		}
	}
	// Scaled: a simulated day of one second scales every bound.
	s := NewNutch(time.Second)
	if !near(s.Min, time.Second*60/86400) || s.Max != 365*time.Second || s.Default != 30*time.Second || s.RefetchMax != 90*time.Second {
		t.Errorf("scaled bounds %v %v %v %v", s.Min, s.Max, s.Default, s.RefetchMax)
	}
}

func TestStormCrawlerRule(t *testing.T) {
	p := NewStormCrawler(day)
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	next := func(iv time.Duration, fb Feedback) (time.Duration, time.Time) {
		st, due := p.Next(adaptiveState{Interval: iv}, fb)
		return st.Interval, due
	}
	iv, due := next(10*time.Hour, Feedback{Start: start, OK: true, Changed: true})
	if !near(iv, 5*time.Hour+30*time.Minute) || !near(due.Sub(start), iv) {
		t.Errorf("changed: %v due +%v, want 5h30m", iv, due.Sub(start))
	}
	if iv, _ = next(2*day, Feedback{Start: start, OK: true}); !near(iv, 3*day) {
		t.Errorf("unchanged: %v, want 3 days", iv)
	}
	if iv, _ = next(2*day, Feedback{Start: start, OK: true, NotModified: true}); !near(iv, 3*day) {
		t.Errorf("304: %v, want 3 days", iv)
	}
	if iv, _ = next(10*day, Feedback{Start: start, OK: true}); !near(iv, 14*day) {
		t.Errorf("cap: %v, want 14 days", iv)
	}
	// Repeated changes converge to the minimum, one hour.
	iv = p.Initial()
	for range 40 {
		iv, _ = next(iv, Feedback{Start: start, OK: true, Changed: true})
	}
	if !near(iv, time.Hour) {
		t.Errorf("changes converge to %v, want 1h", iv)
	}
	if _, due = next(day, Feedback{Start: start}); !near(due.Sub(start), 2*time.Hour) {
		t.Errorf("error retry +%v, want 2h", due.Sub(start))
	}
}

func lambdaInput() PlanInput {
	in := PlanInput{Budget: 6, HostCaps: []float64{math.Inf(1)}}
	for i, r := range []float64{0.1, 0.5, 1, 2, 5, 50} {
		in.Rates = append(in.Rates, r)
		in.Weights = append(in.Weights, 1+float64(i%2))
		in.Hosts = append(in.Hosts, 0)
	}
	return in
}

func sum(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s
}

func TestLambdaCrawlBudgetAndMonotone(t *testing.T) {
	blc, err := NewBinaryLambdaCrawl(0.3)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []*LambdaPolicy{blc, newLambdaCrawl()} {
		in := lambdaInput()
		out, err := p.Plan(in)
		if err != nil {
			t.Fatal(err)
		}
		if s := sum(out.Freq); math.Abs(s-in.Budget) > 1e-9 {
			t.Errorf("%s: Σρ = %v, want %v", p.Name(), s, in.Budget)
		}
		// More weight never means fewer fetches.
		for i := range in.Rates {
			hi := in
			hi.Weights = append([]float64(nil), in.Weights...)
			hi.Weights[i] *= 2
			o2, _ := p.Plan(hi)
			if o2.Freq[i] < out.Freq[i]-1e-12 {
				t.Errorf("%s: doubling weight of %d lowered ρ %v → %v", p.Name(), i, out.Freq[i], o2.Freq[i])
			}
		}
	}
	// ε floor: the page changing 50 times a unit is not worth fetching
	// under BinaryLambdaCrawl, so it sits exactly at ε·R/n.
	out, _ := blc.Plan(lambdaInput())
	if floor := 0.3 * 6 / 6; math.Abs(out.Freq[5]-floor) > 1e-9 {
		t.Errorf("floor: ρ = %v, want %v", out.Freq[5], floor)
	}
	for _, f := range out.Freq {
		if f < 0.3-1e-9 {
			t.Errorf("ρ %v below the floor", f)
		}
	}
	// LambdaCrawl: ρ increases with Δ at equal weights.
	in := PlanInput{Budget: 3, Rates: []float64{0.1, 1, 10, 100}, Weights: []float64{1, 1, 1, 1}, Hosts: []int32{0, 0, 0, 0}, HostCaps: []float64{0}}
	lc, _ := newLambdaCrawl().Plan(in)
	for i := 1; i < len(lc.Freq); i++ {
		if lc.Freq[i] <= lc.Freq[i-1] {
			t.Errorf("LambdaCrawl not increasing in Δ: %v", lc.Freq)
		}
	}
	if _, err := NewBinaryLambdaCrawl(1); err == nil {
		t.Error("ε = 1 accepted")
	}
}

func TestLambdaCrawlHostCaps(t *testing.T) {
	in := PlanInput{Budget: 4, HostCaps: []float64{0.5, 10}}
	for i := range 8 {
		in.Rates = append(in.Rates, 1+float64(i))
		in.Weights = append(in.Weights, 1)
		in.Hosts = append(in.Hosts, int32(i%2))
	}
	blc, _ := NewBinaryLambdaCrawl(0.1)
	for _, p := range []*LambdaPolicy{blc, newLambdaCrawl()} {
		out, err := p.Plan(in)
		if err != nil {
			t.Fatal(err)
		}
		var h0 float64
		for i, h := range in.Hosts {
			if h == 0 {
				h0 += out.Freq[i]
			}
		}
		if h0 > 0.5+1e-9 || out.CappedHosts != 1 {
			t.Errorf("%s: host 0 takes %v (cap 0.5), capped hosts %d", p.Name(), h0, out.CappedHosts)
		}
		if s := sum(out.Freq); math.Abs(s-4) > 1e-9 {
			t.Errorf("%s: Σρ = %v, want the whole budget 4", p.Name(), s)
		}
	}
}

func TestPeerPolicyByName(t *testing.T) {
	for _, name := range []string{"nutch", "stormcrawler", "binarylambdacrawl", "lambdacrawl"} {
		p, err := PolicyByName(name, "")
		if err != nil || p.Name() != name {
			t.Errorf("PolicyByName(%q) = %v, %v", name, p, err)
		}
	}
	if _, err := PolicyByName("oracle", ""); err == nil {
		t.Error("oracle is not a coordinator policy")
	}
}
