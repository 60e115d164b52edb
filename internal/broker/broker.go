// Package broker sets up the NATS side of freshcrawl: an embedded
// nats-server with JetStream for the single-process default, the
// connection, and the streams, consumers and buckets both roles rely on.
// Both roles call Ensure with the same settings, so whichever starts first
// creates them and the other finds them.
package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/freshcrawl/freshcrawl/internal/optcheck"
	"github.com/freshcrawl/freshcrawl/proto"
)

// EmbeddedOptions configure the embedded server.
type EmbeddedOptions struct {
	// Dir is where JetStream keeps its files (under the data directory).
	Dir string
	// Listen is host:port for clients (default DefaultListen);
	// "127.0.0.1:-1" picks a free port.
	Listen string
	// SyncAlways fsyncs every write. Off by default, as in nats-server:
	// the store never depends on a message that was not folded, so an OS
	// crash costs at most refetching a few URLs, while SyncAlways costs a
	// disk flush per task and result.
	SyncAlways bool
	// MaxPayload bounds one message (tasks and results carry extracted
	// text). Default 8 MiB.
	MaxPayload int32
}

// StartEmbedded starts a nats-server with JetStream and waits until it
// accepts clients. It fails at once, saying so, when the listen address is
// taken. The caller shuts it down with Shutdown and WaitForShutdown.
func StartEmbedded(o EmbeddedOptions) (*server.Server, error) {
	if o.Listen == "" {
		o.Listen = DefaultListen
	}
	host, port, err := splitListen(o.Listen)
	if err != nil {
		return nil, fmt.Errorf("embedded NATS listen address %q: %w", o.Listen, err)
	}
	if o.MaxPayload <= 0 {
		o.MaxPayload = 8 << 20
	}
	opts := &server.Options{
		ServerName: "freshcrawl-embedded",
		Host:       host,
		Port:       port,
		JetStream:  true,
		StoreDir:   o.Dir,
		SyncAlways: o.SyncAlways,
		MaxPayload: o.MaxPayload,
		NoSigs:     true,
	}
	return startServer(opts, "embedded NATS", "choose another --nats-listen, or point --nats at the server that holds it")
}

// splitListen parses host:port; port -1 picks a free one.
func splitListen(addr string) (string, int, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return "", 0, fmt.Errorf("port %q: %w", portStr, err)
	}
	return host, port, nil
}

// ErrAddrInUse is matched by the error of a server whose listen address is
// taken.
var ErrAddrInUse = errors.New("address in use")

// checkFree fails if host:port (port > 0) cannot be listened on: a
// nats-server that cannot listen only logs it and never becomes ready.
func checkFree(what, host string, port int, hint string) error {
	if port <= 0 {
		return nil
	}
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("%s: %s is already in use by another process (another freshcrawl run, or a nats-server?): %s: %w", what, addr, hint, ErrAddrInUse)
		}
		return fmt.Errorf("%s: cannot listen on %s: %w", what, addr, err)
	}
	return ln.Close()
}

// startServer starts a nats-server with opts and waits until it accepts
// clients, failing fast with the server's own error if it cannot start.
func startServer(opts *server.Options, what, hint string) (*server.Server, error) {
	if err := checkFree(what, opts.Host, opts.Port, hint); err != nil {
		return nil, err
	}
	if opts.Cluster.Port > 0 {
		if err := checkFree(what+" cluster", opts.Cluster.Host, opts.Cluster.Port, hint); err != nil {
			return nil, err
		}
	}
	s, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	errs := &serverErrors{}
	s.SetLoggerV2(errs, false, false, false)
	// Start does not block: it returns once the server's own goroutines
	// run, which Shutdown ends and waits for.
	s.Start()
	deadline := time.Now().Add(15 * time.Second)
	for !s.ReadyForConnections(100 * time.Millisecond) {
		if err := errs.first(); err != nil {
			s.Shutdown()
			return nil, fmt.Errorf("%s on %s:%d: %w", what, opts.Host, opts.Port, err)
		}
		if time.Now().After(deadline) {
			s.Shutdown()
			return nil, fmt.Errorf("%s on %s:%d did not start within 15s", what, opts.Host, opts.Port)
		}
	}
	errs.started()
	return s, nil
}

// serverErrors keeps the first fatal message a nats-server logs before it
// is ready (logging is otherwise off): a server that cannot listen or
// cannot start JetStream says so only there.
type serverErrors struct {
	mu    sync.Mutex
	err   error
	ready bool
}

func (e *serverErrors) record(format string, v ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.err == nil && !e.ready {
		e.err = fmt.Errorf(format, v...)
	}
}

func (e *serverErrors) first() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}

func (e *serverErrors) started() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ready = true
}

func (e *serverErrors) Noticef(string, ...any)    {}
func (e *serverErrors) Warnf(string, ...any)      {}
func (e *serverErrors) Debugf(string, ...any)     {}
func (e *serverErrors) Tracef(string, ...any)     {}
func (e *serverErrors) Fatalf(f string, v ...any) { e.record(f, v...) }
func (e *serverErrors) Errorf(f string, v ...any) {
	if strings.Contains(f, "listen") || strings.Contains(f, "JetStream") {
		e.record(f, v...)
	}
}

// ClusterNodeOptions configure one node of a NATS cluster run by the hidden
// `freshcrawl nats-server` subcommand (the fault suite's cluster).
type ClusterNodeOptions struct {
	Name    string // unique, stable: JetStream records Raft peers by it
	Listen  string // client host:port
	Cluster string // cluster host:port
	Routes  string // comma-separated nats://host:port of every node
	Dir     string // JetStream store directory
	// MaxPayload bounds one message (default 8 MiB, as embedded).
	MaxPayload int32
	// NoAdvertise keeps the node from telling clients the other nodes'
	// addresses: a client then reconnects only to the URLs it was given
	// (the fault suite cuts one worker off through a proxy).
	NoAdvertise bool
}

// StartClusterNode starts one JetStream cluster node and waits until it
// accepts clients. Streams are placed once enough nodes have joined.
func StartClusterNode(o ClusterNodeOptions) (*server.Server, error) {
	host, port, err := splitListen(o.Listen)
	if err != nil {
		return nil, fmt.Errorf("NATS node %s listen %q: %w", o.Name, o.Listen, err)
	}
	chost, cport, err := splitListen(o.Cluster)
	if err != nil {
		return nil, fmt.Errorf("NATS node %s cluster %q: %w", o.Name, o.Cluster, err)
	}
	if o.MaxPayload <= 0 {
		o.MaxPayload = 8 << 20
	}
	opts := &server.Options{
		ServerName: o.Name,
		Host:       host,
		Port:       port,
		JetStream:  true,
		StoreDir:   o.Dir,
		MaxPayload: o.MaxPayload,
		NoSigs:     true,
		Cluster:    server.ClusterOpts{Name: "freshcrawl", Host: chost, Port: cport, NoAdvertise: o.NoAdvertise},
		Routes:     server.RoutesFromStr(o.Routes),
	}
	return startServer(opts, "NATS node "+o.Name, "give each node its own ports")
}

// Settings size the streams and consumers.
type Settings struct {
	// Replicas of each stream (1 embedded, 3 on a 3-node cluster).
	Replicas int
	// AckWait is how long a worker may hold a task without acknowledging
	// or sending InProgress before it is redelivered.
	AckWait time.Duration
	// MaxDeliver is how many times a task is delivered before it is
	// recorded as failed.
	MaxDeliver int
	// MaxAckPending bounds tasks delivered and unacknowledged across all
	// workers: it is shared by the consumer, so it is sized to the total
	// concurrency, not per worker.
	MaxAckPending int
	// Duplicates is the window in which a republished task id is dropped.
	Duplicates time.Duration
	// RobotsTTL is how long a robots.txt stays in the shared cache.
	RobotsTTL time.Duration
	// Changes is the retention of the change-event stream.
	Changes ChangeRetention
}

// ChangeRetention bounds the change-event stream: an event is dropped,
// oldest first, once it is older than MaxAge or the stream holds more
// than MaxBytes or MaxMsgs (-1: no limit).
type ChangeRetention struct {
	MaxAge   time.Duration
	MaxBytes int64
	MaxMsgs  int64
}

// DefaultListen is the embedded server's client address: loopback, so a
// demo does not expose a broker.
const DefaultListen = "127.0.0.1:4222"

// maxReplicas is JetStream's limit on a stream's replicas.
const maxReplicas = 5

// DefaultSettings are the defaults of a single-process run; the config
// takes its ack-wait, max-deliver, replicas and change-stream-* defaults
// from here. The change stream keeps a week of events, at most 1 GiB of
// them: long enough for a subscriber to be away over a weekend.
func DefaultSettings() Settings {
	return Settings{Replicas: 1, AckWait: 60 * time.Second, MaxDeliver: 5, MaxAckPending: 1024, Duplicates: 2 * time.Minute, RobotsTTL: 24 * time.Hour,
		Changes: ChangeRetention{MaxAge: 7 * 24 * time.Hour, MaxBytes: 1 << 30, MaxMsgs: -1}}
}

// Validate reports every field Ensure would refuse, each by its name.
func (s Settings) Validate() error {
	var errs optcheck.Errors
	if s.Replicas < 1 || s.Replicas > maxReplicas {
		errs.Check("Replicas", fmt.Errorf("must be 1..%d, got %d", maxReplicas, s.Replicas))
	}
	// At least a second, so that a worker's InProgress every third of it
	// is not a flood.
	if s.AckWait < time.Second {
		errs.Check("AckWait", fmt.Errorf("must be ≥ 1s, got %s", s.AckWait))
	}
	if s.MaxDeliver < 1 {
		errs.Check("MaxDeliver", fmt.Errorf("must be ≥ 1, got %d", s.MaxDeliver))
	}
	if s.MaxAckPending < 1 {
		errs.Check("MaxAckPending", fmt.Errorf("must be ≥ 1, got %d", s.MaxAckPending))
	}
	if s.Duplicates <= 0 {
		errs.Check("Duplicates", fmt.Errorf("must be > 0, got %s", s.Duplicates))
	}
	if s.RobotsTTL <= 0 {
		errs.Check("RobotsTTL", fmt.Errorf("must be > 0, got %s", s.RobotsTTL))
	}
	// At least a minute: JetStream's 0 would mean "for ever", which the
	// byte and message limits say better.
	if s.Changes.MaxAge < time.Minute {
		errs.Check("Changes.MaxAge", fmt.Errorf("must be ≥ 1m, got %s", s.Changes.MaxAge))
	}
	errs.Check("Changes.MaxBytes", checkLimit(s.Changes.MaxBytes))
	errs.Check("Changes.MaxMsgs", checkLimit(s.Changes.MaxMsgs))
	return errs.Err()
}

// checkLimit reports whether n is a valid byte or message limit of the
// change stream: -1 (none) or > 0.
func checkLimit(n int64) error {
	if n != -1 && n <= 0 {
		return fmt.Errorf("must be -1 (no limit) or > 0, got %d", n)
	}
	return nil
}

// resultAckWait is how long the coordinator may hold a result unfolded:
// a batch folds in milliseconds, and a coordinator killed mid-fold (or
// replaced by its standby) has its batch redelivered after this.
const resultAckWait = 10 * time.Second

// robotsBucket is the KV bucket workers share robots.txt entries in.
const robotsBucket = "freshcrawl_robots"

// EnsureExisting is Ensure for a worker: if the coordinator already made the
// streams and consumers, their settings (MaxAckPending sized to the
// coordinator's in-flight bound, AckWait, MaxDeliver) are left alone;
// otherwise they are created with s.
func EnsureExisting(ctx context.Context, js jetstream.JetStream, s Settings) error {
	if _, err := js.Consumer(ctx, proto.TaskStream, proto.TaskConsumer); err == nil {
		if _, err := js.Consumer(ctx, proto.ResultStream, proto.ResultConsumer); err == nil {
			return nil
		}
	}
	return Ensure(ctx, js, s)
}

// Ensure creates or updates the task and result streams and their durable
// consumers. The coordinator calls it: its settings are the ones in force.
// Settings Validate refuses are a permanent error (Fatal).
func Ensure(ctx context.Context, js jetstream.JetStream, s Settings) error {
	if err := s.Validate(); err != nil {
		return Fatal(fmt.Errorf("broker settings: %w", err))
	}
	_, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        proto.TaskStream,
		Description: "freshcrawl fetch tasks, one consumer shared by all workers",
		Subjects:    []string{proto.TaskSubjectPrefix + ">"},
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    s.Replicas,
		Duplicates:  s.Duplicates,
		Discard:     jetstream.DiscardOld,
	})
	if err != nil {
		return fmt.Errorf("create stream %s: %w", proto.TaskStream, err)
	}
	_, err = js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        proto.ResultStream,
		Description: "freshcrawl results, consumed by the coordinator",
		Subjects:    []string{proto.ResultSubjectPrefix + ">"},
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    s.Replicas,
		Duplicates:  s.Duplicates,
	})
	if err != nil {
		return fmt.Errorf("create stream %s: %w", proto.ResultStream, err)
	}
	if err := ensureChanges(ctx, js, s); err != nil {
		return err
	}
	_, err = js.CreateOrUpdateConsumer(ctx, proto.TaskStream, jetstream.ConsumerConfig{
		Durable:       proto.TaskConsumer,
		Description:   "all workers",
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       s.AckWait,
		MaxDeliver:    s.MaxDeliver,
		MaxAckPending: s.MaxAckPending,
		FilterSubject: proto.TaskSubjectPrefix + ">",
		BackOff:       nil,
	})
	if err != nil {
		return fmt.Errorf("create consumer %s: %w", proto.TaskConsumer, err)
	}
	_, err = js.CreateOrUpdateConsumer(ctx, proto.ResultStream, jetstream.ConsumerConfig{
		Durable:       proto.ResultConsumer,
		Description:   "the coordinator",
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       resultAckWait,
		MaxDeliver:    -1, // a result must be folded eventually
		MaxAckPending: 4096,
		FilterSubject: proto.ResultSubjectPrefix + ">",
	})
	if err != nil {
		return fmt.Errorf("create consumer %s: %w", proto.ResultConsumer, err)
	}
	return nil
}

// ensureChanges creates or updates the change-event stream. It captures
// the subjects core NATS subscribers have always read, so an event is
// published once (with its id as Nats-Msg-Id, de-duplicated within the
// Duplicates window) and reaches both live subscribers and the stream.
func ensureChanges(ctx context.Context, js jetstream.JetStream, s Settings) error {
	r := s.Changes
	_, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        proto.ChangeStream,
		Description: "freshcrawl change events, kept for replay by sequence or time",
		Subjects:    []string{proto.ChangeSubjectPrefix + ">"},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    s.Replicas,
		Duplicates:  s.Duplicates,
		Discard:     jetstream.DiscardOld,
		MaxAge:      r.MaxAge,
		MaxBytes:    r.MaxBytes,
		MaxMsgs:     r.MaxMsgs,
	})
	if err != nil {
		return fmt.Errorf("create stream %s: %w", proto.ChangeStream, err)
	}
	return nil
}

// RobotsKV opens (creating if needed) the shared robots.txt bucket.
func RobotsKV(ctx context.Context, js jetstream.JetStream, s Settings) (jetstream.KeyValue, error) {
	if s.Replicas < 1 {
		s.Replicas = 1
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      robotsBucket,
		Description: "robots.txt per host, shared by all workers",
		TTL:         s.RobotsTTL,
		Replicas:    s.Replicas,
		Storage:     jetstream.FileStorage,
	})
	if err != nil {
		return nil, fmt.Errorf("robots bucket: %w", err)
	}
	return kv, nil
}

// MaxDeliveriesSubject is the advisory JetStream sends when a task ran out
// of deliveries; the task stays in the work-queue stream until removed.
func MaxDeliveriesSubject() string {
	return "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES." + proto.TaskStream + "." + proto.TaskConsumer
}

// MaxDeliveriesAdvisory is the part of the advisory we use.
type MaxDeliveriesAdvisory struct {
	Stream     string `json:"stream"`
	Consumer   string `json:"consumer"`
	StreamSeq  uint64 `json:"stream_seq"`
	Deliveries uint64 `json:"deliveries"`
}

// ParseMaxDeliveries decodes the advisory.
func ParseMaxDeliveries(b []byte) (MaxDeliveriesAdvisory, error) {
	var a MaxDeliveriesAdvisory
	if err := json.Unmarshal(b, &a); err != nil {
		return a, fmt.Errorf("decode max-deliveries advisory: %w", err)
	}
	if a.StreamSeq == 0 {
		return a, errors.New("max-deliveries advisory without stream_seq")
	}
	return a, nil
}

// QueueInfo is what status shows of the task queue.
type QueueInfo struct {
	Pending     uint64 `json:"pending"`     // in the stream, not yet delivered
	AckPending  int    `json:"ack_pending"` // delivered, awaiting ack
	Redelivered int    `json:"redelivered"` // delivered more than once, awaiting ack
	Messages    uint64 `json:"messages"`    // in the stream
	Results     uint64 `json:"results"`     // results not yet folded
}

// Queue reads the task and result consumers' state.
func Queue(ctx context.Context, js jetstream.JetStream) (QueueInfo, error) {
	var q QueueInfo
	c, err := js.Consumer(ctx, proto.TaskStream, proto.TaskConsumer)
	if err != nil {
		return q, fmt.Errorf("task consumer: %w", err)
	}
	ci, err := c.Info(ctx)
	if err != nil {
		return q, fmt.Errorf("task consumer info: %w", err)
	}
	q.Pending, q.AckPending, q.Redelivered = ci.NumPending, ci.NumAckPending, ci.NumRedelivered
	st, err := js.Stream(ctx, proto.TaskStream)
	if err == nil {
		if si, err := st.Info(ctx); err == nil {
			q.Messages = si.State.Msgs
		}
	}
	rc, err := js.Consumer(ctx, proto.ResultStream, proto.ResultConsumer)
	if err == nil {
		if ri, err := rc.Info(ctx); err == nil {
			q.Results = ri.NumPending + uint64(ri.NumAckPending)
		}
	}
	return q, nil
}

// OldestResult returns when the oldest message still in the results
// stream was stored, by the server's clock, or the zero time when the
// stream is empty. The stream is a work queue, so acknowledged results are
// gone: this is the oldest result not yet folded and acknowledged.
func OldestResult(ctx context.Context, js jetstream.JetStream) (time.Time, error) {
	st, err := js.Stream(ctx, proto.ResultStream)
	if err != nil {
		return time.Time{}, fmt.Errorf("results stream: %w", err)
	}
	si, err := st.Info(ctx)
	if err != nil {
		return time.Time{}, fmt.Errorf("results stream info: %w", err)
	}
	if si.State.Msgs == 0 {
		return time.Time{}, nil
	}
	return si.State.FirstTime, nil
}
