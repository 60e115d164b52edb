package sim

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// scriptedConfig is three pages on two hosts, a day lasting a second:
// pages 0 and 2 (host 0) are mirrors changing at 1.5 and 4 days, page 1
// (host 1) changes at the same moments but is its own page, and sends no
// Last-Modified.
func scriptedConfig(clk *fakeClock) Config {
	return Config{Hosts: 2, Day: time.Second, Seed: 9, Now: clk.Now, Scripted: &Scripted{
		Changes:      [][]float64{{1.5, 4}, {1.5, 4}, {1.5, 4}},
		BodyOf:       []int{0, 1, 0},
		RatePerDay:   []float64{0.5, 0.5, 0.25},
		LastModified: []LastModifiedMode{LMTrue, LMNone, LMTrue},
	}}
}

// Scripted pages serve the versions their change times give, mirrors the
// same body and ETag, a page that only shares the times a body of its own,
// and Last-Modified the time of the last change (or none).
func TestScriptedPages(t *testing.T) {
	clk := newFakeClock()
	s := mustNew(t, scriptedConfig(clk))
	if n := len(s.Pages()); n != 3 {
		t.Fatalf("%d pages, want 3", n)
	}
	for i, p := range s.Pages() {
		if p.Kind != "scripted" || p.RatePerDay != []float64{0.5, 0.5, 0.25}[i] || p.Rate != p.RatePerDay {
			t.Errorf("page %d: %+v", i, p)
		}
	}
	got := s.ChangeTimes(1, t0, t0.Add(10*time.Second))
	if want := []time.Time{t0.Add(1500 * time.Millisecond), t0.Add(4 * time.Second)}; !slices.EqualFunc(got, want, time.Time.Equal) {
		t.Errorf("change times %v, want %v", got, want)
	}
	for _, c := range []struct {
		at      time.Duration
		version int
		lm      string
	}{{time.Second, 0, t0.Format(http.TimeFormat)}, {2 * time.Second, 1, t0.Add(time.Second).Format(http.TimeFormat)}, {5 * time.Second, 2, t0.Add(4 * time.Second).Format(http.TimeFormat)}} {
		clk.At(c.at)
		r0, r1, r2 := get(t, s, 0, "/p/0", nil), get(t, s, 1, "/p/1", nil), get(t, s, 0, "/p/2", nil)
		for i, r := range []int{r0.Code, r1.Code, r2.Code} {
			if r != http.StatusOK {
				t.Fatalf("at %v: page %d: status %d", c.at, i, r)
			}
		}
		if v := s.VersionAt(2, t0.Add(c.at)); v != c.version {
			t.Errorf("at %v: version %d, want %d", c.at, v, c.version)
		}
		if r0.Body.String() != r2.Body.String() || r0.Header().Get("ETag") != r2.Header().Get("ETag") {
			t.Errorf("at %v: the mirror serves another body or ETag (%s, %s)", c.at, r0.Header().Get("ETag"), r2.Header().Get("ETag"))
		}
		if r0.Body.String() == r1.Body.String() {
			t.Errorf("at %v: page 1 serves page 0's body", c.at)
		}
		if !strings.Contains(r0.Header().Get("ETag"), "-v"+strconv.Itoa(c.version)+`"`) {
			t.Errorf("at %v: ETag %s, want version %d", c.at, r0.Header().Get("ETag"), c.version)
		}
		if lm := r0.Header().Get("Last-Modified"); lm != c.lm {
			t.Errorf("at %v: Last-Modified %q, want %q", c.at, lm, c.lm)
		}
		if lm := r1.Header().Get("Last-Modified"); lm != "" {
			t.Errorf("at %v: page 1 sends Last-Modified %q", c.at, lm)
		}
		if n := s.BodySize(2, c.version); n != r2.Body.Len() {
			t.Errorf("at %v: BodySize %d, served %d bytes", c.at, n, r2.Body.Len())
		}
	}
	// The truth integrates scripted pages like any other: page 0, fetched
	// at 1 s, 2 s and 5 s, is fresh over [1, 1.5), [2, 4) and [5, 6).
	clk.At(6 * time.Second)
	rep := s.Truth(t0, t0.Add(6*time.Second))
	if f := rep.PerPage[0].Freshness; !near(f, 3.5/6, 1e-9) {
		t.Errorf("page 0 freshness %v, want 3.5/6", f)
	}
}

// Every way a script can be wrong is refused, naming the field.
func TestScriptedValidation(t *testing.T) {
	clk := newFakeClock()
	for name, c := range map[string]struct {
		spoil func(*Config)
		want  string
	}{
		"not increasing":     {func(c *Config) { c.Scripted.Changes[1] = []float64{2, 2} }, "Changes[1][1]"},
		"not positive":       {func(c *Config) { c.Scripted.Changes[1] = []float64{0} }, "Changes[1][0]"},
		"mirror elsewhere":   {func(c *Config) { c.Scripted.BodyOf[1] = 0 }, "source's host"},
		"mirror out of step": {func(c *Config) { c.Scripted.Changes[2] = []float64{1.5} }, "change when its source"},
		"no such page":       {func(c *Config) { c.Scripted.BodyOf[2] = 7 }, "no such page"},
		"rates per page":     {func(c *Config) { c.Scripted.RatePerDay = []float64{1} }, "RatePerDay"},
		"negative rate":      {func(c *Config) { c.Scripted.RatePerDay[0] = -1 }, "RatePerDay[0]"},
		"with a mix":         {func(c *Config) { c.Mix = Table6Mix() }, "Config.Mix"},
		"pages":              {func(c *Config) { c.Pages = 5 }, "scripted pages"},
		"unknown mode":       {func(c *Config) { c.Scripted.LastModified[0] = 99 }, "LastModified[0]"},
	} {
		cfg := scriptedConfig(clk)
		c.spoil(&cfg)
		if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one naming %q", name, err, c.want)
		}
	}
}

// Without rates, a page reports its changes over the time of its last
// one; days become offsets on the clock, equal days equal offsets.
func TestScriptedDefaults(t *testing.T) {
	s := mustNew(t, Config{Hosts: 1, Day: 2 * time.Second, Now: newFakeClock().Now, Scripted: &Scripted{Changes: [][]float64{{1, 4}, nil}}})
	ps := s.Pages()
	if ps[0].RatePerDay != 0.5 || ps[1].RatePerDay != 0 || ps[0].Rate != 0.25 || ps[0].LastModified != LMTrue {
		t.Errorf("pages %+v", ps)
	}
	if got := scriptedOffsets([]float64{1e-12, 2e-12, 1}, time.Second); !slices.IsSorted(got) || got[0] == got[1] || got[2] != time.Second {
		t.Errorf("offsets %v: want strictly increasing, the last 1s", got)
	}
}
