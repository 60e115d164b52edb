package store

import (
	"cmp"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// URLsByID spells URLs by their ids (URL.ID): it calls fn(i, url) for
// each ids[i] the store holds, in the order of ids, all in one read
// transaction; an id it does not hold (its URL deleted, or 0) is
// skipped. url is valid only during the call (it is a copy fn may keep:
// the store's bytes are not handed out). A scheduler that holds ids
// rather than URLs (schedule.URLSource) reads through it.
func (db *DB) URLsByID(ids []uint64, fn func(i int, url string)) error {
	err := db.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketURLIDs)
		var key [9]byte
		for i, id := range ids {
			if id == 0 {
				continue
			}
			if v := b.Get(appendOrdered(key[:0], id)); v != nil {
				fn(i, string(v))
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read URLs by id: %w", err)
	}
	return nil
}

// URLIDs returns the ids of urls (0 for a URL the store does not hold,
// or one stored before ids), in one read transaction.
func (db *DB) URLIDs(urls []string) ([]uint64, error) {
	ids := make([]uint64, len(urls))
	err := db.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketURLs)
		for i, u := range urls {
			ids[i] = metaOf(b.Get([]byte(u))).id
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read URL ids: %w", err)
	}
	return ids, nil
}

// EstimatesByID reads the estimator states stored with the URLs of ids
// (URL.Estimate): it calls fn(i, est) for each ids[i] the store holds, in
// the order of the ids' values (sorted, so that the id map is read in
// key order), all in one read transaction; an id it does not hold (its
// URL deleted, or 0) is skipped, and a URL with no state gives an empty
// est. est is valid only during the call. A scheduler that keeps no
// estimator states in memory (schedule.URLSource) reads its refit
// samples and re-summaries through it.
func (db *DB) EstimatesByID(ids []uint64, fn func(i int, est []byte)) error {
	order := make([]int, len(ids))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(ids[a], ids[b]) })
	err := db.view(func(tx *bolt.Tx) error {
		byID, urls := tx.Bucket(bucketURLIDs), tx.Bucket(bucketURLs)
		var key [9]byte
		var u URL
		for _, i := range order {
			if ids[i] == 0 {
				continue
			}
			url := byID.Get(appendOrdered(key[:0], ids[i]))
			if url == nil {
				continue
			}
			v := urls.Get(url)
			if v == nil {
				continue
			}
			if err := decodeScheduled(url, v, &u); err != nil {
				return fmt.Errorf("URL %q (id %d): %w", url, ids[i], err)
			}
			fn(i, u.Estimate)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read estimator states by id: %w", err)
	}
	return nil
}
