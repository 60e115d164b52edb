package robots

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/freshcrawl/freshcrawl/internal/testutil"
)

// newTestKV starts an embedded nats-server with JetStream on loopback and
// returns a fresh key-value bucket on it.
func newTestKV(t *testing.T) jetstream.KeyValue {
	t.Helper()
	s := testutil.StartNATS(t)
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatalf("nats connect: %v", err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("jetstream: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "robots", TTL: 25 * time.Hour})
	if err != nil {
		t.Fatalf("create kv: %v", err)
	}
	return kv
}

func TestKVStore(t *testing.T) {
	kv := newTestKV(t)
	store := NewKVStore(kv)
	ctx := context.Background()

	if _, ok, err := store.Get(ctx, "https://nothing.example"); ok || err != nil {
		t.Fatalf("Get of missing key = %v, %v", ok, err)
	}
	body := bigRobots(maxBodySize, "disallow: /edge")[:maxBodySize]
	for _, host := range []string{"https://a.example", "http://[::1]:8080", "http://a.example:80"} {
		want := Entry{FetchedAt: time.Unix(1700000000, 42), Status: http.StatusOK, Body: body}
		if err := store.Put(ctx, host, want); err != nil {
			t.Fatalf("Put(%q): %v", host, err)
		}
		got, ok, err := store.Get(ctx, host)
		if err != nil || !ok {
			t.Fatalf("Get(%q) = %v, %v", host, ok, err)
		}
		if !got.FetchedAt.Equal(want.FetchedAt) || got.Status != want.Status || string(got.Body) != string(want.Body) {
			t.Errorf("Get(%q) returned a different entry", host)
		}
	}
	// Distinct origins must not collide.
	if err := store.Put(ctx, "http://a.example", Entry{Unreachable: true}); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := store.Get(ctx, "https://a.example"); got.Unreachable {
		t.Error("http and https origins share a key")
	}
}

// TestKVStoreSharedBetweenCheckers models two worker processes: separate
// Checkers (so separate in-memory caches and singleflight) sharing one KV
// bucket fetch robots.txt once between them.
func TestKVStoreSharedBetweenCheckers(t *testing.T) {
	kv := newTestKV(t)
	rs := newRobotsServer(t, http.StatusOK, "user-agent: freshcrawl\ndisallow: /private\ncrawl-delay: 3\n")
	clk := newClock()
	a := newTestChecker(rs, NewKVStore(kv), clk, DefaultOptions())
	b := newTestChecker(rs, NewKVStore(kv), clk, DefaultOptions())

	if d := mustCheck(t, a, rs.URL+"/private/1"); d.Allowed || !d.Fetched {
		t.Fatalf("worker a: %+v", d)
	}
	d := mustCheck(t, b, rs.URL+"/private/2")
	if d.Allowed || d.Fetched || d.CrawlDelay != 3*time.Second {
		t.Fatalf("worker b: %+v, want the shared entry", d)
	}
	if n := rs.hits.Load(); n != 1 {
		t.Fatalf("robots.txt fetched %d times, want 1", n)
	}

	// After the TTL, whichever worker checks first refetches, and the
	// other reuses its entry.
	clk.Advance(24*time.Hour + time.Second)
	if d := mustCheck(t, b, rs.URL+"/public"); !d.Allowed || !d.Fetched {
		t.Fatalf("worker b after TTL: %+v", d)
	}
	if d := mustCheck(t, a, rs.URL+"/public"); !d.Allowed || d.Fetched {
		t.Fatalf("worker a after TTL: %+v", d)
	}
	if n := rs.hits.Load(); n != 2 {
		t.Fatalf("robots.txt fetched %d times, want 2", n)
	}
}
