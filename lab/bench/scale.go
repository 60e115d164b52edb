package bench

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/freshcrawl/freshcrawl/coordinator"
	"github.com/freshcrawl/freshcrawl/internal/schedule"
	"github.com/freshcrawl/freshcrawl/store"
)

// ScaleOptions configure RunScale.
type ScaleOptions struct {
	// Sizes are the URL counts (default 1 M, 3 M, 10 M).
	Sizes []int
	// Hosts is the number of hosts the URLs spread over (default 10 000).
	Hosts int
	// FetchedShare of the URLs get a fetched state after seeding (default
	// 0.5; negative: none).
	FetchedShare float64
	// Compact also writes a compacted copy to measure its size (default
	// on; it needs as much disk again).
	NoCompact bool
	Seed      uint64
	// TempDir holds the seed file and the data directory, removed after
	// each size (default os.TempDir()).
	TempDir string
	// KeepDir, if set, holds each size's data directory (KeepDir/N) and
	// keeps it after the run; a later run with the same KeepDir finds it
	// seeded and measures the restart only, so that the restart can be
	// profiled again without seeding millions of URLs each time.
	KeepDir  string
	Progress func(format string, args ...any)
	// RestartProfile, if set, receives a CPU profile of the restart (open,
	// load, first plan); with it, Sizes must hold one size.
	RestartProfile io.Writer
}

func (o ScaleOptions) withDefaults() ScaleOptions {
	if len(o.Sizes) == 0 {
		o.Sizes = []int{1_000_000, 3_000_000, 10_000_000}
	}
	if o.Hosts <= 0 {
		o.Hosts = 10_000
	}
	if o.FetchedShare == 0 {
		o.FetchedShare = 0.5
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Progress == nil {
		o.Progress = func(string, ...any) {}
	}
	return o
}

// ScaleResult is one size of RunScale.
type ScaleResult struct {
	URLs    int `json:"urls"`
	Fetched int `json:"fetched"`
	// MeanURLBytes is the mean length of the seeded URLs.
	MeanURLBytes float64 `json:"mean_url_bytes"`
	// Seed is `freshcrawl seed FILE` into a fresh data directory
	// (coordinator.IngestSeedsSorted).
	SeedSeconds    float64 `json:"seed_s"`
	SeedCPUSeconds float64 `json:"seed_cpu_s"`
	// FetchedSeconds is writing the fetched state of Fetched URLs, as
	// folds do (Tx.Put in FoldMany transactions of 10 000).
	FetchedSeconds float64 `json:"fetched_s"`
	// FileBytesPerURL is the store file as written; CompactBytesPerURL a
	// compacted copy; Buckets where the bytes go.
	FileBytesPerURL    float64            `json:"file_bytes_per_url"`
	CompactBytesPerURL float64            `json:"compact_bytes_per_url,omitempty"`
	Buckets            []store.BucketSize `json:"buckets"`
	// Restart is a coordinator start on the data directory: open the
	// store, load every URL into the schedule (coordinator.LoadScheduler),
	// first plan.
	OpenSeconds         float64 `json:"open_s"`
	LoadSeconds         float64 `json:"load_s"`
	LoadCPUSeconds      float64 `json:"load_cpu_s"`
	FirstPlanSeconds    float64 `json:"first_plan_s"`
	FirstPlanCPUSeconds float64 `json:"first_plan_cpu_s"`
	RestartSeconds      float64 `json:"restart_s"`
	RestartCPUSeconds   float64 `json:"restart_cpu_s"`
	// SchedulerBytesPerURL is the live heap the loaded schedule holds.
	SchedulerBytesPerURL float64 `json:"scheduler_bytes_per_url"`
	// ReplanSeconds is a second plan of the loaded schedule (no folds run).
	ReplanSeconds    float64 `json:"replan_s"`
	ReplanCPUSeconds float64 `json:"replan_cpu_s"`
	// PlanError is a plan that failed (first or second): the size's
	// other figures stand, and the failure is reported rather than losing
	// them.
	PlanError string `json:"plan_error,omitempty"`
}

// ScaleReport is what RunScale measured.
type ScaleReport struct {
	Machine Machine       `json:"machine"`
	Sizes   []ScaleResult `json:"sizes"`
	MaxRSS  int64         `json:"max_rss_bytes"`
}

// RunScale measures, for each size, seeding a file of that many URLs into
// a fresh store, the store's bytes per URL, and a coordinator restart on
// it (load and first plan), with the schedule's memory and a re-plan.
func RunScale(ctx context.Context, o ScaleOptions) (ScaleReport, error) {
	o = o.withDefaults()
	if o.RestartProfile != nil && len(o.Sizes) != 1 {
		return ScaleReport{}, fmt.Errorf("a restart profile needs one size, not %d", len(o.Sizes))
	}
	rep := ScaleReport{Machine: thisMachine()}
	for _, n := range o.Sizes {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		r, err := scaleAt(ctx, n, o)
		if err != nil {
			return rep, fmt.Errorf("scale %d URLs: %w", n, err)
		}
		// Each size as it is done: a long run stopped later keeps it.
		o.Progress("scale %d: seed %.1f s (%.1f CPU s), file %.0f B/URL, compacted %.0f B/URL, restart %.1f s (%.1f CPU s: open %.2f s, load %.1f s, first plan %.1f s), schedule %.0f B/URL, re-plan %.1f s (%.1f CPU s) %s",
			n, r.SeedSeconds, r.SeedCPUSeconds, r.FileBytesPerURL, r.CompactBytesPerURL, r.RestartSeconds, r.RestartCPUSeconds, r.OpenSeconds, r.LoadSeconds, r.FirstPlanSeconds,
			r.SchedulerBytesPerURL, r.ReplanSeconds, r.ReplanCPUSeconds, r.PlanError)
		rep.Sizes = append(rep.Sizes, r)
	}
	rep.MaxRSS = selfUsage().MaxRSS
	return rep, nil
}

// scaleURL is a realistic URL of host h, 60 to 100 bytes: a host name,
// a section, a date and a slug.
func scaleURL(rng *rand.Rand, h, i int) string {
	sections := [...]string{"news", "articles", "blog", "products", "category/shoes", "world/europe", "tech/reviews", "docs/guides"}
	words := [...]string{"market", "update", "review", "guide", "launch", "season", "report", "analysis", "city", "team"}
	var b strings.Builder
	fmt.Fprintf(&b, "https://www.site-%d.example.com/%s/2026/%02d/", h, sections[rng.IntN(len(sections))], 1+rng.IntN(12))
	fmt.Fprintf(&b, "%d-%s", i, words[rng.IntN(len(words))])
	for b.Len() < 60 || rng.IntN(2) == 0 {
		w := words[rng.IntN(len(words))]
		if b.Len()+1+len(w) > 100 {
			break
		}
		b.WriteString("-" + w)
	}
	return b.String()
}

func newScaleRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 17)) }

// scaleHost draws a host: a few large hosts, many small ones.
func scaleHost(rng *rand.Rand, hosts int) int {
	return int(float64(hosts) * math.Pow(rng.Float64(), 2))
}

// writeSeedFile writes n URL lines to path, streamed.
func writeSeedFile(path string, n int, o ScaleOptions) (meanLen float64, err error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	rng := newScaleRand(o.Seed)
	var total int64
	for i := range n {
		u := scaleURL(rng, scaleHost(rng, o.Hosts), i)
		total += int64(len(u))
		if _, err := io.WriteString(w, u+"\n"); err != nil {
			f.Close()
			return 0, err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return 0, err
	}
	return float64(total) / float64(n), f.Close()
}

func scaleAt(ctx context.Context, n int, o ScaleOptions) (ScaleResult, error) {
	r := ScaleResult{URLs: n}
	if o.KeepDir != "" {
		dir := filepath.Join(o.KeepDir, strconv.Itoa(n))
		data := filepath.Join(dir, "data")
		if _, err := os.Stat(filepath.Join(dir, scaleSeeded)); err == nil {
			o.Progress("scale %d: %s is seeded: restart only", n, dir)
			return restartAt(data, r, o)
		}
		if err := os.RemoveAll(dir); err != nil {
			return r, err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return r, err
		}
		r, err := seedAt(ctx, dir, r, o)
		if err != nil {
			return r, err
		}
		// Marked only once seeded and closed: an interrupted run leaves
		// no mark, and the next one seeds again.
		if err := os.WriteFile(filepath.Join(dir, scaleSeeded), nil, 0o644); err != nil {
			return r, err
		}
		return restartAt(data, r, o)
	}
	dir, err := os.MkdirTemp(o.TempDir, "freshcrawl-scale-*")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(dir)
	if r, err = seedAt(ctx, dir, r, o); err != nil {
		return r, err
	}
	return restartAt(filepath.Join(dir, "data"), r, o)
}

// scaleSeeded marks a kept directory whose store is seeded and closed.
const scaleSeeded = "seeded"

// seedAt writes a seed file of r.URLs URLs in dir, seeds it into the
// store dir/data, gives the fetched share its state and closes the
// store, measuring each step and the file's size.
func seedAt(ctx context.Context, dir string, r ScaleResult, o ScaleOptions) (ScaleResult, error) {
	var err error
	n := r.URLs
	file := filepath.Join(dir, "seeds.txt")
	o.Progress("scale %d: writing the seed file", n)
	if r.MeanURLBytes, err = writeSeedFile(file, n, o); err != nil {
		return r, fmt.Errorf("seed file: %w", err)
	}
	data := filepath.Join(dir, "data")
	db, err := store.OpenDir(data, store.Options{})
	if err != nil {
		return r, err
	}
	closed := false
	defer func() {
		if !closed {
			db.Close()
		}
	}()

	o.Progress("scale %d: seeding", n)
	in, err := os.Open(file)
	if err != nil {
		return r, err
	}
	t0, c0 := time.Now(), selfUsage().CPU
	sum, err := coordinator.IngestSeedsSorted(ctx, db, bufio.NewReaderSize(in, 256<<10), file, coordinator.SortedSeedOptions{TempDir: dir})
	in.Close()
	if err != nil {
		return r, fmt.Errorf("seed: %w", err)
	}
	if sum.Added != n {
		return r, fmt.Errorf("seed: %d URLs added of %d lines (%d bad)", sum.Added, n, sum.Bad)
	}
	r.SeedSeconds, r.SeedCPUSeconds = time.Since(t0).Seconds(), (selfUsage().CPU - c0).Seconds()
	os.Remove(file)

	if o.FetchedShare > 0 {
		o.Progress("scale %d: writing the fetched state of %.0f%%", n, 100*o.FetchedShare)
		t1 := time.Now()
		if r.Fetched, err = writeFetched(ctx, db, o); err != nil {
			return r, err
		}
		r.FetchedSeconds = time.Since(t1).Seconds()
	}
	if r.Buckets, err = db.Sizes(); err != nil {
		return r, err
	}
	if !o.NoCompact {
		o.Progress("scale %d: compacting a copy", n)
		cp := filepath.Join(dir, "compact.db")
		size, err := db.CompactTo(cp)
		if err != nil {
			return r, err
		}
		os.Remove(cp)
		r.CompactBytesPerURL = float64(size) / float64(n)
	}
	closed = true
	if err := db.Close(); err != nil {
		return r, err
	}
	fi, err := os.Stat(filepath.Join(data, store.FileName))
	if err != nil {
		return r, err
	}
	r.FileBytesPerURL = float64(fi.Size()) / float64(n)
	return r, nil
}

// restartAt restarts a coordinator on the seeded store in data: open,
// load, first plan, then a second plan, measuring each.
func restartAt(data string, r ScaleResult, o ScaleOptions) (ScaleResult, error) {
	var err error
	var db *store.DB
	n := r.URLs
	defer func() {
		if db != nil {
			db.Close()
		}
	}()
	o.Progress("scale %d: restart (open, load, first plan)", n)
	stopProfile := func() {}
	if o.RestartProfile != nil {
		if err := pprof.StartCPUProfile(o.RestartProfile); err != nil {
			return r, fmt.Errorf("restart profile: %w", err)
		}
		stopProfile = sync.OnceFunc(pprof.StopCPUProfile)
		defer stopProfile()
	}
	h0 := heapNow()
	t2, c2 := time.Now(), selfUsage().CPU
	if db, err = store.OpenDir(data, store.Options{}); err != nil {
		return r, err
	}
	r.OpenSeconds = time.Since(t2).Seconds()
	t3 := time.Now()
	co := coordinator.DefaultOptions()
	co.Budget, co.HostRate = float64(n)/(30*86400), 1
	sched, loaded, err := coordinator.LoadScheduler(db, co)
	if err != nil {
		return r, err
	}
	if loaded != n {
		return r, fmt.Errorf("restart: %d URLs loaded of %d", loaded, n)
	}
	r.LoadSeconds, r.LoadCPUSeconds = time.Since(t3).Seconds(), (selfUsage().CPU - c2).Seconds()
	now := time.Now()
	t4, c4 := time.Now(), selfUsage().CPU
	if _, err := sched.Replan(now); err != nil {
		r.PlanError = "first plan: " + err.Error()
	}
	r.FirstPlanSeconds, r.FirstPlanCPUSeconds = time.Since(t4).Seconds(), (selfUsage().CPU - c4).Seconds()
	r.RestartSeconds, r.RestartCPUSeconds = time.Since(t2).Seconds(), (selfUsage().CPU - c2).Seconds()
	stopProfile()
	r.SchedulerBytesPerURL = float64(int64(heapNow())-int64(h0)) / float64(n)
	o.Progress("scale %d: re-plan", n)
	t5, c5 := time.Now(), selfUsage().CPU
	if _, err := sched.Replan(now.Add(time.Minute)); err != nil {
		r.PlanError += " re-plan: " + err.Error()
	}
	r.ReplanSeconds, r.ReplanCPUSeconds = time.Since(t5).Seconds(), (selfUsage().CPU - c5).Seconds()
	// The schedule names its URLs by their store ids and spells them
	// through the store: what it hands out must be a stored URL.
	for range 10 {
		d, ok, _ := sched.Next(now.Add(time.Hour))
		if !ok {
			break
		}
		if _, err := db.Get(d.URL); err != nil {
			return r, fmt.Errorf("restart: the schedule handed out %q: %w", d.URL, err)
		}
	}
	runtime.KeepAlive(sched)
	return r, nil
}

// writeFetched gives o.FetchedShare of the stored URLs the state folds
// leave: counters, validators, a content hash, the estimator's state
// after a few fetches (as schedule.Estimator writes it), a rate, an
// interval and a next due time. It writes through FoldMany and Tx.Put, as
// the fold does, 10 000 URLs a transaction.
func writeFetched(ctx context.Context, db *store.DB, o ScaleOptions) (int, error) {
	rng := rand.New(rand.NewPCG(o.Seed, 19))
	now := time.Now()
	histories := newFetchHistories(rng, now)
	var urls []string
	n := 0
	flush := func() error {
		if len(urls) == 0 {
			return nil
		}
		// Task ids as the dispatcher makes them: short and unique.
		ids := make([]string, len(urls))
		for i := range urls {
			ids[i] = fmt.Sprintf("%016x", rng.Uint64())
		}
		_, err := db.FoldMany(ids, func(i int, tx *store.Tx) error {
			u, found, err := tx.Get(urls[i])
			if err != nil || !found {
				return err
			}
			histories[rng.IntN(len(histories))].apply(rng, &u)
			return tx.Put(u)
		})
		n += len(urls)
		urls = urls[:0]
		return err
	}
	err := db.ForEachBatch(func(batch []store.URL) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		for _, u := range batch {
			if rng.Float64() < o.FetchedShare {
				urls = append(urls, u.URL)
			}
		}
		if len(urls) >= 10_000 {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return n, fmt.Errorf("fetched state: %w", err)
	}
	return n, nil
}

// fetchHistory is the estimator's view of one URL after a few fetches.
type fetchHistory struct {
	fetches, changes      int64
	lastChange, lastFetch time.Time
	estimate              []byte
	rate, rateSE          float64
	interval              time.Duration
}

// scaleHistories is how many distinct fetch histories writeFetched draws
// from: the estimator's Learn costs milliseconds a fetch (its change-point
// test), too slow to run for millions of URLs, and what is measured here is
// the store, to which a state is bytes of the same size and kind.
const scaleHistories = 1024

// newFetchHistories runs the estimator over scaleHistories random fetch
// histories: 2 to 21 fetches at a fixed interval of 1 hour to 14 days,
// a third of them changed.
func newFetchHistories(rng *rand.Rand, now time.Time) []fetchHistory {
	est := schedule.NewEstimator(7*24*time.Hour, 1.0/86400)
	out := make([]fetchHistory, scaleHistories)
	for i := range out {
		h := &out[i]
		var st schedule.EstimateState
		h.interval = time.Duration(1+rng.Int64N(14*24)) * time.Hour
		h.fetches = int64(2 + rng.IntN(20))
		at := now.Add(-time.Duration(h.fetches) * h.interval)
		url := fmt.Sprintf("https://www.site-%d.example.com/history/%d", i%100, i)
		var prev time.Time
		rate := 1.0 / 86400
		for range h.fetches {
			changed := rng.IntN(3) == 0
			fb := est.Learn(&st, rate, schedule.Observation{URL: url, Host: hostOf(url), Start: at, End: at.Add(300 * time.Millisecond), OK: true, First: prev.IsZero(), Prev: prev, Changed: changed})
			if changed {
				h.changes++
				h.lastChange = at
			}
			rate, h.rateSE = fb.Rate, fb.RateSE
			prev = at
			at = at.Add(h.interval)
		}
		h.rate, h.lastFetch = rate, prev
		h.estimate, _ = st.MarshalBinary()
	}
	return out
}

// apply gives u the history's state, with validators of its own.
func (h *fetchHistory) apply(rng *rand.Rand, u *store.URL) {
	sum := sha256.Sum256([]byte(u.URL))
	u.Fetches, u.Changes, u.NotModified = h.fetches, h.changes, int64(rng.IntN(int(h.fetches)))
	u.LastChange = h.lastChange
	u.LastFetch, u.LastOK, u.LastStatus = h.lastFetch, h.lastFetch, 200
	u.ETag = fmt.Sprintf(`"%x-%x"`, rng.Uint32(), rng.Uint32())
	u.LastMod = h.lastFetch.Add(-time.Hour).UTC().Format("Mon, 02 Jan 2006 15:04:05 GMT")
	u.Hash = hex.EncodeToString(sum[:])
	u.Estimate = slices.Clone(h.estimate)
	u.Rate, u.RateSE, u.Interval, u.NextDue = h.rate, h.rateSE, h.interval, h.lastFetch.Add(h.interval)
}

func hostOf(url string) string {
	rest := strings.TrimPrefix(url, "https://")
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		return rest[:i]
	}
	return rest
}
