package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/freshcrawl/freshcrawl/internal/testutil"
)

func leaseKV(t *testing.T, js jetstream.JetStream) jetstream.KeyValue {
	t.Helper()
	kv, err := LeaseKV(ctx(t), js, 1)
	if err != nil {
		t.Fatal(err)
	}
	return kv
}

// One coordinator holds the lease; a second one told not to wait is
// refused with a message naming the holder; a standby takes over once the
// holder goes silent for a TTL, and the old holder sees its lease lost.
func TestLeaseOneHolderAndStandbyTakeover(t *testing.T) {
	_, js := start(t)
	kv := leaseKV(t, js)
	ttl := 3 * time.Second
	a, err := Acquire(ctx(t), kv, LeaseInfo{Holder: "a", API: "http://a:8080"}, LeaseOptions{TTL: ttl, Log: testutil.QuietLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	actx, stopA := context.WithCancel(context.Background())
	go a.Run(actx)

	_, err = Acquire(ctx(t), kv, LeaseInfo{Holder: "b"}, LeaseOptions{TTL: ttl, Log: testutil.QuietLogger(t)})
	var held *leaseHeldError
	if !errors.As(err, &held) || !errors.Is(err, ErrLeaseHeld) || held.Info.Holder != "a" || !strings.Contains(err.Error(), "http://a:8080") {
		t.Fatalf("second coordinator without standby: %v, want ErrLeaseHeld naming a and its API", err)
	}

	// b waits as a standby while a renews.
	type result struct {
		l   *Lease
		err error
	}
	got := make(chan result, 1)
	waiting := make(chan LeaseInfo, 1)
	go func() {
		l, err := Acquire(ctx(t), kv, LeaseInfo{Holder: "b"}, LeaseOptions{TTL: ttl, Standby: true, Log: testutil.QuietLogger(t), Waiting: func(h LeaseInfo) { waiting <- h }})
		got <- result{l, err}
	}()
	select {
	case h := <-waiting:
		if h.Holder != "a" {
			t.Errorf("standby waits on %q, want a", h.Holder)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("standby never reported waiting")
	}
	// While a renews, b must not take over: a's lease stays valid for two
	// TTLs.
	testutil.WaitFor(t, 20*time.Second, "a to renew across two TTLs", func() bool { return time.Since(a.Info().Acquired) > 2*ttl })
	select {
	case r := <-got:
		t.Fatalf("standby took the lease while the holder renewed: %+v", r)
	default:
	}
	if a.Err() != nil {
		t.Fatalf("holder lost its lease while renewing: %v", a.Err())
	}
	// a goes silent (crashed): b takes over after a TTL.
	stopA()
	silentAt := time.Now()
	var r result
	select {
	case r = <-got:
	case <-time.After(20 * time.Second):
		t.Fatal("standby did not take over")
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	if waited := time.Since(silentAt); waited < ttl/2 {
		t.Errorf("standby took over %s after the holder went silent, before half a TTL", waited)
	}
	if r.l.Fence() <= a.Fence() {
		t.Errorf("fence %d after takeover, want more than the previous holder's %d", r.l.Fence(), a.Fence())
	}
	if p := r.l.Previous(); p == nil || p.Holder != "a" {
		t.Errorf("previous holder %+v, want a", p)
	}
	// a, had it survived, finds its lease taken on its next renewal.
	if err := a.renew(ctx(t)); err == nil {
		t.Error("old holder renewed a lease that was taken over")
	}
	select {
	case <-a.Lost():
	default:
		t.Error("old holder's Lost not closed")
	}
}

// A released lease is free at once, and a restart that proves the lease is
// its own (Mine) does not wait a TTL.
func TestLeaseReleaseAndMine(t *testing.T) {
	_, js := start(t)
	kv := leaseKV(t, js)
	ttl := time.Minute // a test that waited out the TTL would time out
	a, err := Acquire(ctx(t), kv, LeaseInfo{Holder: "a", StoreID: "s1"}, LeaseOptions{TTL: ttl, Log: testutil.QuietLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx(t)); err != nil {
		t.Fatal(err)
	}
	b, err := Acquire(ctx(t), kv, LeaseInfo{Holder: "b", StoreID: "s1"}, LeaseOptions{TTL: ttl, Log: testutil.QuietLogger(t)})
	if err != nil {
		t.Fatalf("lease released by a: %v", err)
	}
	// b crashes without releasing; its restart c holds store s1.
	mine := func(li LeaseInfo) bool { return li.StoreID == "s1" }
	c, err := Acquire(ctx(t), kv, LeaseInfo{Holder: "c", StoreID: "s1"}, LeaseOptions{TTL: ttl, Mine: mine, Log: testutil.QuietLogger(t)})
	if err != nil {
		t.Fatalf("restart on the holder's own store: %v", err)
	}
	if c.Fence() <= b.Fence() || b.Fence() <= a.Fence() {
		t.Errorf("fences %d, %d, %d: want increasing", a.Fence(), b.Fence(), c.Fence())
	}
	// Another store is not c's: refused.
	_, err = Acquire(ctx(t), kv, LeaseInfo{Holder: "d", StoreID: "s2"}, LeaseOptions{TTL: ttl, Mine: func(li LeaseInfo) bool { return li.StoreID == "s2" }, Log: testutil.QuietLogger(t)})
	if !errors.Is(err, ErrLeaseHeld) {
		t.Errorf("coordinator with another store: %v, want ErrLeaseHeld", err)
	}
}

// A contender that takes a released lease and refuses the crawl (its store
// is not the crawl's) gives the lease back with the crawl's identity: the
// next contender is checked against the store the crawl was last written
// to, not the refused one.
func TestLeaseRefuseKeepsTheCrawlsStore(t *testing.T) {
	_, js := start(t)
	kv := leaseKV(t, js)
	ttl := time.Minute
	a, err := Acquire(ctx(t), kv, LeaseInfo{Holder: "a", StoreID: "s1"}, LeaseOptions{TTL: ttl, Log: testutil.QuietLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx(t)); err != nil {
		t.Fatal(err)
	}
	b, err := Acquire(ctx(t), kv, LeaseInfo{Holder: "b", StoreID: "s2"}, LeaseOptions{TTL: ttl, Log: testutil.QuietLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if p := b.Previous(); p == nil || p.StoreID != "s1" {
		t.Fatalf("b sees the previous holder %+v, want store s1", p)
	}
	if err := b.Refuse(ctx(t)); err != nil {
		t.Fatal(err)
	}
	c, err := Acquire(ctx(t), kv, LeaseInfo{Holder: "c", StoreID: "s1"}, LeaseOptions{TTL: ttl, Log: testutil.QuietLogger(t)})
	if err != nil {
		t.Fatalf("the lease refused by b: %v", err)
	}
	if p := c.Previous(); p == nil || p.StoreID != "s1" || p.Fence != a.Fence() {
		t.Errorf("after b refused, c sees %+v; want a's store s1 and fence %d", p, a.Fence())
	}
}

// A holder that cannot reach NATS steps down after half a TTL.
func TestLeaseHolderStepsDownWithoutNATS(t *testing.T) {
	srv := testutil.StartNATS(t)
	nc, js, err := Connect(srv.ClientURL(), "test", testutil.QuietLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	kv := leaseKV(t, js)
	ttl := 3 * time.Second
	l, err := Acquire(ctx(t), kv, LeaseInfo{Holder: "a"}, LeaseOptions{TTL: ttl, Log: testutil.QuietLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	go l.Run(ctx(t))
	srv.Shutdown()
	srv.WaitForShutdown()
	select {
	case <-l.Lost():
	case <-time.After(20 * time.Second):
		t.Fatal("holder kept its lease with NATS gone")
	}
	if !strings.Contains(l.Err().Error(), "stepping down") {
		t.Errorf("reason %q", l.Err())
	}
}

// A process started before its NATS server connects once the server comes
// up, and its state says so meanwhile.
func TestDialBeforeServerStarts(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	l, err := Dial("nats://"+addr, "test", testutil.QuietLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer l.NC.Close()
	if s := l.State(); s.Connected() || s.State != "connecting" {
		t.Fatalf("state %+v before the server exists, want connecting", s)
	}
	srv, err := StartEmbedded(EmbeddedOptions{Dir: filepath.Join(t.TempDir(), "nats"), Listen: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		srv.Shutdown()
		srv.WaitForShutdown()
	}()
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := l.WaitConnected(c); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 5*time.Second, "state connected", func() bool { return l.State().Connected() })
	// JetStream set-up retried through Retry works once connected.
	if err := Retry(c, testutil.QuietLogger(t), "ensure streams", func(ctx context.Context) error { return Ensure(ctx, l.JS, DefaultSettings()) }); err != nil {
		t.Fatal(err)
	}
	// The server goes away and comes back: the link reconnects.
	srv.Shutdown()
	srv.WaitForShutdown()
	testutil.WaitFor(t, 10*time.Second, "state reconnecting", func() bool { return l.State().State == "reconnecting" })
	srv2, err := StartEmbedded(EmbeddedOptions{Dir: filepath.Join(t.TempDir(), "nats2"), Listen: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		srv2.Shutdown()
		srv2.WaitForShutdown()
	}()
	testutil.WaitFor(t, 20*time.Second, "reconnected", func() bool { return l.State().Connected() && l.State().Reconnects >= 1 })
}

// A busy listen address fails at once with a message that says so.
func TestStartEmbeddedBusyPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	start := time.Now()
	_, err = StartEmbedded(EmbeddedOptions{Dir: filepath.Join(t.TempDir(), "nats"), Listen: ln.Addr().String()})
	if !errors.Is(err, ErrAddrInUse) || !strings.Contains(err.Error(), ln.Addr().String()) || !strings.Contains(err.Error(), "--nats-listen") {
		t.Fatalf("busy port: %v, want ErrAddrInUse naming the address and --nats-listen", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s to fail", d)
	}
}

// Retry gives up at once on an error no retry can fix.
func TestRetryStopsOnPermanentError(t *testing.T) {
	calls := 0
	err := Retry(ctx(t), testutil.QuietLogger(t), "x", func(context.Context) error {
		calls++
		return fmt.Errorf("wrapped: %w", &jetstream.APIError{ErrorCode: 10074, Description: "replicas > 1 not supported in non-clustered mode"})
	})
	if err == nil || calls != 1 {
		t.Errorf("%d calls, err %v; want one call and the error", calls, err)
	}
	calls = 0
	err = Retry(ctx(t), testutil.QuietLogger(t), "x", func(context.Context) error {
		calls++
		if calls < 3 {
			return errors.New("no suitable peers for placement")
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Errorf("%d calls, err %v; want success on the third", calls, err)
	}
}
