package store

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// BucketSize is what one bucket takes in the file.
type BucketSize struct {
	Name string `json:"name"`
	Keys int    `json:"keys"`
	// Bytes is the pages the bucket holds (leaf, branch and inline),
	// InUse the part of them its keys and values fill.
	Bytes int64 `json:"bytes"`
	InUse int64 `json:"in_use"`
}

// Sizes reports the space every bucket takes: where a store's bytes per
// URL go.
func (db *DB) Sizes() ([]BucketSize, error) {
	var out []BucketSize
	err := db.view(func(tx *bolt.Tx) error {
		for _, name := range allBuckets {
			b := tx.Bucket(name)
			if b == nil {
				continue
			}
			st := b.Stats()
			out = append(out, BucketSize{Name: string(name), Keys: st.KeyN,
				Bytes: int64(st.BranchAlloc + st.LeafAlloc + st.InlineBucketInuse),
				InUse: int64(st.BranchInuse + st.LeafInuse + st.InlineBucketInuse)})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("bucket sizes: %w", err)
	}
	return out, nil
}
