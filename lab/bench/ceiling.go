package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/freshcrawl/freshcrawl/config"
	"github.com/freshcrawl/freshcrawl/internal/broker"
	"github.com/freshcrawl/freshcrawl/internal/node"
	"github.com/freshcrawl/freshcrawl/proto"
)

// CeilingOptions configure the coordinator-ceiling measurements.
type CeilingOptions struct {
	// Warmup runs before measuring; Duration is the measurement window.
	Warmup, Duration time.Duration
	// Hosts × PagesPerHost synthetic URLs are seeded for the pipeline
	// ceiling. No one fetches them: the no-op responder answers for them.
	Hosts, PagesPerHost int
	// MaxInFlight bounds tasks dispatched and not yet folded.
	MaxInFlight int
	// Responders are the no-op responder's concurrent task handlers.
	Responders int
	// Responder, if set, is the command of a child process running
	// RespondNoop (its NATS URL is appended as the last argument), so its
	// CPU is not charged to the coordinator. Empty: it runs in this
	// process.
	Responder []string
	// TempDir holds the data directories (default os.TempDir()).
	TempDir string
	// CPUProfile, if set, receives a CPU profile of the pipeline
	// measurement window (the coordinator and the embedded NATS server).
	CPUProfile io.Writer
	// AllocProfile, if set, receives the allocation profile (pprof
	// "allocs", since the process started) after the pipeline window.
	AllocProfile io.Writer
	Log          *slog.Logger
	Progress     func(format string, args ...any)
}

func (o CeilingOptions) withDefaults() CeilingOptions {
	if o.Warmup < 0 {
		o.Warmup = 0
	}
	if o.Duration <= 0 {
		o.Duration = 15 * time.Second
	}
	if o.Hosts <= 0 {
		o.Hosts = 2000
	}
	if o.PagesPerHost <= 0 {
		o.PagesPerHost = 5
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = 4096
	}
	if o.Responders <= 0 {
		o.Responders = 64
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Progress == nil {
		o.Progress = func(string, ...any) {}
	}
	return o
}

// QueueCeiling is the embedded JetStream work queue's own rate: tasks
// published, consumed and acknowledged per second on the real task stream
// and consumer, with nothing else running.
type QueueCeiling struct {
	Messages     int64   `json:"messages"`
	Seconds      float64 `json:"seconds"`
	PerSecond    float64 `json:"per_s"`
	CPUCores     float64 `json:"cpu_cores"` // this process (server, publisher, consumer): CPU seconds per second
	PayloadBytes int     `json:"payload_bytes"`
}

// PipelineCeiling is the coordinator's rate when fetches cost nothing:
// tasks dispatched and results folded per second, with a responder that
// answers every task at once.
type PipelineCeiling struct {
	URLs      int     `json:"urls"`
	Hosts     int     `json:"hosts"`
	Folded    int64   `json:"folded"` // in the window
	Seconds   float64 `json:"seconds"`
	PerSecond float64 `json:"per_s"`
	// CoordinatorCores is the CPU this process (coordinator and embedded
	// NATS) used per second; ResponderCores the responder's, when it runs
	// in its own process.
	CoordinatorCores float64 `json:"coordinator_cores"`
	ResponderCores   float64 `json:"responder_cores,omitempty"`
	// CoordinatorCPUPer1000 and ResponderCPUPer1000 are CPU-seconds per
	// 1 000 results folded: the cost of a result, steadier than the rate
	// on a shared machine.
	CoordinatorCPUPer1000 float64 `json:"coordinator_cpu_s_per_1000"`
	ResponderCPUPer1000   float64 `json:"responder_cpu_s_per_1000,omitempty"`
	// AllocsPerResult and AllocBytesPerResult are the heap allocations of
	// this process (coordinator and embedded NATS) per result folded in
	// the window: what the garbage collector has to clear after each.
	AllocsPerResult     float64 `json:"allocs_per_result"`
	AllocBytesPerResult float64 `json:"alloc_bytes_per_result"`
	// Persisted checks every folded result is in the store.
	Persisted Persistence `json:"persisted"`
}

// CeilingResult is both measurements.
type CeilingResult struct {
	Machine  Machine         `json:"machine"`
	Queue    QueueCeiling    `json:"queue"`
	Pipeline PipelineCeiling `json:"pipeline"`
}

// RunCeiling measures the raw work-queue rate, then the pipeline's with
// no-op fetches.
func RunCeiling(ctx context.Context, o CeilingOptions) (CeilingResult, error) {
	o = o.withDefaults()
	res := CeilingResult{Machine: thisMachine()}
	q, err := runQueueCeiling(ctx, o)
	if err != nil {
		return res, err
	}
	res.Queue = q
	p, err := runPipelineCeiling(ctx, o)
	if err != nil {
		return res, err
	}
	res.Pipeline = p
	return res, nil
}

// benchTask is a typical fetch task, as the dispatcher sends it.
func benchTask(id string) proto.Task {
	now := time.Now()
	return proto.Task{V: proto.Version, ID: id, Kind: proto.KindFetch, URL: "http://h0042.example/p3", Host: "h0042.example",
		IssuedAt: now, NotBefore: now, MinGap: time.Millisecond, ETag: `"v7"`,
		PrevHash: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}
}

// runQueueCeiling publishes typical tasks to the task stream of an
// embedded server as fast as a consumer takes and acknowledges them, and
// measures the acknowledged rate. At most queueBacklog tasks wait in the
// stream, so the rate is the steady state, not a burst into an empty
// queue.
func runQueueCeiling(ctx context.Context, o CeilingOptions) (QueueCeiling, error) {
	o = o.withDefaults()
	var q QueueCeiling
	dir, err := os.MkdirTemp(o.TempDir, "freshcrawl-ceiling-queue-*")
	if err != nil {
		return q, fmt.Errorf("queue ceiling: %w", err)
	}
	defer os.RemoveAll(dir)
	srv, err := broker.StartEmbedded(broker.EmbeddedOptions{Dir: dir, Listen: "127.0.0.1:-1"})
	if err != nil {
		return q, fmt.Errorf("queue ceiling: %w", err)
	}
	defer func() {
		srv.Shutdown()
		srv.WaitForShutdown()
	}()
	nc, js, err := broker.Connect(srv.ClientURL(), "freshcrawl-ceiling", o.Log)
	if err != nil {
		return q, fmt.Errorf("queue ceiling: %w", err)
	}
	defer nc.Close()
	s := broker.DefaultSettings()
	s.MaxAckPending = o.MaxInFlight
	if err := broker.Ensure(ctx, js, s); err != nil {
		return q, fmt.Errorf("queue ceiling: %w", err)
	}
	cons, err := js.Consumer(ctx, proto.TaskStream, proto.TaskConsumer)
	if err != nil {
		return q, fmt.Errorf("queue ceiling: task consumer: %w", err)
	}
	sample, err := proto.Encode(benchTask("t-00000000"))
	if err != nil {
		return q, err
	}
	q.PayloadBytes = len(sample)

	const queueBacklog = 20000
	backlog := make(chan struct{}, queueBacklog)
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var acked atomic.Int64
	var wg sync.WaitGroup
	var loopErr error
	var errOnce sync.Once
	fail := func(err error) {
		errOnce.Do(func() { loopErr = err })
		stop()
	}

	it, err := cons.Messages(jetstream.PullMaxMessages(1024))
	if err != nil {
		return q, fmt.Errorf("queue ceiling: consume: %w", err)
	}
	wg.Add(2)
	go func() {
		defer wg.Done()
		consumeTasks(runCtx, it, backlog, &acked, fail)
	}()
	go func() {
		defer wg.Done()
		publishTasks(runCtx, js, backlog, fail)
	}()

	o.Progress("queue ceiling: warming up %s", o.Warmup)
	okWarm := sleepOrDone(runCtx, o.Warmup)
	if okWarm {
		o.Progress("queue ceiling: measuring %s", o.Duration)
		a0, u0, t0 := acked.Load(), selfUsage(), time.Now()
		if sleepOrDone(runCtx, o.Duration) {
			a1, u1, t1 := acked.Load(), selfUsage(), time.Now()
			q.Messages, q.Seconds = a1-a0, t1.Sub(t0).Seconds()
			q.PerSecond = float64(q.Messages) / q.Seconds
			q.CPUCores = (u1.CPU - u0.CPU).Seconds() / q.Seconds
		}
	}
	stop()
	it.Stop()
	wg.Wait()
	if loopErr != nil {
		return q, loopErr
	}
	if err := ctx.Err(); err != nil {
		return q, err
	}
	o.Progress("queue ceiling: %.0f tasks/s", q.PerSecond)
	return q, nil
}

// consumeTasks acknowledges the tasks it takes until it is stopped,
// counting them in acked and freeing a place in the backlog for each.
func consumeTasks(ctx context.Context, it jetstream.MessagesContext, backlog chan struct{}, acked *atomic.Int64, fail func(error)) {
	for {
		m, err := it.Next()
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				fail(fmt.Errorf("queue ceiling: next task: %w", err))
			}
			return
		}
		if err := m.Ack(); err != nil {
			fail(fmt.Errorf("queue ceiling: ack: %w", err))
			return
		}
		acked.Add(1)
		select {
		case <-backlog:
		default:
		}
	}
}

// publishTasks publishes typical tasks until ctx ends, each once it has a
// place in the backlog.
func publishTasks(ctx context.Context, js jetstream.JetStream, backlog chan struct{}, fail func(error)) {
	subject := proto.TaskSubject(proto.KindFetch)
	for i := 0; ctx.Err() == nil; i++ {
		select {
		case backlog <- struct{}{}:
		case <-ctx.Done():
			return
		}
		b, err := proto.Encode(benchTask("t-" + strconv.Itoa(i)))
		if err != nil {
			fail(err)
			return
		}
		for {
			_, err := js.PublishAsync(subject, b, jetstream.WithMsgID("t-"+strconv.Itoa(i)))
			if err == nil {
				break
			}
			// Too many publishes awaiting their acknowledgement: wait
			// for them rather than spin.
			select {
			case <-js.PublishAsyncComplete():
			case <-ctx.Done():
				return
			}
		}
	}
}

// runPipelineCeiling runs a coordinator with no workers on synthetic URLs
// and a no-op responder that answers every task at once, and measures the
// results folded per second.
func runPipelineCeiling(ctx context.Context, o CeilingOptions) (PipelineCeiling, error) {
	o = o.withDefaults()
	p := PipelineCeiling{Hosts: o.Hosts, URLs: o.Hosts * o.PagesPerHost}
	dir, err := os.MkdirTemp(o.TempDir, "freshcrawl-ceiling-pipeline-*")
	if err != nil {
		return p, fmt.Errorf("pipeline ceiling: %w", err)
	}
	defer os.RemoveAll(dir)

	cfg := config.Default()
	cfg.Data = dir
	cfg.Budget = config.Rate(1e6)
	cfg.HostRate = config.Rate(1e4)
	cfg.MaxInFlight = o.MaxInFlight
	cfg.Policy = "uniform"
	cfg.Workers = 0
	n, err := startBenchNode(ctx, cfg, node.Roles{Coordinator: true}, o.Log)
	if err != nil {
		return p, fmt.Errorf("pipeline ceiling: %w", err)
	}
	stopped := false
	defer func() {
		if !stopped {
			n.Stop()
		}
	}()
	var seeds strings.Builder
	for h := range o.Hosts {
		for i := range o.PagesPerHost {
			fmt.Fprintf(&seeds, "http://h%05d.example/p%d\n", h, i)
		}
	}
	if sum, err := n.Coordinator.AddSeeds(strings.NewReader(seeds.String()), "bench"); err != nil || sum.Bad > 0 {
		return p, fmt.Errorf("pipeline ceiling: seed %d URLs: %d bad (%v): %w", p.URLs, sum.Bad, sum.Errors, err)
	}

	respCtx, stopResponder := context.WithCancel(ctx)
	defer stopResponder()
	var child *helperProcess
	respErr := make(chan error, 1)
	if len(o.Responder) > 0 {
		argv := append(append([]string(nil), o.Responder...), n.NATSURL)
		if child, err = startHelper(ctx, argv); err != nil {
			return p, fmt.Errorf("pipeline ceiling: responder: %w", err)
		}
		defer child.Close()
	} else {
		go func() { respErr <- RespondNoop(respCtx, n.NATSURL, o.Responders, o.Log) }()
	}

	o.Progress("pipeline ceiling: %d URLs on %d hosts, %d in flight; warming up %s", p.URLs, p.Hosts, o.MaxInFlight, o.Warmup)
	if !sleepOrDone(ctx, o.Warmup) {
		return p, ctx.Err()
	}
	o.Progress("pipeline ceiling: measuring %s", o.Duration)
	if o.CPUProfile != nil {
		if err := pprof.StartCPUProfile(o.CPUProfile); err != nil {
			return p, fmt.Errorf("pipeline ceiling: CPU profile: %w", err)
		}
	}
	s0, u0, t0, a0 := n.Coordinator.Status(), selfUsage(), time.Now(), heapAllocs()
	var c0 time.Duration
	if child != nil {
		c0, _ = procCPU(child.PID)
	}
	if !sleepOrDone(ctx, o.Duration) {
		return p, ctx.Err()
	}
	s1, u1, t1, a1 := n.Coordinator.Status(), selfUsage(), time.Now(), heapAllocs()
	if o.CPUProfile != nil {
		pprof.StopCPUProfile()
	}
	if o.AllocProfile != nil {
		if err := pprof.Lookup("allocs").WriteTo(o.AllocProfile, 0); err != nil {
			return p, fmt.Errorf("pipeline ceiling: allocation profile: %w", err)
		}
	}
	p.Folded, p.Seconds = s1.Fetches-s0.Fetches, t1.Sub(t0).Seconds()
	p.PerSecond = float64(p.Folded) / p.Seconds
	p.CoordinatorCores = (u1.CPU - u0.CPU).Seconds() / p.Seconds
	if child != nil {
		if c1, ok := procCPU(child.PID); ok {
			p.ResponderCores = (c1 - c0).Seconds() / p.Seconds
		}
	}
	if p.Folded > 0 {
		p.CoordinatorCPUPer1000 = (u1.CPU - u0.CPU).Seconds() * 1000 / float64(p.Folded)
		p.ResponderCPUPer1000 = p.ResponderCores * p.Seconds * 1000 / float64(p.Folded)
		p.AllocsPerResult = float64(a1.objects-a0.objects) / float64(p.Folded)
		p.AllocBytesPerResult = float64(a1.bytes-a0.bytes) / float64(p.Folded)
	}

	stopResponder()
	if child == nil {
		if err := <-respErr; err != nil {
			return p, err
		}
	}
	n.Stop()
	stopped = true
	if err := readStoreBack(dir, &p.Persisted); err != nil {
		return p, err
	}
	o.Progress("pipeline ceiling: %.0f folded/s", p.PerSecond)
	return p, nil
}

// allocCount is this process's heap allocations since it started.
type allocCount struct{ objects, bytes uint64 }

// heapAllocs reads the runtime's cumulative allocation counters (cheap:
// no stop of the world, unlike runtime.ReadMemStats).
func heapAllocs() allocCount {
	ms := []metrics.Sample{{Name: "/gc/heap/allocs:objects"}, {Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(ms)
	var a allocCount
	if ms[0].Value.Kind() == metrics.KindUint64 {
		a.objects = ms[0].Value.Uint64()
	}
	if ms[1].Value.Kind() == metrics.KindUint64 {
		a.bytes = ms[1].Value.Uint64()
	}
	return a
}

// noopHash is the version hash the no-op responder reports.
const noopHash = "0000000000000000000000000000000000000000000000000000000000000000"

// RespondNoop answers every task on the task stream at once, as a worker
// whose fetches cost nothing would: a first version the first time a URL
// is seen, the same version after. Each answer is published to the result
// stream, and the task is acknowledged only once the stream has stored
// it, as a worker does. The answers are published asynchronously, up to
// responders awaiting the stream's acknowledgement, so that the stand-in
// for the workers takes as little as it can of the CPU the coordinator
// shares with it on one machine. It runs until ctx ends.
func RespondNoop(ctx context.Context, natsURL string, responders int, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	nc, js, err := broker.Connect(natsURL, "freshcrawl-noop-responder", log)
	if err != nil {
		return fmt.Errorf("no-op responder: %w", err)
	}
	defer nc.Close()
	cons, err := js.Consumer(ctx, proto.TaskStream, proto.TaskConsumer)
	if err != nil {
		return fmt.Errorf("no-op responder: task consumer: %w", err)
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(2 * max(responders, 1)))
	if err != nil {
		return fmt.Errorf("no-op responder: consume: %w", err)
	}
	// pending holds the answers published and not yet stored, in the
	// order they were published: the stream acknowledges them in that
	// order, so one goroutine waits for each in turn and then
	// acknowledges its task (or hands it back).
	type answer struct {
		task jetstream.Msg
		pub  jetstream.PubAckFuture
	}
	pending := make(chan answer, max(responders, 1))
	acked := make(chan struct{})
	go func() {
		defer close(acked)
		for a := range pending {
			select {
			case <-a.pub.Ok():
				_ = a.task.Ack()
			case err := <-a.pub.Err():
				if ctx.Err() == nil {
					log.Warn("no-op responder: publish result", "err", err)
				}
				_ = a.task.Nak()
			case <-ctx.Done():
				// Unacknowledged, the task comes back after AckWait.
			}
		}
	}()
	go func() {
		<-ctx.Done()
		it.Stop()
	}()
	var nextErr error
	for {
		m, err := it.Next()
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				nextErr = fmt.Errorf("no-op responder: next task: %w", err)
			}
			break
		}
		if pub := answerNoop(ctx, js, m, log); pub != nil {
			pending <- answer{task: m, pub: pub}
		}
	}
	close(pending)
	<-acked
	return nextErr
}

// answerNoop publishes the answer to task m and returns its
// acknowledgement to come, or nil when m was refused or handed back.
func answerNoop(ctx context.Context, js jetstream.JetStream, m jetstream.Msg, log *slog.Logger) jetstream.PubAckFuture {
	task, err := proto.DecodeTask(m.Data())
	if err != nil {
		log.Error("no-op responder: bad task", "err", err)
		_ = m.Term()
		return nil
	}
	now := time.Now()
	r := proto.Result{V: proto.Version, TaskID: task.ID, Kind: task.Kind, URL: task.URL, Host: task.Host, WorkerID: "noop",
		Attempt: 1, StartedAt: now, FinishedAt: now, Status: 200, ContentType: "text/html", Hash: task.PrevHash}
	if md, err := m.Metadata(); err == nil {
		r.Attempt = int(md.NumDelivered)
	}
	if task.PrevHash == "" {
		r.Hash, r.Text = noopHash, "no-op"
	}
	b, err := proto.Encode(&r)
	if err != nil {
		_ = m.Term()
		return nil
	}
	pub, err := js.PublishAsync(proto.ResultSubject(task.Kind), b, jetstream.WithMsgID("r-"+task.ID))
	if err != nil {
		if ctx.Err() == nil {
			log.Warn("no-op responder: publish result", "task", task.ID, "err", err)
		}
		_ = m.Nak()
		return nil
	}
	return pub
}
