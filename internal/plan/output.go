package plan

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"text/tabwriter"

	"github.com/freshcrawl/freshcrawl/alloc"
	"github.com/freshcrawl/freshcrawl/longterm"
)

// WriteText prints the plan for a person: the mode's answer, the chosen
// allocation element by element (all of them when they fit in Top, else the
// Top most important by weight×rate, then a total line over all), the three
// policies side by side, and what was given up or capped.
func (r Result) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	u := r.Unit
	switch r.Mode {
	case ModeTarget:
		// Rounded up, so that the budget printed still reaches the target.
		fmt.Fprintf(bw, "least budget for freshness %g under the optimal allocation: %s\n",
			r.TargetFreshness, u.rateWith(r.Budget, numUp))
	case ModeLongTerm:
		lt := r.LongTerm
		fmt.Fprintf(bw, "long-term plan (benefit %s per %s for a correct copy of weight 1, cost %s per fetch, %s decay):\n",
			num(lt.Benefit), u.long(), num(lt.Cost), decayName(lt.Decay))
		fmt.Fprintf(bw, "budget to provision %s, net income %s per %s\n",
			u.rate(r.Budget), num(r.NetIncome), u.long())
	}
	fmt.Fprintf(bw, "budget %s, %d elements, policy %s", u.rate(r.Budget), len(r.Elements), r.Policy)
	if r.Policy == policyOptimal {
		fmt.Fprintf(bw, " (objective %s)", r.Objective)
	}
	fmt.Fprintln(bw)
	fmt.Fprintln(bw)

	tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', tabwriter.AlignRight)
	lt := r.Mode == ModeLongTerm
	// Numbers right-aligned, the id last: URLs are long and ragged.
	head := "rate\tweight\tfrequency\tinterval\tfreshness\tage\t"
	if lt {
		head += "futile\t"
	}
	fmt.Fprintln(tw, head+"  id")
	show, note := r.shown()
	for _, i := range show {
		e := r.Elements[i]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.3f\t%s\t", u.rate(e.Rate), num(e.Weight),
			u.rate(e.Frequency), u.interval(e.Interval), e.Freshness, u.age(e.Age))
		if lt {
			fmt.Fprintf(tw, "%v\t", e.Futile)
		}
		fmt.Fprintln(tw, "  "+e.ID)
	}
	var sr, sw, sf float64
	for _, e := range r.Elements {
		sr += e.Rate
		sw += e.Weight
		sf += e.Frequency
	}
	fmt.Fprintf(tw, "%s\t%s\t%s\t\t%.3f\t%s\t", u.rate(sr), num(sw), u.rate(sf), r.Freshness, u.age(r.Age))
	if lt {
		fmt.Fprint(tw, "\t")
	}
	fmt.Fprintf(tw, "  total (%d elements)\n", len(r.Elements))
	if err := tw.Flush(); err != nil {
		return err
	}
	if note != "" {
		fmt.Fprintln(bw, note)
	}
	fmt.Fprintln(bw)

	fmt.Fprintf(bw, "predicted for the collection at budget %s:\n", u.rate(r.Budget))
	tw = tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  allocation\tfreshness\tage")
	rows := []string{policyOptimal, policyUniform, policyProportional}
	if lt {
		rows = append([]string{policyLongTerm}, rows...)
	}
	for _, name := range rows {
		m, ok := r.Compare[name]
		if name == policyLongTerm {
			m, ok = r.Metrics, true
		}
		if !ok {
			continue
		}
		mark := " "
		if name == r.Policy {
			mark = "*"
		}
		label := name
		if name == policyOptimal {
			label += " (" + r.Objective.String() + ")"
		}
		fmt.Fprintf(tw, "%s %s\t%.3f\t%s\n", mark, label, m.Freshness, u.age(m.Age))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(bw)

	gu := "given up (f = 0)"
	if lt {
		gu = "futile (never refetched: B·w/λ ≤ C)"
	}
	fmt.Fprintf(bw, "%s: %d\n", gu, r.GivenUp)
	if lt {
		fmt.Fprintf(bw, "hosts over their cap: %d", r.HostsAtCap)
		if r.HostsAtCap > 0 {
			fmt.Fprint(bw, " (the long-term optimum ignores politeness: this plan overruns them; raise the host rate or budget them as capped)")
		}
		fmt.Fprintln(bw)
	} else {
		fmt.Fprintf(bw, "hosts at cap: %d\n", r.HostsAtCap)
		fmt.Fprintf(bw, "unabsorbed budget: %s", u.rate(r.Unabsorbed))
		if r.Unabsorbed > 0 {
			fmt.Fprint(bw, " (no element that benefits can take it under the host caps)")
		}
		fmt.Fprintln(bw)
	}
	if r.Workers >= 0 {
		fmt.Fprintf(bw, "workers: %d at %s each\n", r.Workers, u.rate(r.WorkerRate))
	}
	if r.HasModel {
		fmt.Fprintf(bw, "model freshness of the stored copies now: %.3f\n", r.ModelFreshness)
	}
	return bw.Flush()
}

// shown returns the indices of the elements to list and a note on what was
// left out: all of them in input order when they fit, otherwise the Top
// largest by weight×rate (the ones whose staleness costs most).
func (r Result) shown() ([]int, string) {
	n := len(r.Elements)
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	if r.Top <= 0 || n <= r.Top {
		return idx, ""
	}
	key := func(i int) float64 { return r.Elements[i].Weight * r.Elements[i].Rate }
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(key(b), key(a)) })
	return idx[:r.Top], fmt.Sprintf("(top %d of %d by weight×rate; --all lists every element)", r.Top, n)
}

// num formats a dimensionless number.
func num(v float64) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case math.IsInf(v, 1):
		return "∞"
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// rate formats an amount per unit time: bare when the unit is unknown,
// else in the largest of /s, /m, /h, /d that keeps it ≥ 1 (as
// config.Rate does), so that per-second store rates read as "2.4/d".
func (u Unit) rate(v float64) string { return u.rateWith(v, num) }

func (u Unit) rateWith(v float64, num func(float64) string) string {
	if u == Plain || math.IsNaN(v) || math.IsInf(v, 0) {
		return num(v)
	}
	ps := v / float64(u)
	switch {
	case ps == 0:
		return "0"
	case ps >= 1:
		return num(ps) + "/s"
	case ps*60 >= 1:
		return num(ps*60) + "/m"
	case ps*3600 >= 1:
		return num(ps*3600) + "/h"
	}
	return num(ps*86400) + "/d"
}

// numUp formats a positive number with four significant digits, rounded
// up rather than to nearest.
func numUp(v float64) string {
	if !(v > 0) || math.IsInf(v, 1) {
		return num(v)
	}
	p := math.Pow(10, math.Floor(math.Log10(v))-3)
	return strconv.FormatFloat(math.Ceil(v/p)*p, 'g', 4, 64)
}

// duration formats a time in the unit: bare when the unit is unknown, else
// in seconds, minutes, hours or days, whichever reads best.
func (u Unit) duration(t float64) string {
	if u == Plain || math.IsNaN(t) || math.IsInf(t, 0) {
		return num(t)
	}
	s := t * float64(u)
	switch {
	case s < 120:
		return num(s) + "s"
	case s < 120*60:
		return num(s/60) + "m"
	case s < 48*3600:
		return num(s/3600) + "h"
	}
	return num(s/86400) + "d"
}

func (u Unit) interval(t float64) string {
	if math.IsInf(t, 1) {
		return "never"
	}
	return u.duration(t)
}

func (u Unit) age(t float64) string { return u.duration(t) }

// long names the unit in prose.
func (u Unit) long() string {
	switch u {
	case Second:
		return "second"
	case Minute:
		return "minute"
	case Hour:
		return "hour"
	case Day:
		return "day"
	}
	return "unit time"
}

// jnum is a float that encodes +Inf, −Inf and NaN as JSON null, since JSON
// has no infinities: an infinite age (an element that changes but is never
// fetched), an infinite interval (f = 0) and an undefined age all read as
// null.
type jnum float64

func (n jnum) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, f, 'g', -1, 64), nil
}

type jsonMetrics struct {
	Freshness jnum `json:"freshness"`
	Age       jnum `json:"age"`
}

type jsonHead struct {
	Policy          string                 `json:"policy"`
	Budget          jnum                   `json:"budget"`
	Freshness       jnum                   `json:"freshness"`
	Age             jnum                   `json:"age"`
	Compare         map[string]jsonMetrics `json:"compare"`
	GivenUp         int                    `json:"given_up"`
	HostsAtCap      int                    `json:"hosts_at_cap"`
	Unabsorbed      jnum                   `json:"unabsorbed"`
	TargetFreshness *jnum                  `json:"target_freshness,omitempty"`
	ModelFreshness  *jnum                  `json:"model_freshness,omitempty"`
	TotalBudget     *jnum                  `json:"total_budget,omitempty"`
	Workers         *int                   `json:"workers,omitempty"`
}

type jsonElement struct {
	ID        string `json:"id"`
	Rate      jnum   `json:"rate"`
	Weight    jnum   `json:"weight"`
	Frequency jnum   `json:"frequency"`
	Freshness jnum   `json:"freshness"`
	Age       jnum   `json:"age"`
}

type jsonLongElement struct {
	jsonElement
	Interval jnum `json:"interval"`
	Futile   bool `json:"futile"`
}

// WriteJSON prints the plan as one JSON object for programs:
//
//	policy        the allocation reported: optimal, uniform, proportional
//	              or long-term
//	budget        fetches per unit time (the unit of the rates; per second
//	              from a store)
//	freshness, age  the collection's, under that allocation
//	compare       {"optimal"|"uniform"|"proportional": {"freshness", "age"}}
//	              at the same budget
//	given_up      elements that change and matter but get f = 0
//	hosts_at_cap  hosts whose cap binds (long-term: that the plan overruns)
//	unabsorbed    budget that no element can take under the host caps
//	target_freshness  (target mode) the target the budget reaches
//	model_freshness  (from the store) the model's expected freshness of
//	              the stored copies now
//	total_budget  (long-term mode) Σ 1/U, the fetch rate to provision
//	workers       (with a worker rate) ⌈budget in use / worker rate⌉
//	elements      every element in input order: id, rate, weight,
//	              frequency, freshness, age; in long-term mode also
//	              interval (U) and futile
//
// Ages and intervals that are infinite (never fetched) or undefined (age
// under linear decay) are null. Elements are streamed one per line, so the
// output of a store of millions of URLs is never held in memory twice.
func (r Result) WriteJSON(w io.Writer) error {
	head := jsonHead{
		Policy: r.Policy, Budget: jnum(r.Budget), Freshness: jnum(r.Freshness), Age: jnum(r.Age),
		Compare: make(map[string]jsonMetrics, len(r.Compare)), GivenUp: r.GivenUp,
		HostsAtCap: r.HostsAtCap, Unabsorbed: jnum(r.Unabsorbed),
	}
	for k, m := range r.Compare {
		head.Compare[k] = jsonMetrics{jnum(m.Freshness), jnum(m.Age)}
	}
	switch r.Mode {
	case ModeTarget:
		t := jnum(r.TargetFreshness)
		head.TargetFreshness = &t
	case ModeLongTerm:
		t := jnum(r.Budget)
		head.TotalBudget = &t
	}
	if r.Workers >= 0 {
		n := r.Workers
		head.Workers = &n
	}
	if r.HasModel {
		m := jnum(r.ModelFreshness)
		head.ModelFreshness = &m
	}
	b, err := json.Marshal(head)
	if err != nil {
		return fmt.Errorf("encode plan: %w", err)
	}
	bw := bufio.NewWriter(w)
	bw.Write(b[:len(b)-1]) // reopen the object to append the elements
	bw.WriteString(`,"elements":[`)
	for i, e := range r.Elements {
		je := jsonElement{ID: e.ID, Rate: jnum(e.Rate), Weight: jnum(e.Weight),
			Frequency: jnum(e.Frequency), Freshness: jnum(e.Freshness), Age: jnum(e.Age)}
		var v any = je
		if r.Mode == ModeLongTerm {
			v = jsonLongElement{je, jnum(e.Interval), e.Futile}
		}
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("encode element %q: %w", e.ID, err)
		}
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.WriteString("\n")
		bw.Write(b)
	}
	bw.WriteString("\n]}\n")
	return bw.Flush()
}

// decayName is the flag spelling of a decay model.
func decayName(d longterm.Decay) string {
	if d == longterm.Linear {
		return "linear"
	}
	return "exp"
}

// ParseDecay parses "exp" (or "exponential") and "linear".
func ParseDecay(s string) (longterm.Decay, error) {
	switch s {
	case "exp", "exponential", "":
		return longterm.Exponential, nil
	case "linear":
		return longterm.Linear, nil
	}
	return 0, fmt.Errorf("decay %q: want exp or linear", s)
}

// ParseObjective parses "freshness" and "age".
func ParseObjective(s string) (alloc.Objective, error) {
	switch s {
	case "freshness", "":
		return alloc.Freshness, nil
	case "age":
		return alloc.Age, nil
	}
	return 0, fmt.Errorf("objective %q: want freshness or age", s)
}
