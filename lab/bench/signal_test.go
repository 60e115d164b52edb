package bench

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/freshcrawl/freshcrawl/lab/sim"
)

// bruteSignal is the signal oracle written the plain way: at every fetch
// opportunity it looks at every page, works out from the change times
// alone whether the copy is stale and since when, and whether the host may
// be fetched, and takes the least.
func bruteSignal(in signalInput) [][]sim.Fetch {
	n := len(in.changes)
	fetches := make([][]sim.Fetch, n)
	last := make([]time.Duration, len(in.gaps))
	fetched := make([]bool, len(in.gaps))
	versionAt := func(i int, t time.Duration) int {
		return sort.Search(len(in.changes[i]), func(k int) bool { return in.changes[i][k] > t })
	}
	for t := in.start; t < in.end; t += in.slot {
		keys := in.keys[0].key
		for _, k := range in.keys {
			if k.from <= t {
				keys = k.key
			}
		}
		best, bestKey, bestSince := -1, 0.0, time.Duration(0)
		for i := range n {
			v := versionAt(i, t)
			since := in.start
			if f := fetches[i]; len(f) > 0 {
				cp := f[len(f)-1].Version
				if cp == v {
					continue // fresh
				}
				since = in.changes[i][cp]
			}
			if h := in.hosts[i]; fetched[h] && last[h]+in.gaps[h] > t {
				continue
			}
			if best < 0 || keys[i] < bestKey || (keys[i] == bestKey && since < bestSince) {
				best, bestKey, bestSince = i, keys[i], since
			}
		}
		if best >= 0 {
			h := in.hosts[best]
			fetched[h], last[h] = true, t
			fetches[best] = append(fetches[best], sim.Fetch{At: t, Version: versionAt(best, t)})
		}
	}
	return fetches
}

// randomSignalInput is a tiny web: pages on a few hosts, some changing at
// the same moments, keys that tie and change halfway, host gaps and a
// start after some changes.
func randomSignalInput(seed uint64) signalInput {
	rng := rand.New(rand.NewPCG(seed, 7))
	const day = time.Hour
	n, hosts := 2+rng.IntN(7), 1+rng.IntN(3)
	end := 40 * day
	in := signalInput{hosts: make([]int, n), gaps: make([]time.Duration, hosts), slot: day / time.Duration(1+rng.IntN(3)), end: end}
	in.start = time.Duration(rng.IntN(3)) * day / 2
	for h := range in.gaps {
		in.gaps[h] = time.Duration(rng.IntN(4)) * day / 2
	}
	shared := []time.Duration{}
	for range 6 {
		shared = append(shared, time.Duration(rng.Int64N(int64(end))))
	}
	for i := range n {
		in.hosts[i] = rng.IntN(hosts)
		var ch []time.Duration
		for range rng.IntN(12) {
			ch = append(ch, time.Duration(rng.Int64N(int64(end))))
		}
		if rng.IntN(2) == 0 {
			ch = append(ch, shared...)
		}
		slices.Sort(ch)
		in.changes = append(in.changes, slices.Compact(ch))
	}
	for s := range 2 {
		k := signalKeys{from: time.Duration(s) * end / 2, key: make([]float64, n)}
		for i := range k.key {
			k.key[i] = float64(rng.IntN(3)) // ties are common
		}
		in.keys = append(in.keys, k)
	}
	return in
}

// The heap-driven signal oracle makes exactly the fetches of the plain one
// on many tiny webs.
func TestSignalOracleAgainstBruteForce(t *testing.T) {
	for seed := range uint64(300) {
		in := randomSignalInput(seed)
		got, want := signalOracleFetches(in), bruteSignal(in)
		for i := range want {
			if !slices.Equal(got[i], want[i]) {
				t.Fatalf("seed %d, page %d (host %d, changes %v): fetches\n%v\nwant\n%v", seed, i, in.hosts[i], in.changes[i], got[i], want[i])
			}
		}
	}
}

// A case worked by hand: one host, a fetch a day, a slow page 0 and a fast
// page 1 that change at 2.5 days (page 1 again at 3.5).
func TestSignalOracleByHand(t *testing.T) {
	d := func(x float64) time.Duration { return time.Duration(x * float64(24*time.Hour)) }
	in := signalInput{
		changes: [][]time.Duration{{d(2.5)}, {d(2.5), d(3.5)}},
		hosts:   []int{0, 0}, gaps: []time.Duration{0},
		keys: []signalKeys{{key: []float64{0.1, 1}}},
		slot: d(1), end: d(10),
	}
	got := signalOracleFetches(in)
	want := [][]sim.Fetch{{{At: 0, Version: 0}, {At: d(3), Version: 1}}, {{At: d(1), Version: 0}, {At: d(4), Version: 2}}}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("page %d: %v, want %v", i, got[i], want[i])
		}
	}
	// Page 0 is fresh but for [2.5, 3), page 1 for [1, 2.5) and [4, 10):
	// 9.5 + 7.5 of 20 page-days.
	var fresh float64
	for i := range got {
		fresh += sim.IntegratePage(in.changes[i], got[i], 0, d(10), nil).Freshness
	}
	if f := fresh / d(20).Seconds(); math.Abs(f-0.85) > 1e-9 {
		t.Errorf("freshness %v, want 0.85", f)
	}
}

// The signal oracle is the limit: at least the rate oracle and the uniform
// policy on Poisson, clustered, grouped and history-like webs, at a loose
// and a tight budget, never above its budget. Not on bursty at tight
// budgets: ordered by the mean rate, it leaves the pages whose busy phase
// has ended stale through their quiet years, which uniform polling
// refreshes (docs/benchmarks.md, "Workloads that look like the web").
func TestSignalOracleBoundsBaselines(t *testing.T) {
	for _, name := range []string{workloadTable6, workloadClustered, workloadGroups, workloadWebHist} {
		for _, every := range []float64{30, 300} {
			o := DefaultOptions()
			o.Pages, o.Hosts, o.Days, o.Warmup, o.Every = 200, 5, 700, 320, every
			w, r := runWorkload(t, name, "uniform", o)
			t.Logf("%-8s every %3g days: uniform %.4f, rate oracle %.4f, signal oracle %.4f (%.2f fetches/day of %.2f)", w.Name, every, r.Freshness, r.FullOracle, r.Signal.Freshness, r.Signal.FetchesPerDay, r.Budget)
			if r.Signal.Freshness < r.Freshness || r.Signal.Freshness < r.FullOracle {
				t.Errorf("%s every %g days: signal oracle %.4f below uniform %.4f or the rate oracle %.4f", name, every, r.Signal.Freshness, r.Freshness, r.FullOracle)
			}
			if r.Signal.FetchesPerDay > r.Budget*1.001 || r.Signal.FetchesPerDay <= 0 {
				t.Errorf("%s every %g days: signal oracle fetched %.3f a day at a budget of %.3f", name, every, r.Signal.FetchesPerDay, r.Budget)
			}
			if math.Abs(r.Budget-float64(o.Pages)/every) > 1e-9 || r.EveryDays != every {
				t.Errorf("%s: budget %v, every %v days; want %v, %v", name, r.Budget, r.EveryDays, float64(o.Pages)/every, every)
			}
		}
	}
}

// A ratio to uniform needs uniform's row of the same workload, budget and
// mode.
func TestAddUniformRatios(t *testing.T) {
	rs := []Result{
		{Mode: "virtual", Workload: "a", Policy: "optimal", Budget: 10, Freshness: 0.6},
		{Mode: "virtual", Workload: "a", Policy: "uniform", Budget: 10, Freshness: 0.5},
		{Mode: "virtual", Workload: "a", Policy: "optimal", Budget: 20, Freshness: 0.7},
		{Mode: "virtual", Workload: "b", Policy: "optimal", Budget: 10, Freshness: 0.7},
	}
	AddUniformRatios(rs)
	for i, want := range []float64{1.2, 1, 0, 0} {
		if math.Abs(rs[i].UniformRatio-want) > 1e-12 {
			t.Errorf("row %d: ratio to uniform %v, want %v", i, rs[i].UniformRatio, want)
		}
	}
}

// A budget is given one way: as fetches a day or as a page once in so
// many days.
func TestEveryOrBudget(t *testing.T) {
	w, err := NewWorkload(workloadTable6, 10, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions()
	o.Pages, o.Hosts, o.Budget, o.Every = 10, 2, 1, 30
	if _, err := RunVirtual(context.Background(), w, "uniform", o); err == nil {
		t.Error("a budget and --every both accepted")
	}
}
