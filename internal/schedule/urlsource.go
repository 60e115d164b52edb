package schedule

import (
	"errors"
	"fmt"
	"hash/maphash"
	"strings"
)

// A URLSource spells URLs by the ids a store gives them, for a scheduler
// that holds ids rather than URLs (SchedulerOptions.URLs): a coordinator
// over ten million URLs keeps their strings in its store only.
type URLSource interface {
	// URLs calls fn(i, url) for each ids[i] the source holds, in the
	// order of ids; an id it does not hold (its URL deleted) is
	// skipped. The error is a failure to read (fn may have been called
	// for some ids before it). URLs is called with the scheduler's lock
	// held: it must not call back into the scheduler, and should read
	// all of ids in one go (one read transaction).
	URLs(ids []uint64, fn func(i int, url string)) error
	// Estimates calls fn(i, est) for each ids[i] the source holds, with
	// the estimator state stored with its URL (as EstimateState's
	// MarshalBinary wrote it; empty: none), valid only during the call;
	// an id it does not hold is skipped, and fn may be called in any
	// order of i. The scheduler keeps no estimator state of a URL with
	// a store id (its folds write it to the store before Done): a plan
	// reads the ones it refits from and re-summarises through
	// Estimates, in PlanJob.Solve, without the scheduler's lock and
	// while folds go on, so it must be safe for concurrent use and
	// should read all of ids in one go (one read transaction). The
	// error is a failure to read: the plan goes on without them.
	Estimates(ids []uint64, fn func(i int, est []byte)) error
}

// errNoURL: the source does not hold an entry's id.
var errNoURL = errors.New("the URL source does not hold the URL's id")

// sourceIndex is what a urlIndex keeps besides its table when the URLs
// are spelled by a URLSource. An entry then holds its URL's fingerprint
// (64 bits of its hash, in the path field, where the table hashes by it)
// and its store id (in the origin field when it fits in 32 bits and is
// not 0: the ids of a store grow by one a new URL), 12 bytes where the
// front-coded path took about 49 a URL and the path reference and
// origin 12 more. A lookup by URL compares fingerprints, never strings.
//
// Two URLs with one fingerprint are told apart when the second is added:
// their store ids differ (the store gives each URL its own), or, when
// an id is not known, their URLs (read from the source, or held). The
// second then goes to collided, an exact map from URL to entry, and is
// not in the table; a lookup of a fingerprint some collided URL has
// tries that map first. A URL the scheduler does not hold and whose
// fingerprint a held URL has is taken for that URL by a lookup (Done,
// Abort, Has ...): a chance of n/2^64 per lookup among n URLs.
type sourceIndex struct {
	urls URLSource
	seed maphash.Seed
	// fingerprintOf, when set, replaces the fingerprint (tests: a weak
	// one, so that URLs collide).
	fingerprintOf func(string) uint64
	// held are the URLs of entries without a store id (one-off requests,
	// a URL added without one): entry id → URL.
	held map[uint32]string
	// wide are the store ids that do not fit in 32 bits (or whose low
	// 32 bits are 0): entry id → store id.
	wide map[uint32]uint64
	// collided maps a URL to its entry when another URL in the table
	// had its fingerprint when it was added; collidedFPs counts them by
	// fingerprint.
	collided    map[string]uint32
	collidedFPs map[uint64]int
}

func newSourceIndex(urls URLSource) *sourceIndex {
	return &sourceIndex{urls: urls, seed: maphash.MakeSeed(), held: map[uint32]string{}, wide: map[uint32]uint64{}, collided: map[string]uint32{}, collidedFPs: map[uint64]int{}}
}

// fingerprint is url's fingerprint.
func (s *sourceIndex) fingerprint(url string) uint64 {
	if s.fingerprintOf != nil {
		return s.fingerprintOf(url)
	}
	return maphash.String(s.seed, url)
}

// storeID is e's store id (0: none; its URL is held).
func (s *sourceIndex) storeID(e *entry) uint64 {
	if e.origin != 0 {
		return uint64(e.origin)
	}
	return s.wide[e.id]
}

// setID gives e the store id id, or holds url when id is 0.
func (s *sourceIndex) setID(e *entry, id uint64, url string) {
	switch {
	case id == 0:
		e.origin = 0
		s.held[e.id] = strings.Clone(url)
	case id == uint64(uint32(id)):
		e.origin = uint32(id)
	default:
		e.origin = 0
		s.wide[e.id] = id
	}
}

// forget drops what s holds for e, once out of the index.
func (s *sourceIndex) forget(e *entry) {
	delete(s.held, e.id)
	delete(s.wide, e.id)
}

// unlist takes e out of collided if it is there (the caller then has
// nothing to take out of the table) and reports whether it was.
func (s *sourceIndex) unlist(x *urlIndex, e *entry) bool {
	fp := uint64(e.path)
	if s.collidedFPs[fp] == 0 {
		return false
	}
	for url, id := range s.collided {
		if id != e.id {
			continue
		}
		delete(s.collided, url)
		if s.collidedFPs[fp]--; s.collidedFPs[fp] == 0 {
			delete(s.collidedFPs, fp)
		}
		x.n--
		s.forget(e)
		return true
	}
	return false
}

// getByFingerprint returns the entry of url by its fingerprint.
func (x *urlIndex) getByFingerprint(url string) (*entry, bool) {
	if x.n == 0 {
		return nil, false
	}
	fp := x.hash(url)
	if x.src.collidedFPs[fp] > 0 {
		if id, ok := x.src.collided[url]; ok {
			return x.ents.at(id), true
		}
	}
	return x.slotOf(fp)
}

// find returns the entry of url, whose store id is id (0: not known), for
// an insertion. Without a source it is get. With one, get may return the
// entry of another URL with url's fingerprint; find tells them apart, and
// reports a collision when url is not held and another URL has its
// fingerprint (the caller then inserts it as collided).
func (x *urlIndex) find(url string, id uint64) (e *entry, found, collided bool) {
	if x.src == nil {
		e, found = x.get(url)
		return e, found, false
	}
	fp := x.hash(url)
	if x.src.collidedFPs[fp] > 0 {
		if eid, ok := x.src.collided[url]; ok {
			return x.ents.at(eid), true, false
		}
	}
	e, ok := x.slotOf(fp)
	if !ok {
		return nil, false, false
	}
	if x.sameURL(e, url, id) {
		return e, true, false
	}
	return nil, false, true
}

// sameURL reports whether e, whose URL has url's fingerprint, is url's
// entry: by store id when both are known, else by the URL itself. A URL
// the source cannot spell is taken for another: the caller then holds it
// apart, which loses nothing.
func (x *urlIndex) sameURL(e *entry, url string, id uint64) bool {
	if h, ok := x.src.held[e.id]; ok {
		return h == url
	}
	sid := x.src.storeID(e)
	if id != 0 {
		return sid == id
	}
	got, err := x.spell(e)
	return err == nil && got == url
}

// learnID gives e, whose URL is held for want of a store id, the store
// id id (0: none yet), and stops holding its URL.
func (x *urlIndex) learnID(e *entry, id uint64) {
	if x.src == nil || id == 0 {
		return
	}
	if _, ok := x.src.held[e.id]; ok {
		delete(x.src.held, e.id)
		x.src.setID(e, id, "")
		// Its estimator state is the store's from now on (stateID).
		x.ents.dropState(e)
	}
}

// stateID is the store id to read e's estimator state by
// (URLSource.Estimates), or 0 when the scheduler holds the state: there
// is no source, or e has no store id.
func (x *urlIndex) stateID(e *entry) uint64 {
	if x.src == nil {
		return 0
	}
	return x.src.storeID(e)
}

// putID gives e the URL url with store id id (0: none; url is then held)
// and adds it; url must not be in the index (find). A collided URL goes
// to the exact map, not the table.
func (x *urlIndex) putID(e *entry, url string, id uint64, collided bool) {
	fp := x.hash(url)
	e.path = pathRef(fp)
	x.src.setID(e, id, url)
	if collided {
		x.src.collided[strings.Clone(url)] = e.id
		x.src.collidedFPs[fp]++
		x.n++
		return
	}
	if (x.n+1)*4 > len(x.slots)*3 {
		x.grow()
	}
	x.placeAt(e, fp)
	x.n++
}

// spell is e's URL: held, read from the source, or (without a source)
// built from the front-coded path.
func (x *urlIndex) spell(e *entry) (string, error) {
	if x.src == nil {
		return x.url(e), nil
	}
	if h, ok := x.src.held[e.id]; ok {
		return h, nil
	}
	id := x.src.storeID(e)
	var url string
	found := false
	if err := x.src.urls.URLs([]uint64{id}, func(_ int, u string) { url, found = u, true }); err != nil {
		return "", fmt.Errorf("url of store id %d: %w", id, err)
	}
	if !found {
		return "", fmt.Errorf("url of store id %d: %w", id, errNoURL)
	}
	return url, nil
}

// spellAll calls fn(i, url) with the URL of each es[i] it can spell (not
// always in the order of es), reading those it does not hold with one
// call of the source. An entry
// whose id the source does not hold is skipped; the error is the
// source's.
func (x *urlIndex) spellAll(es []*entry, fn func(i int, url string)) error {
	if x.src == nil {
		for i, e := range es {
			fn(i, x.url(e))
		}
		return nil
	}
	var ids []uint64
	var at []int
	for i, e := range es {
		if h, ok := x.src.held[e.id]; ok {
			fn(i, h)
			continue
		}
		ids, at = append(ids, x.src.storeID(e)), append(at, i)
	}
	if len(ids) == 0 {
		return nil
	}
	return x.src.urls.URLs(ids, func(j int, url string) { fn(at[j], url) })
}
