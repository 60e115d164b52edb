package sim

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// RateClass is a share of the pages whose changes follow a Poisson process,
// the change model of Cho & Garcia-Molina (§2.2) under which the
// freshness and age formulas of docs/design.md §3.1 hold.
type RateClass struct {
	// Share is the fraction of all pages in this class, in [0, 1].
	Share float64
	// Rate is the mean number of changes per simulated day (≥ 0). It is
	// converted to changes per real second with Config.Day.
	Rate float64
}

// PeriodicClass is a share of the pages that update at fixed phases of a
// period, each update displaced by a uniform jitter in [-Jitter, +Jitter].
// It models the sources of Ashish, Kulkarni & Wang (§3.1) whose
// updates cluster at certain times of an hour or a day, on which change
// recall is measured.
type PeriodicClass struct {
	// Share is the fraction of all pages in this class, in [0, 1].
	Share float64
	// Period is the real-time length of one cycle (not scaled by Day).
	Period time.Duration
	// Phases are the offsets in [0, Period) of the updates within a cycle.
	Phases []time.Duration
	// Jitter is the half-width of the uniform displacement of each update.
	// It must be less than half the smallest gap between consecutive phases
	// (cyclically), so updates stay in phase order and every update creates
	// exactly one version.
	Jitter time.Duration
	// NoLastModified serves the class's pages with an ETag and no
	// Last-Modified: the many sources whose only signal is "changed
	// since the last poll" (docs/design.md §3.5).
	NoLastModified bool
	// Feed serves the class's pages as feeds, "rss", "atom" or "json"
	// (JSON Feed): each version adds an item dated with its exact change
	// time, and the feed lists the newest feedItems items. "" serves HTML.
	Feed string
}

// feedItems is how many items a simulated feed lists.
const feedItems = 10

// Config describes a simulated website. The zero value of every field picks
// the documented default.
type Config struct {
	// Hosts is the number of distinct hosts, 127.0.0.2 .. 127.0.0.(Hosts+1);
	// 1..250, default 4.
	Hosts int
	// Pages is the total number of pages, spread round-robin over the hosts
	// (page i lives on host i mod Hosts); default 100.
	Pages int
	// Mix lists the Poisson classes. When both Mix and Periodic are empty,
	// the mix of Cho & Garcia-Molina Table 6 is used (see Table6Mix). The shares of Mix
	// and Periodic together must sum to 1.
	Mix []RateClass
	// Periodic lists the periodic classes.
	Periodic []PeriodicClass
	// Day is the real duration of one simulated day (time scaling), default 1s.
	Day time.Duration
	// Seed makes every change time and every page body reproducible.
	Seed uint64
	// Port is the one TCP port used on every host IP; 0 picks a port that is
	// free on all of them.
	Port int
	// Robots maps a host index to its robots.txt body. Hosts not in the map
	// get DefaultRobots; an entry with an empty body serves an empty file.
	Robots map[int]string
	// Now is the clock, injectable for tests; default time.Now.
	Now func() time.Time
	// Delay holds every page response this long before it is written (a
	// slow server: the fault suite kills workers mid-fetch); 0: none.
	Delay time.Duration
	// Search, when set, adds the keyword-search source of the content-freshness paper §5.2
	// (/search and /item/{id}) to host Search.Host; see SearchConfig.
	Search *SearchConfig
	// LastModified lists how the pages' servers fill Last-Modified, as
	// shares of the pages (exact counts, assigned by a seeded
	// permutation independent of the change classes). Empty: every page
	// sends the time of its last change. The shares must sum to 1.
	LastModified []LastModifiedClass
	// Scripted, when set, gives every page's change times instead of
	// drawing them (see Scripted); Mix and Periodic must then be empty,
	// and Pages is len(Scripted.Changes).
	Scripted *Scripted
	// Signals is what every host publishes about its changes (sitemap,
	// feed, Cache-Control; sitemap.go), and HostSignals what the hosts it
	// names publish instead. The zero value publishes nothing.
	Signals     Signals
	HostSignals map[int]Signals
}

// LastModifiedMode is how a page's server fills the Last-Modified header.
// Much of the real web does not send the time of the last change, so the
// sim serves the behaviours a crawler must survive (docs/design.md §3.3).
type LastModifiedMode uint8

const (
	// LMTrue: the time of the last change (a static file, a careful CMS).
	LMTrue LastModifiedMode = iota
	// LMNone: no Last-Modified at all, only an ETag.
	LMNone
	// LMResponseTime: the time of the response (a dynamic page).
	LMResponseTime
	// LMConstant: one fixed date, before the site's epoch, whatever the
	// content does (a build or deployment date).
	LMConstant
	// LMEveryRequest: a new date on every request, some time before the
	// response (between 5 % and 50 % of a simulated day), whether or not
	// the content changed (a cache or template stamp).
	LMEveryRequest
)

// String is the mode's name as the bench and tests print it.
func (m LastModifiedMode) String() string {
	switch m {
	case LMTrue:
		return "true"
	case LMNone:
		return "none"
	case LMResponseTime:
		return "response-time"
	case LMConstant:
		return "constant"
	case LMEveryRequest:
		return "every-request"
	}
	return fmt.Sprintf("LastModifiedMode(%d)", int(m))
}

// LastModifiedClass is a share of the pages whose server fills
// Last-Modified the same way.
type LastModifiedClass struct {
	Share float64
	Mode  LastModifiedMode
}

// DefaultRobots is the robots.txt served by hosts without an entry in
// Config.Robots. Every host also serves pages under /private/, so a test can
// check that a polite crawler never requests them.
const DefaultRobots = "User-agent: *\nDisallow: /private/\n"

const (
	defaultHosts = 4
	defaultPages = 100
	defaultDay   = time.Second
	maxHosts     = 250
	shareSlack   = 1e-6
)

// Table6Mix returns the change-rate mix of Cho & Garcia-Molina Table 6: 23 % of pages
// change daily, 15 % weekly, 16 % monthly (30 days), 16 % quarterly (90 days)
// and 30 % yearly (365 days). Callers that add periodic classes can scale it
// down with ScaleMix so the shares still sum to 1.
func Table6Mix() []RateClass {
	return []RateClass{
		{Share: 0.23, Rate: 1},
		{Share: 0.15, Rate: 1.0 / 7},
		{Share: 0.16, Rate: 1.0 / 30},
		{Share: 0.16, Rate: 1.0 / 90},
		{Share: 0.30, Rate: 1.0 / 365},
	}
}

// ScaleMix returns a copy of mix with every share multiplied by f.
func ScaleMix(mix []RateClass, f float64) []RateClass {
	out := slices.Clone(mix)
	for i := range out {
		out[i].Share *= f
	}
	return out
}

// withDefaults returns cfg with zero fields replaced by their defaults.
func (cfg Config) withDefaults() Config {
	if cfg.Hosts == 0 {
		cfg.Hosts = defaultHosts
	}
	if cfg.Pages == 0 && cfg.Scripted != nil {
		cfg.Pages = len(cfg.Scripted.Changes)
	}
	if cfg.Pages == 0 {
		cfg.Pages = defaultPages
	}
	if len(cfg.Mix) == 0 && len(cfg.Periodic) == 0 && cfg.Scripted == nil {
		cfg.Mix = Table6Mix()
	}
	if cfg.Day == 0 {
		cfg.Day = defaultDay
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return cfg
}

// validate checks a config that already has its defaults applied. Each error
// names the offending field so a CLI user can fix the flag or file entry.
func (cfg Config) validate() error {
	if cfg.Hosts < 1 || cfg.Hosts > maxHosts {
		return fmt.Errorf("sim: Config.Hosts = %d: must be in 1..%d", cfg.Hosts, maxHosts)
	}
	if cfg.Pages < 1 {
		return fmt.Errorf("sim: Config.Pages = %d: must be >= 1", cfg.Pages)
	}
	if cfg.Day < 0 {
		return fmt.Errorf("sim: Config.Day = %v: must be > 0", cfg.Day)
	}
	if cfg.Delay < 0 {
		return fmt.Errorf("sim: Config.Delay = %v: must be >= 0", cfg.Delay)
	}
	if cfg.Port < 0 || cfg.Port > 65535 {
		return fmt.Errorf("sim: Config.Port = %d: must be in 0..65535", cfg.Port)
	}
	for h := range cfg.Robots {
		if h < 0 || h >= cfg.Hosts {
			return fmt.Errorf("sim: Config.Robots[%d]: no such host (Hosts = %d)", h, cfg.Hosts)
		}
	}
	if cfg.Search != nil {
		if err := cfg.Search.validate(cfg.Hosts); err != nil {
			return err
		}
	}
	if cfg.Scripted != nil {
		if err := cfg.validateScripted(); err != nil {
			return err
		}
	}
	if err := cfg.validateSignals(); err != nil {
		return err
	}
	sum := 0.0
	for i, c := range cfg.Mix {
		if !finiteNonNeg(c.Share) || c.Share > 1 {
			return fmt.Errorf("sim: Config.Mix[%d].Share = %v: must be in [0, 1]", i, c.Share)
		}
		if !finiteNonNeg(c.Rate) {
			return fmt.Errorf("sim: Config.Mix[%d].Rate = %v: must be finite and >= 0", i, c.Rate)
		}
		sum += c.Share
	}
	for i, c := range cfg.Periodic {
		if err := c.validate(fmt.Sprintf("sim: Config.Periodic[%d]", i)); err != nil {
			return err
		}
		sum += c.Share
	}
	if cfg.Scripted == nil && math.Abs(sum-1) > shareSlack {
		return fmt.Errorf("sim: Config.Mix and Config.Periodic shares sum to %v: must sum to 1", sum)
	}
	if len(cfg.LastModified) > 0 {
		lsum := 0.0
		for i, c := range cfg.LastModified {
			if !finiteNonNeg(c.Share) || c.Share > 1 {
				return fmt.Errorf("sim: Config.LastModified[%d].Share = %v: must be in [0, 1]", i, c.Share)
			}
			if c.Mode > LMEveryRequest {
				return fmt.Errorf("sim: Config.LastModified[%d].Mode = %d: unknown", i, c.Mode)
			}
			lsum += c.Share
		}
		if math.Abs(lsum-1) > shareSlack {
			return fmt.Errorf("sim: Config.LastModified shares sum to %v: must sum to 1", lsum)
		}
	}
	return nil
}

// validate checks c; name is how errors call it.
func (c PeriodicClass) validate(name string) error {
	if !finiteNonNeg(c.Share) || c.Share > 1 {
		return fmt.Errorf("%s.Share = %v: must be in [0, 1]", name, c.Share)
	}
	if c.Period <= 0 {
		return fmt.Errorf("%s.Period = %v: must be > 0", name, c.Period)
	}
	if len(c.Phases) == 0 {
		return fmt.Errorf("%s.Phases: need at least one phase", name)
	}
	if c.Jitter < 0 {
		return fmt.Errorf("%s.Jitter = %v: must be >= 0", name, c.Jitter)
	}
	switch c.Feed {
	case "", "rss", "atom", "json":
	default:
		return fmt.Errorf("%s.Feed = %q: want rss, atom, json or empty", name, c.Feed)
	}
	ph := slices.Clone(c.Phases)
	slices.Sort(ph)
	for j, p := range ph {
		if p < 0 || p >= c.Period {
			return fmt.Errorf("%s.Phases: %v outside [0, Period = %v)", name, p, c.Period)
		}
		if j > 0 && p == ph[j-1] {
			return fmt.Errorf("%s.Phases: duplicate phase %v", name, p)
		}
	}
	minGap := ph[0] + c.Period - ph[len(ph)-1] // gap across the cycle boundary
	for j := 1; j < len(ph); j++ {
		minGap = min(minGap, ph[j]-ph[j-1])
	}
	if 2*c.Jitter >= minGap {
		return fmt.Errorf("%s.Jitter = %v: must be less than half the smallest phase gap %v", name, c.Jitter, minGap)
	}
	return nil
}

func finiteNonNeg(x float64) bool { return x >= 0 && !math.IsInf(x, 0) && !math.IsNaN(x) }

// classCounts splits n pages over classes with the given shares by largest
// remainder, so the realised mix is as close to the requested one as n allows
// (100 pages with the Table 6 mix give exactly 23/15/16/16/30).
func classCounts(shares []float64, n int) []int {
	if len(shares) == 0 {
		return nil // scripted pages: no classes
	}
	counts := make([]int, len(shares))
	type rem struct {
		i int
		r float64
	}
	rems := make([]rem, len(shares))
	total := 0
	for i, s := range shares {
		exact := s * float64(n)
		counts[i] = int(math.Floor(exact))
		total += counts[i]
		rems[i] = rem{i, exact - math.Floor(exact)}
	}
	slices.SortStableFunc(rems, func(a, b rem) int {
		switch {
		case a.r > b.r:
			return -1
		case a.r < b.r:
			return 1
		}
		return 0
	})
	for k := 0; total < n; k = (k + 1) % len(rems) {
		counts[rems[k].i]++
		total++
	}
	// Shares may sum to slightly above 1 (within shareSlack): trim the
	// largest classes so exactly n pages are assigned.
	for total > n {
		counts[slices.Index(counts, slices.Max(counts))]--
		total--
	}
	return counts
}
