package bench

import (
	"fmt"
	"io"
	"slices"
	"time"
)

// HistoryStats are the statistics of a set of change histories that
// describe how real ones differ from Poisson processes (issue 30: median
// interval 11 days, mean 45, 12 % under a day, two thirds of the pages
// that changed sharing a change time with another page, fewer than a third
// as many distinct moments as changes).
type HistoryStats struct {
	// Pages and Changed count the pages, and those with a change in the
	// window; Changes counts every page's changes, Moments the distinct
	// times among them.
	Pages, Changed, Changes, Moments int
	// Intervals counts the intervals between consecutive changes of a
	// page, pooled over the pages; MedianDays and MeanDays are their
	// median and mean in days, UnderADay the share shorter than a day.
	Intervals            int
	MedianDays, MeanDays float64
	UnderADay            float64
	// Shared is the share of the pages that changed which have at least
	// one change time in common with another page.
	Shared float64
	// MomentsPerChange is Moments / Changes.
	MomentsPerChange float64
}

// historyStats measures the change times of every page (offsets on one
// clock) within [from, to), on a clock whose day lasts day.
func historyStats(changes [][]time.Duration, from, to, day time.Duration) HistoryStats {
	st := HistoryStats{Pages: len(changes)}
	pages := make(map[time.Duration]int) // pages changing at each moment
	var intervals []float64
	for _, ch := range changes {
		ch = window(ch, from, to)
		if len(ch) == 0 {
			continue
		}
		st.Changed++
		st.Changes += len(ch)
		for k, c := range ch {
			pages[c]++
			if k > 0 {
				intervals = append(intervals, float64(c-ch[k-1])/float64(day))
			}
		}
	}
	st.Moments = len(pages)
	shared := 0
	for _, ch := range changes {
		for _, c := range window(ch, from, to) {
			if pages[c] > 1 {
				shared++
				break
			}
		}
	}
	if st.Changed > 0 {
		st.Shared = float64(shared) / float64(st.Changed)
		st.MomentsPerChange = float64(st.Moments) / float64(st.Changes)
	}
	st.Intervals = len(intervals)
	if len(intervals) > 0 {
		slices.Sort(intervals)
		st.MedianDays = intervals[len(intervals)/2]
		if len(intervals)%2 == 0 {
			st.MedianDays = (intervals[len(intervals)/2-1] + intervals[len(intervals)/2]) / 2
		}
		under := 0
		sum := 0.0
		for _, d := range intervals {
			sum += d
			if d < 1 {
				under++
			}
		}
		st.MeanDays = sum / float64(len(intervals))
		st.UnderADay = float64(under) / float64(len(intervals))
	}
	return st
}

// window is the part of the increasing offsets ch within [from, to).
func window(ch []time.Duration, from, to time.Duration) []time.Duration {
	lo, _ := slices.BinarySearch(ch, from)
	hi, _ := slices.BinarySearch(ch, to)
	return ch[lo:hi]
}

// WriteHistoryStats prints s on one line.
func WriteHistoryStats(w io.Writer, s HistoryStats) error {
	_, err := fmt.Fprintf(w, "histories: %d pages, %d changed, %d changes on %d moments (%.3f a change); intervals median %.1f days, mean %.1f, %.1f%% under a day; %.1f%% of the changed pages share a change time with another\n",
		s.Pages, s.Changed, s.Changes, s.Moments, s.MomentsPerChange, s.MedianDays, s.MeanDays, 100*s.UnderADay, 100*s.Shared)
	return err
}

// WorkloadHistory measures the change histories of w's pages under o over
// the whole run, as the virtual mode generates them; ok is false for the
// workloads whose pages change as Poisson processes of given rates.
func WorkloadHistory(w Workload, o Options) (st HistoryStats, ok bool, err error) {
	if w.hist == nil {
		return HistoryStats{}, false, nil
	}
	if o, err = w.options(o).withDefaults(); err != nil {
		return HistoryStats{}, false, err
	}
	end := time.Duration(o.Days * float64(o.Day))
	ts, err := buildTruth(w, o, o.Day, end)
	if err != nil {
		return HistoryStats{}, false, err
	}
	changes := make([][]time.Duration, len(ts.pages))
	for i := range ts.pages {
		changes[i] = ts.pages[i].changes
	}
	return historyStats(changes, 0, end, o.Day), true, nil
}
