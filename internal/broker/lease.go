package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/freshcrawl/freshcrawl/internal/logx"
	"github.com/freshcrawl/freshcrawl/internal/optcheck"
)

// The coordinator lease: one key in a JetStream key-value bucket, written
// only with compare-and-set on its revision, so that of two coordinators
// that both read revision r and write, exactly one succeeds.
//
// The holder rewrites the key every TTL/4. A contender takes the key over
// only after it has watched the same revision for a whole TTL, measured on
// its own clock, while the holder steps down (stops dispatching and
// folding) as soon as TTL/2 has passed without a successful renewal, also
// on its own clock. The two never overlap, whatever the clocks read, as
// long as they run at about the same rate. The key is not given a TTL of
// its own: its last value stays, so a newcomer can tell which store the
// crawl was last written to (docs/design.md §2.6).
const (
	// leaseBucket is the key-value bucket of coordinator leases.
	leaseBucket = "freshcrawl_leader"
	leaseKey    = "coordinator"
)

// LeaseInfo is the lease key's value.
type LeaseInfo struct {
	// Holder names the coordinator process (host-pid).
	Holder string `json:"holder"`
	// API is the holder's HTTP API, for commands that find the store held.
	API string `json:"api,omitempty"`
	// StoreID is the holder's store; Fence the revision at which it took
	// the lease, recorded in that store (store.DB.TakeFence).
	StoreID string `json:"store_id,omitempty"`
	Fence   uint64 `json:"fence,omitempty"`
	// Acquired and Renewed are the holder's clock, for people: the lease
	// logic never compares clocks of two processes.
	Acquired time.Time `json:"acquired"`
	Renewed  time.Time `json:"renewed"`
	// Released is set by a holder that stopped cleanly: the lease is free
	// at once.
	Released bool `json:"released,omitempty"`
}

// ErrLeaseHeld is matched by the error of a coordinator that finds another
// one holding the lease and was told not to wait.
var ErrLeaseHeld = errors.New("another coordinator holds the lease")

// ErrLeaseTakenOver is matched by Lease.Err when another coordinator took
// the lease: the store must be let go for it (same volume).
var ErrLeaseTakenOver = errors.New("the coordinator lease was taken over")

// leaseHeldError says who holds the lease.
type leaseHeldError struct{ Info LeaseInfo }

func (e *leaseHeldError) Error() string {
	api := ""
	if e.Info.API != "" {
		api = ", API " + e.Info.API
	}
	return fmt.Sprintf("another coordinator (%s%s, renewed %s) holds the coordinator lease on this NATS: run one coordinator per crawl, or start this one with --standby to take over when that one stops", e.Info.Holder, api, e.Info.Renewed.Format(time.RFC3339))
}

func (e *leaseHeldError) Is(target error) bool { return target == ErrLeaseHeld }

// LeaseKV opens (creating if needed) the lease bucket.
func LeaseKV(ctx context.Context, js jetstream.JetStream, replicas int) (jetstream.KeyValue, error) {
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      leaseBucket,
		Description: "the coordinator lease: one active coordinator per crawl",
		History:     1,
		Replicas:    max(replicas, 1),
		Storage:     jetstream.FileStorage,
	})
	if err != nil {
		return nil, fmt.Errorf("lease bucket: %w", err)
	}
	return kv, nil
}

// LeaseOptions configure Acquire. Start from DefaultLeaseOptions.
type LeaseOptions struct {
	// TTL is how long a holder that stopped renewing keeps the lease.
	TTL time.Duration
	// Standby: wait for the lease to expire rather than fail with
	// ErrLeaseHeld.
	Standby bool
	// Mine reports whether a lease found held is in fact free for us:
	// the coordinator says yes when the holder's store is the one it has
	// just opened and holds the file lock of (the holder then cannot be
	// running), so a restart does not wait out a TTL.
	Mine func(LeaseInfo) bool
	// Waiting is called once when Acquire starts waiting as a standby.
	Waiting func(holder LeaseInfo)
	// Log receives structured logs (nil: slog.Default()).
	Log *slog.Logger
}

// DefaultLeaseOptions hold the lease a silent holder keeps for 15 s; the
// config takes its lease-ttl default from here.
func DefaultLeaseOptions() LeaseOptions {
	return LeaseOptions{TTL: 15 * time.Second}
}

// Validate reports every field Acquire would refuse, each by its name.
func (o LeaseOptions) Validate() error {
	var errs optcheck.Errors
	// At least 3 s, so that a renewal every quarter of it is not a flood.
	if o.TTL < 3*time.Second {
		errs.Check("TTL", fmt.Errorf("must be ≥ 3s, got %s", o.TTL))
	}
	return errs.Err()
}

// Lease is a held coordinator lease.
type Lease struct {
	kv   jetstream.KeyValue
	ttl  time.Duration
	log  *slog.Logger
	prev *LeaseInfo // the value before we took it (nil: none)

	mu      sync.Mutex
	info    LeaseInfo
	rev     uint64
	renewed time.Time // our clock, last successful write
	lost    chan struct{}
	lostErr error
}

// Acquire takes the lease with info as its value, waiting (Standby) for
// the current holder to release it or go silent for a TTL. On success the
// caller must call Run to keep it, and Release when it stops. Options
// Validate refuses are a permanent error (Fatal).
func Acquire(ctx context.Context, kv jetstream.KeyValue, info LeaseInfo, o LeaseOptions) (*Lease, error) {
	if err := o.Validate(); err != nil {
		return nil, Fatal(fmt.Errorf("lease options: %w", err))
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	var (
		watchRev  uint64    // the revision we are watching go stale
		watchFrom time.Time // when we first saw it (our clock)
		waiting   bool
	)
	poll := o.TTL / 4
	for {
		now := time.Now()
		info.Acquired, info.Renewed = now, now
		e, err := kv.Get(ctx, leaseKey)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			rev, err := kv.Create(ctx, leaseKey, encodeLease(info))
			if err == nil {
				return newLease(kv, o, info, rev, nil), nil
			}
			if !errors.Is(err, jetstream.ErrKeyExists) {
				return nil, fmt.Errorf("take the coordinator lease: %w", err)
			}
			continue // someone else created it: look again
		case err != nil:
			return nil, fmt.Errorf("read the coordinator lease: %w", err)
		}
		var cur LeaseInfo
		if err := json.Unmarshal(e.Value(), &cur); err != nil {
			cur = LeaseInfo{Holder: "unreadable lease value", Released: true}
		}
		if e.Revision() != watchRev {
			watchRev, watchFrom = e.Revision(), now
		}
		free := cur.Released || (o.Mine != nil && o.Mine(cur)) || now.Sub(watchFrom) >= o.TTL
		if free {
			rev, err := kv.Update(ctx, leaseKey, encodeLease(info), e.Revision())
			if err == nil {
				c := cur
				return newLease(kv, o, info, rev, &c), nil
			}
			// Renewed or taken meanwhile: look again.
			o.Log.Debug("coordinator lease: compare-and-set lost", "err", err)
			watchRev = 0
			continue
		}
		if !o.Standby {
			return nil, &leaseHeldError{Info: cur}
		}
		if !waiting {
			waiting = true
			if o.Waiting != nil {
				o.Waiting(cur)
			}
			o.Log.Info("another coordinator holds the lease: waiting as a hot standby", "holder", cur.Holder, "api", cur.API, "ttl", o.TTL)
		}
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("waiting for the coordinator lease held by %s: %w", cur.Holder, ctx.Err())
		case <-t.C:
		}
	}
}

func newLease(kv jetstream.KeyValue, o LeaseOptions, info LeaseInfo, rev uint64, prev *LeaseInfo) *Lease {
	info.Fence = rev
	return &Lease{kv: kv, ttl: o.TTL, log: o.Log, prev: prev, info: info, rev: rev, renewed: time.Now(), lost: make(chan struct{})}
}

func encodeLease(info LeaseInfo) []byte {
	b, _ := json.Marshal(info)
	return b
}

// Fence is the revision of the write that took the lease: higher than
// that of every earlier holder's, it is what the store records as the
// fence of the coordinator writing it (store.DB.TakeFence).
func (l *Lease) Fence() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.info.Fence
}

// Previous is the lease's value before we took it (nil: first holder).
func (l *Lease) Previous() *LeaseInfo { return l.prev }

// Info is the lease's current value.
func (l *Lease) Info() LeaseInfo {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.info
}

// Update rewrites the lease's value (after the store is open: its id and
// fence) at the next renewal, and now.
func (l *Lease) Update(ctx context.Context, fn func(*LeaseInfo)) error {
	l.mu.Lock()
	fn(&l.info)
	l.mu.Unlock()
	return l.renew(ctx)
}

// Lost is closed when the lease is lost: the holder must stop.
func (l *Lease) Lost() <-chan struct{} { return l.lost }

// Err says why the lease was lost.
func (l *Lease) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lostErr
}

func (l *Lease) lose(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lostErr == nil {
		l.lostErr = err
		close(l.lost)
	}
}

// renew writes the lease's value at the revision we hold.
func (l *Lease) renew(ctx context.Context) error {
	l.mu.Lock()
	info, rev := l.info, l.rev
	l.mu.Unlock()
	info.Renewed = time.Now()
	nrev, err := l.kv.Update(ctx, leaseKey, encodeLease(info), rev)
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) {
			// The revision moved: another coordinator took the lease.
			cur := "unknown"
			if e, gerr := l.kv.Get(ctx, leaseKey); gerr == nil {
				var li LeaseInfo
				if json.Unmarshal(e.Value(), &li) == nil {
					cur = li.Holder
				}
			}
			err = fmt.Errorf("%w by %s", ErrLeaseTakenOver, cur)
			l.lose(err)
		}
		return err
	}
	l.mu.Lock()
	l.rev, l.renewed, l.info.Renewed = nrev, time.Now(), info.Renewed
	l.mu.Unlock()
	return nil
}

// Run renews the lease every TTL/4 until ctx ends or the lease is lost:
// taken over by another coordinator, or not renewed for TTL/2 (the
// holder must stop before a standby may take over, at TTL).
func (l *Lease) Run(ctx context.Context) {
	t := time.NewTicker(l.ttl / 8)
	defer t.Stop()
	// A renewal fails at every tick while NATS is away, until the lease
	// is lost: logged once, and again if the error changes.
	var renewing logx.Condition[string]
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.lost:
			return
		case <-t.C:
		}
		if l.silent() >= l.ttl/4 {
			rctx, cancel := context.WithTimeout(ctx, l.ttl/8)
			err := l.renew(rctx)
			cancel()
			if err == nil {
				renewing.End(ctx, l.log, "the coordinator lease is renewed again")
				continue
			}
			select {
			case <-l.lost:
				return
			default:
			}
			if ctx.Err() == nil {
				renewing.Hold(ctx, l.log, slog.LevelWarn, err.Error(), "renew the coordinator lease", "err", err)
			}
		}
		if s := l.silent(); s >= l.ttl/2 {
			l.lose(fmt.Errorf("the coordinator lease could not be renewed for %s (NATS unreachable?): stepping down before a standby may take over", s.Round(time.Millisecond)))
			return
		}
	}
}

// silent is the time since the last successful renewal.
func (l *Lease) silent() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return time.Since(l.renewed)
}

// Refuse releases a lease whose holder will not take the crawl over (its
// store is not the crawl's), putting back the previous holder's identity:
// the store id and fence the crawl was last written under, so that the
// next contender is checked against the crawl's store, not the refused
// one.
func (l *Lease) Refuse(ctx context.Context) error {
	if p := l.prev; p != nil {
		l.mu.Lock()
		l.info.Holder, l.info.API, l.info.StoreID, l.info.Fence = p.Holder, p.API, p.StoreID, p.Fence
		l.mu.Unlock()
	}
	return l.Release(ctx)
}

// Release marks the lease free, so that a standby takes over at once. The
// store id and fence stay in the value.
func (l *Lease) Release(ctx context.Context) error {
	select {
	case <-l.lost:
		return nil
	default:
	}
	l.mu.Lock()
	l.info.Released = true
	l.mu.Unlock()
	err := l.renew(ctx)
	l.lose(errors.New("released"))
	return err
}
