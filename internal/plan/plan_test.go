package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/freshcrawl/freshcrawl/alloc"
	"github.com/freshcrawl/freshcrawl/longterm"
)

func readFile(t *testing.T, path string) []Element {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	els, err := ReadCSV(f, path)
	if err != nil {
		t.Fatal(err)
	}
	return els
}

func run(t *testing.T, in Input) Result {
	t.Helper()
	res, err := Run(in)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func near(got, want, tol float64) bool { return math.Abs(got-want) <= tol }

// TestTable5 reproduces the paper's Table 5 through a CSV file: λ = 1..5
// per day, B = 5, freshness objective.
func TestTable5(t *testing.T) {
	els := readFile(t, "testdata/table5.csv")
	res := run(t, Input{Elements: els, Budget: 5})
	want := []float64{1.15, 1.36, 1.35, 1.14, 0.00}
	if len(res.Elements) != len(want) {
		t.Fatalf("%d elements, want %d", len(res.Elements), len(want))
	}
	for i, w := range want {
		e := res.Elements[i]
		if !near(e.Frequency, w, 0.01) {
			t.Errorf("%s: f = %.4f, paper %.2f", e.ID, e.Frequency, w)
		}
		if e.Frequency > 0 && !near(e.Interval*e.Frequency, 1, 1e-12) {
			t.Errorf("%s: interval %v is not 1/f", e.ID, e.Interval)
		}
		if wantF := alloc.FixedOrder.Freshness(e.Rate, e.Frequency); e.Freshness != wantF {
			t.Errorf("%s: freshness %v, want %v", e.ID, e.Freshness, wantF)
		}
	}
	if e := res.Elements[4]; !math.IsInf(e.Interval, 1) || !math.IsInf(e.Age, 1) || e.Freshness != 0 {
		t.Errorf("given-up e5: interval %v age %v freshness %v, want +Inf +Inf 0", e.Interval, e.Age, e.Freshness)
	}
	if res.GivenUp != 1 {
		t.Errorf("GivenUp = %d, want 1", res.GivenUp)
	}
	if res.Policy != policyOptimal || res.Budget != 5 {
		t.Errorf("policy %q budget %v", res.Policy, res.Budget)
	}

	// The age objective: every element kept (paper: 0.84 0.97 1.03 1.07 1.09).
	res = run(t, Input{Elements: els, Budget: 5, Objective: alloc.Age})
	for i, w := range []float64{0.84, 0.97, 1.03, 1.07, 1.09} {
		if f := res.Elements[i].Frequency; !near(f, w, 0.01) {
			t.Errorf("age objective: f[%d] = %.4f, paper %.2f", i, f, w)
		}
	}
	if res.GivenUp != 0 {
		t.Errorf("age objective: GivenUp = %d, want 0", res.GivenUp)
	}

	var out bytes.Buffer
	if err := run(t, Input{Elements: els, Budget: 5}).WriteText(&out); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"given up (f = 0): 1", "hosts at cap: 0", "unabsorbed budget: 0", "e5", "never", "* optimal (freshness)"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("text output lacks %q:\n%s", s, out.String())
		}
	}
}

// TestTable6 reproduces the paper's Table 6 comparison.
func TestTable6(t *testing.T) {
	els := readFile(t, "testdata/table6.csv")
	if len(els) != 100 {
		t.Fatalf("%d elements, want 100", len(els))
	}
	b := 100.0 / 30
	res := run(t, Input{Elements: els, Budget: b, Unit: Day})
	for _, c := range []struct {
		policy    string
		want, tol float64
	}{{policyProportional, 0.12, 0.01}, {policyUniform, 0.57, 0.01}, {policyOptimal, 0.611, 0.008}} {
		if got := res.Compare[c.policy].Freshness; !near(got, c.want, c.tol) {
			t.Errorf("%s freshness %.4f, paper %.3f", c.policy, got, c.want)
		}
	}
	if res.Freshness != res.Compare[policyOptimal].Freshness {
		t.Errorf("chosen freshness %v is not the optimal's %v", res.Freshness, res.Compare[policyOptimal].Freshness)
	}

	// Age in days, minimising age: paper 400, 5.6, 4.3.
	res = run(t, Input{Elements: els, Budget: b, Objective: alloc.Age, Policy: policyUniform})
	for _, c := range []struct {
		policy string
		want   float64
	}{{policyProportional, 400}, {policyUniform, 5.6}, {policyOptimal, 4.3}} {
		if got := res.Compare[c.policy].Age; !near(got, c.want, 0.05*c.want) {
			t.Errorf("%s age %.4g, paper %.3g", c.policy, got, c.want)
		}
	}
	if res.Policy != policyUniform || res.Age != res.Compare[policyUniform].Age {
		t.Errorf("policy %q age %v, want uniform's %v", res.Policy, res.Age, res.Compare[policyUniform].Age)
	}
	for _, e := range res.Elements {
		if !near(e.Frequency, b/100, 1e-12) {
			t.Fatalf("uniform: %s gets f = %v, want %v", e.ID, e.Frequency, b/100)
		}
	}
}

func TestTargetFreshness(t *testing.T) {
	els := readFile(t, "testdata/table6.csv")
	for _, target := range []float64{0.5, 0.8, 0.95} {
		res := run(t, Input{Elements: els, Mode: ModeTarget, TargetFreshness: target})
		if res.Freshness < target {
			t.Errorf("target %v: freshness at the returned budget %v is %v", target, res.Budget, res.Freshness)
		}
		again := run(t, Input{Elements: els, Budget: res.Budget})
		if again.Freshness < target {
			t.Errorf("target %v: Run with budget %v gives %v", target, res.Budget, again.Freshness)
		}
		less := run(t, Input{Elements: els, Budget: 0.99 * res.Budget})
		if less.Freshness >= target {
			t.Errorf("target %v: 0.99×budget %v still gives %v: budget not least", target, res.Budget, less.Freshness)
		}
	}

	// Two fast elements on one host capped at 1: freshness 0.9 needs more
	// than the host may take, so no budget reaches it.
	capped := []Element{{ID: "a", Rate: 10, Weight: 1, Host: "h"}, {ID: "b", Rate: 10, Weight: 1, Host: "h"}}
	_, err := Run(Input{Elements: capped, Mode: ModeTarget, TargetFreshness: 0.9, HostRate: 1})
	if !errors.Is(err, alloc.ErrUnreachable) {
		t.Errorf("capped target: err = %v, want ErrUnreachable", err)
	}
	// The same elements uncapped can reach it.
	capped[0].Host, capped[1].Host = "", ""
	if _, err := Run(Input{Elements: capped, Mode: ModeTarget, TargetFreshness: 0.9, HostRate: 1}); err != nil {
		t.Errorf("uncapped target: %v", err)
	}
	if _, err := Run(Input{Elements: capped, Mode: ModeTarget, TargetFreshness: 1}); err == nil {
		t.Error("target 1 accepted")
	}
}

// TestLongTerm reproduces Razniewski & Nutt §5 (B = C = 1, exponential decay).
func TestLongTerm(t *testing.T) {
	csv := "id,rate\na,0.457\nb,0.316\nc,0.163\nd,0.098\nfutile,2\nconstant,0\n"
	els, err := ReadCSV(strings.NewReader(csv), "lt.csv")
	if err != nil {
		t.Fatal(err)
	}
	res := run(t, Input{Elements: els, Mode: ModeLongTerm, LongTerm: &LongTermInput{Benefit: 1, Cost: 1}, WorkerRate: 0.3})
	wantU := []float64{3.38, 3.61, 4.42, 5.36}
	total := 0.0
	for i, u := range wantU {
		e := res.Elements[i]
		if !near(e.Interval, u, 0.005) {
			t.Errorf("λ = %v: U = %.4f, paper %.2f", e.Rate, e.Interval, u)
		}
		if !near(e.Frequency, 1/e.Interval, 1e-12) || e.Futile {
			t.Errorf("λ = %v: f = %v futile %v", e.Rate, e.Frequency, e.Futile)
		}
		total += 1 / e.Interval
	}
	if e := res.Elements[4]; !e.Futile || e.Frequency != 0 || !math.IsInf(e.Interval, 1) {
		t.Errorf("λ = 2 with B/λ < C: %+v, want futile", e)
	}
	if e := res.Elements[5]; e.Futile || e.Frequency != 0 || e.Freshness != 1 {
		t.Errorf("λ = 0: %+v, want fresh forever, not futile", e)
	}
	if !near(res.Budget, total, 1e-12) || res.Policy != policyLongTerm {
		t.Errorf("budget %v policy %q, want Σ1/U = %v, long-term", res.Budget, res.Policy, total)
	}
	if want := int(math.Ceil(total / 0.3)); res.Workers != want {
		t.Errorf("workers %d, want ⌈%v/0.3⌉ = %d", res.Workers, total, want)
	}
	if !near(res.NetIncome, 0.21+0.32+0.49+0.59+1, 0.02) { // + B for λ = 0
		t.Errorf("net income %v", res.NetIncome)
	}
	if res.GivenUp != 1 {
		t.Errorf("GivenUp %d, want 1 (the futile element)", res.GivenUp)
	}

	// With weights as benefits, exponential decay: the long-term optimum
	// solves the same KKT condition as the budgeted optimum with μ = C/B,
	// so the optimal allocation of the same total budget agrees.
	mixed := readFile(t, "testdata/table6.csv")
	for i := range mixed {
		mixed[i].Weight = float64(1 + i%3)
	}
	lt := run(t, Input{Elements: mixed, Mode: ModeLongTerm, LongTerm: &LongTermInput{Benefit: 50, Cost: 1}})
	if !near(lt.Compare[policyOptimal].Freshness, lt.Freshness, 1e-6) {
		t.Errorf("long-term freshness %v, optimal at the same budget %v", lt.Freshness, lt.Compare[policyOptimal].Freshness)
	}

	// Linear decay: U = √(2C/(Bλ)), and age is undefined.
	lin := run(t, Input{Elements: els[:1], Mode: ModeLongTerm, LongTerm: &LongTermInput{Benefit: 1, Cost: 0.1, Decay: longterm.Linear}})
	if want := math.Sqrt(2 * 0.1 / 0.457); !near(lin.Elements[0].Interval, want, 1e-9) || !math.IsNaN(lin.Elements[0].Age) {
		t.Errorf("linear: U = %v (want %v), age %v", lin.Elements[0].Interval, want, lin.Elements[0].Age)
	}
}

func TestBadLines(t *testing.T) {
	csv := strings.Join([]string{
		"id,rate,weight", // 1 header
		"a,1",            // 2 ok
		"b",              // 3 too few columns
		"c,1,1,h,x",      // 4 too many
		"d,-1",           // 5 negative
		"e,NaN,1",        // 6 NaN
		"f,abc",          // 7 not a number
		"g,1,0",          // 8 weight 0
		"h,1,-2",         // 9 weight < 0
		",1",             // 10 empty id
		"i,x,y",          // 11 two bad fields
		"",               // 12 blank
		"# comment",      // 13
		"j,2,3,host",     // 14 ok
	}, "\n")
	els, err := ReadCSV(strings.NewReader(csv), "rates.csv")
	if els != nil {
		t.Errorf("elements returned with bad lines: %v", els)
	}
	var bad badLines
	if !errors.As(err, &bad) {
		t.Fatalf("err = %v, want badLines", err)
	}
	want := []string{
		`rates.csv:3: 1 columns, want id,rate[,weight[,host]]`,
		`rates.csv:4: 5 columns, want id,rate[,weight[,host]]`,
		`rates.csv:5: rate "-1": negative`,
		`rates.csv:6: rate "NaN": not a number`,
		`rates.csv:7: rate "abc": not a number`,
		`rates.csv:8: weight "0": must be > 0`,
		`rates.csv:9: weight "-2": must be > 0`,
		`rates.csv:10: empty id`,
		`rates.csv:11: rate "x": not a number`,
		`rates.csv:11: weight "y": not a number`,
	}
	var got []string
	for _, e := range bad {
		got = append(got, e.Error())
	}
	if !slices.Equal(got, want) {
		t.Errorf("bad lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "rates.csv: 10 bad lines\n") || !strings.Contains(msg, want[4]) {
		t.Errorf("error message:\n%s", msg)
	}
}

func TestHeader(t *testing.T) {
	for _, c := range []struct {
		name, csv string
		ids       []string
		bad       bool
	}{
		{"no header", "a,1\nb,2\n", []string{"a", "b"}, false},
		{"header", "id,rate\na,1\nb,2\n", []string{"a", "b"}, false},
		{"header after comment", "# rates\nurl,changes per day,weight,host\na,1,2,h\n", []string{"a"}, false},
		{"numeric id", "1,1\n2,2\n", []string{"1", "2"}, false},
		// Only the first line may be a header: later non-numbers are errors.
		{"late non-number", "a,1\nid,rate\n", nil, true},
		{"two headers", "id,rate\nid,rate\n", nil, true},
	} {
		els, err := ReadCSV(strings.NewReader(c.csv), c.name)
		if (err != nil) != c.bad {
			t.Errorf("%s: err = %v", c.name, err)
			continue
		}
		var ids []string
		for _, e := range els {
			ids = append(ids, e.ID)
		}
		if !slices.Equal(ids, c.ids) {
			t.Errorf("%s: ids %v, want %v", c.name, ids, c.ids)
		}
	}
	els, err := ReadCSV(strings.NewReader("id,rate,weight,host\na,1,2,example.org\nb,1,,\n"), "h.csv")
	if err != nil {
		t.Fatal(err)
	}
	if want := []Element{{ID: "a", Rate: 1, Weight: 2, Host: "example.org"}, {ID: "b", Rate: 1, Weight: 1}}; !slices.Equal(els, want) {
		t.Errorf("got %+v, want %+v", els, want)
	}
}

// TestHostCaps checks that a host column makes HostRate a constraint and
// that what the hosts cannot take is reported.
func TestHostCaps(t *testing.T) {
	els := []Element{
		{ID: "a1", Rate: 1, Weight: 1, Host: "a"},
		{ID: "a2", Rate: 1, Weight: 1, Host: "a"},
		{ID: "b1", Rate: 1, Weight: 1, Host: "b"},
	}
	res := run(t, Input{Elements: els, Budget: 10, HostRate: 2})
	if res.HostsAtCap != 2 || !near(res.Unabsorbed, 6, 1e-9) {
		t.Errorf("hosts at cap %d, unabsorbed %v; want 2, 6", res.HostsAtCap, res.Unabsorbed)
	}
	if sa := res.Elements[0].Frequency + res.Elements[1].Frequency; sa > 2+1e-9 {
		t.Errorf("host a gets %v > cap 2", sa)
	}
	for _, p := range []string{policyUniform, policyProportional} {
		r := run(t, Input{Elements: els, Budget: 10, HostRate: 2, Policy: p})
		if !near(r.Unabsorbed, 6, 1e-9) {
			t.Errorf("%s: unabsorbed %v, want 6", p, r.Unabsorbed)
		}
	}
	// Without hosts the same budget is all used.
	for i := range els {
		els[i].Host = ""
	}
	res = run(t, Input{Elements: els, Budget: 10, HostRate: 2, WorkerRate: 3})
	if res.HostsAtCap != 0 || res.Unabsorbed != 0 || res.Workers != 4 {
		t.Errorf("uncapped: hosts at cap %d, unabsorbed %v, workers %d", res.HostsAtCap, res.Unabsorbed, res.Workers)
	}
}

func TestUnitParseRate(t *testing.T) {
	for _, c := range []struct {
		u    Unit
		s    string
		want float64
		err  error
	}{
		{Plain, "5", 5, nil},
		{Plain, "20/s", 0, ErrNoUnit},
		{Second, "20/s", 20, nil},
		{Second, "300/m", 5, nil},
		{Second, "7", 7, nil},
		{Day, "1/s", 86400, nil},
		{Day, "5", 5, nil},
		{Hour, "48/d", 2, nil},
	} {
		got, err := c.u.ParseRate(c.s)
		if c.err != nil {
			if !errors.Is(err, c.err) {
				t.Errorf("%v.ParseRate(%q): err %v, want %v", c.u, c.s, err, c.err)
			}
			continue
		}
		if err != nil || !near(got, c.want, 1e-9*c.want) {
			t.Errorf("%v.ParseRate(%q) = %v, %v; want %v", c.u, c.s, got, err, c.want)
		}
	}
	for _, s := range []string{"-1", "x", "NaN", "1/y", "Inf"} {
		if _, err := Second.ParseRate(s); err == nil {
			t.Errorf("ParseRate(%q) accepted", s)
		}
	}
}

func keys(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func decode(t *testing.T, res Result) map[string]any {
	t.Helper()
	var buf bytes.Buffer
	if err := res.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatalf("invalid JSON: %v\n%s", err, buf.String())
	}
	return m
}

func TestJSON(t *testing.T) {
	base := []string{"age", "budget", "compare", "elements", "freshness", "given_up", "hosts_at_cap", "policy", "unabsorbed"}
	elemKeys := []string{"age", "freshness", "frequency", "id", "rate", "weight"}
	els := readFile(t, "testdata/table5.csv")
	for _, c := range []struct {
		name  string
		in    Input
		extra []string
		elem  []string
	}{
		{"budget", Input{Elements: els, Budget: 5}, nil, nil},
		{"budget+workers", Input{Elements: els, Budget: 5, WorkerRate: 2}, []string{"workers"}, nil},
		{"target", Input{Elements: els, Mode: ModeTarget, TargetFreshness: 0.5}, []string{"target_freshness"}, nil},
		{"long-term", Input{Elements: els, Mode: ModeLongTerm, LongTerm: &LongTermInput{Benefit: 3, Cost: 1}, WorkerRate: 1},
			[]string{"total_budget", "workers"}, []string{"futile", "interval"}},
	} {
		res := run(t, c.in)
		m := decode(t, res)
		want := append(slices.Clone(base), c.extra...)
		slices.Sort(want)
		if got := keys(m); !slices.Equal(got, want) {
			t.Errorf("%s: keys %v, want %v", c.name, got, want)
		}
		cmp, _ := m["compare"].(map[string]any)
		if got := keys(cmp); !slices.Equal(got, []string{"optimal", "proportional", "uniform"}) {
			t.Errorf("%s: compare keys %v", c.name, got)
		}
		for k, v := range cmp {
			if got := keys(v.(map[string]any)); !slices.Equal(got, []string{"age", "freshness"}) {
				t.Errorf("%s: compare.%s keys %v", c.name, k, got)
			}
		}
		list, _ := m["elements"].([]any)
		if len(list) != 5 {
			t.Fatalf("%s: %d elements", c.name, len(list))
		}
		wantE := append(slices.Clone(elemKeys), c.elem...)
		slices.Sort(wantE)
		for _, e := range list {
			if got := keys(e.(map[string]any)); !slices.Equal(got, wantE) {
				t.Errorf("%s: element keys %v, want %v", c.name, got, wantE)
			}
		}
		if m["policy"] != res.Policy || m["budget"] != res.Budget || m["freshness"] != res.Freshness {
			t.Errorf("%s: head %v %v %v, want %v %v %v", c.name, m["policy"], m["budget"], m["freshness"], res.Policy, res.Budget, res.Freshness)
		}
	}

	// Table 5 under the freshness optimum gives e5 up: its age (and the
	// collection's) is infinite, encoded as null.
	m := decode(t, run(t, Input{Elements: els, Budget: 5}))
	e5 := m["elements"].([]any)[4].(map[string]any)
	if e5["id"] != "e5" || e5["frequency"] != 0.0 || e5["age"] != nil || m["age"] != nil {
		t.Errorf("e5 %v, collection age %v: want f 0, age null", e5, m["age"])
	}
	if m["given_up"] != 1.0 || m["policy"] != "optimal" || m["budget"] != 5.0 {
		t.Errorf("head: %v", m)
	}
}

func TestTextTop(t *testing.T) {
	var els []Element
	for i := range 30 {
		els = append(els, Element{ID: "u" + string(rune('A'+i)), Rate: float64(i + 1), Weight: 1})
	}
	res := run(t, Input{Elements: els, Budget: 100, Top: 3})
	var buf bytes.Buffer
	if err := res.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	// The three largest weight×rate, then the total over all 30.
	for _, s := range []string{"u^", "u]", "u\\", "top 3 of 30", "total (30 elements)"} {
		if !strings.Contains(out, s) {
			t.Errorf("lacks %q:\n%s", s, out)
		}
	}
	if strings.Contains(out, "uA\n") {
		t.Errorf("lists an element outside the top 3:\n%s", out)
	}
	res.Top = 0
	buf.Reset()
	if err := res.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "uA\n") || strings.Contains(buf.String(), "top ") {
		t.Errorf("Top 0 does not list all:\n%s", buf.String())
	}
}

func TestRunErrors(t *testing.T) {
	els := []Element{{ID: "a", Rate: 1, Weight: 1}}
	for _, in := range []Input{
		{},
		{Elements: els, Budget: -1},
		{Elements: els, Budget: math.NaN()},
		{Elements: els, Budget: 1, Policy: "random"},
		{Elements: []Element{{ID: "x", Rate: -1, Weight: 1}}, Budget: 1},
		{Elements: els, Mode: ModeLongTerm},
		{Elements: els, Mode: ModeLongTerm, LongTerm: &LongTermInput{Benefit: 1, Cost: 0}},
		{Elements: els, Mode: ModeTarget, TargetFreshness: 0.5, Objective: alloc.Age},
	} {
		if _, err := Run(in); err == nil {
			t.Errorf("Run(%+v) accepted", in)
		}
	}
}
