package store

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	bolt "go.etcd.io/bbolt"
)

// metaHazard holds the collection's hazard counts (Hazard).
var metaHazard = []byte("hazard")

// hazardLen is the size of the stored Hazard: two float64 and a time in
// Unix nanoseconds.
const hazardLen = 24

// Hazard is what the scheduler counts of the collection to estimate the
// hazard of a change of a URL's rate: the change points its URLs showed and
// the seconds their observations covered, both faded to At. The store keeps
// it so that a restarted coordinator goes on from what its predecessor
// learnt instead of from the prior (docs/design.md §3.3).
type Hazard struct {
	ChangePoints float64
	Observed     float64 // seconds
	At           time.Time
}

// valid reports whether h is counts a scheduler could have made: finite,
// not negative, and dated after 1970 (the stored form is Unix nanoseconds).
func (h Hazard) valid() bool {
	ok := func(x float64) bool { return x >= 0 && !math.IsInf(x, 1) }
	return ok(h.ChangePoints) && ok(h.Observed) && !h.At.IsZero() && h.At.Unix() > 0
}

// SetHazard stores h in place of the hazard counts stored before. Counts a
// scheduler cannot have made (negative, NaN, infinite, undated) are refused
// and the stored ones kept.
func (db *DB) SetHazard(h Hazard) error {
	if !h.valid() {
		return fmt.Errorf("store %s: set hazard: invalid counts (change points %g, observed %g s, at %v)", db.path, h.ChangePoints, h.Observed, h.At)
	}
	var v [hazardLen]byte
	binary.BigEndian.PutUint64(v[0:], math.Float64bits(h.ChangePoints))
	binary.BigEndian.PutUint64(v[8:], math.Float64bits(h.Observed))
	binary.BigEndian.PutUint64(v[16:], uint64(h.At.UnixNano()))
	if err := db.update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(metaHazard, v[:]) }); err != nil {
		return fmt.Errorf("store %s: set hazard: %w", db.path, err)
	}
	return nil
}

// Hazard is the hazard counts last stored by SetHazard; found is false if
// none were. A stored value that is not one SetHazard writes is reported as
// ErrCorrupt.
func (db *DB) Hazard() (h Hazard, found bool, err error) {
	err = db.view(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketMeta).Get(metaHazard)
		if v == nil {
			return nil
		}
		h, err = decodeHazard(v)
		found = err == nil
		return err
	})
	if err != nil {
		return Hazard{}, false, fmt.Errorf("store %s: read hazard: %w", db.path, err)
	}
	return h, found, nil
}

// decodeHazard reads the value SetHazard writes.
func decodeHazard(v []byte) (Hazard, error) {
	if len(v) != hazardLen {
		return Hazard{}, fmt.Errorf("%w: meta %q holds %d bytes, not %d", ErrCorrupt, metaHazard, len(v), hazardLen)
	}
	h := Hazard{
		ChangePoints: math.Float64frombits(binary.BigEndian.Uint64(v[0:])),
		Observed:     math.Float64frombits(binary.BigEndian.Uint64(v[8:])),
		At:           time.Unix(0, int64(binary.BigEndian.Uint64(v[16:]))),
	}
	if !h.valid() {
		return Hazard{}, fmt.Errorf("%w: meta %q holds invalid counts (change points %g, observed %g s, at %v)", ErrCorrupt, metaHazard, h.ChangePoints, h.Observed, h.At)
	}
	return h, nil
}
