package plan

import (
	"testing"
	"time"

	"github.com/freshcrawl/freshcrawl/internal/testutil/storetest"
	"github.com/freshcrawl/freshcrawl/store"
)

// TestFromStoreWeighsRateChanges: the model freshness of a stored copy
// allows for a change of its page's rate since the fetch, at the hazard
// the stored states show with its prior scaled by the half-life, as the
// coordinator's does (docs/design.md §3.7). A copy fetched a moment ago
// is current whatever the hazard; one a year old is less likely to be
// the shorter the half-life (the larger the prior's hazard), and with an
// endless half-life the switch is gone.
func TestFromStoreWeighsRateChanges(t *testing.T) {
	db := storetest.Open(t)
	now := time.Now()
	if _, err := db.Upsert([]store.URL{
		{URL: "http://a.example/new", Host: "a.example", Weight: 1, Mode: "freshness"},
		{URL: "http://a.example/old", Host: "a.example", Weight: 1, Mode: "freshness"},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Fold("fetched", func(tx *store.Tx) error {
		for u, at := range map[string]time.Time{"http://a.example/new": now, "http://a.example/old": now.Add(-365 * 24 * time.Hour)} {
			rec, _, err := tx.Get(u)
			if err != nil {
				return err
			}
			rec.Rate, rec.LastOK, rec.AddedAt = 1.0/(400*86400), at, now.Add(-400*24*time.Hour)
			if err := tx.Put(rec); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	fresh := func(halfLife time.Duration) map[string]float64 {
		els, err := FromStore(db, 1.0/(30*86400), halfLife, now)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for _, e := range els {
			out[e.ID] = e.CopyFresh
		}
		return out
	}
	short, long, endless := fresh(24*time.Hour), fresh(90*24*time.Hour), fresh(1e5*24*time.Hour)
	for name, m := range map[string]map[string]float64{"1 d": short, "90 d": long, "endless": endless} {
		if p := m["http://a.example/new"]; p < 0.999 {
			t.Errorf("half-life %s: a copy fetched now is current with probability %v, want 1", name, p)
		}
		if p := m["http://a.example/old"]; !(p > 0 && p < 1) {
			t.Errorf("half-life %s: a year-old copy's probability %v, want in (0, 1)", name, p)
		}
	}
	if a, b, c := short["http://a.example/old"], long["http://a.example/old"], endless["http://a.example/old"]; !(a < b && b < c) {
		t.Errorf("a year-old copy: %v (half-life 1 d), %v (90 d), %v (endless): want rising as the hazard falls", a, b, c)
	}
}
