package coordinator

import (
	"io"
	"time"

	"github.com/freshcrawl/freshcrawl/internal/schedule"
	"github.com/freshcrawl/freshcrawl/internal/seed"
	"github.com/freshcrawl/freshcrawl/internal/store"
)

// SeedSummary is what one seeding run did.
type SeedSummary struct {
	Good    int      `json:"good"`
	Added   int      `json:"added"`
	Updated int      `json:"updated"`
	Bad     int      `json:"bad"`
	Errors  []string `json:"errors,omitempty"` // the first maxSeedErrors (1000) bad lines
}

// maxSeedErrors bounds the bad lines kept in a summary; all are counted.
const maxSeedErrors = 1000

// seedBatch is how many seeds one store transaction takes: large enough
// that a million lines is a thousand commits, small enough to keep memory
// flat.
const seedBatch = 1000

// BulkSeedBatch is the batch for seeding a store no coordinator runs on:
// nothing waits behind its transactions, and a large sorted batch writes
// each touched page once (10 M lines are a hundred commits).
const BulkSeedBatch = 100_000

// IngestSeedsBatch streams seeds from r into db in batches of n lines:
// only one batch is held at a time, whatever the size of the file. onBad
// sees every bad line (with file and line); onBatch, if set, sees every
// stored batch (the running coordinator adds them to its schedule, in
// batches of seedBatch so its folds do not wait behind a long
// transaction; `freshcrawl seed` into a store no coordinator runs on uses
// BulkSeedBatch).
func IngestSeedsBatch(db *store.DB, r io.Reader, file string, n int, onBad func(*seed.LineError), onBatch func([]store.URL)) (SeedSummary, error) {
	var sum SeedSummary
	n = max(n, 1)
	batch := make([]store.URL, 0, n)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		added, err := db.Upsert(batch)
		if err != nil {
			return err
		}
		sum.Added += added
		sum.Updated += len(batch) - added
		if onBatch != nil {
			onBatch(batch)
		}
		batch = batch[:0]
		return nil
	}
	now := time.Now()
	good, bad, err := seed.Parse(r, file, func(s seed.Seed) error {
		batch = append(batch, store.URL{URL: s.URL, Host: s.Host, Weight: s.Weight, Selector: s.Selector, Mode: string(s.Mode), Ignore: s.Ignore, Period: s.Period, Polls: s.Polls, KeepRaw: s.KeepRaw, Webhook: s.Webhook, AddedAt: now})
		if len(batch) == n {
			return flush()
		}
		return nil
	}, func(e *seed.LineError) {
		if len(sum.Errors) < maxSeedErrors {
			sum.Errors = append(sum.Errors, e.Error())
		}
		if onBad != nil {
			onBad(e)
		}
	})
	sum.Good, sum.Bad = good, bad
	if err != nil {
		// Whatever was parsed before the failure is still stored.
		if ferr := flush(); ferr != nil {
			return sum, ferr
		}
		return sum, err
	}
	return sum, flush()
}

// AddSeeds ingests seeds into the store and the live schedule, a batch
// at a time.
func (c *Coordinator) AddSeeds(r io.Reader, file string) (SeedSummary, error) {
	return IngestSeedsBatch(c.db, r, file, seedBatch, nil, func(batch []store.URL) {
		now := time.Now()
		var n int
		c.disp.Do(func(s *schedule.Scheduler) {
			for _, u := range batch {
				// A known URL keeps its estimate and schedule; only the
				// seed's fields change.
				s.Add(info(c.withPrior(u)), now)
			}
			n = s.Len()
		})
		c.m.urls.Set(float64(n))
		c.disp.Poke()
	})
}
