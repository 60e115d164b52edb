package store

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Line is one line of an export: a URL's record (seed fields, estimate,
// schedule, counters) with its latest copy (extracted text, and the raw
// body when kept).
type Line struct {
	URL
	Content string `json:"content,omitempty"`
	Raw     *Raw   `json:"raw,omitempty"`
}

// exportChunk is how many URLs one read transaction of an export covers:
// lines carry whole pages, so fewer than a scan.
const exportChunk = 500

// Export writes every live URL as a JSON line, in URL order. It reads in
// short transactions, so a coordinator keeps folding meanwhile; a URL
// added during the export may or may not be in it.
func (db *DB) Export(w io.Writer) (int, error) {
	bw := bufio.NewWriterSize(w, 256*1024)
	enc := json.NewEncoder(bw)
	var after []byte
	n := 0
	for {
		var lines []Line
		err := db.view(func(tx *bolt.Tx) error {
			c := tx.Bucket(bucketURLs).Cursor()
			k, v := c.First()
			if after != nil {
				k, v = c.Seek(after)
				if k != nil && bytes.Equal(k, after) {
					k, v = c.Next()
				}
			}
			for ; k != nil && len(lines) < exportChunk; k, v = c.Next() {
				var l Line
				if err := decodeURL(k, v, &l.URL); err != nil {
					return fmt.Errorf("decode url %q: %w", k, err)
				}
				l.Content = string(textOf(tx, k, v))
				if raw := get(tx, bucketRaw, k); raw != nil {
					r, err := openRawEnvelope(raw, true)
					if err != nil {
						return fmt.Errorf("raw copy of %s: %w", k, err)
					}
					l.Raw = &r
				}
				lines = append(lines, l)
				after = append(after[:0], k...)
			}
			return nil
		})
		if err != nil {
			return n, fmt.Errorf("export: %w", err)
		}
		for i := range lines {
			if err := enc.Encode(&lines[i]); err != nil {
				return n, fmt.Errorf("export: write: %w", err)
			}
			n++
		}
		if len(lines) < exportChunk {
			break
		}
	}
	if err := bw.Flush(); err != nil {
		return n, fmt.Errorf("export: write: %w", err)
	}
	return n, nil
}

// ImportSummary is what one import did.
type ImportSummary struct {
	Good  int `json:"good"`
	Added int `json:"added"`
	// Kept counts good lines whose URL was already stored: the store
	// keeps what it has.
	Kept   int      `json:"kept"`
	Bad    int      `json:"bad"`
	Errors []string `json:"errors,omitempty"` // the first maxImportErrors bad lines
}

// maxImportErrors bounds the bad lines an ImportSummary lists.
const maxImportErrors = 1000

// maxImportLine is the longest line Import reads: a line carries a page's
// text and raw body.
const maxImportLine = 64 << 20

const importBatch = 256

// Import reads JSON lines written by Export. A URL not stored yet is added
// with everything the line holds; a URL already stored keeps its record and
// copy untouched (counted as kept), so an import never loses what is
// stored. check validates (and may normalise) a decoded line; a line that
// does not decode or fails check is reported as FILE:LINE: problem to bad
// and skipped. onBatch sees the records added by each committed batch.
func (db *DB) Import(r io.Reader, file string, check func(*Line) error, bad func(string), onBatch func([]URL)) (ImportSummary, error) {
	var sum ImportSummary
	report := func(line int, err error) {
		msg := fmt.Sprintf("%s:%d: %v", file, line, err)
		sum.Bad++
		if len(sum.Errors) < maxImportErrors {
			sum.Errors = append(sum.Errors, msg)
		}
		if bad != nil {
			bad(msg)
		}
	}
	var batch []Line
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		var added []URL
		err := db.update(func(tx *bolt.Tx) error {
			added = added[:0]
			b := tx.Bucket(bucketURLs)
			for i := range batch {
				l := &batch[i]
				key := []byte(l.URL.URL)
				if b.Get(key) != nil {
					continue
				}
				l.URL.DeletedAt = time.Time{}
				if err := putURL(tx, nil, l.URL, true); err != nil {
					return err
				}
				if err := dropDeleted(tx, key); err != nil {
					return err
				}
				if l.Content != "" {
					if err := setText(tx, bucketURLs, key, l.Content); err != nil {
						return err
					}
				}
				if l.Raw != nil {
					env, err := rawEnvelope(*l.Raw)
					if err != nil {
						return err
					}
					if err := tx.Bucket(bucketRaw).Put(key, env); err != nil {
						return err
					}
				}
				added = append(added, l.URL)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("import %s: %w", file, err)
		}
		sum.Added += len(added)
		sum.Kept += len(batch) - len(added)
		if onBatch != nil && len(added) > 0 {
			onBatch(added)
		}
		batch = batch[:0]
		return nil
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), maxImportLine)
	line := 0
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 || text[0] == '#' {
			continue
		}
		var l Line
		dec := json.NewDecoder(bytes.NewReader(text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l); err != nil {
			report(line, fmt.Errorf("bad JSON: %w", err))
			continue
		}
		if dec.More() {
			report(line, errors.New("bad JSON: trailing data after the object"))
			continue
		}
		if check != nil {
			if err := check(&l); err != nil {
				report(line, err)
				continue
			}
		}
		sum.Good++
		batch = append(batch, l)
		if len(batch) == importBatch {
			if err := flush(); err != nil {
				return sum, err
			}
		}
	}
	if err := sc.Err(); err != nil {
		// What was read before the failure is still stored.
		if ferr := flush(); ferr != nil {
			return sum, ferr
		}
		if errors.Is(err, bufio.ErrTooLong) {
			return sum, fmt.Errorf("%s:%d: line longer than %d bytes", file, line+1, maxImportLine)
		}
		return sum, fmt.Errorf("read %s: %w", file, err)
	}
	return sum, flush()
}
