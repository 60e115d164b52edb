package sim

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Scripted describes pages whose change times are given rather than drawn
// (Config.Scripted): histories a benchmark generates, or real ones
// replayed. A page's version, body, ETag and Last-Modified follow from its
// change times as for the other kinds: the version at t is the number of
// changes at or before t, and Last-Modified (per the page's mode) the time
// of the last of them.
type Scripted struct {
	// Changes[i] are page i's change times in simulated days since the
	// epoch (scaled to real time by Config.Day), strictly increasing and
	// > 0; after the last one the page never changes. len(Changes) is the
	// number of pages.
	Changes [][]float64
	// BodyOf[i] is the page whose content page i serves (nil, or i: its
	// own). A page and the page it names must have the same change times
	// and live on the same host: they are mirrors, one source published
	// under two names, with identical bodies and ETags at every version.
	BodyOf []int
	// RatePerDay[i] is page i's true mean change rate per simulated day,
	// as Pages reports it (nil: its number of changes divided by the time
	// of its last one; 0 for a page that never changes).
	RatePerDay []float64
	// LastModified[i] is how page i's server fills Last-Modified (nil:
	// Config.LastModified's classes decide, as for the other kinds).
	LastModified []LastModifiedMode
}

// kindScripted is the Kind of a page whose change times are given.
const kindScripted = "scripted"

// validateScripted checks Config.Scripted against the rest of cfg.
func (cfg Config) validateScripted() error {
	sc := cfg.Scripted
	if len(cfg.Mix) > 0 || len(cfg.Periodic) > 0 {
		return fmt.Errorf("sim: Config.Scripted with Config.Mix or Config.Periodic: the script gives every page")
	}
	if cfg.Pages != len(sc.Changes) {
		return fmt.Errorf("sim: Config.Pages = %d with %d scripted pages", cfg.Pages, len(sc.Changes))
	}
	return sc.validate(cfg.Hosts)
}

// validate checks sc for a site of hosts hosts, whose page i lives on
// host i mod hosts.
func (sc *Scripted) validate(hosts int) error {
	n := len(sc.Changes)
	if n == 0 {
		return fmt.Errorf("sim: Config.Scripted.Changes: no pages")
	}
	for i, ch := range sc.Changes {
		for k, d := range ch {
			if !(d > 0) || math.IsInf(d, 0) || (k > 0 && !(d > ch[k-1])) {
				return fmt.Errorf("sim: Config.Scripted.Changes[%d][%d] = %v: change times must be finite, > 0 and strictly increasing", i, k, d)
			}
		}
	}
	for name, l := range map[string]int{"BodyOf": len(sc.BodyOf), "RatePerDay": len(sc.RatePerDay), "LastModified": len(sc.LastModified)} {
		if l != 0 && l != n {
			return fmt.Errorf("sim: Config.Scripted.%s has %d entries for %d pages", name, l, n)
		}
	}
	for i, j := range sc.BodyOf {
		switch {
		case j < 0 || j >= n:
			return fmt.Errorf("sim: Config.Scripted.BodyOf[%d] = %d: no such page", i, j)
		case j%hosts != i%hosts:
			return fmt.Errorf("sim: Config.Scripted.BodyOf[%d] = %d: a mirror must be on its source's host", i, j)
		case !slices.Equal(sc.Changes[i], sc.Changes[j]):
			return fmt.Errorf("sim: Config.Scripted.BodyOf[%d] = %d: a mirror must change when its source does", i, j)
		}
	}
	for i, r := range sc.RatePerDay {
		if !finiteNonNeg(r) {
			return fmt.Errorf("sim: Config.Scripted.RatePerDay[%d] = %v: must be finite and >= 0", i, r)
		}
	}
	for i, m := range sc.LastModified {
		if m > LMEveryRequest {
			return fmt.Errorf("sim: Config.Scripted.LastModified[%d] = %d: unknown", i, m)
		}
	}
	return nil
}

// scriptedOffsets converts change times in simulated days to offsets from
// the epoch on a clock whose day lasts day, kept strictly increasing at
// the nanosecond. Equal inputs give equal outputs, so pages that change
// together still do.
func scriptedOffsets(days []float64, day time.Duration) []time.Duration {
	out := make([]time.Duration, len(days))
	for k, d := range days {
		out[k] = max(time.Duration(d*float64(day)), 1)
		if k > 0 && out[k] <= out[k-1] {
			out[k] = out[k-1] + 1
		}
	}
	return out
}

// scriptedPage is page i of cfg.Scripted, with lm as its Last-Modified
// mode unless the script names one.
func scriptedPage(cfg Config, i int, lm LastModifiedMode) *page {
	sc := cfg.Scripted
	p := &page{index: i, host: i % cfg.Hosts, cacheVer: -1, bodyOf: i, kind: kindScripted}
	if sc.BodyOf != nil {
		p.bodyOf = sc.BodyOf[i]
	}
	if sc.LastModified != nil {
		lm = sc.LastModified[i]
	}
	ch := sc.Changes[i]
	p.sched = &schedule{times: scriptedOffsets(ch, cfg.Day), done: true}
	perDay := 0.0
	switch {
	case sc.RatePerDay != nil:
		perDay = sc.RatePerDay[i]
	case len(ch) > 0:
		perDay = float64(len(ch)) / ch[len(ch)-1]
	}
	daySec := cfg.Day.Seconds()
	p.info = PageInfo{Index: i, Host: hostIP(p.host), HostIndex: p.host, Kind: kindScripted, LastModified: lm, Rate: perDay / daySec, RatePerDay: perDay}
	return p
}

// BodyOf is the page whose content page i serves: itself, or for a mirror
// the page it mirrors (Scripted.BodyOf). Two pages with the same BodyOf
// serve the same body at the same version.
func (s *Sim) BodyOf(i int) int { return s.pages[i].bodyOf }
