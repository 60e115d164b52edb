package schedule

import (
	"math"
	"testing"
	"time"
)

const day = 24 * time.Hour

func near(a, b time.Duration) bool { return (a - b).Abs() <= time.Millisecond }

func TestNutchRule(t *testing.T) {
	p := NewNutch(day)
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name        string
		iv          time.Duration
		fb          Feedback
		wantIv      time.Duration
		wantDueFrom time.Duration // due − start
	}{
		{"changed ×0.8", 10 * day, Feedback{Start: start, OK: true, Changed: true}, 8 * day, 8 * day},
		{"unchanged ×1.4", 10 * day, Feedback{Start: start, OK: true}, 14 * day, 14 * day},
		{"304 is unchanged", 10 * day, Feedback{Start: start, OK: true, NotModified: true}, 14 * day, 14 * day},
		// sync_delta: Last-Modified 20 days back exceeds 14 days, so the
		// interval becomes 20 days and the fetch is pulled 0.3×20 = 6 days
		// earlier.
		{"sync_delta raises interval", 10 * day, Feedback{Start: start, OK: true, LastModified: start.Add(-20 * day)}, 20 * day, 14 * day},
		// Last-Modified 5 days back: 14 > 5 keeps the interval; the shift
		// is 1.5 days.
		{"sync_delta shift only", 10 * day, Feedback{Start: start, OK: true, LastModified: start.Add(-5 * day)}, 14 * day, 12*day + 12*time.Hour},
		// Changed, modified 9 days ago: 8 < 9 → 9 days, shifted 2.7 days.
		{"changed with Last-Modified", 10 * day, Feedback{Start: start, OK: true, Changed: true, LastModified: start.Add(-9 * day)}, 9 * day, 9*day - 2*day - 16*time.Hour - 48*time.Minute},
		{"clamp to min 60s", 50 * time.Second, Feedback{Start: start, OK: true, Changed: true}, time.Minute, time.Minute},
		{"clamp to max 365d", 300 * day, Feedback{Start: start, OK: true}, 365 * day, 365 * day},
		{"future Last-Modified ignored", 10 * day, Feedback{Start: start, OK: true, LastModified: start.Add(day)}, 14 * day, 14 * day},
		{"failure retried in a day", 10 * day, Feedback{Start: start}, 10 * day, day},
	}
	for _, c := range cases {
		iv, due := p.Next(c.iv, c.fb)
		if !near(iv, c.wantIv) || !near(due.Sub(start), c.wantDueFrom) {
			t.Errorf("%s: got interval %v due +%v, want %v due +%v", c.name, iv, due.Sub(start), c.wantIv, c.wantDueFrom)
		}
	}
	if p.Initial() != 30*day {
		t.Errorf("initial %v, want 30 days", p.Initial())
	}
	// A sequence: unchanged, unchanged, changed from 30 days.
	iv := p.Initial()
	for _, ch := range []bool{false, false, true} {
		iv, _ = p.Next(iv, Feedback{Start: start, OK: true, Changed: ch})
	}
	if want := time.Duration(float64(30*day) * 1.4 * 1.4 * 0.8); !near(iv, want) {
		t.Errorf("sequence: %v, want %v", iv, want)
	}
	// Scaled: a simulated day of one second scales every bound.
	s := NewNutch(time.Second)
	if !near(s.Min, time.Second*60/86400) || s.Max != 365*time.Second || s.Default != 30*time.Second {
		t.Errorf("scaled bounds %v %v %v", s.Min, s.Max, s.Default)
	}
}

func TestStormCrawlerRule(t *testing.T) {
	p := NewStormCrawler(day)
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	iv, due := p.Next(10*time.Hour, Feedback{Start: start, OK: true, Changed: true})
	if !near(iv, 5*time.Hour+30*time.Minute) || !near(due.Sub(start), iv) {
		t.Errorf("changed: %v due +%v, want 5h30m", iv, due.Sub(start))
	}
	if iv, _ = p.Next(2*day, Feedback{Start: start, OK: true}); !near(iv, 3*day) {
		t.Errorf("unchanged: %v, want 3 days", iv)
	}
	if iv, _ = p.Next(2*day, Feedback{Start: start, OK: true, NotModified: true}); !near(iv, 3*day) {
		t.Errorf("304: %v, want 3 days", iv)
	}
	if iv, _ = p.Next(10*day, Feedback{Start: start, OK: true}); !near(iv, 14*day) {
		t.Errorf("cap: %v, want 14 days", iv)
	}
	// Repeated changes converge to the minimum, one hour.
	iv = p.Initial()
	for range 40 {
		iv, _ = p.Next(iv, Feedback{Start: start, OK: true, Changed: true})
	}
	if !near(iv, time.Hour) {
		t.Errorf("changes converge to %v, want 1h", iv)
	}
	if _, due = p.Next(day, Feedback{Start: start}); !near(due.Sub(start), 2*time.Hour) {
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
