package coordinator

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/freshcrawl/freshcrawl/store"
)

// ItemsSummary is what one items file did.
type ItemsSummary struct {
	Good    int      `json:"good"`
	Added   int      `json:"added"`
	Updated int      `json:"updated"`
	Bad     int      `json:"bad"`
	Errors  []string `json:"errors,omitempty"`
}

// IngestItems reads tracked items of source from r: one JSON object a line
// with an "id" and the item's attributes (strings, numbers, booleans, or
// lists joined with ", " such as authors). Bad lines are reported with
// file and line and skipped; blank lines and # comments are skipped.
func IngestItems(db *store.DB, r io.Reader, file, source string) (ItemsSummary, error) {
	var sum ItemsSummary
	if source == "" {
		return sum, errors.New("items need a source name")
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	var batch []store.Item
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		added, err := db.UpsertItems(batch)
		if err != nil {
			return err
		}
		sum.Added += added
		sum.Updated += len(batch) - added
		batch = batch[:0]
		return nil
	}
	now := time.Now()
	line := 0
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 || text[0] == '#' {
			continue
		}
		it, err := parseItem(text)
		if err != nil {
			sum.Bad++
			if len(sum.Errors) < maxSeedErrors {
				sum.Errors = append(sum.Errors, fmt.Sprintf("%s:%d: %v", file, line, err))
			}
			continue
		}
		it.Source, it.LastSync = source, now
		batch = append(batch, it)
		sum.Good++
		if len(batch) == seedBatch {
			if err := flush(); err != nil {
				return sum, err
			}
		}
	}
	if err := sc.Err(); err != nil {
		_ = flush()
		return sum, fmt.Errorf("read %s: %w", file, err)
	}
	return sum, flush()
}

func parseItem(text []byte) (store.Item, error) {
	var raw map[string]any
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return store.Item{}, fmt.Errorf("bad JSON: %w", err)
	}
	id, ok := raw["id"]
	if !ok {
		return store.Item{}, errors.New(`field "id": missing`)
	}
	it := store.Item{Attrs: map[string]string{}}
	it.ID = scalar(id)
	if it.ID == "" {
		return store.Item{}, errors.New(`field "id": empty`)
	}
	for k, v := range raw {
		if k == "id" {
			continue
		}
		switch x := v.(type) {
		case []any:
			parts := make([]string, len(x))
			for i, p := range x {
				parts[i] = scalar(p)
			}
			it.Attrs[k] = strings.Join(parts, ", ")
		case map[string]any:
			return store.Item{}, fmt.Errorf("field %q: objects are not supported; use a string, number or list", k)
		default:
			it.Attrs[k] = scalar(x)
		}
	}
	return it, nil
}

func scalar(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case json.Number:
		return x.String()
	case bool:
		return strconv.FormatBool(x)
	default:
		return fmt.Sprint(x)
	}
}
