package robots

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Entry is the cached outcome of one robots.txt fetch. Entries are shared
// between workers, so they hold the raw response rather than parsed rules:
// each process parses with its own product token.
type Entry struct {
	FetchedAt   time.Time
	Status      int    // HTTP status; 0 when Unreachable
	Body        []byte // only kept for 2xx, at most maxBodySize octets
	Unreachable bool   // the fetch failed (network error, timeout, ...)
}

// Store caches robots.txt entries by origin key ("scheme://host[:port]", as
// built by Checker). Implementations must be safe for concurrent use.
// Get reports ok=false, with a nil error, when there is no entry.
type Store interface {
	Get(ctx context.Context, host string) (Entry, bool, error)
	Put(ctx context.Context, host string, e Entry) error
}

// NewMemoryStore returns a Store held in this process's memory, for tests
// and single-process deployments. It never evicts; the Checker decides
// freshness from Entry.FetchedAt.
func NewMemoryStore() Store {
	return &memoryStore{m: make(map[string]Entry)}
}

type memoryStore struct {
	mu sync.Mutex
	m  map[string]Entry
}

func (s *memoryStore) Get(_ context.Context, host string) (Entry, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[host]
	return e, ok, nil
}

func (s *memoryStore) Put(_ context.Context, host string, e Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e.Body = append([]byte(nil), e.Body...)
	s.m[host] = e
	return nil
}

// NewKVStore returns a Store backed by a JetStream key-value bucket shared by
// all workers, so that a robots.txt fetched by one worker is reused by the
// others. Keys are the hex encoding of the origin, since KV keys may only
// contain [-/_=.a-zA-Z0-9]. The bucket's own TTL, if any, should be at least
// the Checker's TTL; the Checker checks freshness itself either way. Values
// are at most maxBodySize plus a small header, below NATS's default 1 MiB
// max payload.
func NewKVStore(kv jetstream.KeyValue) Store {
	return &kvStore{kv: kv}
}

type kvStore struct {
	kv jetstream.KeyValue
}

func kvKey(host string) string {
	return "o" + hex.EncodeToString([]byte(host))
}

func (s *kvStore) Get(ctx context.Context, host string) (Entry, bool, error) {
	kve, err := s.kv.Get(ctx, kvKey(host))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Entry{}, false, nil
	}
	if err != nil {
		return Entry{}, false, fmt.Errorf("robots: kv get %s: %w", host, err)
	}
	e, err := decodeEntry(kve.Value())
	if err != nil {
		return Entry{}, false, fmt.Errorf("robots: kv get %s: %w", host, err)
	}
	return e, true, nil
}

func (s *kvStore) Put(ctx context.Context, host string, e Entry) error {
	if _, err := s.kv.Put(ctx, kvKey(host), encodeEntry(e)); err != nil {
		return fmt.Errorf("robots: kv put %s: %w", host, err)
	}
	return nil
}

// Entry wire format, version 1: version byte, flags byte (bit 0 Unreachable),
// FetchedAt as Unix nanoseconds (int64, big endian), status (uint16), body.
// Binary rather than JSON keeps a 512 KiB body from growing by a third.
const (
	entryVersion   = 1
	entryHeaderLen = 1 + 1 + 8 + 2
)

func encodeEntry(e Entry) []byte {
	b := make([]byte, entryHeaderLen, entryHeaderLen+len(e.Body))
	b[0] = entryVersion
	if e.Unreachable {
		b[1] = 1
	}
	binary.BigEndian.PutUint64(b[2:], uint64(e.FetchedAt.UnixNano()))
	binary.BigEndian.PutUint16(b[10:], uint16(e.Status))
	return append(b, e.Body...)
}

func decodeEntry(b []byte) (Entry, error) {
	if len(b) < entryHeaderLen {
		return Entry{}, fmt.Errorf("entry too short (%d bytes)", len(b))
	}
	if b[0] != entryVersion {
		return Entry{}, fmt.Errorf("unknown entry version %d", b[0])
	}
	return Entry{
		Unreachable: b[1]&1 != 0,
		FetchedAt:   time.Unix(0, int64(binary.BigEndian.Uint64(b[2:]))),
		Status:      int(binary.BigEndian.Uint16(b[10:])),
		Body:        append([]byte(nil), b[entryHeaderLen:]...),
	}, nil
}
