package store

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The change log's readers keep their place in the meta bucket, and the
// webhook deliveries they route wait in a queue per endpoint; those that
// ran out of attempts wait in the dead-letter list for an operator.
var (
	bucketHookQueue = []byte("hook_queue") // endpoint key(8) seq(8) → Delivery (JSON)
	bucketHookDead  = []byte("hook_dead")  // endpoint key(8) seq(8) → Delivery (JSON)
)

func cursorKey(name string) []byte { return []byte("cursor:" + name) }

// InitCursor sets the change-log cursor name to the newest change if it
// has none yet, so that a reader added to an existing store starts with
// the changes after it, not with the whole history. It returns the cursor.
func (db *DB) InitCursor(name string) (uint64, error) {
	var cur uint64
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if v := meta.Get(cursorKey(name)); len(v) == 8 {
			cur = binary.BigEndian.Uint64(v)
			return nil
		}
		cur = tx.Bucket(bucketChanges).Sequence()
		return meta.Put(cursorKey(name), u64(cur))
	})
	if err != nil {
		return 0, fmt.Errorf("change-log cursor %s: %w", name, err)
	}
	return cur, nil
}

// SetCursor records that the reader name has handled every change up to
// seq.
func (db *DB) SetCursor(name string, seq uint64) error {
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put(cursorKey(name), u64(seq))
	})
	if err != nil {
		return fmt.Errorf("change-log cursor %s: %w", name, err)
	}
	return nil
}

// Delivery is one change event on its way to one webhook endpoint.
type Delivery struct {
	// Endpoint is the webhook's URL.
	Endpoint string `json:"endpoint"`
	// Seq is the change's sequence number in the change log; a queue is
	// delivered in Seq order.
	Seq     uint64 `json:"seq"`
	EventID string `json:"event_id"`
	// Body is the request body, exactly as every attempt sends it.
	Body     json.RawMessage `json:"body"`
	Attempts int             `json:"attempts,omitempty"`
	LastErr  string          `json:"last_err,omitempty"`
	LastAt   time.Time       `json:"last_at,omitzero"`
	// DeadAt is when it went to the dead-letter list.
	DeadAt time.Time `json:"dead_at,omitzero"`
}

// ID names a delivery in the dead-letter list: its endpoint key and seq.
func (d Delivery) ID() string {
	return hex.EncodeToString(deliveryKey(d.Endpoint, d.Seq))
}

// endpointKey is the 8-byte prefix of an endpoint's queue.
func endpointKey(endpoint string) []byte {
	h := sha256.Sum256([]byte(endpoint))
	return h[:8]
}

func deliveryKey(endpoint string, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(endpointKey(endpoint), seq)
}

// RouteChanges hands every change after the cursor name (at most limit of
// them) with the record of its URL (nil if the URL is gone) to route, queues
// the deliveries it returns and moves the cursor past them, all in one
// transaction: a change is routed exactly once, and what was queued
// survives a crash. It returns the queued deliveries' endpoints and
// whether changes remain after limit.
func (db *DB) RouteChanges(name string, limit int, route func(Change, *URL) ([]Delivery, error)) (endpoints []string, more bool, err error) {
	seen := map[string]bool{}
	err = db.bolt.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		var cur uint64
		if v := meta.Get(cursorKey(name)); len(v) == 8 {
			cur = binary.BigEndian.Uint64(v)
		}
		urls, queue := tx.Bucket(bucketURLs), tx.Bucket(bucketHookQueue)
		c := tx.Bucket(bucketChanges).Cursor()
		n := 0
		for k, v := c.Seek(u64(cur + 1)); k != nil; k, v = c.Next() {
			if n == limit {
				more = true
				break
			}
			n++
			var ch Change
			if err := json.Unmarshal(v, &ch); err != nil {
				return fmt.Errorf("decode change %x: %w", k, err)
			}
			var rec *URL
			var u URL
			if found, err := getJSON(urls, []byte(ch.URL), &u); err == nil && found {
				rec = &u
			}
			ds, err := route(ch, rec)
			if err != nil {
				return err
			}
			for _, d := range ds {
				d.Seq = ch.Seq
				if err := putJSON(queue, deliveryKey(d.Endpoint, d.Seq), d); err != nil {
					return err
				}
				if !seen[d.Endpoint] {
					seen[d.Endpoint] = true
					endpoints = append(endpoints, d.Endpoint)
				}
			}
			cur = ch.Seq
		}
		return meta.Put(cursorKey(name), u64(cur))
	})
	if err != nil {
		return nil, false, fmt.Errorf("route changes to webhooks: %w", err)
	}
	return endpoints, more, nil
}

// NextDelivery is the oldest delivery queued for endpoint.
func (db *DB) NextDelivery(endpoint string) (Delivery, bool, error) {
	var d Delivery
	found := false
	err := db.bolt.View(func(tx *bolt.Tx) error {
		p := endpointKey(endpoint)
		k, v := tx.Bucket(bucketHookQueue).Cursor().Seek(p)
		if k == nil || !hasPrefix(k, p) {
			return nil
		}
		found = true
		return json.Unmarshal(v, &d)
	})
	if err != nil {
		return d, false, fmt.Errorf("next webhook delivery: %w", err)
	}
	return d, found, nil
}

// Delivered takes a delivered event off its endpoint's queue.
func (db *DB) Delivered(d Delivery) error {
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketHookQueue).Delete(deliveryKey(d.Endpoint, d.Seq))
	})
	if err != nil {
		return fmt.Errorf("webhook delivered: %w", err)
	}
	return nil
}

// DeliveryFailed records a failed attempt of d: the delivery stays at the
// head of its queue with its attempts, or, dead, moves to the dead-letter
// list.
func (db *DB) DeliveryFailed(d Delivery, dead bool) error {
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		k := deliveryKey(d.Endpoint, d.Seq)
		if !dead {
			return putJSON(tx.Bucket(bucketHookQueue), k, d)
		}
		if err := tx.Bucket(bucketHookQueue).Delete(k); err != nil {
			return err
		}
		return putJSON(tx.Bucket(bucketHookDead), k, d)
	})
	if err != nil {
		return fmt.Errorf("webhook delivery failed: %w", err)
	}
	return nil
}

// QueuedEndpoints lists the endpoints with deliveries waiting, and how
// many each has.
func (db *DB) QueuedEndpoints() (map[string]int, error) {
	out := map[string]int{}
	err := db.bolt.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketHookQueue).Cursor()
		for k, v := c.First(); k != nil; {
			var d Delivery
			if err := json.Unmarshal(v, &d); err != nil {
				return fmt.Errorf("decode delivery %x: %w", k, err)
			}
			p := k[:8:8]
			n := 0
			for ; k != nil && hasPrefix(k, p); k, v = c.Next() {
				n++
			}
			out[d.Endpoint] = n
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("webhook queues: %w", err)
	}
	return out, nil
}

// DeadLetters returns up to limit deliveries of the dead-letter list,
// oldest change first within each endpoint, and how many it holds.
func (db *DB) DeadLetters(limit int) ([]Delivery, int, error) {
	var out []Delivery
	total := 0
	err := db.bolt.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketHookDead)
		total = b.Stats().KeyN
		c := b.Cursor()
		for k, v := c.First(); k != nil && len(out) < limit; k, v = c.Next() {
			var d Delivery
			if err := json.Unmarshal(v, &d); err != nil {
				return fmt.Errorf("decode dead letter %x: %w", k, err)
			}
			out = append(out, d)
		}
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("dead letters: %w", err)
	}
	return out, total, nil
}

// ErrBadID is returned for a dead-letter id that is not one.
var ErrBadID = errors.New("bad dead-letter id")

// RetryDead moves dead letters back to the heads of their queues (by seq,
// they go before anything queued later) with their attempts reset, and
// returns the endpoints affected and how many were found. No ids means all.
func (db *DB) RetryDead(ids []string) ([]string, int, error) {
	return db.takeDead(ids, true)
}

// DropDead deletes dead letters; no ids means all.
func (db *DB) DropDead(ids []string) (int, error) {
	_, n, err := db.takeDead(ids, false)
	return n, err
}

func (db *DB) takeDead(ids []string, requeue bool) ([]string, int, error) {
	keys := make([][]byte, 0, len(ids))
	for _, id := range ids {
		k, err := hex.DecodeString(strings.TrimSpace(id))
		if err != nil || len(k) != 16 {
			return nil, 0, fmt.Errorf("%w %q: want the 32 hex digits GET /api/webhooks lists", ErrBadID, id)
		}
		keys = append(keys, k)
	}
	var endpoints []string
	seen := map[string]bool{}
	n := 0
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		dead, queue := tx.Bucket(bucketHookDead), tx.Bucket(bucketHookQueue)
		if len(ids) == 0 {
			c := dead.Cursor()
			for k, _ := c.First(); k != nil; k, _ = c.Next() {
				keys = append(keys, append([]byte(nil), k...))
			}
		}
		for _, k := range keys {
			v := dead.Get(k)
			if v == nil {
				continue
			}
			var d Delivery
			if err := json.Unmarshal(v, &d); err != nil {
				return fmt.Errorf("decode dead letter %x: %w", k, err)
			}
			if requeue {
				d.Attempts, d.DeadAt = 0, time.Time{}
				if err := putJSON(queue, k, d); err != nil {
					return err
				}
				if !seen[d.Endpoint] {
					seen[d.Endpoint] = true
					endpoints = append(endpoints, d.Endpoint)
				}
			}
			if err := dead.Delete(k); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("dead letters: %w", err)
	}
	return endpoints, n, nil
}
