package bench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/freshcrawl/freshcrawl/lab/sim"
)

// Workload names, in the order they run by default.
const (
	workloadTable6    = "table6"
	workloadHeavyTail = "heavytail"
	workloadWeighted  = "weighted"
	workloadDrift     = "drift"
	workloadHostBound = "hostbound"
	workloadNoLM      = "nolm"
	workloadLMMixed   = "lm-mixed"
	workloadColdStart = "coldstart"
)

// workloadNames lists every workload name.
func workloadNames() []string {
	return []string{workloadTable6, workloadHeavyTail, workloadWeighted, workloadDrift, workloadHostBound, workloadNoLM, workloadLMMixed, workloadColdStart,
		workloadBursty, workloadClustered, workloadGroups, workloadWebHist, workloadMixedHist}
}

// coldStartPages is the size of the coldstart workload's seed list.
const coldStartPages = 100_000

// Workload is a simulated web to benchmark on: the change processes (as
// sim mixes), and what the bench adds on top of the sim (importance
// weights, a change of rates halfway, politeness-bound hosts).
type Workload struct {
	Name        string
	Description string
	// Mix is the sim's Poisson mix (rates per simulated day).
	Mix []sim.RateClass
	// After, when set, replaces Mix from DriftAt (a share of the run) on:
	// each page draws its class afresh (the sim with seed+1), so a page
	// that changed daily may now change yearly and the other way round.
	After   []sim.RateClass
	DriftAt float64
	// Weights are the importance weights by page index (nil: all 1).
	Weights []float64
	// BoundHosts take a Crawl-delay that caps them at BoundShare of their
	// uniform share of the budget.
	BoundHosts []int
	BoundShare float64
	// LastModified is how the pages' servers fill Last-Modified (nil:
	// every page sends the time of its last change).
	LastModified []sim.LastModifiedClass
	// Pages, when > 0, replaces the run's page count; Days, when > 0,
	// its length in simulated days; FromStart measures from the first
	// second (no warm-up).
	Pages     int
	Days      float64
	FromStart bool
	// VirtualOnly workloads are refused by the live mode.
	VirtualOnly bool
	// hist, when set, generates every page's change times (history.go)
	// in place of Mix: the workloads that look like real histories.
	hist *histModel
}

// NewWorkload builds the named workload for pages pages on hosts hosts.
// Everything random is drawn from seed, so the same arguments give the
// same workload.
func NewWorkload(name string, pages, hosts int, seed uint64) (Workload, error) {
	if pages < 1 || hosts < 1 {
		return Workload{}, fmt.Errorf("workload %s: %d pages on %d hosts", name, pages, hosts)
	}
	rng := rand.New(rand.NewPCG(seed, 0x776f726b6c6f6164)) // "workload"
	w := Workload{Name: name, Mix: sim.Table6Mix(), hist: newHistModel(name)}
	if w.hist != nil {
		w.Mix = nil
	}
	switch name {
	case workloadTable6:
		w.Description = "Cho & Garcia-Molina Table 6: 23% daily, 15% weekly, 16% monthly, 16% quarterly, 30% yearly"
	case workloadHeavyTail:
		// Log-normal rates: median 0.08 a day, σ = 1.5 (mean ≈ 0.25 a
		// day, like Table 6), capped at 20 a day; every page its own
		// class so the sim keeps the exact draw.
		w.Description = "heavy-tailed: per-page rates log-normal, median 0.08/day, sigma 1.5 (mean ~0.25/day)"
		w.Mix = make([]sim.RateClass, pages)
		for i := range w.Mix {
			r := math.Min(0.08*math.Exp(1.5*rng.NormFloat64()), 20)
			w.Mix[i] = sim.RateClass{Share: 1 / float64(pages), Rate: r}
		}
	case workloadWeighted:
		// Importance independent of change rate, log-normal σ = 1: a few
		// pages matter an order of magnitude more than most.
		w.Description = "Table 6 rates, importance weights log-normal sigma 1 (independent of rates)"
		w.Weights = make([]float64, pages)
		for i := range w.Weights {
			w.Weights[i] = math.Exp(rng.NormFloat64())
		}
	case workloadDrift:
		w.Description = "Table 6 mix, every page redraws its rate class halfway through the run"
		w.After, w.DriftAt = sim.Table6Mix(), 0.5
	case workloadHostBound:
		n := max(1, hosts/4)
		w.Description = fmt.Sprintf("Table 6 rates, %d of %d hosts capped by Crawl-delay at 1/4 of their uniform share", n, hosts)
		for h := range n {
			w.BoundHosts = append(w.BoundHosts, h)
		}
		w.BoundShare = 0.25
	case workloadNoLM:
		// A web of dynamic pages: an ETag and nothing else, so a fetch
		// tells only whether the page changed.
		w.Description = "Table 6 rates, servers send an ETag and no Last-Modified"
		w.LastModified = []sim.LastModifiedClass{{Share: 1, Mode: sim.LMNone}}
	case workloadLMMixed:
		w.Description = "Table 6 rates, Last-Modified a quarter each: true, the response time, a constant date, a new date every request"
		w.LastModified = []sim.LastModifiedClass{
			{Share: 0.25, Mode: sim.LMTrue}, {Share: 0.25, Mode: sim.LMResponseTime},
			{Share: 0.25, Mode: sim.LMConstant}, {Share: 0.25, Mode: sim.LMEveryRequest},
		}
	case workloadColdStart:
		// A big list seeded at once, measured from the first second: how
		// soon every URL is fetched once, and how fresh the copy is then.
		// The size is --coldstart-pages (Options.ColdStartPages), which
		// the workload does not see here: the description names the flag.
		w.Description = fmt.Sprintf("Table 6 rates, every URL seeded at once (--coldstart-pages, default %d), measured from the start", coldStartPages)
		w.Pages, w.Days, w.FromStart, w.VirtualOnly = coldStartPages, 150, true, true
	case workloadBursty:
		w.Description = "non-stationary: busy phases of weeks to months at a change every few days, quiet years between; a fifth of the pages and of the hosts go quiet for good"
	case workloadClustered:
		w.Description = "stationary, clustered: renewal processes with log-normal intervals (sigma 1.7), mean rates as Table 6"
	case workloadGroups:
		w.Description = "groups of pages on one host changing at the same moments (2/3 of the pages in groups of 2 or more, 3 in 10 groups mirrors), Poisson with Table 6 rates by group"
	case workloadWebHist:
		w.Description = "like real histories: groups changing together, bursty and clustered (intervals median ~10 days, mean ~55), ETag only"
	case workloadMixedHist:
		w.Description = "half webhist pages (ETag only), half Table 6 Poisson pages (Last-Modified true)"
	default:
		return Workload{}, fmt.Errorf("unknown workload %q: want one of %s", name, strings.Join(workloadNames(), ", "))
	}
	return w, nil
}

// options applies the workload's own size and length to o.
func (w Workload) options(o Options) Options {
	if w.Pages > 0 {
		o.Pages = w.Pages
		if w.Name == workloadColdStart && o.ColdStartPages > 0 {
			o.Pages = o.ColdStartPages
		}
	}
	if w.Days > 0 {
		o.Days = w.Days
	}
	if w.FromStart {
		o.Warmup = 0
	}
	return o
}

// weight is page i's importance.
func (w Workload) weight(i int) float64 {
	if w.Weights == nil {
		return 1
	}
	return w.Weights[i]
}

// crawlDelayDays is the Crawl-delay of host h in simulated days (0: none),
// for a budget of budgetPerDay fetches a simulated day over hosts hosts.
func (w Workload) crawlDelayDays(h, hosts int, budgetPerDay float64) float64 {
	if !slices.Contains(w.BoundHosts, h) || w.BoundShare <= 0 || budgetPerDay <= 0 {
		return 0
	}
	return 1 / (w.BoundShare * budgetPerDay / float64(hosts))
}

// hostCapsPerDay are the most fetches a simulated day each host may take:
// the host rate, or less under the workload's Crawl-delay.
func hostCapsPerDay(w Workload, o Options) []float64 {
	caps := make([]float64, o.Hosts)
	for h := range caps {
		caps[h] = o.HostRate
		if d := w.crawlDelayDays(h, o.Hosts, o.Budget); d > 0 {
			caps[h] = math.Min(caps[h], 1/d)
		}
	}
	return caps
}

// ParseWorkloads splits a comma-separated list ("" or "all": every one).
func ParseWorkloads(s string) ([]string, error) {
	if s == "" || s == "all" {
		return workloadNames(), nil
	}
	var out []string
	for name := range strings.SplitSeq(s, ",") {
		name = strings.TrimSpace(name)
		if !slices.Contains(workloadNames(), name) {
			return nil, fmt.Errorf("unknown workload %q: want one of %s", name, strings.Join(workloadNames(), ", "))
		}
		out = append(out, name)
	}
	return out, nil
}
