package capture

import (
	"fmt"
	"math"
	"time"
)

// Seconds converts a time to float seconds since the Unix epoch, the time
// unit used throughout this package.
func Seconds(t time.Time) float64 {
	return float64(t.Unix()) + float64(t.Nanosecond())/1e9
}

// Phase maps t to its phase in [0, period) seconds, measured from the Unix
// epoch in UTC (so weekly phases start on Thursday 00:00 UTC, daily phases
// at midnight UTC).
func Phase(t time.Time, period time.Duration) (float64, error) {
	if period <= 0 {
		return 0, invalid("capture: phase: period %v, must be > 0", period)
	}
	T := period.Seconds()
	return mod(Seconds(t), T), nil
}

// Observation is one detected update. When only "changed between poll a
// and poll b" is known the update lies somewhere in (From, To]; an exact
// time has From == To.
type Observation struct {
	From, To float64 // seconds
}

// Exact wraps exactly known update times as observations.
func Exact(times []float64) []Observation {
	out := make([]Observation, len(times))
	for i, t := range times {
		out[i] = Observation{From: t, To: t}
	}
	return out
}

// DefaultPeriods returns the usual candidate periods: an hour, a day and a
// week (the paper's §2.2 "hour, day, month etc."; docs/design.md §3.5).
func DefaultPeriods() []float64 {
	return []float64{3600, 86400, 7 * 86400}
}

// PeriodScore is how well one candidate period explains an update history.
type PeriodScore struct {
	Period float64
	// Concentration is 1 − H/ln B for the B-bin histogram of phases, with H
	// the Miller–Madow bias-corrected entropy, clamped to [0, 1]: 0 for
	// phases spread uniformly, 1 for a single bin. Entropy, unlike a single
	// mean resultant length, rewards several tight clusters (updates at :05
	// and :15) as much as one.
	Concentration float64
	// Occupancy is the fraction of periods spanned by the history that hold
	// at least one update. It penalises divisors of the true period: with
	// updates at exact minutes, phases modulo 60 s are perfectly concentrated
	// although most minutes see no update at all.
	Occupancy float64
	// Strength is Concentration × Occupancy, in [0, 1].
	Strength float64
}

// DetectPeriod scores each candidate period (DefaultPeriods when nil) and
// returns the best — highest Strength, the shorter period on ties — along
// with all scores in candidate order.
//
// Interval observations spread their unit mass uniformly over the histogram
// bins their phase range (From, To] covers (all bins once To−From ≥ T); their
// midpoint decides which period they occupy. The histogram has
// B = clamp(n/4, 8, 64) bins for n observations, the same B for every
// candidate so that a longer period is not credited with finer resolution.
func DetectPeriod(obs []Observation, candidates []float64) (PeriodScore, []PeriodScore, error) {
	if candidates == nil {
		candidates = DefaultPeriods()
	}
	if len(candidates) == 0 {
		return PeriodScore{}, nil, invalid("capture: detect period: no candidate periods")
	}
	for i, T := range candidates {
		if err := checkPeriod(T); err != nil {
			return PeriodScore{}, nil, fmt.Errorf("capture: detect period: candidate %d: %w", i, err)
		}
	}
	if len(obs) < 2 {
		return PeriodScore{}, nil, invalid("capture: detect period: %d observations, need ≥ 2", len(obs))
	}
	for i, o := range obs {
		if !finite(o.From) || !finite(o.To) || o.To < o.From {
			return PeriodScore{}, nil, invalid("capture: detect period: observation %d = (%v, %v] is not a finite interval", i, o.From, o.To)
		}
	}
	B := max(8, min(64, len(obs)/4))
	all := make([]PeriodScore, len(candidates))
	best := 0
	for i, T := range candidates {
		all[i] = scorePeriod(obs, T, B)
		if all[i].Strength > all[best].Strength ||
			(all[i].Strength == all[best].Strength && T < all[best].Period) {
			best = i
		}
	}
	return all[best], all, nil
}

func scorePeriod(obs []Observation, T float64, B int) PeriodScore {
	hist := make([]float64, B)
	w := T / float64(B)
	cycles := make(map[float64]struct{})
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, o := range obs {
		mid := (o.From + o.To) / 2
		c := math.Floor(mid / T)
		cycles[c] = struct{}{}
		lo, hi = math.Min(lo, c), math.Max(hi, c)
		if o.To-o.From >= T {
			for b := range hist {
				hist[b] += 1 / float64(B)
			}
			continue
		}
		if o.To == o.From {
			hist[min(B-1, int(mod(o.To, T)/w))]++
			continue
		}
		// spread over (a, a+L], possibly wrapping once
		a, L := mod(o.From, T), o.To-o.From
		for b := range hist {
			bl, bh := float64(b)*w, float64(b+1)*w
			ov := 0.0
			for k := 0.0; k <= 1; k++ {
				ov += math.Max(0, math.Min(bh+k*T, a+L)-math.Max(bl+k*T, a))
			}
			hist[b] += ov / L
		}
	}
	n := float64(len(obs))
	H, occupied := 0.0, 0
	for _, c := range hist {
		if c > 0 {
			p := c / n
			H -= p * math.Log(p)
			occupied++
		}
	}
	H += float64(occupied-1) / (2 * n) // Miller–Madow correction
	conc := clamp01(1 - H/math.Log(float64(B)))
	occ := float64(len(cycles)) / (hi - lo + 1)
	if !finite(occ) { // period tiny against the timestamps
		occ = 0
	}
	occ = clamp01(occ)
	return PeriodScore{Period: T, Concentration: conc, Occupancy: occ, Strength: conc * occ}
}
