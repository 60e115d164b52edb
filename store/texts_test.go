package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// textState is what the texts buckets hold: every text with its count.
func textState(t *testing.T, db *DB) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	if err := db.bolt.View(func(tx *bolt.Tx) error {
		refs := tx.Bucket(bucketTextRefs)
		return tx.Bucket(bucketTexts).ForEach(func(k, v []byte) error {
			n, _ := binary.Uvarint(refs.Get(k))
			out[string(v)] = n
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestTextsAreSharedAndCounted(t *testing.T) {
	db := open(t, t.TempDir())
	defer db.Close()
	urls := []string{"http://a.example/1", "http://a.example/2", "http://b.example/3"}
	var recs []URL
	for _, u := range urls {
		recs = append(recs, URL{URL: u, Host: hostPart(u), Weight: 1, Mode: "freshness"})
	}
	if _, err := db.Upsert(recs); err != nil {
		t.Fatal(err)
	}
	set := func(url, text string) {
		t.Helper()
		// As a fold does: read, store the text, then put the record read
		// before (which must keep the text's reference).
		if err := db.writeTx(func(tx *Tx) error {
			u, _, err := tx.Get(url)
			if err != nil {
				return err
			}
			if err := tx.SetContent(url, text); err != nil {
				return err
			}
			u.Fetches++
			return tx.Put(u)
		}); err != nil {
			t.Fatal(err)
		}
	}
	for _, u := range urls {
		set(u, "same page")
	}
	if got := textState(t, db); len(got) != 1 || got["same page"] != 3 {
		t.Fatalf("three URLs with one text: %v", got)
	}
	set(urls[0], "new text")
	if got := textState(t, db); got["same page"] != 2 || got["new text"] != 1 {
		t.Fatalf("after a change: %v", got)
	}
	for i, want := range []string{"new text", "same page", "same page"} {
		if got, err := db.Content(urls[i]); err != nil || got != want {
			t.Errorf("%s: %q %v, want %q", urls[i], got, err, want)
		}
	}
	// A deleted URL keeps its text; a purge releases it.
	if _, err := db.Delete([]string{urls[0]}, false, time.Now()); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.Content(urls[0]); got != "new text" {
		t.Errorf("deleted URL's text %q", got)
	}
	if _, err := db.Delete([]string{urls[0], urls[1]}, true, time.Now()); err != nil {
		t.Fatal(err)
	}
	if got := textState(t, db); len(got) != 1 || got["same page"] != 1 {
		t.Fatalf("after purging two URLs: %v", got)
	}
	// Re-adding a deleted URL drops the reference its kept record had.
	if _, err := db.Delete([]string{urls[2]}, false, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Upsert(recs[2:]); err != nil {
		t.Fatal(err)
	}
	if got := textState(t, db); len(got) != 0 {
		t.Fatalf("texts left with no URL naming them: %v", got)
	}
	r := Report{Records: map[string]int{}}
	db.checkInto(&r)
	if !r.OK() {
		t.Errorf("check: %v", r.Errors)
	}
	// A count that no longer adds up is reported.
	if err := db.bolt.Update(func(tx *bolt.Tx) error {
		_, err := holdText(tx, "orphan")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	r = Report{Records: map[string]int{}}
	db.checkInto(&r)
	if r.OK() {
		t.Error("check missed a text no record names")
	}
}

// TestOldStoreIsMigratedOnOpen: a store written by the previous binary
// (JSON records, URLs spelled out in ix_sort, texts under the URL) is
// re-indexed when opened: records become binary with ids, listings in
// every order work, and the old texts are still read.
func TestOldStoreIsMigratedOnOpen(t *testing.T) {
	dir := t.TempDir()
	db := open(t, dir)
	var want []string
	if err := db.bolt.Update(func(tx *bolt.Tx) error {
		for i := range 30 {
			u := fetchedURL(i)
			raw, _ := json.Marshal(u)
			if err := tx.Bucket(bucketURLs).Put([]byte(u.URL), raw); err != nil {
				return err
			}
			if err := tx.Bucket(bucketContent).Put([]byte(u.URL), []byte(fmt.Sprint("text ", i))); err != nil {
				return err
			}
			// An index key of the old layout: value then URL.
			k := append([]byte{'c'}, binary.BigEndian.AppendUint64(nil, uint64(u.Changes))...)
			if err := tx.Bucket(bucketIxSort).Put(append(k, u.URL...), nil); err != nil {
				return err
			}
			want = append(want, u.URL)
		}
		return tx.Bucket(bucketMeta).Put(metaIndexed, u64(1))
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db = open(t, dir)
	defer db.Close()
	var got []string
	if err := db.bolt.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketURLs).ForEach(func(k, v []byte) error {
			if v[0] != recordV1 || metaOf(v).id == 0 {
				t.Errorf("%s not migrated: %q", k, v[:1])
			}
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
	p, err := db.ListURLs(Query{Sort: SortChanges, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range p.URLs {
		got = append(got, u.URL)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) || p.Total != len(want) {
		t.Errorf("listing after migration: %d URLs (total %d), want %d", len(got), p.Total, len(want))
	}
	if text, _ := db.Content(fetchedURL(4).URL); text != "text 4" {
		t.Errorf("old text %q", text)
	}
	u, err := db.Get(fetchedURL(4).URL)
	if err != nil || u.ETag != fetchedURL(4).ETag {
		t.Errorf("migrated record %+v %v", u, err)
	}
}

// TestIndexV2StoreIsMigratedOnOpen: a store of index version 2 (records
// in binary with their estimator state unpacked, filter keys spelling out
// the URL, sort keys and url_ids keys of 8-byte numbers) is re-indexed
// when opened: every filter and sort listing answers from the new keys,
// the records read as they were written, no old key is left, and Check
// finds nothing wrong.
func TestIndexV2StoreIsMigratedOnOpen(t *testing.T) {
	dir := t.TempDir()
	db := open(t, dir)
	var recs []URL
	if err := db.bolt.Update(func(tx *bolt.Tx) error {
		for i := range 40 {
			u := fetchedURL(i)
			u.Estimate = make([]byte, 126) // mostly zeros, as the estimator's
			u.Estimate[0], u.Estimate[9] = 2, byte(i+1)
			if i%4 == 0 {
				u.Mode = "capture"
			}
			if i%5 == 0 {
				u.Paused = true
			}
			id := uint64(100 + i)
			if err := tx.Bucket(bucketURLs).Put([]byte(u.URL), appendURLPacked(nil, &u, recMeta{id: id}, false)); err != nil {
				return err
			}
			if err := tx.Bucket(bucketURLIDs).Put(u64(id), []byte(u.URL)); err != nil {
				return err
			}
			for _, k := range [][]byte{
				append([]byte("h"+u.Host+"\x00"), u.URL...),
				append([]byte("m"+u.Mode+"\x00"), u.URL...),
				binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64([]byte{'c'}, uint64(u.Changes)), id),
			} {
				b := bucketIxFilter
				if k[0] == 'c' {
					b = bucketIxSort
				}
				if err := tx.Bucket(b).Put(k, nil); err != nil {
					return err
				}
			}
			recs = append(recs, u)
		}
		return tx.Bucket(bucketMeta).Put(metaIndexed, u64(2))
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db = open(t, dir)
	defer db.Close()
	count := func(q Query, want func(URL) bool) {
		t.Helper()
		p, err := db.ListURLs(q)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, u := range recs {
			if want(u) {
				n++
			}
		}
		if len(p.URLs) != n {
			t.Errorf("%+v: %d URLs, want %d", q, len(p.URLs), n)
		}
		for _, u := range p.URLs {
			if !want(u) {
				t.Errorf("%+v listed %s", q, u.URL)
			}
		}
	}
	count(Query{Host: recs[3].Host, Limit: MaxLimit}, func(u URL) bool { return u.Host == recs[3].Host })
	count(Query{Mode: "capture", Limit: MaxLimit}, func(u URL) bool { return u.Mode == "capture" })
	count(Query{Mode: "freshness", Limit: MaxLimit}, func(u URL) bool { return u.Mode == "freshness" })
	count(Query{State: StatePaused, Limit: MaxLimit}, func(u URL) bool { return u.Paused })
	count(Query{Sort: SortChanges, Limit: MaxLimit}, func(URL) bool { return true })
	count(Query{Sort: SortHost, Mode: "capture", Limit: MaxLimit}, func(u URL) bool { return u.Mode == "capture" })
	for _, w := range recs {
		u, err := db.Get(w.URL)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(u.Estimate, w.Estimate) || u.Mode != w.Mode || u.Paused != w.Paused || u.ETag != w.ETag {
			t.Fatalf("migrated %s: %+v", w.URL, u)
		}
	}
	if err := db.bolt.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketIxFilter).ForEach(func(k, _ []byte) error {
			if bytes.Contains(k, []byte("https://")) || bytes.HasPrefix(k, []byte("mfreshness")) {
				t.Errorf("old filter key %q left", k)
			}
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
	r := Report{Records: map[string]int{}}
	db.checkInto(&r)
	if !r.OK() {
		t.Errorf("check after migration: %v", r.Errors)
	}
}
