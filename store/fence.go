package store

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Keys of the meta bucket that tie a store to a crawl's coordinators.
var (
	// metaStoreID names this store: it is created once and travels with
	// every backup, so a restored backup is recognised as this store.
	metaStoreID = []byte("store_id")
	// metaFence is the coordinator lease revision under which the store
	// was last written: every lease a coordinator takes has a higher one.
	metaFence = []byte("fence")
)

// ErrFenced is returned by a write when the store has been taken over by a
// coordinator holding a newer lease: the writer must stop.
var ErrFenced = errors.New("the store has been taken over by a coordinator with a newer lease")

func newStoreID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Identity is the store's id and the fence it was last written under (0 if
// no coordinator holding a lease has written it).
func (db *DB) Identity() (id string, fence uint64, err error) {
	err = db.view(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta == nil {
			return fmt.Errorf("%w: no meta bucket", ErrCorrupt)
		}
		id = string(meta.Get(metaStoreID))
		if v := meta.Get(metaFence); len(v) == 8 {
			fence = binary.BigEndian.Uint64(v)
		}
		return nil
	})
	return id, fence, err
}

// TakeFence records that the coordinator holding lease revision fence now
// writes this store, and makes every later write of db check that no newer
// one took it over since (ErrFenced). It refuses a fence older than the
// stored one.
func (db *DB) TakeFence(fence uint64) error {
	// Not db.update: the check against our own older fence is what this
	// transaction replaces.
	err := guard(db.path, func() error {
		return db.bolt.Update(func(tx *bolt.Tx) error {
			meta := tx.Bucket(bucketMeta)
			if v := meta.Get(metaFence); len(v) == 8 && binary.BigEndian.Uint64(v) > fence {
				return fmt.Errorf("%w (store fence %d, ours %d)", ErrFenced, binary.BigEndian.Uint64(v), fence)
			}
			return meta.Put(metaFence, u64(fence))
		})
	})
	if err != nil {
		return fmt.Errorf("store %s: take fence %d: %w", db.path, fence, err)
	}
	db.fence.Store(fence)
	return nil
}

// checkFence fails a write transaction if the store was taken over under a
// newer lease than the one db writes under (no check before TakeFence).
func (db *DB) checkFence(tx *bolt.Tx) error {
	want := db.fence.Load()
	if want == 0 {
		return nil
	}
	v := tx.Bucket(bucketMeta).Get(metaFence)
	if len(v) == 8 && binary.BigEndian.Uint64(v) != want {
		return fmt.Errorf("%w (store fence %d, ours %d)", ErrFenced, binary.BigEndian.Uint64(v), want)
	}
	return nil
}
