package bench

import (
	"math"
	"testing"
)

// TestDecilesAddUp: the decile rows of a run cover each rate segment in
// ten parts ordered by true rate, and their losses add up to the run's
// loss to the full-budget oracle (FullOracle − Freshness): the diagnostic
// splits that figure, it does not compute another one.
func TestDecilesAddUp(t *testing.T) {
	o := DefaultOptions()
	o.Pages, o.Hosts, o.Days, o.Warmup, o.Deciles = 200, 5, 300, 100, true
	for _, name := range []string{workloadDrift, workloadWeighted} {
		w, r := runWorkload(t, name, "uniform", o)
		segments := 1
		if w.After != nil {
			segments = 2
		}
		if len(r.Deciles) != 10*segments {
			t.Fatalf("%s: %d decile rows, want %d", name, len(r.Deciles), 10*segments)
		}
		loss := 0.0
		for k, d := range r.Deciles {
			loss += d.Loss
			if d.RateLo > d.RateHi || (k%10 > 0 && d.RateLo < r.Deciles[k-1].RateHi) {
				t.Errorf("%s: row %d: rates %g–%g after %g–%g, not in order", name, k, d.RateLo, d.RateHi, r.Deciles[k-1].RateLo, r.Deciles[k-1].RateHi)
			}
			if d.Fetches < 0 || d.OracleFetches < 0 || d.Freshness < 0 || d.Freshness > 1 || d.OracleFreshness < 0 || d.OracleFreshness > 1 {
				t.Errorf("%s: row %d out of range: %+v", name, k, d)
			}
		}
		if want := r.FullOracle - r.Freshness; math.Abs(loss-want) > 1e-9 {
			t.Errorf("%s: the deciles lose %.12f, the run %.12f", name, loss, want)
		}
	}
}
