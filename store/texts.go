package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// The latest extracted text of a URL is stored once per distinct text, in
// the texts bucket under its SHA-256, with the number of records that name
// it in text_refs; a URL record holds the key (recMeta.content). Many URLs
// that serve the same text (mirrors, error pages, empty pages) then cost
// one copy. A reference is taken when a record starts naming a text and
// dropped when it stops (a new text, a purge); the text goes with its last
// reference. A deleted URL's record keeps its reference, as it keeps the
// rest of its history.
//
// Stores written before texts were shared keep the text in the content
// bucket under the URL; it is read from there until the URL's next text
// is stored, which moves it.

// textKey is the texts key of text.
func textKey(text string) []byte {
	sum := sha256.Sum256([]byte(text))
	return sum[:]
}

// holdText stores text if it is new and takes a reference to it.
func holdText(tx *bolt.Tx, text string) ([]byte, error) {
	key := textKey(text)
	refs := tx.Bucket(bucketTextRefs)
	n, _ := binary.Uvarint(refs.Get(key))
	if n == 0 {
		if err := tx.Bucket(bucketTexts).Put(key, []byte(text)); err != nil {
			return nil, err
		}
	}
	return key, refs.Put(key, binary.AppendUvarint(nil, n+1))
}

// releaseText drops a reference to the text under key (nil: none), and the
// text with its last reference.
func releaseText(tx *bolt.Tx, key []byte) error {
	if len(key) == 0 {
		return nil
	}
	refs := tx.Bucket(bucketTextRefs)
	n, _ := binary.Uvarint(refs.Get(key))
	if n > 1 {
		return refs.Put(key, binary.AppendUvarint(nil, n-1))
	}
	if err := refs.Delete(key); err != nil {
		return err
	}
	return tx.Bucket(bucketTexts).Delete(key)
}

// textOf returns the latest text of the URL whose stored record is rec
// (nil if it has none), from the texts bucket or, for a store written
// before texts were shared, the content bucket.
func textOf(tx *bolt.Tx, url []byte, rec []byte) []byte {
	if m := metaOf(rec); m.content != nil {
		return tx.Bucket(bucketTexts).Get(m.content)
	}
	return tx.Bucket(bucketContent).Get(url)
}

// setText makes text the latest text of the URL record stored under key in
// bucket (urls or deleted). Without a record the text is kept under the
// URL in the content bucket, as before texts were shared.
func setText(tx *bolt.Tx, bucket, key []byte, text string) error {
	b := tx.Bucket(bucket)
	raw := b.Get(key)
	if raw == nil {
		return tx.Bucket(bucketContent).Put(key, []byte(text))
	}
	var u URL
	if err := decodeURL(key, raw, &u); err != nil {
		return fmt.Errorf("%w: decode url %q: %w", ErrCorrupt, key, err)
	}
	m := metaOf(raw)
	if m.content != nil && bytes.Equal(m.content, textKey(text)) {
		return nil
	}
	old := bytes.Clone(m.content)
	nk, err := holdText(tx, text)
	if err != nil {
		return err
	}
	if err := releaseText(tx, old); err != nil {
		return err
	}
	m.content = nk
	if err := b.Put(key, appendURL(make([]byte, 0, 256), &u, m)); err != nil {
		return err
	}
	return tx.Bucket(bucketContent).Delete(key)
}

// dropDeleted removes the kept record of a deleted URL, releasing its text.
func dropDeleted(tx *bolt.Tx, key []byte) error {
	b := tx.Bucket(bucketDeleted)
	raw := b.Get(key)
	if raw == nil {
		return nil
	}
	if err := releaseText(tx, bytes.Clone(metaOf(raw).content)); err != nil {
		return err
	}
	return b.Delete(key)
}

// checkTexts reports texts references that do not add up: a record naming
// a text that is not stored, a count that differs from the records naming
// the text, a text no record names.
func checkTexts(tx *bolt.Tx, r *Report) {
	named := map[string]uint64{}
	for _, name := range [][]byte{bucketURLs, bucketDeleted} {
		_ = tx.Bucket(name).ForEach(func(k, v []byte) error {
			if m := metaOf(v); m.content != nil {
				named[string(m.content)]++
			}
			return nil
		})
	}
	texts, refs := tx.Bucket(bucketTexts), tx.Bucket(bucketTextRefs)
	for key, n := range named {
		if texts.Get([]byte(key)) == nil {
			r.add(fmt.Errorf("texts: %x is named by %d records but not stored", key, n))
		}
		if got, _ := binary.Uvarint(refs.Get([]byte(key))); got != n {
			r.add(fmt.Errorf("texts: %x has %d references counted, %d records name it", key, got, n))
		}
	}
	_ = refs.ForEach(func(k, _ []byte) error {
		if named[string(k)] == 0 {
			r.add(fmt.Errorf("texts: %x is counted but no record names it", k))
		}
		return nil
	})
	_ = texts.ForEach(func(k, _ []byte) error {
		if refs.Get(k) == nil {
			r.add(fmt.Errorf("texts: %x is stored without a reference count", k))
		}
		return nil
	})
}
