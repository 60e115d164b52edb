package coordinator

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/freshcrawl/freshcrawl/proto"
)

// reconcile takes the tasks waiting in the task stream into the in-flight
// table instead of throwing them away: they were dispatched by a previous
// run of this coordinator, or by the coordinator it took over from, and
// workers may be fetching them right now. Each URL keeps its task and is
// not dispatched again until the task's result is folded (or the task
// fails, or is given up as lost). A task whose URL the schedule does not
// know (removed since, or a one-off probe request of the previous run,
// whose planner state is gone) would be fetched for nothing: it is
// deleted, and said so.
//
// A task the consumer had delivered and not seen acknowledged may be with
// a live worker, or may have died with one (a crash of the whole
// process): it keeps its URL in flight, but not its host's slot, which
// would otherwise stall the host until the task's AckWait runs out
// (schedule.Scheduler.AdoptDelivered).
func (c *Coordinator) reconcile(ctx context.Context) error {
	st, err := c.js.Stream(ctx, proto.TaskStream)
	if err != nil {
		return fmt.Errorf("reconcile tasks: task stream: %w", err)
	}
	cons, err := c.js.Consumer(ctx, proto.TaskStream, proto.TaskConsumer)
	if err != nil {
		return fmt.Errorf("reconcile tasks: task consumer: %w", err)
	}
	ci, err := cons.Info(ctx)
	if err != nil {
		return fmt.Errorf("reconcile tasks: task consumer: %w", err)
	}
	var (
		tasks     []proto.Task
		delivered []bool
		seqs      = map[string][]uint64{} // task id → stream sequences
		bad       []uint64
	)
	for seq := uint64(1); ; {
		m, err := st.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(proto.TaskSubjectPrefix+">"))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		}
		if err != nil {
			return fmt.Errorf("reconcile tasks: read task stream at %d: %w", seq, err)
		}
		t, err := proto.DecodeTask(m.Data)
		if err != nil {
			bad = append(bad, m.Sequence)
		} else {
			tasks = append(tasks, t)
			// Acknowledged tasks leave a work queue, so one at or
			// before the consumer's last delivery is out, unacknowledged.
			delivered = append(delivered, m.Sequence <= ci.Delivered.Stream)
			seqs[t.ID] = append(seqs[t.ID], m.Sequence)
		}
		seq = m.Sequence + 1
	}
	unknown := c.disp.Adopt(tasks, delivered, time.Now())
	for _, t := range unknown {
		bad = append(bad, seqs[t.ID]...)
	}
	deleted := 0
	for _, seq := range bad {
		if err := st.DeleteMsg(ctx, seq); err == nil {
			deleted++
		} else if !errors.Is(err, jetstream.ErrMsgNotFound) {
			c.log.Warn("reconcile tasks: delete a task no URL of the store wants", "seq", seq, "err", err)
		}
	}
	out := 0
	for _, d := range delivered {
		if d {
			out++
		}
	}
	c.log.Info("tasks in the stream reconciled with the store", "found", len(tasks), "adopted", len(tasks)-len(unknown), "out_unacknowledged", out, "deleted", deleted)
	return nil
}

// foldLeftResults folds the results waiting in the results stream at
// start-up, reading them by sequence, and deletes each from the stream
// once its fold has committed (as an acknowledgement would). A previous
// coordinator killed between pulling a batch and acknowledging it leaves
// that batch pending on the consumer until its AckWait runs out; read
// directly, it is folded at once. Folding is idempotent, so a result whose
// fold had committed is only deleted.
func (c *Coordinator) foldLeftResults(ctx context.Context) error {
	st, err := c.js.Stream(ctx, proto.ResultStream)
	if err != nil {
		return fmt.Errorf("fold results left in the stream: %w", err)
	}
	var (
		batch []proto.Result
		seqs  []uint64
		total int
	)
	flush := func() error {
		if len(seqs) == 0 {
			return nil
		}
		if len(batch) > 0 {
			out, err := c.fold(ctx, batch)
			if err != nil {
				c.foldFailed(err)
				return err
			}
			c.afterFold(batch, out)
		}
		for _, seq := range seqs {
			if err := st.DeleteMsg(ctx, seq); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
				c.log.Warn("delete a folded result", "seq", seq, "err", err)
			}
		}
		total += len(batch)
		batch, seqs = batch[:0], seqs[:0]
		return nil
	}
	for seq := uint64(1); ; {
		m, err := st.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(proto.ResultSubjectPrefix+">"))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		}
		if err != nil {
			return fmt.Errorf("fold results left in the stream: read at %d: %w", seq, err)
		}
		if r, err := proto.DecodeResult(m.Data); err != nil {
			c.log.Error("bad result, dropping", "seq", m.Sequence, "err", err)
		} else if r.Kind.IsSignal() {
			c.onSignal(ctx, &r)
		} else {
			batch = append(batch, r)
		}
		seqs = append(seqs, m.Sequence)
		if len(seqs) >= foldBatch {
			if err := flush(); err != nil {
				return err
			}
		}
		seq = m.Sequence + 1
	}
	if err := flush(); err != nil {
		return err
	}
	if total > 0 {
		c.log.Info("results left in the stream folded", "n", total)
	}
	return nil
}
