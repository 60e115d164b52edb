package store

import (
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

func itemKey(source, id string) []byte {
	k := make([]byte, 0, len(source)+1+len(id))
	k = append(k, source...)
	k = append(k, 0)
	return append(k, id...)
}

// UpsertItems adds tracked items of a keyword-search source, or updates the
// attributes of known ones (their value history stays).
func (db *DB) UpsertItems(items []Item) (added int, err error) {
	err = db.update(func(tx *bolt.Tx) error {
		added = 0
		b := tx.Bucket(bucketItems)
		for _, it := range items {
			key := itemKey(it.Source, it.ID)
			var cur Item
			found, err := getJSON(b, key, &cur)
			if err != nil {
				return err
			}
			if found {
				cur.Attrs = it.Attrs // the sync history stays
			} else {
				cur = it
				added++
			}
			if err := putJSON(b, key, cur); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("upsert %d items: %w", len(items), err)
	}
	return added, nil
}

// Items returns every tracked item of source, in id order.
func (db *DB) Items(source string) ([]Item, error) {
	var out []Item
	err := db.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketItems).Cursor()
		p := prefixOf(source)
		for k, v := c.Seek(p); k != nil && hasPrefix(k, p); k, v = c.Next() {
			var it Item
			if err := json.Unmarshal(v, &it); err != nil {
				return fmt.Errorf("%w: decode item %q: %w", ErrCorrupt, k, err)
			}
			out = append(out, it)
		}
		return nil
	})
	return out, err
}

// GetItem returns a tracked item (found=false if unknown).
func (t *Tx) GetItem(source, id string) (Item, bool, error) {
	var it Item
	found, err := getJSON(t.tx.Bucket(bucketItems), itemKey(source, id), &it)
	return it, found, err
}

// PutItem stores a tracked item.
func (t *Tx) PutItem(it Item) error {
	return putJSON(t.tx.Bucket(bucketItems), itemKey(it.Source, it.ID), it)
}
