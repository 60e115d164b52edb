package store

import (
	"fmt"
	"os"

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

// CompactTo writes a compacted copy of the store to the file path (which
// must not exist): every bucket rewritten in key order into full pages,
// what the file would take after `bbolt compact`. It returns the copy's
// size.
func (db *DB) CompactTo(path string) (int64, error) {
	dst, err := bolt.Open(path, 0o600, &bolt.Options{NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
	if err != nil {
		return 0, fmt.Errorf("compact to %s: %w", path, err)
	}
	if err := bolt.Compact(dst, db.bolt, 64<<20); err != nil {
		dst.Close()
		return 0, fmt.Errorf("compact to %s: %w", path, err)
	}
	if err := dst.Close(); err != nil {
		return 0, fmt.Errorf("compact to %s: %w", path, err)
	}
	st, err := os.Stat(path)
	if err != nil {
		return 0, fmt.Errorf("compact to %s: %w", path, err)
	}
	return st.Size(), nil
}
