package faults

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/freshcrawl/freshcrawl/internal/failpoint"
	"github.com/freshcrawl/freshcrawl/proto"
)

// A fault case injects one fault into a running crawl, undoes it, and
// reports when (restored) and how long the crawl took to recover from it;
// some cases inject several (each NATS node in turn).
type faultCase struct {
	name, what string
	run        func(ctx context.Context, e *env) ([]time.Duration, []string, error)
}

// Cases lists the fault cases by name, in the order they run.
func Cases() []string {
	var out []string
	for _, c := range cases {
		out = append(out, c.name)
	}
	return out
}

var cases = []faultCase{
	{"worker-mid-fetch", "SIGKILL of a worker holding tasks mid-fetch", caseWorkerMidFetch},
	{"all-workers", "SIGKILL of every worker at once", caseAllWorkers},
	{"coordinator-before-commit", "SIGKILL of the coordinator inside a fold's transaction, before the commit", caseCoordinator(failpoint.FoldBeforeCommit)},
	{"coordinator-after-commit", "SIGKILL of the coordinator between a fold's commit and its acks", caseCoordinator(failpoint.FoldAfterCommit)},
	{"stream-leader", "SIGKILL of the NATS node leading the task stream", caseStreamLeader},
	{"each-node", "SIGKILL of each NATS node in turn, each restarted before the next", caseEachNode},
	{"all-nodes", "SIGKILL of all three NATS nodes, then a restart", caseAllNodes},
	{"worker-cut-off", "a worker cut off from NATS for twice the ack wait", caseCutOff},
	{"disk-full", "the store's file system full, then space freed", caseDiskFull},
	{"rolling-restarts", "20 rolling restarts (SIGTERM) of every worker under load", caseRolling},
}

// recoverFrom waits until the crawl has recovered from a fault at t0 that
// ended at restored: every task outstanding at t0 has a result (seen on
// the wire, or the task has left the task stream, which a worker only
// lets it do once its result is stored), every result published before
// restored has been folded (it has left the results stream), and the
// coordinator answers, folds again (at least 10 results since restored)
// and reports no failing fold. It returns the time from restored.
func (e *env) recoverFrom(ctx context.Context, t0, restored time.Time, outstanding map[string]bool) (time.Duration, []string, error) {
	baseSet := false
	var base int64
	deadline := time.Now().Add(3 * time.Minute)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	pending := len(outstanding)
	for {
		now := time.Now()
		st, err := e.status()
		if err == nil && !baseSet && now.After(restored) {
			base, baseSet = e.folds(), true
		}
		if pending > 0 && e.watch.answered(outstanding) < len(outstanding) {
			// A probe of a stream with no leader yet gets no answer:
			// bounded, so that it does not add its timeout to the
			// measured recovery.
			pctx, cancel := context.WithTimeout(ctx, probeTimeout)
			q, qerr := e.queued(pctx)
			cancel()
			if qerr == nil {
				pending = 0
				for id := range outstanding {
					if q[id] && !e.watch.has(id) {
						pending++
					}
				}
			}
		} else {
			pending = 0
		}
		if err == nil && baseSet && pending == 0 && e.folds() >= base+10 && st.Store.FoldError == nil {
			pctx, cancel := context.WithTimeout(ctx, probeTimeout)
			old, perr := e.resultsFrom(pctx, restored)
			cancel()
			if perr == nil && old == 0 {
				return time.Since(restored), nil, nil
			}
		}
		if now.After(deadline) {
			return 0, nil, fmt.Errorf("not recovered within 3m of the fault (status err %v, %d of %d tasks outstanding at the fault still queued without a result, folds %d since restore)", err, pending, len(outstanding), e.folds()-base)
		}
		select {
		case <-ctx.Done():
			return 0, nil, ctx.Err()
		case <-tick.C:
		}
	}
}

// probeTimeout bounds one look at a stream while recovery is measured.
const probeTimeout = 2 * time.Second

// resultsFrom counts the results still in the results stream (not folded)
// that were published before t.
func (e *env) resultsFrom(ctx context.Context, t time.Time) (int, error) {
	c, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := e.js.Stream(c, proto.ResultStream)
	if err != nil {
		return 0, err
	}
	n := 0
	for seq := uint64(1); ; {
		m, err := st.GetMsg(c, seq, jetstream.WithGetMsgSubject(proto.ResultSubjectPrefix+">"))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return n, nil
		}
		if err != nil {
			return 0, err
		}
		if m.Time.Before(t) {
			n++
		}
		seq = m.Sequence + 1
	}
}

func caseWorkerMidFetch(ctx context.Context, e *env) ([]time.Duration, []string, error) {
	// A worker that is not the one behind the proxy, caught holding tasks.
	var w *workerProc
	deadline := time.Now().Add(30 * time.Second)
	for w == nil {
		for _, c := range e.workers {
			if !c.viaProxy && c.held() > 0 {
				w = c
				break
			}
		}
		if w == nil && time.Now().After(deadline) {
			return nil, nil, errors.New("no worker held a task within 30s")
		}
		if w == nil {
			time.Sleep(20 * time.Millisecond)
		}
	}
	t0 := time.Now()
	out := e.watch.outstanding(t0)
	w.p.kill()
	e.addWindow([]string{w.inst}, t0, time.Now())
	if err := e.startWorker(ctx, w.id, w.viaProxy); err != nil {
		return nil, nil, err
	}
	d, notes, err := e.recoverFrom(ctx, t0, time.Now(), out)
	return []time.Duration{d}, notes, err
}

func caseAllWorkers(ctx context.Context, e *env) ([]time.Duration, []string, error) {
	t0 := time.Now()
	out := e.watch.outstanding(t0)
	var insts []string
	for _, w := range e.workers {
		insts = append(insts, w.inst)
		go w.p.kill()
	}
	for _, w := range e.workers {
		<-w.p.done
	}
	e.addWindow(insts, t0, time.Now())
	for _, w := range e.workers {
		if err := e.startWorker(ctx, w.id, w.viaProxy); err != nil {
			return nil, nil, err
		}
	}
	d, notes, err := e.recoverFrom(ctx, t0, time.Now(), out)
	return []time.Duration{d}, notes, err
}

// caseCoordinator restarts the coordinator with a failpoint armed, kills
// it there, and restarts it plainly.
func caseCoordinator(point string) func(context.Context, *env) ([]time.Duration, []string, error) {
	return func(ctx context.Context, e *env) ([]time.Duration, []string, error) {
		if !e.o.Failpoints {
			return nil, []string{"skipped: the binary was built without failpoints (go build -tags failpoints)"}, errSkipped
		}
		if err := e.coord.stop(60 * time.Second); err != nil {
			return nil, nil, err
		}
		if err := e.startCoordinator(ctx, point); err != nil {
			return nil, nil, err
		}
		reached := e.coord.marker(failpoint.Marker + " " + point)
		select {
		case <-reached:
		case <-time.After(60 * time.Second):
			return nil, nil, fmt.Errorf("the coordinator did not reach %s within 60s (log %s)", point, e.coord.log)
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
		t0 := time.Now()
		out := e.watch.outstanding(t0)
		e.coord.kill()
		if err := e.startCoordinator(ctx, ""); err != nil {
			return nil, nil, err
		}
		d, notes, err := e.recoverFrom(ctx, t0, t0, out)
		return []time.Duration{d}, notes, err
	}
}

// streamLeader is the node leading the task stream.
func (e *env) streamLeader(ctx context.Context) (*natsNode, error) {
	c, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, err := e.js.Stream(c, proto.TaskStream)
	if err != nil {
		return nil, err
	}
	info, err := st.Info(c)
	if err != nil {
		return nil, err
	}
	if info.Cluster == nil {
		return nil, errors.New("the task stream has no cluster info")
	}
	for _, n := range e.nodes {
		if n.name == info.Cluster.Leader {
			return n, nil
		}
	}
	return nil, fmt.Errorf("task stream leader %q is not one of the nodes", info.Cluster.Leader)
}

// killNode kills n and measures the recovery of the crawl without it, then
// restarts it and waits until its replicas are current.
func (e *env) killNode(ctx context.Context, n *natsNode) (time.Duration, []string, error) {
	t0 := time.Now()
	out := e.watch.outstanding(t0)
	n.p.kill()
	d, notes, err := e.recoverFrom(ctx, t0, t0, out)
	if err != nil {
		return d, notes, err
	}
	if err := e.startNode(ctx, n, e.routes()); err != nil {
		return d, notes, err
	}
	if err := e.waitReplicasCurrent(ctx, 2*time.Minute); err != nil {
		notes = append(notes, err.Error())
	}
	e.addWindow(nil, t0, time.Now())
	return d, notes, nil
}

// waitReplicasCurrent waits until both streams have a leader and every
// replica is current.
func (e *env) waitReplicasCurrent(ctx context.Context, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		ok := true
		for _, name := range []string{proto.TaskStream, proto.ResultStream} {
			c, cancel := context.WithTimeout(ctx, 5*time.Second)
			st, err := e.js.Stream(c, name)
			if err == nil {
				var info, ierr = st.Info(c)
				if ierr != nil || info.Cluster == nil || info.Cluster.Leader == "" || len(info.Cluster.Replicas) != 2 {
					ok = false
				} else {
					for _, r := range info.Cluster.Replicas {
						if !r.Current || r.Offline {
							ok = false
						}
					}
				}
			} else {
				ok = false
			}
			cancel()
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("stream replicas not current within %s of the node's restart", within)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func caseStreamLeader(ctx context.Context, e *env) ([]time.Duration, []string, error) {
	n, err := e.streamLeader(ctx)
	if err != nil {
		return nil, nil, err
	}
	d, notes, err := e.killNode(ctx, n)
	return []time.Duration{d}, append(notes, "killed the leader "+n.name), err
}

func caseEachNode(ctx context.Context, e *env) ([]time.Duration, []string, error) {
	var ds []time.Duration
	var notes []string
	for _, n := range e.nodes {
		d, ns, err := e.killNode(ctx, n)
		ds = append(ds, d)
		notes = append(notes, ns...)
		if err != nil {
			return ds, notes, fmt.Errorf("node %s: %w", n.name, err)
		}
	}
	return ds, notes, nil
}

func caseAllNodes(ctx context.Context, e *env) ([]time.Duration, []string, error) {
	t0 := time.Now()
	out := e.watch.outstanding(t0)
	for _, n := range e.nodes {
		go n.p.kill()
	}
	for _, n := range e.nodes {
		<-n.p.done
	}
	// Down for a few seconds: every process loses NATS.
	select {
	case <-time.After(3 * time.Second):
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	routes := e.routes()
	errc := make(chan error, len(e.nodes))
	for _, n := range e.nodes {
		go func() { errc <- e.startNode(ctx, n, routes) }()
	}
	for range e.nodes {
		if err := <-errc; err != nil {
			return nil, nil, err
		}
	}
	restored := time.Now()
	d, notes, err := e.recoverFrom(ctx, t0, restored, out)
	e.addWindow(nil, t0, time.Now())
	return []time.Duration{d}, notes, err
}

func caseCutOff(ctx context.Context, e *env) ([]time.Duration, []string, error) {
	var w *workerProc
	for _, c := range e.workers {
		if c.viaProxy {
			w = c
		}
	}
	t0 := time.Now()
	out := e.watch.outstanding(t0)
	e.proxy.partition()
	select {
	case <-time.After(2*ackWait + time.Second):
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	e.proxy.heal()
	restored := time.Now()
	d, notes, err := e.recoverFrom(ctx, t0, restored, out)
	// Until it has reconnected and published what it buffered.
	e.addWindow([]string{w.inst}, t0, time.Now().Add(5*time.Second))
	return []time.Duration{d}, notes, err
}

// caseDiskFull fills the file system of the store (a tmpfs the suite
// mounted), waits for the coordinator to report the failing folds, then
// frees the space.
func caseDiskFull(ctx context.Context, e *env) ([]time.Duration, []string, error) {
	if !e.tmpfs {
		return nil, []string{"skipped: the store is not on a size-limited file system (mounting a tmpfs needs root)"}, errSkipped
	}
	filler := filepath.Join(e.data, "filler")
	f, err := os.Create(filler)
	if err != nil {
		return nil, nil, err
	}
	buf := make([]byte, 1<<20)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				f.Close()
				return nil, nil, err
			}
			break
		}
	}
	// The last bytes, to the last block.
	for n := len(buf) / 2; n >= 512; n /= 2 {
		_, _ = f.Write(buf[:n])
	}
	f.Close()
	t0 := time.Now()
	out := e.watch.outstanding(t0)
	var notes []string
	deadline := time.Now().Add(90 * time.Second)
	for {
		st, err := e.status()
		if err == nil && st.Store.FoldError != nil {
			notes = append(notes, "status: "+st.Store.FoldError.Err)
			break
		}
		if time.Now().After(deadline) {
			os.Remove(filler)
			return nil, notes, errors.New("no fold failed within 90s of the disk filling up")
		}
		select {
		case <-ctx.Done():
			os.Remove(filler)
			return nil, nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	// A while full: the folds keep failing, nothing is lost meanwhile.
	select {
	case <-time.After(5 * time.Second):
	case <-ctx.Done():
	}
	if b, err := os.ReadFile(e.coord.log); err == nil && !strings.Contains(string(b), "the disk of the store is full") {
		notes = append(notes, "the coordinator's log does not name the full disk")
	}
	if err := os.Remove(filler); err != nil {
		return nil, notes, err
	}
	restored := time.Now()
	d, ns, err := e.recoverFrom(ctx, t0, restored, out)
	return []time.Duration{d}, append(notes, ns...), err
}

// caseRolling stops (SIGTERM) and restarts every worker in turn, 20
// times, while the crawl runs; it checks that no task failed.
func caseRolling(ctx context.Context, e *env) ([]time.Duration, []string, error) {
	st0, err := e.status()
	if err != nil {
		return nil, nil, err
	}
	for round := 0; round < 20; round++ {
		for _, w := range e.workers {
			before := e.folds()
			from := time.Now()
			if err := w.p.stop(stopGrace + 10*time.Second); err != nil {
				return nil, nil, err
			}
			e.addWindow([]string{w.inst}, from, time.Now())
			if err := e.startWorker(ctx, w.id, w.viaProxy); err != nil {
				return nil, nil, err
			}
			// Under load: the crawl goes on between restarts.
			deadline := time.Now().Add(30 * time.Second)
			for e.folds() < before+3 && time.Now().Before(deadline) {
				if _, err := e.status(); err != nil {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
	}
	st, err := e.status()
	if err != nil {
		return nil, nil, err
	}
	notes := []string{fmt.Sprintf("%d results folded during the restarts", st.Fetches-st0.Fetches)}
	if st.Failed != st0.Failed {
		return nil, notes, fmt.Errorf("%d tasks failed during the rolling restarts", st.Failed-st0.Failed)
	}
	return nil, notes, nil
}

// errSkipped is a case that cannot run here.
var errSkipped = errors.New("skipped")
