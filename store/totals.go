package store

import (
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// metaTotals holds the crawl's running totals (Totals) as JSON.
var metaTotals = []byte("totals")

// Totals are the crawl's running counts since the store was created,
// kept in the transactions that fold the results, so that they survive
// a restart of the coordinator and agree with the per-URL counters.
type Totals struct {
	// Fetches counts the results folded (probes and URLs deleted since
	// dispatch included); Changes the new versions found.
	Fetches int64 `json:"fetches"`
	Changes int64 `json:"changes"`
	// Failed counts the tasks that ran out of deliveries.
	Failed int64 `json:"failed"`
	// Errors counts the failed results and tasks by error kind.
	Errors map[string]int64 `json:"errors,omitempty"`
}

// add adds d to t.
func (t *Totals) add(d Totals) {
	t.Fetches += d.Fetches
	t.Changes += d.Changes
	t.Failed += d.Failed
	for k, n := range d.Errors {
		if t.Errors == nil {
			t.Errors = map[string]int64{}
		}
		t.Errors[k] += n
	}
}

// AddTotals adds d to the stored totals when the transaction commits. A
// fold of many results reads and writes them once.
func (t *Tx) AddTotals(d Totals) error {
	if t.totals == nil {
		tot, err := readTotals(t.tx)
		if err != nil {
			return err
		}
		t.totals = &tot
	}
	t.totals.add(d)
	return nil
}

// flushTotals writes the totals AddTotals changed.
func (t *Tx) flushTotals() error {
	if t.totals == nil {
		return nil
	}
	raw, err := json.Marshal(t.totals)
	if err != nil {
		return fmt.Errorf("encode totals: %w", err)
	}
	return t.tx.Bucket(bucketMeta).Put(metaTotals, raw)
}

func readTotals(tx *bolt.Tx) (Totals, error) {
	var tot Totals
	raw := tx.Bucket(bucketMeta).Get(metaTotals)
	if raw == nil {
		return tot, nil
	}
	if err := json.Unmarshal(raw, &tot); err != nil {
		return tot, fmt.Errorf("%w: decode meta %q: %w", ErrCorrupt, metaTotals, err)
	}
	return tot, nil
}

// Totals returns the crawl's running totals; zero in a store no result
// was folded into.
func (db *DB) Totals() (Totals, error) {
	var tot Totals
	err := db.view(func(tx *bolt.Tx) error {
		var err error
		tot, err = readTotals(tx)
		return err
	})
	return tot, err
}
