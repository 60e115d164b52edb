package plan

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/freshcrawl/freshcrawl/config"
	"github.com/freshcrawl/freshcrawl/estimate"
	"github.com/freshcrawl/freshcrawl/internal/schedule"
	"github.com/freshcrawl/freshcrawl/store"
)

// Element is one thing to keep fresh: a URL from the store or a row of a
// rates file.
type Element struct {
	// ID names the element in the output (the URL, or the CSV's id).
	ID string
	// Rate is the estimated change rate λ, changes per unit time (≥ 0).
	Rate float64
	// Weight is the importance w (> 0 from a CSV; ≥ 0 from the store).
	Weight float64
	// Host groups elements under one politeness cap; "" means the element
	// is subject to no cap.
	Host string
	// Model is set for an element read from the store (FromStore):
	// Posterior is then its posterior change rate (docs/design.md §3.3),
	// over which the plan's freshness is an expectation rather than the
	// freshness at one rate, and CopyFresh the probability that the
	// stored copy is current now under the model's posterior (§3.7; 0
	// for a URL never fetched).
	Model     bool
	Posterior estimate.Summary
	CopyFresh float64
}

// Unit is the time unit that rates, budgets and intervals are expressed
// in, as a number of seconds. Plain (0) means the unit is not known: the
// numbers of a rates file are then only comparable with each other, so a
// budget written with a unit ("20/s") cannot be converted and is refused
// rather than guessed.
type Unit float64

// The units a rates file can declare.
const (
	Plain  Unit = 0
	Second Unit = 1
	Minute Unit = 60
	Hour   Unit = 3600
	Day    Unit = 86400
)

// ParseUnit parses "s", "m", "h", "d" (or second, minute, hour, day), and
// "" or "plain" for Plain.
func ParseUnit(s string) (Unit, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "plain":
		return Plain, nil
	case "s", "sec", "second":
		return Second, nil
	case "m", "min", "minute":
		return Minute, nil
	case "h", "hour":
		return Hour, nil
	case "d", "day":
		return Day, nil
	}
	return Plain, fmt.Errorf("unit %q: want s, m, h, d or plain", s)
}

// String is the unit's one-letter name, or "plain".
func (u Unit) String() string {
	switch u {
	case Second:
		return "s"
	case Minute:
		return "m"
	case Hour:
		return "h"
	case Day:
		return "d"
	case Plain:
		return "plain"
	}
	return strconv.FormatFloat(float64(u), 'g', -1, 64) + "s"
}

// ErrNoUnit is wrapped by ParseRate when a rate carries a time unit but the
// unit of the rates it must be compared with is not known.
var ErrNoUnit = errors.New("has a time unit, but the rates' own unit is not known")

// ParseRate parses an amount per unit time into unit u: a plain number is
// taken to be in u already, and a rate with a unit ("20/s", "300/m",
// "5000/h", "1000/d"; see config.ParseRate) is converted into u, which must
// then not be Plain. Budgets, host caps, worker rates and benefits all go
// through here so that they can never silently disagree with the rates.
func (u Unit) ParseRate(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if strings.Contains(s, "/") {
		if u == Plain {
			return 0, fmt.Errorf("%q %w", s, ErrNoUnit)
		}
		r, err := config.ParseRate(s)
		if err != nil {
			return 0, err
		}
		return r.PerSecond() * float64(u), nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, fmt.Errorf("%q: want a non-negative number, or a number per unit such as 20/s, 300/m, 5000/h or 1000/d", s)
	}
	return v, nil
}

// lineError is one bad line of a rates file.
type lineError struct {
	Name  string // file name as given to ReadCSV
	Line  int
	Field string // "rate", "weight", ...; "" for the whole line
	Value string
	Msg   string
}

func (e *lineError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%s:%d: %s", e.Name, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s:%d: %s %q: %s", e.Name, e.Line, e.Field, e.Value, e.Msg)
}

// badLines is the error of a rates file with bad lines. It lists every one
// of them, so that a file can be fixed in one pass instead of one error at
// a time.
type badLines []*lineError

func (b badLines) Error() string {
	var sb strings.Builder
	name := ""
	if len(b) > 0 {
		name = b[0].Name
	}
	fmt.Fprintf(&sb, "%s: %d bad line", name, len(b))
	if len(b) != 1 {
		sb.WriteString("s")
	}
	for _, e := range b {
		sb.WriteString("\n")
		sb.WriteString(e.Error())
	}
	return sb.String()
}

// ReadCSV reads a rates file: one element per line, id,rate[,weight[,host]].
//
// The rate is in changes per unit time, whatever unit the caller uses for
// the budget (see Unit). The weight defaults to 1 when absent or empty.
// The host, when given and not empty, puts the element under that host's
// politeness cap (Input.HostRate); without it the element is uncapped,
// because a CSV of abstract elements has no hosts to be polite to.
// A first line whose rate column is not a number is taken to be a header
// and skipped. Blank lines and lines starting with # are ignored.
//
// Every bad line (wrong column count, a rate that is not a finite number
// ≥ 0, a weight that is not a finite number > 0, an empty id) is reported,
// with its line number, in one badLines error; no elements are returned
// then, because a plan from a partial list would be silently wrong.
func ReadCSV(r io.Reader, name string) ([]Element, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1 // checked here, to report every bad line
	cr.TrimLeadingSpace = true
	cr.Comment = '#'
	cr.ReuseRecord = true

	var (
		out   []Element
		bad   badLines
		first = true
	)
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				bad = append(bad, &lineError{Name: name, Line: pe.Line, Msg: pe.Err.Error()})
				continue
			}
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		line, _ := cr.FieldPos(0)
		isFirst := first
		first = false
		if len(rec) < 2 || len(rec) > 4 {
			bad = append(bad, &lineError{Name: name, Line: line,
				Msg: fmt.Sprintf("%d columns, want id,rate[,weight[,host]]", len(rec))})
			continue
		}
		for i := range rec {
			rec[i] = strings.TrimSpace(rec[i])
		}
		if isFirst {
			if _, err := strconv.ParseFloat(rec[1], 64); err != nil {
				continue // header
			}
		}
		e, errs := parseRow(rec, name, line)
		if len(errs) > 0 {
			bad = append(bad, errs...)
			continue
		}
		out = append(out, e)
	}
	if len(bad) > 0 {
		return nil, bad
	}
	return out, nil
}

// parseRow checks one record, reporting every bad field.
func parseRow(rec []string, name string, line int) (Element, []*lineError) {
	var errs []*lineError
	bad := func(field, value, msg string) {
		errs = append(errs, &lineError{Name: name, Line: line, Field: field, Value: value, Msg: msg})
	}
	e := Element{ID: rec[0], Weight: 1}
	if e.ID == "" {
		errs = append(errs, &lineError{Name: name, Line: line, Msg: "empty id"})
	}
	if v, err := strconv.ParseFloat(rec[1], 64); err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		bad("rate", rec[1], "not a number")
	} else if v < 0 {
		bad("rate", rec[1], "negative")
	} else {
		e.Rate = v
	}
	if len(rec) > 2 && rec[2] != "" {
		if v, err := strconv.ParseFloat(rec[2], 64); err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			bad("weight", rec[2], "not a number")
		} else if v <= 0 {
			bad("weight", rec[2], "must be > 0")
		} else {
			e.Weight = v
		}
	}
	if len(rec) > 3 {
		e.Host = rec[3]
	}
	return e, errs
}

// FromStore lists the URLs of a store as elements with rates in changes
// per second and the seeds' weights, each under its URL's host (so the
// caller's host rate caps it, as the coordinator's politeness does).
//
// A URL whose estimated rate is not positive has not been observed yet;
// like the coordinator, which plans such URLs at its prior rate until it
// learns better, FromStore gives it priorRate, so that the plan predicts
// what the coordinator would actually do. Pass 0 to keep it at 0.
//
// Every element also carries the model of docs/design.md §3.3: its
// posterior under the population priors fitted, as the coordinator fits
// them, to the estimator states stored, and the probability that its
// stored copy is current at now, allowing, as the coordinator does, for
// a change of its rate since the fetch at the collection's hazard: the
// change points the states counted over the time the URLs were watched
// (from being added to their last successful fetch), with halfLife, the
// estimator's, scaling the hazard's prior.
func FromStore(db *store.DB, priorRate float64, halfLife time.Duration, now time.Time) ([]Element, error) {
	var out []Element
	var urls, hosts []string
	var states []estimate.State
	var lastOK []time.Time
	var changePoints, watched float64
	err := db.ForEach(func(u store.URL) error {
		r := u.Rate
		if !(r > 0) || math.IsInf(r, 1) {
			r = priorRate
		}
		var st schedule.EstimateState
		if len(u.Estimate) > 0 && st.UnmarshalBinary(u.Estimate) != nil {
			st = schedule.EstimateState{} // unreadable: as if unobserved
		}
		changePoints += float64(st.State.ChangePoints())
		if !u.LastOK.IsZero() && u.LastOK.After(u.AddedAt) {
			watched += u.LastOK.Sub(u.AddedAt).Seconds()
		}
		out = append(out, Element{ID: u.URL, Rate: r, Weight: u.Weight, Host: u.Host, Model: true})
		urls, hosts, states, lastOK = append(urls, u.URL), append(hosts, u.Host), append(states, st.State), append(lastOK, u.LastOK)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read URLs from %s: %w", db.Path(), err)
	}
	pr := schedule.FitPriors(priorRate, urls, hosts, states)
	sw := pr.RateSwitch(schedule.CollectionHazard(changePoints, watched, halfLife))
	for i := range out {
		tmpl := schedule.PathTemplate(urls[i])
		prior := pr.For(hosts[i], tmpl)
		post := prior.Posterior(states[i])
		out[i].Posterior = post.Summary()
		if !lastOK[i].IsZero() {
			// The copy's freshness is the model's: the posterior under
			// the model's prior (docs/design.md §3.7, "An honest model").
			model := post.Reweighted(prior, pr.ForModel(hosts[i], tmpl))
			age := math.Max(now.Sub(lastOK[i]).Seconds(), 0)
			out[i].CopyFresh = sw.ExpectFresh(model.Sketch(prior.Grid()), age)
		}
	}
	return out, nil
}

// HostCaps are the politeness caps the store knows of, in fetches per
// second by host: one fetch per Crawl-delay, for every host that sent
// one (Input.HostCaps).
func HostCaps(db *store.DB) (map[string]float64, error) {
	hs, err := db.Hosts()
	if err != nil {
		return nil, fmt.Errorf("read hosts from %s: %w", db.Path(), err)
	}
	caps := map[string]float64{}
	for _, h := range hs {
		if h.CrawlDelay > 0 {
			caps[h.Host] = 1 / h.CrawlDelay.Seconds()
		}
	}
	return caps, nil
}
