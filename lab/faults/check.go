package faults

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/freshcrawl/freshcrawl/internal/seed"
	"github.com/freshcrawl/freshcrawl/proto"
	"github.com/freshcrawl/freshcrawl/store"
)

// tally is what one check of the invariant found, cumulative since the
// suite started.
type tally struct {
	// Dispatched is the tasks seen published (less those whose publish
	// the coordinator logged as failed).
	Dispatched int
	// Folded and Failed are the tasks the store holds a fold mark of,
	// with and without a fetch; Queued is the tasks still in the stream.
	Folded, Failed, Queued int
	// Lost is the tasks dispatched and neither folded, recorded failed,
	// nor queued.
	Lost []string
	// Served is the page requests the sim served, Stored the fetches the
	// store counts.
	Served, Stored int
	// Unfolded is the requests served whose result was never folded, all
	// made by a process a fault hit within its window: the price of the
	// faults, each a refetch. Unexplained is the rest of what was served
	// and not folded: results lost.
	Unfolded, Unexplained int
	// Duplicated is the folds beyond the requests served: a result folded
	// twice.
	Duplicated int
	// Problems are the invariant's failures, in words.
	Problems []string
}

// uaInst reads the worker start out of a request's User-Agent.
var uaInst = regexp.MustCompile(`\+inst=([^)\s]+)`)

// check stops the crawl cleanly (workers, then the coordinator once every
// result is folded), checks the invariant against the sim's request log
// and the store, and starts the crawl again.
func (e *env) check(ctx context.Context) (tally, error) {
	var t tally
	// Workers stop cleanly: what they hold is finished or handed back.
	for _, w := range e.workers {
		from := time.Now()
		if err := w.p.stop(stopGrace + 10*time.Second); err != nil {
			t.Problems = append(t.Problems, fmt.Sprintf("worker %s: %v", w.inst, err))
		}
		e.addWindow([]string{w.inst}, from, time.Now())
	}
	// Every result folded.
	if err := e.waitResultsFolded(ctx, 90*time.Second); err != nil {
		t.Problems = append(t.Problems, err.Error())
	}
	if err := e.coord.stop(60 * time.Second); err != nil {
		t.Problems = append(t.Problems, "coordinator: "+err.Error())
	}
	if err := e.count(ctx, &t); err != nil {
		return t, err
	}
	// And on again.
	if err := e.startCoordinator(ctx, ""); err != nil {
		return t, err
	}
	for _, w := range e.workers {
		if err := e.startWorker(ctx, w.id, w.viaProxy); err != nil {
			return t, err
		}
	}
	return t, nil
}

// waitResultsFolded waits until the results stream is empty.
func (e *env) waitResultsFolded(ctx context.Context, within time.Duration) error {
	deadline := time.Now().Add(within)
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		n, err := e.streamMsgs(ctx, proto.ResultStream)
		if err == nil && n == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d results still unfolded after %s (err %v)", n, within, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

func (e *env) streamMsgs(ctx context.Context, name string) (uint64, error) {
	c, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := e.js.Stream(c, name)
	if err != nil {
		return 0, err
	}
	info, err := st.Info(c)
	if err != nil {
		return 0, err
	}
	return info.State.Msgs, nil
}

// queued returns the task ids in the task stream.
func (e *env) queued(ctx context.Context) (map[string]bool, error) {
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	st, err := e.js.Stream(c, proto.TaskStream)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for seq := uint64(1); ; {
		m, err := st.GetMsg(c, seq, jetstream.WithGetMsgSubject(proto.TaskSubjectPrefix+">"))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if task, err := proto.DecodeTask(m.Data); err == nil {
			out[task.ID] = true
		}
		seq = m.Sequence + 1
	}
}

// tally compares what was dispatched, served, folded and queued.
func (e *env) count(ctx context.Context, t *tally) error {
	queued, err := e.queued(ctx)
	if err != nil {
		return fmt.Errorf("read the task stream: %w", err)
	}
	if n, err := e.streamMsgs(ctx, proto.ResultStream); err != nil || n != 0 {
		t.Problems = append(t.Problems, fmt.Sprintf("%d results left unfolded in the stream (%v)", n, err))
	}
	path := filepath.Join(e.data, store.FileName)
	rep, err := store.Check(path)
	if err != nil {
		t.Problems = append(t.Problems, fmt.Sprintf("store check: %v", err))
		if rep == nil || !errors.Is(err, store.ErrCorrupt) {
			return err
		}
	}
	db, err := store.Open(path, store.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	defer db.Close()
	marks := map[string]bool{}
	if err := db.FoldMarks(func(id string, _ time.Time) error { marks[id] = true; return nil }); err != nil {
		return err
	}
	stored := map[string]int{}
	var failedMarks int64
	if err := db.ForEach(func(u store.URL) error {
		stored[u.URL] = int(u.Fetches)
		failedMarks += u.Failed
		return nil
	}); err != nil {
		return err
	}
	pubFailed, err := publishFailed(e.coord.log)
	if err != nil {
		return err
	}
	t.Queued = len(queued)
	t.Folded = len(marks) - int(failedMarks)
	t.Failed = int(failedMarks)
	for id := range e.watch.allTasks() {
		if pubFailed[id] && !marks[id] && !queued[id] {
			continue // never stored: the coordinator knew and released it
		}
		t.Dispatched++
		if !marks[id] && !queued[id] {
			t.Lost = append(t.Lost, id)
		}
	}
	sort.Strings(t.Lost)
	if len(t.Lost) > 0 {
		t.Problems = append(t.Problems, fmt.Sprintf("%d tasks dispatched and neither folded, failed nor queued: %s", len(t.Lost), strings.Join(first(t.Lost, 5), ", ")))
	}

	// Requests served against fetches folded, per URL.
	urls := e.sim.URLs()
	norm := make([]string, len(urls))
	for i, u := range urls {
		n, _, err := seed.Normalize(u)
		if err != nil {
			return err
		}
		norm[i] = n
	}
	served := map[string]int{}
	allowed := map[string]int{}
	for _, r := range e.sim.Requests() {
		if r.Page < 0 || r.Method != "GET" {
			continue // robots.txt and anything else that is not a page
		}
		u := norm[r.Page]
		served[u]++
		inst := ""
		if m := uaInst.FindStringSubmatch(r.UserAgent); m != nil {
			inst = m[1]
		}
		for _, w := range e.windows {
			if (w.insts == nil || w.insts[inst]) && !r.Time.Before(w.from) && !r.Time.After(w.to) {
				allowed[u]++
				break
			}
		}
	}
	for _, u := range norm {
		s, f := served[u], stored[u]
		t.Served += s
		t.Stored += f
		switch d := s - f; {
		case d < 0:
			t.Duplicated += -d
		case d > allowed[u]:
			t.Unfolded += allowed[u]
			t.Unexplained += d - allowed[u]
		default:
			t.Unfolded += d
		}
	}
	if t.Duplicated > 0 {
		t.Problems = append(t.Problems, fmt.Sprintf("%d fetches folded beyond the requests served (a fold applied twice)", t.Duplicated))
	}
	if t.Unexplained > 0 {
		t.Problems = append(t.Problems, fmt.Sprintf("%d requests served whose result was never folded, outside any fault's window (results lost)", t.Unexplained))
	}
	return nil
}

// coverage checks that every URL was requested after since: none dropped
// off the schedule. It waits up to within for the crawl to come round.
func (e *env) coverage(ctx context.Context, since time.Time, within time.Duration) []string {
	deadline := time.Now().Add(within)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		seen := map[int]bool{}
		for _, r := range e.sim.Requests() {
			if r.Page >= 0 && r.Time.After(since) {
				seen[r.Page] = true
			}
		}
		var missing []string
		for i, u := range e.sim.URLs() {
			if !seen[i] {
				missing = append(missing, u)
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			return missing
		}
		select {
		case <-ctx.Done():
			return missing
		case <-tick.C:
		}
	}
}

func first(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], fmt.Sprintf("… %d more", len(s)-n))
	}
	return s
}
