package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/freshcrawl/freshcrawl/proto"
	"github.com/freshcrawl/freshcrawl/store"
)

// publishCursor is the Publisher's place in the change log.
const publishCursor = "publish"

// publishBatch is how many changes are published before the cursor is
// saved: a crash republishes at most this many, which the stream's
// de-duplication window drops.
const publishBatch = 256

// Publisher publishes the change log to NATS. Wake it after a fold that
// logged changes; it also looks every second.
type Publisher struct {
	db   *store.DB
	cur  uint64 // the cursor when constructed
	js   jetstream.JetStream
	log  *slog.Logger
	wake chan struct{}
}

// NewPublisher returns a publisher of db's change log on js.
func NewPublisher(db *store.DB, js jetstream.JetStream, log *slog.Logger) (*Publisher, error) {
	if db == nil {
		return nil, errNoStore
	}
	if log == nil {
		log = slog.Default()
	}
	// The cursor is set here, before the caller folds anything: a change
	// logged between construction and Run is published, not skipped.
	cur, err := db.InitCursor(publishCursor)
	if err != nil {
		return nil, err
	}
	return &Publisher{db: db, cur: cur, js: js, log: log, wake: make(chan struct{}, 1)}, nil
}

// Wake tells the publisher the change log grew.
func (p *Publisher) Wake() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Run publishes until ctx is done: every change of the log after the
// cursor, which NewPublisher set to the newest change if the store never
// had a publisher (an existing history is not replayed as new).
func (p *Publisher) Run(ctx context.Context) error {
	cur := p.cur
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	failing := false
	for {
		next, n, err := p.publish(ctx, cur)
		switch {
		case err != nil && ctx.Err() != nil:
			return nil
		case err != nil:
			// Log the first failure of a run of them, not every retry.
			if !failing {
				p.log.Warn("publishing change events failed; retrying every second", "err", err)
			}
			failing = true
		default:
			if failing {
				p.log.Info("publishing change events again")
			}
			failing = false
			cur = next
			if n == publishBatch {
				continue // more are waiting
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-p.wake:
		case <-tick.C:
		}
	}
}

// publish publishes the changes after cur, up to a batch, and saves the
// cursor. It returns the new cursor and how many it published.
func (p *Publisher) publish(ctx context.Context, cur uint64) (uint64, int, error) {
	chs, err := p.db.Changes(cur, publishBatch)
	if err != nil || len(chs) == 0 {
		return cur, 0, err
	}
	futures := make([]jetstream.PubAckFuture, 0, len(chs))
	for _, ch := range chs {
		b, ev, err := encodeEvent(ch)
		if err != nil {
			return cur, 0, err
		}
		f, err := p.js.PublishAsync(proto.ChangeSubject(ev.Host), b, jetstream.WithMsgID(ev.ID))
		if err != nil {
			return cur, 0, fmt.Errorf("publish change %d: %w", ch.Seq, err)
		}
		futures = append(futures, f)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for i, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return cur, 0, fmt.Errorf("publish change %d: %w", chs[i].Seq, err)
		case <-wctx.Done():
			return cur, 0, errors.Join(errors.New("publish change events: no acknowledgement within 10s"), ctx.Err())
		}
	}
	last := chs[len(chs)-1].Seq
	if err := p.db.SetCursor(publishCursor, last); err != nil {
		return cur, 0, err
	}
	return last, len(chs), nil
}
