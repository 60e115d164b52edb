package store

import (
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// SeedChange lists the seed fields `url set` changes; nil fields stay.
type SeedChange struct {
	Weight   *float64     `json:"weight,omitempty"`
	Selector *string      `json:"selector,omitempty"`
	Ignore   *IgnoreRules `json:"ignore,omitempty"`
	Mode     *string      `json:"mode,omitempty"`
	KeepRaw  *bool        `json:"keep_raw,omitempty"`
}

// Empty reports whether ch changes nothing.
func (ch SeedChange) Empty() bool {
	return ch.Weight == nil && ch.Selector == nil && ch.Ignore == nil && ch.Mode == nil && ch.KeepRaw == nil
}

// apply changes u's seed fields; a URL leaving capture mode drops its
// capture-only fields, which the seed format refuses outside it.
func (ch SeedChange) apply(u *URL) {
	if ch.Weight != nil {
		u.Weight = *ch.Weight
	}
	if ch.Selector != nil {
		u.Selector = *ch.Selector
	}
	if ch.Ignore != nil {
		u.Ignore = *ch.Ignore
	}
	if ch.Mode != nil {
		u.Mode = *ch.Mode
		if u.Mode != "capture" {
			u.Period, u.Polls = "", 0
		}
	}
	if ch.KeepRaw != nil {
		u.KeepRaw = *ch.KeepRaw
	}
}

// updateURLs applies fn to the records of urls that exist, in one transaction,
// and returns the records as written. Unknown URLs are skipped.
func (db *DB) updateURLs(urls []string, fn func(*bolt.Tx, *URL) (bool, error)) ([]URL, error) {
	var out []URL
	err := db.update(func(tx *bolt.Tx) error {
		out = out[:0]
		b := tx.Bucket(bucketURLs)
		for _, url := range urls {
			var u URL
			found, err := getJSON(b, []byte(url), &u)
			if err != nil {
				return err
			}
			if !found {
				continue
			}
			old := u
			changed, err := fn(tx, &u)
			if err != nil {
				return err
			}
			if !changed {
				continue
			}
			if err := putURL(tx, &old, u, true); err != nil {
				return err
			}
			out = append(out, u)
		}
		return nil
	})
	return out, err
}

// SetPaused pauses (or resumes) the URLs that exist and returns the
// records it changed. Resuming also brings back a gone URL, with its
// failures forgotten: the operator says it is worth fetching again.
func (db *DB) SetPaused(urls []string, paused bool, at time.Time) ([]URL, error) {
	out, err := db.updateURLs(urls, func(_ *bolt.Tx, u *URL) (bool, error) {
		if !paused && u.Gone {
			u.Gone, u.ErrStreak, u.NotFoundSince = false, 0, time.Time{}
		} else if u.Paused == paused {
			return false, nil
		}
		u.Paused = paused
		u.PausedAt = time.Time{}
		if paused {
			u.PausedAt = at
		}
		return true, nil
	})
	if err != nil {
		verb := "pause"
		if !paused {
			verb = "resume"
		}
		return nil, fmt.Errorf("%s %d URLs: %w", verb, len(urls), err)
	}
	return out, nil
}

// SetSeed changes seed fields of the URLs that exist and returns the
// records as written. Validating the values is the caller's job (they
// follow the seed format's rules). Turning keep_raw off drops the raw body
// kept so far, so none is shown that is no longer kept up to date.
func (db *DB) SetSeed(urls []string, ch SeedChange) ([]URL, error) {
	out, err := db.updateURLs(urls, func(tx *bolt.Tx, u *URL) (bool, error) {
		ch.apply(u)
		if !u.KeepRaw {
			if err := tx.Bucket(bucketRaw).Delete([]byte(u.URL)); err != nil {
				return false, err
			}
		}
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("set seed fields of %d URLs: %w", len(urls), err)
	}
	return out, nil
}

// Delete removes URLs from the crawl. Without purge a URL's record moves to
// the deleted bucket and its history stays: latest copy, raw body, fetch
// history, change log and versions. With purge all of it goes, also for a
// URL deleted before. It returns the URLs it found (live or, with purge,
// with any history).
func (db *DB) Delete(urls []string, purge bool, at time.Time) ([]string, error) {
	var gone []string
	err := db.update(func(tx *bolt.Tx) error {
		gone = gone[:0]
		b := tx.Bucket(bucketURLs)
		for _, url := range urls {
			key := []byte(url)
			var u URL
			found, err := getJSON(b, key, &u)
			if err != nil {
				return err
			}
			if found {
				content, err := deleteURL(tx, &u)
				if err != nil {
					return err
				}
				if !purge {
					// The record keeps its texts key: the latest copy
					// stays with the history.
					u.DeletedAt = at
					if err := tx.Bucket(bucketDeleted).Put(key, appendURL(nil, &u, recMeta{content: content})); err != nil {
						return err
					}
				} else if err := releaseText(tx, content); err != nil {
					return err
				}
			}
			if !purge {
				if found {
					gone = append(gone, url)
				}
				continue
			}
			had, err := purgeHistory(tx, url)
			if err != nil {
				return fmt.Errorf("purge %s: %w", url, err)
			}
			if found || had {
				gone = append(gone, url)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("delete %d URLs: %w", len(urls), err)
	}
	return gone, nil
}

// purgeHistory removes everything stored about url besides its live
// record, and reports whether there was anything.
func purgeHistory(tx *bolt.Tx, url string) (bool, error) {
	key := []byte(url)
	had := false
	if tx.Bucket(bucketDeleted).Get(key) != nil {
		had = true
		if err := dropDeleted(tx, key); err != nil {
			return had, err
		}
	}
	for _, name := range [][]byte{bucketContent, bucketRaw, bucketFetchLog} {
		b := tx.Bucket(name)
		if b.Get(key) != nil {
			had = true
			if err := b.Delete(key); err != nil {
				return had, err
			}
		}
	}
	p := prefixOf(url)
	// Versions: url 0x00 seq.
	vc := tx.Bucket(bucketVersions).Cursor()
	for k, _ := vc.Seek(p); k != nil && hasPrefix(k, p); k, _ = vc.Seek(p) {
		had = true
		if err := vc.Delete(); err != nil {
			return had, err
		}
	}
	// The change log, through its URL index.
	log := tx.Bucket(bucketChanges)
	ic := tx.Bucket(bucketIxChanges).Cursor()
	for k, _ := ic.Seek(p); k != nil && hasPrefix(k, p); k, _ = ic.Seek(p) {
		had = true
		if len(k) == len(p)+8 {
			if err := log.Delete(k[len(p):]); err != nil {
				return had, err
			}
		}
		if err := ic.Delete(); err != nil {
			return had, err
		}
	}
	return had, nil
}
