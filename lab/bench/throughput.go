package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/freshcrawl/freshcrawl/config"
	"github.com/freshcrawl/freshcrawl/internal/node"
	"github.com/freshcrawl/freshcrawl/store"
)

// ThroughputOptions configure RunThroughput.
type ThroughputOptions struct {
	// Workers and Concurrency shape the in-process workers; Colly gets
	// the same total, Workers × Concurrency requests at once.
	Workers, Concurrency int
	// Budget and HostRate are fetches per second; both default high
	// enough (100000/s, 1000/s) that politeness never binds and the
	// pipeline is what is measured.
	Budget, HostRate float64
	// MaxInFlight bounds tasks dispatched and not yet folded (default
	// Workers × Concurrency × 2).
	MaxInFlight int
	// Policy is the revisit policy (default uniform: every page is due
	// all the time at this budget, so the policy only orders them).
	Policy string
	// Warmup runs before measuring, so connection set-up, robots.txt and
	// the first version of every page are not counted; Duration is the
	// measurement window.
	Warmup, Duration time.Duration
	// Pages are the URLs to crawl, served elsewhere (the CLI serves them
	// from a child process so their CPU is not charged to the crawler).
	// Empty: Site is started in this process.
	Pages []string
	Site  PageOptions
	// ServerPID, if set, is the page server's process, whose CPU time is
	// reported per fetch for each crawler.
	ServerPID int
	// CollyBin is the collybench binary; empty skips Colly.
	CollyBin string
	// TempDir holds the data directory (default os.TempDir()).
	TempDir string
	// CPUProfile, if set, receives a CPU profile of freshcrawl's
	// measurement window.
	CPUProfile io.Writer
	// AllocProfile, if set, receives the allocation profile (pprof
	// "allocs") at the end of the measurement window; it counts from the
	// start of the process, warm-up included.
	AllocProfile io.Writer
	// Log receives freshcrawl's own logs (default: discarded) and
	// Progress one line per phase.
	Log      *slog.Logger
	Progress func(format string, args ...any)
}

func (o ThroughputOptions) withDefaults() ThroughputOptions {
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 8
	}
	if o.Budget <= 0 {
		o.Budget = 100000
	}
	if o.HostRate <= 0 {
		o.HostRate = 1000
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = o.Workers * o.Concurrency * 2
	}
	if o.Policy == "" {
		o.Policy = "uniform"
	}
	if o.Warmup < 0 {
		o.Warmup = 0
	}
	if o.Duration <= 0 {
		o.Duration = 20 * time.Second
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Progress == nil {
		o.Progress = func(string, ...any) {}
	}
	return o
}

// Machine describes where a benchmark ran.
type Machine struct {
	GoVersion  string    `json:"go_version"`
	OS         string    `json:"os"`
	Arch       string    `json:"arch"`
	CPUs       int       `json:"cpus"`
	GOMAXPROCS int       `json:"gomaxprocs"`
	Date       time.Time `json:"date"`
	// LoadAvg is /proc/loadavg when the run started: the machine may be
	// shared, and a busy one slows every figure.
	LoadAvg string `json:"load_avg,omitempty"`
}

func thisMachine() Machine {
	m := Machine{GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), Date: time.Now().UTC()}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 3 {
			m.LoadAvg = strings.Join(f[:3], " ")
		}
	}
	return m
}

// RunStats is one crawler's measurement window.
type RunStats struct {
	Name          string  `json:"name"`
	Fetches       int64   `json:"fetches"` // completed (folded, for freshcrawl) in the window
	Errors        int64   `json:"errors"`
	Changes       int64   `json:"changes,omitempty"`
	Seconds       float64 `json:"seconds"`
	PerSecond     float64 `json:"fetches_per_s"`
	CPUSeconds    float64 `json:"cpu_s"`
	CPUPerFetchMS float64 `json:"cpu_ms_per_fetch"`
	// ServerCPUPerFetchMS is the page server's CPU per fetch in the same
	// window (0 when not measured).
	ServerCPUPerFetchMS float64 `json:"server_cpu_ms_per_fetch,omitempty"`
	MaxRSSBytes         int64   `json:"max_rss_bytes"`
	PeakHeapBytes       uint64  `json:"peak_heap_bytes"`
	// Concurrency is the requests the crawler may have in flight.
	Concurrency int `json:"concurrency"`
}

// Persistence is the proof that every counted fetch reached bbolt.
type Persistence struct {
	// Folded is the store's total of results folded (kept by each fold
	// with its results), InStore the sum of the stored URL records' fetch
	// counters, both read back after shutdown; they must be equal.
	Folded  int64 `json:"folded"`
	InStore int64 `json:"in_store"`
	// Contents counts URLs with a stored extracted text, Changes the
	// change-log entries.
	Contents int64 `json:"contents"`
	Changes  int64 `json:"changes"`
	// Processed counts results the workers published; the few above
	// Folded were still in the result stream at shutdown.
	Processed int64 `json:"processed"`
	// StoreBytes is the bbolt file's size at the end.
	StoreBytes int64 `json:"store_bytes"`
}

// Check reports an error unless every folded fetch is in the store.
func (p Persistence) Check() error {
	if p.InStore != p.Folded {
		return fmt.Errorf("store holds %d fetches but %d were folded", p.InStore, p.Folded)
	}
	return nil
}

// ThroughputResult is what RunThroughput measured.
type ThroughputResult struct {
	Machine    Machine     `json:"machine"`
	Hosts      int         `json:"hosts"`
	URLs       int         `json:"urls"`
	Workers    int         `json:"workers"`
	Concurrent int         `json:"concurrency_per_worker"`
	Freshcrawl RunStats    `json:"freshcrawl"`
	Persisted  Persistence `json:"persisted"`
	Colly      *RunStats   `json:"colly,omitempty"`
	// Ratio is freshcrawl's rate over Colly's (0 without Colly).
	Ratio float64 `json:"ratio,omitempty"`
}

// RunThroughput runs the real pipeline — embedded NATS, coordinator,
// in-process workers, bbolt — against local pages, measures its end-to-end
// rate (results folded into the store per second), CPU per fetch and
// memory, then runs Colly on the same pages at the same concurrency.
func RunThroughput(ctx context.Context, o ThroughputOptions) (ThroughputResult, error) {
	o = o.withDefaults()
	res := ThroughputResult{Machine: thisMachine(), Workers: o.Workers, Concurrent: o.Concurrency}
	pages := o.Pages
	if len(pages) == 0 {
		site, err := startPages(o.Site)
		if err != nil {
			return res, err
		}
		defer site.close()
		pages = site.urls()
	}
	res.URLs, res.Hosts = len(pages), countHosts(pages)

	fc, persisted, err := runFreshcrawl(ctx, o, pages)
	if err != nil {
		return res, err
	}
	res.Freshcrawl, res.Persisted = fc, persisted
	if o.CollyBin != "" {
		cs, err := runColly(ctx, o, pages)
		if err != nil {
			return res, err
		}
		res.Colly = &cs
		if cs.PerSecond > 0 {
			res.Ratio = fc.PerSecond / cs.PerSecond
		}
	}
	return res, nil
}

func countHosts(urls []string) int {
	seen := map[string]bool{}
	for _, u := range urls {
		rest := u[strings.Index(u, "//")+2:]
		host, _, _ := strings.Cut(rest, "/")
		if i := strings.LastIndexByte(host, ':'); i >= 0 {
			host = host[:i]
		}
		seen[host] = true
	}
	return len(seen)
}

// heapSampler records the peak live heap while it runs: the heap after a
// collection is what the process needs, but sampling HeapAlloc a few
// times a second between collections gives the peak the GC let it reach.
type heapSampler struct {
	stop chan struct{}
	done chan uint64
}

func startHeapSampler(every time.Duration) *heapSampler {
	h := &heapSampler{stop: make(chan struct{}), done: make(chan uint64, 1)}
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		var peak uint64
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
			select {
			case <-h.stop:
				h.done <- peak
				return
			case <-t.C:
			}
		}
	}()
	return h
}

// Stop ends sampling and returns the peak.
func (h *heapSampler) Stop() uint64 {
	close(h.stop)
	return <-h.done
}

// sleepOrDone waits d or until ctx is done; it reports whether d elapsed.
func sleepOrDone(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func sumErrors(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// runFreshcrawl starts a node with a coordinator and o.Workers workers on a
// fresh data directory, seeds pages, warms up, measures, shuts down and
// reads the store back.
func runFreshcrawl(ctx context.Context, o ThroughputOptions, pages []string) (RunStats, Persistence, error) {
	st := RunStats{Name: "freshcrawl", Concurrency: o.Workers * o.Concurrency}
	var per Persistence
	dir, err := os.MkdirTemp(o.TempDir, "freshcrawl-throughput-*")
	if err != nil {
		return st, per, fmt.Errorf("throughput: data directory: %w", err)
	}
	defer os.RemoveAll(dir)

	cfg := config.Default()
	cfg.Data = dir
	cfg.Budget = config.Rate(o.Budget)
	cfg.HostRate = config.Rate(o.HostRate)
	cfg.MaxInFlight = o.MaxInFlight
	cfg.Policy = o.Policy
	cfg.Workers = o.Workers
	cfg.Concurrency = o.Concurrency
	cfg.AllowPrivate = true
	cfg.UserAgent = "freshcrawl-bench/1.0"
	cfg.Timeout = 10 * time.Second
	n, err := startBenchNode(ctx, cfg, node.Roles{Coordinator: true, Workers: o.Workers}, o.Log)
	if err != nil {
		return st, per, fmt.Errorf("throughput: %w", err)
	}
	stopped := false
	defer func() {
		if !stopped {
			n.Stop()
		}
	}()
	sum, err := n.Coordinator.AddSeeds(strings.NewReader(strings.Join(pages, "\n")), "bench")
	if err != nil || sum.Bad > 0 {
		return st, per, fmt.Errorf("throughput: seed %d pages: %d bad (%v): %w", len(pages), sum.Bad, sum.Errors, err)
	}
	o.Progress("freshcrawl: %d workers × %d, %d pages; warming up %s", o.Workers, o.Concurrency, len(pages), o.Warmup)
	if !sleepOrDone(ctx, o.Warmup) {
		return st, per, ctx.Err()
	}
	o.Progress("freshcrawl: measuring %s", o.Duration)
	heap := startHeapSampler(250 * time.Millisecond)
	if o.CPUProfile != nil {
		if err := pprof.StartCPUProfile(o.CPUProfile); err != nil {
			return st, per, fmt.Errorf("throughput: CPU profile: %w", err)
		}
	}
	s0, u0, t0 := n.Coordinator.Status(), selfUsage(), time.Now()
	srv0, srvOK := procCPU(o.ServerPID)
	ok := sleepOrDone(ctx, o.Duration)
	s1, u1, t1 := n.Coordinator.Status(), selfUsage(), time.Now()
	srv1, _ := procCPU(o.ServerPID)
	if o.CPUProfile != nil {
		pprof.StopCPUProfile()
	}
	if o.AllocProfile != nil {
		if err := pprof.Lookup("allocs").WriteTo(o.AllocProfile, 0); err != nil {
			return st, per, fmt.Errorf("throughput: allocation profile: %w", err)
		}
	}
	st.PeakHeapBytes = heap.Stop()
	if !ok {
		return st, per, ctx.Err()
	}
	st.Fetches = s1.Fetches - s0.Fetches
	st.Errors = sumErrors(s1.Errors) - sumErrors(s0.Errors)
	st.Changes = s1.Changes - s0.Changes
	fillRates(&st, t1.Sub(t0), u1.CPU-u0.CPU, u1.MaxRSS)
	if srvOK && o.ServerPID > 0 && st.Fetches > 0 {
		st.ServerCPUPerFetchMS = (srv1 - srv0).Seconds() * 1000 / float64(st.Fetches)
	}

	n.Stop()
	stopped = true
	for _, w := range n.Workers {
		per.Processed += w.Processed()
	}
	if err := readStoreBack(dir, &per); err != nil {
		return st, per, err
	}
	o.Progress("freshcrawl: %.0f fetches/s, %d folded, %d in store", st.PerSecond, per.Folded, per.InStore)
	return st, per, nil
}

// fill derives the rates from a window's counts.
func fillRates(st *RunStats, wall, cpu time.Duration, maxRSS int64) {
	st.Seconds = wall.Seconds()
	st.CPUSeconds = cpu.Seconds()
	st.MaxRSSBytes = maxRSS
	if st.Seconds > 0 {
		st.PerSecond = float64(st.Fetches) / st.Seconds
	}
	if st.Fetches > 0 {
		st.CPUPerFetchMS = st.CPUSeconds * 1000 / float64(st.Fetches)
	}
}

// readStoreBack reopens the store after shutdown and counts what it holds.
func readStoreBack(dir string, per *Persistence) error {
	db, err := store.OpenDir(dir, store.Options{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("throughput: reopen store: %w", err)
	}
	defer db.Close()
	tot, err := db.Totals()
	if err != nil {
		return fmt.Errorf("throughput: read the store's totals: %w", err)
	}
	per.Folded = tot.Fetches
	err = db.ForEach(func(u store.URL) error {
		per.InStore += u.Fetches
		if u.Hash != "" {
			per.Contents++
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("throughput: read store back: %w", err)
	}
	for after := uint64(0); ; {
		chs, err := db.Changes(after, 10000)
		if err != nil {
			return fmt.Errorf("throughput: read change log: %w", err)
		}
		if len(chs) == 0 {
			break
		}
		per.Changes += int64(len(chs))
		after = chs[len(chs)-1].Seq
	}
	if fi, err := os.Stat(db.Path()); err == nil {
		per.StoreBytes = fi.Size()
	}
	return nil
}
