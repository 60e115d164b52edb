package store

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// StateActive selects URLs in no record state (not paused, disallowed or
// failed): the ones whose state the scheduler decides.
const StateActive = "active"

// Query selects, orders and pages URL records. Every page costs about
// Limit index steps plus the records skipped by filters the chosen index
// does not answer, whatever the number of URLs.
type Query struct {
	Host   string // exact host
	Prefix string // URL prefix
	Search string // substring of the URL, case-insensitive
	Mode   string // freshness or capture
	// State is a record state (paused, disallowed, failed) or active.
	State string
	// Only, when not nil (an empty list selects nothing), restricts the
	// URLs to this sorted list (the
	// scheduler's given-up or due URLs); Match, when set, must hold too.
	Only  []string
	Match func(url string) bool

	// Sort is one of Sorts; default url. With a host or state filter, or
	// a mode other than freshness, and no prefix, the url order is the
	// order the URLs were added (the filter index names URLs by id; a bulk
	// seed adds them in URL order).
	Sort string
	Desc bool
	// After is the cursor of the previous page (Page.Next).
	After string
	Limit int // default 50, at most 1000
}

// ErrBadQuery marks a query that names an unknown sort or state or carries
// a damaged cursor.
var ErrBadQuery = errors.New("bad query")

// MaxLimit is the largest page.
const MaxLimit = 1000

// Page is one page of URL records.
type Page struct {
	URLs []URL `json:"urls"`
	// Next is the cursor of the next page ("" on the last page).
	Next string `json:"next,omitempty"`
	// Total counts every match when that is cheap (one index range and
	// no other filter), else -1.
	Total int `json:"total"`
}

// driver walks candidate URLs in the query's order.
type driver struct {
	bucket []byte
	prefix []byte
	url    func(k []byte) []byte
	// covers says which filters the driver answers by itself.
	host, mode, state, prefixF bool
}

func (db *DB) plan(tx *bolt.Tx, q *Query) (driver, error) {
	d := driver{bucket: bucketURLs, url: func(k []byte) []byte { return k }}
	ids := tx.Bucket(bucketURLIDs)
	byID := func(k []byte) []byte { return urlOfFilterKey(ids, k) }
	filter := func(kind byte, value string) driver {
		return driver{bucket: bucketIxFilter, prefix: filterPrefix(kind, value), url: byID}
	}
	recordState := q.State != "" && q.State != StateActive
	switch q.Sort {
	case "", SortURL:
		switch {
		case recordState:
			d = filter(ixState, q.State)
			d.state = true
		case q.Host != "":
			d = filter(ixHost, q.Host)
			d.host = true
		case q.Prefix != "":
			d.prefix, d.prefixF = []byte(q.Prefix), true
		case indexedMode(q.Mode) != "":
			d = filter(ixMode, q.Mode)
			d.mode = true
		}
	case SortHost:
		if q.Host != "" {
			d = filter(ixHost, q.Host)
			d.host = true
		} else {
			d = driver{bucket: bucketIxFilter, prefix: []byte{ixHost}, url: byID}
		}
	default:
		id, ok := sortIDs[q.Sort]
		if !ok {
			return d, fmt.Errorf("%w: unknown sort %q (want one of %s)", ErrBadQuery, q.Sort, strings.Join(Sorts, ", "))
		}
		d = driver{bucket: bucketIxSort, prefix: []byte{id}, url: func(k []byte) []byte { return urlOfSortKey(ids, k) }}
	}
	return d, nil
}

// ListURLs returns one page of the URL records q selects, in q's order.
func (db *DB) ListURLs(q Query) (Page, error) {
	if q.Limit <= 0 {
		q.Limit = 50
	}
	q.Limit = min(q.Limit, MaxLimit)
	page := Page{URLs: []URL{}, Total: -1}
	var after []byte
	if q.After != "" {
		var err error
		if after, err = base64.RawURLEncoding.DecodeString(q.After); err != nil {
			return page, fmt.Errorf("%w: bad cursor %q: %v", ErrBadQuery, q.After, err)
		}
	}
	err := db.view(func(tx *bolt.Tx) error {
		var last []byte
		n := 0
		more := false
		err := db.walk(tx, &q, after, func(key, url []byte) bool {
			if n == q.Limit {
				more = true
				return false
			}
			var u URL
			if found, err := getJSON(tx.Bucket(bucketURLs), url, &u); err != nil || !found {
				return true // an index entry without a record is skipped
			}
			u.Estimate = nil
			page.URLs = append(page.URLs, u)
			last = append(last[:0], key...)
			n++
			return true
		})
		if err != nil {
			return err
		}
		if more {
			page.Next = base64.RawURLEncoding.EncodeToString(last)
		}
		page.Total = db.total(tx, &q)
		return nil
	})
	if err != nil {
		return Page{URLs: []URL{}, Total: -1}, err
	}
	return page, nil
}

// EachURL calls fn with every URL q selects, in q's order, ignoring its
// paging; bulk operations use it to select by host or prefix.
func (db *DB) EachURL(q Query, fn func(url string) error) error {
	var urls []string
	err := db.view(func(tx *bolt.Tx) error {
		return db.walk(tx, &q, nil, func(_, url []byte) bool {
			urls = append(urls, string(url))
			return true
		})
	})
	if err != nil {
		return err
	}
	for _, u := range urls {
		if err := fn(u); err != nil {
			return err
		}
	}
	return nil
}

// walk visits the candidates of q after the cursor `after`, calling fn with
// the driver key and URL of each match until fn returns false.
func (db *DB) walk(tx *bolt.Tx, q *Query, after []byte, fn func(key, url []byte) bool) error {
	if q.State != "" && q.State != StateActive && !slices.Contains(recordStates, q.State) {
		return fmt.Errorf("%w: unknown state %q", ErrBadQuery, q.State)
	}
	d, err := db.plan(tx, q)
	if err != nil {
		return err
	}
	onlyDriven := q.Only != nil && (q.Sort == "" || q.Sort == SortURL)
	if onlyDriven {
		// The list is the driver: it is usually far shorter than the
		// URLs, and already in URL order; every filter is checked.
		d = driver{bucket: bucketURLs, url: d.url}
	}
	if (!bytes.Equal(d.bucket, bucketURLs) || q.Host != "" || q.Mode != "" || q.State != "") && !indexedTx(tx) {
		return errNotIndexed
	}
	f, urls := tx.Bucket(bucketIxFilter), tx.Bucket(bucketURLs)
	search := strings.ToLower(q.Search)
	// The filter keys name a URL by its id, which its record holds: read
	// once per candidate, and only when a filter needs it.
	var id uint64
	has := func(kind byte, value string, url []byte) bool {
		if id == 0 {
			if id = metaOf(urls.Get(url)).id; id == 0 {
				return false
			}
		}
		return f.Get(filterKey(kind, value, id)) != nil
	}
	match := func(url []byte) bool {
		id = 0
		if q.Prefix != "" && !d.prefixF && !bytes.HasPrefix(url, []byte(q.Prefix)) {
			return false
		}
		if search != "" && !strings.Contains(strings.ToLower(string(url)), search) {
			return false
		}
		if q.Host != "" && !d.host && !has(ixHost, q.Host, url) {
			return false
		}
		if q.Mode != "" && !d.mode {
			if indexedMode(q.Mode) != "" && !has(ixMode, q.Mode, url) {
				return false
			}
			// The default mode has no index: the record says.
			var u URL
			if indexedMode(q.Mode) == "" && (decodeURL(url, urls.Get(url), &u) != nil || u.Mode != q.Mode) {
				return false
			}
		}
		switch {
		case q.State == StateActive:
			for _, s := range recordStates {
				if has(ixState, s, url) {
					return false
				}
			}
		case q.State != "" && !d.state:
			if !has(ixState, q.State, url) {
				return false
			}
		}
		if q.Only != nil {
			if _, ok := slices.BinarySearch(q.Only, string(url)); !ok {
				return false
			}
		}
		return q.Match == nil || q.Match(string(url))
	}
	if onlyDriven {
		return walkList(q.Only, after, q.Desc, func(u string) bool {
			if !match([]byte(u)) {
				return true
			}
			return fn([]byte(u), []byte(u))
		})
	}
	return scan(tx.Bucket(d.bucket), d.prefix, after, q.Desc, func(k []byte) bool {
		url := d.url(k)
		if url == nil || !match(url) {
			return true
		}
		return fn(k, url)
	})
}

func walkList(list []string, after []byte, desc bool, fn func(string) bool) error {
	i, j := 0, len(list)
	if after != nil {
		pos, found := slices.BinarySearch(list, string(after))
		if desc {
			j = pos
		} else {
			i = pos
			if found {
				i++
			}
		}
	}
	if desc {
		for k := j - 1; k >= i; k-- {
			if !fn(list[k]) {
				return nil
			}
		}
		return nil
	}
	for k := i; k < j; k++ {
		if !fn(list[k]) {
			return nil
		}
	}
	return nil
}

// scan visits the keys of b that start with prefix and come after `after`
// (before it when desc), in order, until fn returns false.
func scan(b *bolt.Bucket, prefix, after []byte, desc bool, fn func(k []byte) bool) error {
	c := b.Cursor()
	var k []byte
	switch {
	case !desc && after != nil:
		k, _ = c.Seek(after)
		if k != nil && bytes.Equal(k, after) {
			k, _ = c.Next()
		}
	case !desc:
		k, _ = c.Seek(prefix)
	case after != nil:
		if k, _ = c.Seek(after); k == nil {
			k, _ = c.Last()
			if k != nil && bytes.Compare(k, after) >= 0 {
				k, _ = c.Prev()
			}
		} else {
			k, _ = c.Prev()
		}
	default:
		end := prefixEnd(prefix)
		if end == nil {
			k, _ = c.Last()
		} else if k, _ = c.Seek(end); k == nil {
			k, _ = c.Last()
		} else {
			k, _ = c.Prev()
		}
	}
	for ; k != nil && bytes.HasPrefix(k, prefix); k = step(c, desc) {
		if !fn(k) {
			return nil
		}
	}
	return nil
}

func step(c *bolt.Cursor, desc bool) []byte {
	var k []byte
	if desc {
		k, _ = c.Prev()
	} else {
		k, _ = c.Next()
	}
	return k
}

// prefixEnd is the least key greater than every key with prefix p (nil if
// there is none: p is empty or all 0xff).
func prefixEnd(p []byte) []byte {
	end := bytes.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// total counts q's matches when one index range answers every filter.
func (db *DB) total(tx *bolt.Tx, q *Query) int {
	if q.Search != "" || q.Match != nil || q.State == StateActive {
		return -1
	}
	if q.Only != nil {
		if q.Host == "" && q.Prefix == "" && q.Mode == "" && (q.State == "" || q.State == StateActive) {
			return len(q.Only)
		}
		return -1
	}
	filters := 0
	for _, v := range []string{q.Host, q.Prefix, q.Mode, q.State} {
		if v != "" {
			filters++
		}
	}
	var prefix []byte
	bucket := bucketIxFilter
	switch {
	case filters == 0:
		return countTx(tx)
	case filters > 1:
		return -1
	case q.State != "":
		prefix = filterPrefix(ixState, q.State)
	case q.Host != "":
		prefix = filterPrefix(ixHost, q.Host)
	case q.Mode != "":
		if indexedMode(q.Mode) == "" {
			return -1 // not indexed (indexedMode)
		}
		prefix = filterPrefix(ixMode, q.Mode)
	case q.Prefix != "":
		bucket, prefix = bucketURLs, []byte(q.Prefix)
	}
	n := 0
	c := tx.Bucket(bucket).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		n++
	}
	return n
}
