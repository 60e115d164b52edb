package coordinator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/freshcrawl/freshcrawl/internal/schedule"
	"github.com/freshcrawl/freshcrawl/internal/seed"
	"github.com/freshcrawl/freshcrawl/store"
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

// bulkSeedBatch is the batch for seeding a store no coordinator runs on:
// nothing waits behind its transactions, and a large sorted batch writes
// each touched page once (10 M lines are a hundred commits).
const bulkSeedBatch = 100_000

// SortedSeedOptions configure IngestSeedsSorted.
type SortedSeedOptions struct {
	// TempDir holds the sorted runs ("": the system's temporary directory).
	TempDir string
	// RunBytes bounds the encoded seeds sorted in memory at a time (0:
	// 64 MiB).
	RunBytes int
	// OnBad sees every bad line, with file and line.
	OnBad func(*seed.LineError)
	// OnRead sees the number of lines read so far, every 100 000 lines.
	OnRead func(lines int)
	// OnBatch sees every stored batch.
	OnBatch func([]store.URL)
	// AllowPrivateWebhooks accepts seeds whose webhook names a non-public
	// address (notify.Options.AllowPrivate).
	AllowPrivateWebhooks bool
}

// IngestSeedsSorted seeds a store no coordinator runs on: it reads the
// whole of r (reporting bad lines as it goes), sorts the seeds by URL in
// bounded memory (store.BulkLoader: sorted runs of o.RunBytes, spilled to
// o.TempDir and merged), then stores them in URL order in batches of
// bulkSeedBatch. In URL order each batch is written at the end of every
// tree instead of all over it, so the cost per URL does not grow with the
// store. Nothing is stored until the whole file is read. A cancelled ctx
// stops it between lines or batches; what was committed stays, and the
// summary counts it.
func IngestSeedsSorted(ctx context.Context, db *store.DB, r io.Reader, file string, o SortedSeedOptions) (SeedSummary, error) {
	var sum SeedSummary
	l := db.NewBulkLoader(o.TempDir, o.RunBytes)
	defer l.Close()
	now := time.Now()
	lines := 0
	p := seed.Parser{AllowPrivateWebhooks: o.AllowPrivateWebhooks}
	good, bad, err := p.Parse(r, file, func(s seed.Seed) error {
		if lines++; lines%100_000 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
			if o.OnRead != nil {
				o.OnRead(lines)
			}
		}
		return l.Add(seedRecord(s, now))
	}, func(e *seed.LineError) {
		sum.note(e, o.OnBad)
	})
	sum.Good, sum.Bad = good, bad
	if ctx.Err() != nil {
		if err == nil {
			err = ctx.Err()
		}
		return sum, err
	}
	// A read that failed still stores the good lines before it, as
	// streaming does.
	stored, added, lerr := l.Load(ctx, bulkSeedBatch, o.OnBatch)
	sum.Added, sum.Updated = added, stored-added
	if lerr != nil {
		return sum, errors.Join(err, fmt.Errorf("store the seeds of %s: %w", file, lerr))
	}
	return sum, err
}

func seedRecord(s seed.Seed, now time.Time) store.URL {
	return store.URL{URL: s.URL, Host: s.Host, Weight: s.Weight, Selector: s.Selector, Mode: string(s.Mode), Ignore: store.IgnoreRules(s.Ignore), Period: s.Period, Polls: s.Polls, KeepRaw: s.KeepRaw, Webhook: s.Webhook, AddedAt: now}
}

// note counts a bad line: kept in Errors up to maxSeedErrors, and passed
// to onBad.
func (sum *SeedSummary) note(e *seed.LineError, onBad func(*seed.LineError)) {
	if len(sum.Errors) < maxSeedErrors {
		sum.Errors = append(sum.Errors, e.Error())
	}
	if onBad != nil {
		onBad(e)
	}
}

// ingestSeedsBatch streams seeds from r into db in batches of n lines:
// only one batch is held at a time, whatever the size of the file. onBad
// sees every bad line (with file and line), as p parses it; onBatch, if set, sees every
// stored batch (the running coordinator adds them to its schedule, in
// batches of seedBatch so its folds do not wait behind a long
// transaction; `freshcrawl seed` into a store no coordinator runs on uses
// IngestSeedsSorted). A cancelled ctx stops it before the next batch;
// what was committed stays, and the summary counts it.
func ingestSeedsBatch(ctx context.Context, db *store.DB, p seed.Parser, r io.Reader, file string, n int, onBad func(*seed.LineError), onBatch func([]store.URL)) (SeedSummary, error) {
	var sum SeedSummary
	n = max(n, 1)
	batch := make([]store.URL, 0, n)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
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
	good, bad, err := p.Parse(r, file, func(s seed.Seed) error {
		batch = append(batch, seedRecord(s, now))
		if len(batch) == n {
			return flush()
		}
		return nil
	}, func(e *seed.LineError) {
		sum.note(e, onBad)
	})
	sum.Good, sum.Bad = good, bad
	if err != nil {
		// Whatever was parsed before the failure is still stored (unless
		// the failure is the cancellation).
		if ctx.Err() != nil {
			return sum, err
		}
		if ferr := flush(); ferr != nil {
			return sum, ferr
		}
		return sum, err
	}
	return sum, flush()
}

// AddSeeds ingests seeds into the store and the live schedule, a batch
// at a time. A seed's webhook may name a non-public address only if the
// webhooks may (Options.Webhooks.AllowPrivate).
func (c *Coordinator) AddSeeds(r io.Reader, file string) (SeedSummary, error) {
	p := seed.Parser{AllowPrivateWebhooks: c.opts.Webhooks.AllowPrivate}
	return ingestSeedsBatch(context.Background(), c.db, p, r, file, seedBatch, nil, func(batch []store.URL) {
		c.withIDs(batch)
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

// withIDs gives the records that carry no store id (those not read from
// the store: seeds as ingested, an import's) their ids, read in one
// transaction, for the schedule, which spells URLs by them. A URL left
// without one (the read failed) is held by the schedule itself: that
// costs memory, and loses nothing.
func (c *Coordinator) withIDs(recs []store.URL) {
	var unknown []string
	for _, u := range recs {
		if u.ID == 0 {
			unknown = append(unknown, u.URL)
		}
	}
	if len(unknown) == 0 {
		return
	}
	ids, err := c.db.URLIDs(unknown)
	if err != nil {
		c.log.Warn("read the store ids of new URLs; the schedule holds them itself", "n", len(unknown), "err", err)
		return
	}
	j := 0
	for i := range recs {
		if recs[i].ID == 0 {
			recs[i].ID, j = ids[j], j+1
		}
	}
}
