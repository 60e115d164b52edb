package bench

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/freshcrawl/freshcrawl/lab/sim"
)

// histNames are the workloads whose histories the bench generates.
func histNames() []string {
	return []string{workloadBursty, workloadClustered, workloadGroups, workloadWebHist, workloadMixedHist}
}

// Histories come from the seed alone: the same seed gives the same web,
// another seed another, and a longer horizon only adds changes after the
// shorter one's end.
func TestHistoryDeterministic(t *testing.T) {
	for _, name := range histNames() {
		m := newHistModel(name)
		a, b := m.generate(200, 4, 1000, 1), m.generate(200, 4, 1000, 1)
		long, other := m.generate(200, 4, 2500, 1), m.generate(200, 4, 1000, 2)
		changed, differs := 0, 0
		for i := range a.changes {
			if !slices.Equal(a.changes[i], b.changes[i]) || a.bodyOf[i] != b.bodyOf[i] || a.group[i] != b.group[i] {
				t.Fatalf("%s: page %d differs between two runs with one seed", name, i)
			}
			if got := cut(long.changes[i], 1000); !slices.Equal(got, a.changes[i]) {
				t.Fatalf("%s: page %d: a longer horizon changed the first 1000 days: %v, %v", name, i, got, a.changes[i])
			}
			if len(a.changes[i]) > 0 {
				changed++
			}
			if !slices.Equal(a.changes[i], other.changes[i]) {
				differs++
			}
		}
		if changed == 0 || differs < changed/2 {
			t.Errorf("%s: %d pages changed, %d differ with another seed", name, changed, differs)
		}
	}
}

// Groups live on one host and change at exactly the same moments; a
// mirror serves its group's first page; change times are in (0, horizon)
// and increasing.
func TestHistoryGroups(t *testing.T) {
	const pages, hosts, horizon = 1000, 10, 2000
	for _, name := range histNames() {
		h := newHistModel(name).generate(pages, hosts, horizon, 3)
		members := map[int][]int{}
		for i := range pages {
			members[h.group[i]] = append(members[h.group[i]], i)
			ch := h.changes[i]
			if len(ch) > 0 && (ch[0] <= 0 || ch[len(ch)-1] >= horizon || !slices.IsSorted(ch)) {
				t.Fatalf("%s: page %d: change times %v", name, i, ch)
			}
		}
		inGroups, mirrors := 0, 0
		for g, ms := range members {
			for _, i := range ms {
				if i%hosts != g%hosts || !slices.Equal(h.changes[i], h.changes[g]) {
					t.Fatalf("%s: page %d of group %d: host %d, changes differ: %v", name, i, g, i%hosts, !slices.Equal(h.changes[i], h.changes[g]))
				}
				if b := h.bodyOf[i]; b != i && b != g {
					t.Fatalf("%s: page %d serves page %d's body, not its own nor its group's", name, i, b)
				}
				if h.bodyOf[i] != i {
					mirrors++
				}
			}
			if len(ms) > 1 {
				inGroups += len(ms)
			}
		}
		share := float64(inGroups) / pages
		t.Logf("%-10s %.2f of the pages in groups of two or more, %d mirror pages", name, share, mirrors)
		switch name {
		case workloadGroups, workloadWebHist:
			if share < 0.55 || share > 0.8 || mirrors == 0 {
				t.Errorf("%s: %.2f of the pages in groups (want about 2/3), %d mirrors", name, share, mirrors)
			}
		case workloadMixedHist:
			if share < 0.25 || share > 0.45 {
				t.Errorf("%s: %.2f of the pages in groups (want about 1/3)", name, share)
			}
		default:
			if share != 0 {
				t.Errorf("%s: %.2f of the pages in groups, want none", name, share)
			}
		}
	}
}

// bursty is not stationary: pages go from quiet to busy and back, some go
// quiet for good, and the frozen hosts' pages all stop at one moment.
func TestHistoryBursty(t *testing.T) {
	const pages, hosts, horizon = 1000, 10, 2000
	m := newHistModel(workloadBursty)
	h := m.generate(pages, hosts, horizon, 1)
	if len(h.frozen) != 2 {
		t.Fatalf("%d hosts frozen, want 2 of 10", len(h.frozen))
	}
	// Counts per 120-day window: a step up is a window with none followed
	// by one with three or more, a step down the reverse.
	up, down, changed, silentEnd := 0, 0, 0, 0
	for i, ch := range h.changes {
		if at, ok := h.frozen[i%hosts]; ok && len(ch) > 0 && ch[len(ch)-1] >= at {
			t.Fatalf("page %d changes at %v after its host froze at %v", i, ch[len(ch)-1], at)
		}
		if len(ch) == 0 {
			continue
		}
		changed++
		counts := make([]int, horizon/120)
		for _, c := range ch {
			if k := int(c / 120); k < len(counts) {
				counts[k]++
			}
		}
		u, d := false, false
		for k := 1; k < len(counts); k++ {
			u = u || (counts[k-1] == 0 && counts[k] >= 3)
			d = d || (counts[k-1] >= 3 && counts[k] == 0)
		}
		if u {
			up++
		}
		if d {
			down++
		}
		if ch[len(ch)-1] < horizon/2 {
			silentEnd++
		}
	}
	t.Logf("%d pages changed: %d step up, %d step down, %d silent for the second half", changed, up, down, silentEnd)
	if up < changed/5 || down < changed/5 || silentEnd < changed/10 {
		t.Errorf("%d pages changed: %d step up, %d step down, %d silent for the second half", changed, up, down, silentEnd)
	}
}

// clustered keeps Table 6's mean rates but its intervals vary far more
// than a Poisson process's (whose coefficient of variation is 1).
func TestHistoryClustered(t *testing.T) {
	const pages, horizon = 1000, 2000
	h := newHistModel(workloadClustered).generate(pages, 10, horizon, 1)
	total, cvs := 0, []float64{}
	for _, ch := range h.changes {
		total += len(ch)
		if len(ch) < 30 {
			continue
		}
		var sum, sq float64
		for k := 1; k < len(ch); k++ {
			d := ch[k] - ch[k-1]
			sum += d
			sq += d * d
		}
		n := float64(len(ch) - 1)
		mean := sum / n
		cvs = append(cvs, math.Sqrt(sq/n-mean*mean)/mean)
	}
	slices.Sort(cvs)
	var want float64
	for _, c := range sim.Table6Mix() {
		want += c.Share * c.Rate
	}
	got := float64(total) / pages / horizon
	t.Logf("mean rate %.4f a day (Table 6: %.4f); median coefficient of variation of the intervals %.2f over %d pages", got, want, cvs[len(cvs)/2], len(cvs))
	if math.Abs(got/want-1) > 0.15 {
		t.Errorf("mean rate %.4f a day, Table 6's is %.4f", got, want)
	}
	if len(cvs) < 200 || cvs[len(cvs)/2] < 2 {
		t.Errorf("median coefficient of variation %.2f over %d pages, want at least 2", cvs[len(cvs)/2], len(cvs))
	}
}

// webhist is calibrated to the statistics of real histories (issue 30),
// measured on the sim's change times as the virtual mode reads them, at
// the default size: the median interval near 11 days and the mean near
// 45, about 12 % of the intervals under a day, about two thirds of the
// changed pages sharing a change time with another, and fewer than a
// third as many distinct moments as changes. Loose bounds, on the mean of
// five seeds and on each.
func TestWebHistCalibration(t *testing.T) {
	o := DefaultOptions()
	var mean HistoryStats
	const seeds = 5
	for seed := uint64(1); seed <= seeds; seed++ {
		o.Seed = seed
		w, err := NewWorkload(workloadWebHist, o.Pages, o.Hosts, seed)
		if err != nil {
			t.Fatal(err)
		}
		st, ok, err := WorkloadHistory(w, o)
		if err != nil || !ok {
			t.Fatalf("seed %d: %v, %v", seed, ok, err)
		}
		t.Logf("seed %d: median %.1f days, mean %.1f, %.3f under a day, %.2f shared, %.3f moments a change (%d changes, %d of %d pages changed)",
			seed, st.MedianDays, st.MeanDays, st.UnderADay, st.Shared, st.MomentsPerChange, st.Changes, st.Changed, st.Pages)
		if st.MedianDays < 4 || st.MedianDays > 25 || st.MeanDays < 25 || st.MeanDays > 100 || st.UnderADay < 0.04 || st.UnderADay > 0.25 ||
			st.Shared < 0.5 || st.Shared > 0.85 || st.MomentsPerChange > 0.4 {
			t.Errorf("seed %d: outside the loose bounds", seed)
		}
		mean.MedianDays += st.MedianDays / seeds
		mean.MeanDays += st.MeanDays / seeds
		mean.UnderADay += st.UnderADay / seeds
		mean.Shared += st.Shared / seeds
		mean.MomentsPerChange += st.MomentsPerChange / seeds
	}
	t.Logf("mean of %d seeds: median %.1f days, mean %.1f, %.3f under a day, %.2f shared, %.3f moments a change", seeds, mean.MedianDays, mean.MeanDays, mean.UnderADay, mean.Shared, mean.MomentsPerChange)
	for _, c := range []struct {
		name        string
		got, lo, hi float64
	}{
		{"median interval (days)", mean.MedianDays, 7, 16},
		{"mean interval (days)", mean.MeanDays, 35, 75},
		{"share of intervals under a day", mean.UnderADay, 0.07, 0.18},
		{"share of changed pages sharing a change time", mean.Shared, 0.58, 0.78},
		{"distinct moments per change", mean.MomentsPerChange, 0, 1.0 / 3},
	} {
		if c.got < c.lo || c.got > c.hi {
			t.Errorf("%s: %.3f over %d seeds, want in [%.3f, %.3f]", c.name, c.got, seeds, c.lo, c.hi)
		}
	}
}

// The statistics themselves, on a case worked by hand: pages 0 and 1
// share a moment, page 2 changes alone, page 3 never.
func TestHistoryStatsByHand(t *testing.T) {
	d := func(x float64) time.Duration { return time.Duration(x * float64(24*time.Hour)) }
	st := historyStats([][]time.Duration{{d(1), d(1.5), d(12)}, {d(1.5)}, {d(3), d(40)}, nil}, 0, d(100), d(1))
	want := HistoryStats{Pages: 4, Changed: 3, Changes: 6, Moments: 5, Intervals: 3, MedianDays: 10.5, MeanDays: (0.5 + 10.5 + 37) / 3, UnderADay: 1.0 / 3, Shared: 2.0 / 3, MomentsPerChange: 5.0 / 6}
	if math.Abs(st.MeanDays-want.MeanDays) > 1e-9 {
		t.Errorf("mean %v, want %v", st.MeanDays, want.MeanDays)
	}
	st.MeanDays = want.MeanDays
	if st != want {
		t.Errorf("%+v\nwant %+v", st, want)
	}
}

// mixed-hist is half history-like pages with an ETag only, half Table 6
// Poisson pages with a true Last-Modified, on every host.
func TestMixedHist(t *testing.T) {
	const pages, hosts = 400, 4
	h := newHistModel(workloadMixedHist).generate(pages, hosts, 1000, 1)
	perHost := make([]int, hosts)
	for i, m := range h.lm {
		if m == sim.LMNone {
			perHost[i%hosts]++
		} else if m != sim.LMTrue || h.group[i] != i {
			t.Fatalf("page %d: mode %v, group %d", i, m, h.group[i])
		}
	}
	for host, n := range perHost {
		if n != pages/hosts/2 {
			t.Errorf("host %d: %d history pages of %d", host, n, pages/hosts)
		}
	}
}
