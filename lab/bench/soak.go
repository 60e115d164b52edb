package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/freshcrawl/freshcrawl/config"
	"github.com/freshcrawl/freshcrawl/internal/node"
	"github.com/freshcrawl/freshcrawl/lab/sim"
	"github.com/freshcrawl/freshcrawl/proto"
	"github.com/freshcrawl/freshcrawl/store"
)

// SoakOptions configure RunSoak: a long crawl of the simulated web at a
// steady rate, sampled for the signs of a slow leak.
type SoakOptions struct {
	// Duration is the whole run; Warmup its start, left out of the slopes
	// and percentiles (the first fetch of every page, estimates settling,
	// the history filling up to the retention bounds); Sample the period
	// of the samples.
	Duration, Warmup, Sample time.Duration
	// URLs and Hosts shape the simulated web (at most 250 hosts).
	URLs, Hosts int
	// Budget and HostRate are fetches per second.
	Budget, HostRate float64
	// Day is the real length of a simulated day: pages change at the
	// Cho & Garcia-Molina Table 6 rates per simulated day.
	Day time.Duration
	// CaptureShare of the pages update twice a CapturePeriod, at fixed
	// phases, and are seeded in capture mode with CapturePolls polls a
	// period, so that versions accrue.
	CaptureShare  float64
	CapturePeriod time.Duration
	CapturePolls  int
	// Seed makes the simulated web reproducible.
	Seed uint64
	// Retention is the crawler's history retention under test.
	Retention store.Retention
	// Workers and Concurrency shape the in-process workers.
	Workers, Concurrency int
	// Site is a simulated web served elsewhere (the CLI runs it in a
	// child process, so that its memory, goroutines and files are not the
	// crawler's); nil starts one in this process.
	Site *SoakSite
	// TempDir holds the data directory (default os.TempDir()).
	TempDir string
	// Log receives the crawler's logs (default: discarded); OnSample sees
	// every sample as it is taken.
	Log      *slog.Logger
	OnSample func(SoakSample)
}

// SoakSite is the simulated web a soak crawls: its page URLs and which of
// them are capture pages.
type SoakSite struct {
	URLs    []string `json:"urls"`
	Capture []int    `json:"capture,omitempty"` // indices into URLs
}

func (o SoakOptions) withDefaults() SoakOptions {
	if o.Duration <= 0 {
		o.Duration = time.Hour
	}
	if o.Sample <= 0 {
		o.Sample = time.Minute
	}
	if o.Warmup < 0 {
		o.Warmup = 0
	}
	if o.URLs <= 0 {
		o.URLs = 10000
	}
	if o.Hosts <= 0 {
		o.Hosts = 100
	}
	if o.Budget <= 0 {
		o.Budget = 200
	}
	if o.HostRate <= 0 {
		o.HostRate = 5 * o.Budget / float64(o.Hosts)
	}
	if o.Day <= 0 {
		o.Day = time.Minute
	}
	if o.Retention.FoldMarksAge == 0 {
		o.Retention.FoldMarksAge = store.DefaultRetention().FoldMarksAge
	}
	if o.CapturePeriod <= 0 {
		o.CapturePeriod = 2 * time.Minute
	}
	if o.CapturePolls <= 0 {
		o.CapturePolls = 4
	}
	if o.Workers <= 0 {
		o.Workers = 2
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 8
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return o
}

// soakSimConfig is the simulated web of a soak: the Table 6 mix of change
// rates, and CaptureShare of the pages updating at two fixed phases of
// CapturePeriod.
func soakSimConfig(o SoakOptions) sim.Config {
	o = o.withDefaults()
	cfg := sim.Config{Hosts: o.Hosts, Pages: o.URLs, Day: o.Day, Seed: o.Seed}
	if o.CaptureShare > 0 {
		p := o.CapturePeriod
		cfg.Mix = sim.ScaleMix(sim.Table6Mix(), 1-o.CaptureShare)
		cfg.Periodic = []sim.PeriodicClass{{Share: o.CaptureShare, Period: p, Phases: []time.Duration{p / 4, 3 * p / 4}, Jitter: p / 20}}
	}
	return cfg
}

// startSoakSim starts the soak's simulated web in this process.
func startSoakSim(ctx context.Context, o SoakOptions) (*sim.Sim, SoakSite, error) {
	s, err := sim.New(soakSimConfig(o))
	if err != nil {
		return nil, SoakSite{}, fmt.Errorf("soak: %w", err)
	}
	if err := s.Start(ctx); err != nil {
		return nil, SoakSite{}, fmt.Errorf("soak: start sim: %w", err)
	}
	site := SoakSite{URLs: s.URLs()}
	for _, p := range s.Pages() {
		if p.Kind == "periodic" {
			site.Capture = append(site.Capture, p.Index)
		}
	}
	return s, site, nil
}

// ServeSoakSim runs the soak's simulated web until in reaches EOF or ctx
// ends, after writing its SoakSite as one JSON line to out: the body of
// the hidden mode of `freshcrawl bench soak` that serves the site from a
// child process (see StartSoakSimProcess).
func ServeSoakSim(ctx context.Context, o SoakOptions, in io.Reader, out io.Writer) error {
	s, site, err := startSoakSim(ctx, o)
	if err != nil {
		return err
	}
	defer s.Close()
	if err := json.NewEncoder(out).Encode(site); err != nil {
		return fmt.Errorf("soak sim: announce URLs: %w", err)
	}
	eof := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, in)
		close(eof)
	}()
	select {
	case <-ctx.Done():
	case <-eof:
	}
	return nil
}

// StartSoakSimProcess starts argv, a command running ServeSoakSim, and
// reads its site.
func StartSoakSimProcess(ctx context.Context, argv []string) (*PageProcess, SoakSite, error) {
	var site SoakSite
	p, line, err := startChild(ctx, argv)
	if err != nil {
		return nil, site, fmt.Errorf("soak sim: %w", err)
	}
	if err := json.Unmarshal(line, &site); err != nil || len(site.URLs) == 0 {
		p.Close()
		return nil, site, fmt.Errorf("soak sim: no URL list from %s (%v)", argv[0], err)
	}
	return p, site, nil
}

// SoakSample is the crawler process measured at one moment, and the
// latencies of the changes it announced since the previous sample.
type SoakSample struct {
	Elapsed    time.Duration `json:"elapsed_ns"`
	RSSBytes   int64         `json:"rss_bytes"`  // resident now (VmRSS), not the peak
	HeapBytes  uint64        `json:"heap_bytes"` // live and not yet collected heap objects
	Goroutines int           `json:"goroutines"`
	OpenFiles  int           `json:"open_files"` // -1 where /proc is missing
	// Fetches, Changes and Errors are the folded results since the
	// start; FetchRate is fetches per second since the previous sample.
	Fetches   int64   `json:"fetches"`
	Changes   int64   `json:"changes"`
	Errors    int64   `json:"errors"`
	FetchRate float64 `json:"fetch_rate"`
	// Latency of each change announced in the window: from the start of
	// its fetch to its change event, which the coordinator publishes once
	// the fold has committed (fetch, result stream, fold, commit).
	LatencyN   int     `json:"latency_n"`
	LatencyP50 float64 `json:"latency_p50_ms"`
	LatencyP99 float64 `json:"latency_p99_ms"`
	LatencyMax float64 `json:"latency_max_ms"`
	// The data directory: the bbolt file, the embedded NATS files, and
	// the store's growing parts.
	StoreBytes int64 `json:"store_bytes"`
	NATSBytes  int64 `json:"nats_bytes"`
	Versions   int   `json:"versions"`
	ChangeLog  int   `json:"change_log"`
	FoldMarks  int   `json:"fold_marks"`
}

// SoakTrend is a least-squares line through a series of samples after the
// warm-up: its slope per hour, and the series' range.
type SoakTrend struct {
	PerHour float64 `json:"per_hour"`
	Min     float64 `json:"min"`
	Max     float64 `json:"max"`
}

// SoakResult is what RunSoak measured.
type SoakResult struct {
	Machine     Machine       `json:"machine"`
	LoadEnd     string        `json:"load_end"`
	URLs        int           `json:"urls"`
	CaptureURLs int           `json:"capture_urls"`
	Hosts       int           `json:"hosts"`
	Budget      float64       `json:"budget_per_s"`
	Day         time.Duration `json:"day_ns"`
	Warmup      time.Duration `json:"warmup_ns"`
	Retention   struct {
		Versions    int           `json:"versions"`
		VersionsAge time.Duration `json:"versions_age_ns"`
		Changes     int           `json:"changes"`
		ChangesAge  time.Duration `json:"changes_age_ns"`
		FoldMarks   time.Duration `json:"fold_marks_age_ns"`
	} `json:"retention"`
	Samples []SoakSample `json:"samples"`

	// After the warm-up: the trends of each series (MiB for the sizes,
	// ms for the latency), the fetch rate, and the latency percentiles
	// over every change.
	RSS        SoakTrend `json:"rss_mib"`
	Heap       SoakTrend `json:"heap_mib"`
	Goroutines SoakTrend `json:"goroutines"`
	OpenFiles  SoakTrend `json:"open_files"`
	P99        SoakTrend `json:"sample_latency_p99_ms"`
	Store      SoakTrend `json:"store_mib"`
	NATS       SoakTrend `json:"nats_mib"`
	Versions   SoakTrend `json:"versions"`
	ChangeLog  SoakTrend `json:"change_log"`
	FoldMarks  SoakTrend `json:"fold_marks"`
	FetchRate  float64   `json:"fetch_rate"`
	LatencyN   int       `json:"latency_n"`
	LatencyP50 float64   `json:"latency_p50_ms"`
	LatencyP99 float64   `json:"latency_p99_ms"`
	LatencyMax float64   `json:"latency_max_ms"`
	// Pruned counts what retention deleted over the run.
	Pruned store.Pruned `json:"pruned"`
	// Produced counts the versions captured and changes logged over the
	// run, kept or not (the URL records' counters).
	ProducedVersions int64 `json:"produced_versions"`
	ProducedChanges  int64 `json:"produced_changes"`
}

// latencies collects the latencies of announced changes.
type latencies struct {
	mu     sync.Mutex
	window []float64 // ms, since the last take
}

func (l *latencies) add(ms float64) {
	l.mu.Lock()
	l.window = append(l.window, ms)
	l.mu.Unlock()
}

func (l *latencies) take() []float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.window
	l.window = nil
	return w
}

// quantile is the q-quantile of sorted xs (nearest rank), 0 if empty.
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// RunSoak crawls the simulated web with a coordinator and in-process
// workers on an embedded NATS server for o.Duration, sampling the process
// every o.Sample: resident memory, heap, goroutines, open files, the
// latency of folds (through the change events), the data directory and
// the store's history. It returns the samples and their trends after the
// warm-up.
func RunSoak(ctx context.Context, o SoakOptions) (SoakResult, error) {
	o = o.withDefaults()
	res := SoakResult{Machine: thisMachine(), Hosts: o.Hosts, Budget: o.Budget, Day: o.Day, Warmup: o.Warmup}
	res.Retention.Versions, res.Retention.VersionsAge = o.Retention.Versions, o.Retention.VersionsAge
	res.Retention.Changes, res.Retention.ChangesAge = o.Retention.Changes, o.Retention.ChangesAge
	res.Retention.FoldMarks = o.Retention.FoldMarksAge
	site := o.Site
	if site == nil {
		s, st, err := startSoakSim(ctx, o)
		if err != nil {
			return res, err
		}
		defer s.Close()
		site = &st
	}
	res.URLs, res.CaptureURLs = len(site.URLs), len(site.Capture)

	dir, err := os.MkdirTemp(o.TempDir, "freshcrawl-soak-*")
	if err != nil {
		return res, fmt.Errorf("soak: data directory: %w", err)
	}
	defer os.RemoveAll(dir)
	cfg := config.Default()
	cfg.Data, cfg.NATSListen = dir, "127.0.0.1:-1"
	cfg.AllowPrivate = true
	cfg.Budget, cfg.HostRate = config.Rate(o.Budget), config.Rate(o.HostRate)
	// Time runs a simulated day per o.Day (as in demo): the prior, the
	// estimator's memory and the Last-Modified tolerance scale with it.
	cfg.PriorRate = config.Rate(0.25 / o.Day.Seconds())
	cfg.HalfLife = time.Duration(90 * float64(o.Day))
	cfg.LMSkew = time.Second
	cfg.Workers, cfg.Concurrency = o.Workers, o.Concurrency
	cfg.KeepVersions, cfg.KeepVersionsFor = o.Retention.Versions, o.Retention.VersionsAge
	cfg.KeepChanges, cfg.KeepChangesFor = o.Retention.Changes, o.Retention.ChangesAge
	cfg.KeepFoldMarks = o.Retention.FoldMarksAge
	if err := cfg.Validate(); err != nil {
		return res, fmt.Errorf("soak: %w", err)
	}
	n, err := node.Start(ctx, node.Options{Config: cfg, Roles: node.Roles{Coordinator: true, Workers: o.Workers}, Log: o.Log})
	if err != nil {
		return res, fmt.Errorf("soak: start crawler: %w", err)
	}
	stopped := false
	defer func() {
		if !stopped {
			n.Stop()
		}
	}()

	var lat latencies
	sub, err := n.NC.Subscribe(proto.ChangeSubjectPrefix+">", func(m *nats.Msg) {
		var ev proto.ChangeEvent
		if json.Unmarshal(m.Data, &ev) == nil && !ev.At.IsZero() {
			lat.add(float64(time.Since(ev.At)) / float64(time.Millisecond))
		}
	})
	if err != nil {
		return res, fmt.Errorf("soak: subscribe to change events: %w", err)
	}
	defer sub.Unsubscribe()

	if sum, err := n.Coordinator.AddSeeds(strings.NewReader(soakSeeds(o, site)), "soak"); err != nil || sum.Bad > 0 {
		return res, fmt.Errorf("soak: seed %d URLs: %d bad (%v): %w", len(site.URLs), sum.Bad, sum.Errors, err)
	}

	all, err := sampleSoakRun(ctx, o, n, dir, &lat, &res)
	if err != nil {
		return res, err
	}
	res.Pruned = n.Coordinator.Pruned()
	n.Stop()
	stopped = true
	res.LoadEnd = thisMachine().LoadAvg

	if err := readProduced(dir, &res); err != nil {
		return res, err
	}
	res.summarise(o.Warmup, all)
	return res, nil
}

// soakSeeds is the seed file of the site: its capture URLs with the
// capture mode, the others plain.
func soakSeeds(o SoakOptions, site *SoakSite) string {
	capture := map[int]bool{}
	for _, i := range site.Capture {
		capture[i] = true
	}
	var seeds strings.Builder
	for i, u := range site.URLs {
		if capture[i] {
			fmt.Fprintf(&seeds, `{"url":%q,"mode":"capture","period":%q,"polls":%d}`+"\n", u, o.CapturePeriod.String(), o.CapturePolls)
		} else {
			seeds.WriteString(u + "\n")
		}
	}
	return seeds.String()
}

// sampleSoakRun samples the crawler every o.Sample until o.Duration has
// passed, adding the samples to res, and returns the fold latencies seen
// after the warm-up.
func sampleSoakRun(ctx context.Context, o SoakOptions, n *node.Node, dir string, lat *latencies, res *SoakResult) ([]float64, error) {
	start := time.Now()
	tick := time.NewTicker(o.Sample)
	defer tick.Stop()
	var all []float64 // latencies after the warm-up
	prev := SoakSample{}
	for done := false; !done; {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
		s, err := sampleSoak(n, dir, time.Since(start))
		if err != nil {
			return nil, err
		}
		done = s.Elapsed >= o.Duration
		w := lat.take()
		slices.Sort(w)
		s.LatencyN, s.LatencyP50, s.LatencyP99 = len(w), quantile(w, 0.5), quantile(w, 0.99)
		if len(w) > 0 {
			s.LatencyMax = w[len(w)-1]
		}
		if dt := (s.Elapsed - prev.Elapsed).Seconds(); dt > 0 {
			s.FetchRate = float64(s.Fetches-prev.Fetches) / dt
		}
		if s.Elapsed > o.Warmup {
			all = append(all, w...)
		}
		res.Samples = append(res.Samples, s)
		prev = s
		if o.OnSample != nil {
			o.OnSample(s)
		}
	}
	return all, nil
}

// sampleSoak measures the crawler process and its data directory.
func sampleSoak(n *node.Node, dir string, elapsed time.Duration) (SoakSample, error) {
	s := SoakSample{Elapsed: elapsed, Goroutines: runtime.NumGoroutine(), OpenFiles: -1}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s.HeapBytes = ms.HeapAlloc
	s.RSSBytes, _ = residentBytes()
	if k, ok := openFiles(); ok {
		s.OpenFiles = k
	}
	st := n.Coordinator.Status()
	s.Fetches, s.Changes, s.Errors = st.Fetches, st.Changes, sumErrors(st.Errors)
	h, err := n.DB.History()
	if err != nil {
		return s, fmt.Errorf("soak: %w", err)
	}
	s.Versions, s.ChangeLog, s.FoldMarks = h.Versions, h.Changes, h.FoldMarks
	if fi, err := os.Stat(filepath.Join(dir, store.FileName)); err == nil {
		s.StoreBytes = fi.Size()
	}
	s.NATSBytes = dirBytes(filepath.Join(dir, "nats"))
	return s, nil
}

// readProduced reads back, after shutdown, how many versions and changes
// the crawl produced, kept or not.
func readProduced(dir string, res *SoakResult) error {
	db, err := store.OpenDir(dir, store.Options{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("soak: reopen store: %w", err)
	}
	defer db.Close()
	err = db.ForEach(func(u store.URL) error {
		res.ProducedVersions += u.Versions
		res.ProducedChanges += u.Changes
		return nil
	})
	if err != nil {
		return fmt.Errorf("soak: read store back: %w", err)
	}
	return nil
}

// summarise computes the trends and percentiles after the warm-up.
func (r *SoakResult) summarise(warmup time.Duration, lat []float64) {
	var after []SoakSample
	for _, s := range r.Samples {
		if s.Elapsed > warmup {
			after = append(after, s)
		}
	}
	const mib = 1 << 20
	trend := func(v func(SoakSample) float64) SoakTrend {
		return fitTrend(after, v)
	}
	r.RSS = trend(func(s SoakSample) float64 { return float64(s.RSSBytes) / mib })
	r.Heap = trend(func(s SoakSample) float64 { return float64(s.HeapBytes) / mib })
	r.Goroutines = trend(func(s SoakSample) float64 { return float64(s.Goroutines) })
	r.OpenFiles = trend(func(s SoakSample) float64 { return float64(s.OpenFiles) })
	r.P99 = trend(func(s SoakSample) float64 { return s.LatencyP99 })
	r.Store = trend(func(s SoakSample) float64 { return float64(s.StoreBytes) / mib })
	r.NATS = trend(func(s SoakSample) float64 { return float64(s.NATSBytes) / mib })
	r.Versions = trend(func(s SoakSample) float64 { return float64(s.Versions) })
	r.ChangeLog = trend(func(s SoakSample) float64 { return float64(s.ChangeLog) })
	r.FoldMarks = trend(func(s SoakSample) float64 { return float64(s.FoldMarks) })
	if len(after) > 1 {
		first, last := after[0], after[len(after)-1]
		if dt := (last.Elapsed - first.Elapsed).Seconds(); dt > 0 {
			r.FetchRate = float64(last.Fetches-first.Fetches) / dt
		}
	}
	slices.Sort(lat)
	r.LatencyN, r.LatencyP50, r.LatencyP99 = len(lat), quantile(lat, 0.5), quantile(lat, 0.99)
	if len(lat) > 0 {
		r.LatencyMax = lat[len(lat)-1]
	}
}

// fitTrend fits value against elapsed hours by least squares.
func fitTrend(samples []SoakSample, value func(SoakSample) float64) SoakTrend {
	t := SoakTrend{Min: math.Inf(1), Max: math.Inf(-1)}
	var sx, sy, sxx, sxy float64
	for _, s := range samples {
		x, y := s.Elapsed.Hours(), value(s)
		sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
		t.Min, t.Max = min(t.Min, y), max(t.Max, y)
	}
	k := float64(len(samples))
	if den := k*sxx - sx*sx; k >= 2 && den > 0 {
		t.PerHour = (k*sxy - sx*sy) / den
	}
	if len(samples) == 0 {
		t.Min, t.Max = 0, 0
	}
	return t
}

// residentBytes is this process's resident set now (VmRSS; Linux).
func residentBytes() (int64, bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0, false
			}
			return kb * 1024, true
		}
	}
	return 0, false
}

// openFiles counts this process's open file descriptors (Linux).
func openFiles() (int, bool) {
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0, false
	}
	return len(es), true
}

// dirBytes is the total size of the files under dir (0 if unreadable).
func dirBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // a file removed while walking
			}
			return err
		}
		if fi, err := d.Info(); err == nil && !d.IsDir() {
			n += fi.Size()
		}
		return nil
	})
	return n
}
