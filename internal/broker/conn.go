package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/freshcrawl/freshcrawl/internal/logx"
)

// Link is a NATS connection that never gives up on a server that is
// down: it is returned before the first connection succeeds (a process
// starts when NATS is not up yet), and reconnects with backoff, forever,
// whenever the connection drops. It does give up when the server refuses
// the credentials twice in a row (nats.go's rule): no retry can fix that,
// so the connection is closed and Closed and WaitConnected say why. It
// keeps the connection's state for status and /healthz.
type Link struct {
	NC *nats.Conn
	JS jetstream.JetStream

	mu       sync.Mutex
	state    LinkState
	closed   chan struct{} // closed when the connection is closed for good
	closeErr error         // why, once closed (nil: closed by Close)
}

// LinkState is what status and /healthz show of a NATS connection.
type LinkState struct {
	// State is "connected", "connecting" (never connected yet),
	// "reconnecting" or "closed".
	State string `json:"state"`
	// URL is the server connected to, or the URLs being tried.
	URL string `json:"url"`
	// Since is when the connection entered State.
	Since time.Time `json:"since"`
	// Reconnects counts the reconnections since the process started.
	Reconnects uint64 `json:"reconnects"`
	// LastError is the last error the connection reported.
	LastError string `json:"last_error,omitempty"`
}

// Connected reports whether the state is "connected".
func (s LinkState) Connected() bool { return s.State == "connected" }

// Backoff of reconnections and of retried JetStream set-up calls: from
// backoffMin doubling to backoffMax, with up to a fifth of jitter so that
// many workers do not reconnect in step.
const (
	backoffMin = 100 * time.Millisecond
	backoffMax = 5 * time.Second
)

func backoff(attempt int) time.Duration {
	d := backoffMin << min(attempt, 16)
	if d <= 0 || d > backoffMax {
		d = backoffMax
	}
	return d + time.Duration(rand.Int64N(int64(d)/5+1))
}

// Dial returns a Link to url (a comma-separated list of servers), trying
// to connect in the background. It fails only on a malformed URL or
// option. opts come after freshcrawl's own: Auth.Options gives those of
// a cluster that requires credentials or TLS.
func Dial(url, name string, log *slog.Logger, opts ...nats.Option) (*Link, error) {
	l := &Link{state: LinkState{State: "connecting", URL: url, Since: time.Now()}, closed: make(chan struct{})}
	set := func(state string, c *nats.Conn, err error) {
		l.mu.Lock()
		defer l.mu.Unlock()
		if state != l.state.State {
			l.state.State, l.state.Since = state, time.Now()
		}
		if c != nil {
			if u := c.ConnectedUrlRedacted(); u != "" {
				l.state.URL = u
			}
			l.state.Reconnects = c.Stats().Reconnects
		}
		if err != nil {
			l.state.LastError = err.Error()
		}
	}
	nc, err := nats.Connect(url, append([]nats.Option{
		nats.Name(name),
		nats.RetryOnFailedConnect(true),
		nats.MaxReconnects(-1),
		nats.CustomReconnectDelay(backoff),
		// A server that stops answering without closing the connection is
		// noticed within PingInterval × MaxPingsOut.
		nats.PingInterval(10 * time.Second),
		nats.MaxPingsOutstanding(3),
		nats.ConnectHandler(func(c *nats.Conn) {
			set("connected", c, nil)
			log.Info("NATS connected", "url", c.ConnectedUrlRedacted())
		}),
		nats.DisconnectErrHandler(func(c *nats.Conn, err error) {
			set("reconnecting", c, err)
			if err != nil {
				log.Warn("NATS disconnected; reconnecting", "err", err)
			}
		}),
		nats.ReconnectHandler(func(c *nats.Conn) {
			set("connected", c, nil)
			log.Info("NATS reconnected", "url", c.ConnectedUrlRedacted())
		}),
		nats.ClosedHandler(func(c *nats.Conn) {
			err := c.LastError()
			set("closed", c, err)
			l.mu.Lock()
			defer l.mu.Unlock()
			if l.closeErr == nil && err != nil {
				l.closeErr = closedError(l.state.URL, err)
			}
			select {
			case <-l.closed:
			default:
				close(l.closed)
			}
		}),
		nats.ErrorHandler(func(c *nats.Conn, _ *nats.Subscription, err error) {
			set(l.State().State, c, err)
			log.Warn("NATS error", "err", err)
		}),
	}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("connect to NATS at %s: %w", url, err)
	}
	if nc.IsConnected() {
		set("connected", nc, nil)
	}
	// An async publish whose acknowledgement never comes (sent to a
	// stream leader that died) is failed after publishAsyncTimeout rather
	// than kept pending for ever: callers wait less than that themselves.
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncTimeout(publishAsyncTimeout))
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("JetStream context: %w", err)
	}
	l.NC, l.JS = nc, js
	return l, nil
}

// State is the connection's state now.
func (l *Link) State() LinkState {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.state
}

// Closed is closed when the connection is closed for good: by Close, or
// by nats.go when the server refused the credentials twice in a row.
func (l *Link) Closed() <-chan struct{} { return l.closed }

// Err is why the connection was closed for good: an error that wraps
// ErrNATSRefused with the connection's last error (the server's reason)
// and what to check. It is nil while the connection is open, and when it
// was closed with no error pending.
func (l *Link) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closeErr
}

// ErrNATSRefused is wrapped by the error of a connection that the server
// closed for good, typically for wrong credentials.
var ErrNATSRefused = errors.New("NATS refused the connection")

func closedError(url string, err error) error {
	hint := ""
	if errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) || errors.Is(err, nats.ErrAuthRevoked) ||
		errors.Is(err, nats.ErrAccountAuthExpired) || strings.Contains(strings.ToLower(err.Error()), "authoriz") {
		hint = " (check --nats-user and --nats-password, --nats-token, --nats-nkey or --nats-creds)"
	}
	return fmt.Errorf("%w at %s: %w%s", ErrNATSRefused, url, err, hint)
}

// WaitConnected blocks until the link is connected, the connection is
// closed for good (it returns Err), or ctx ends.
func (l *Link) WaitConnected(ctx context.Context) error {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for !l.NC.IsConnected() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for NATS at %s: %w", l.State().URL, ctx.Err())
		case <-l.closed:
			if err := l.Err(); err != nil {
				return err
			}
			return fmt.Errorf("waiting for NATS at %s: %w: the connection was closed", l.State().URL, ErrNATSRefused)
		case <-t.C:
		}
	}
	return nil
}

// Connect dials url like Dial and waits up to 15 s for the first
// connection; tests and tools that need NATS up at once use it.
func Connect(url, name string, log *slog.Logger, opts ...nats.Option) (*nats.Conn, jetstream.JetStream, error) {
	l, err := Dial(url, name, log, opts...)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := l.WaitConnected(ctx); err != nil {
		l.NC.Close()
		return nil, nil, err
	}
	return l.NC, l.JS, nil
}

// permanentCodes are JetStream API errors that no retry can fix: a stream
// configuration the server refuses.
var permanentCodes = map[jetstream.ErrorCode]bool{
	10003: true, // bad request
	10052: true, // invalid stream configuration
	10058: true, // stream name in use with a different configuration
	10061: true, // replicas cannot be updated
	10065: true, // subjects overlap with an existing stream
	10074: true, // replicas > 1 not supported in non-clustered mode
}

// permanent reports whether err is one that retrying cannot fix: a
// JetStream configuration the server refuses, or one marked with Fatal.
func permanent(err error) bool {
	var apiErr *jetstream.APIError
	var fatal *fatalError
	return errors.As(err, &fatal) || errors.As(err, &apiErr) && permanentCodes[apiErr.ErrorCode]
}

// Fatal marks err as one Retry must return at once.
func Fatal(err error) error { return &fatalError{err: err} }

type fatalError struct{ err error }

func (e *fatalError) Error() string { return e.err.Error() }
func (e *fatalError) Unwrap() error { return e.err }

// Retry runs fn until it succeeds, fails with a permanent error, or ctx
// ends, with backoff between attempts, each given at most attemptTimeout.
// JetStream set-up fails for a while on a cluster that is starting ("no
// suitable peers for placement", no meta leader yet) or while NATS is
// down; such failures are retried, and logged when they start and when
// the error changes.
func Retry(ctx context.Context, log *slog.Logger, what string, fn func(context.Context) error) error {
	const attemptTimeout = 10 * time.Second
	var failing logx.Condition[string]
	for attempt := 0; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		err := fn(actx)
		cancel()
		if err == nil {
			if attempt > 0 {
				log.Info(what+": done", "attempts", attempt+1)
			}
			return nil
		}
		if permanent(err) {
			return err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w (last error: %w)", what, ctx.Err(), err)
		}
		hint := ""
		if strings.Contains(err.Error(), "no suitable peers") {
			hint = "a new cluster places streams once its nodes have joined; --replicas must not exceed the number of NATS nodes"
		}
		failing.Hold(ctx, log, slog.LevelWarn, err.Error(), what+": retrying", "err", err, "attempt", attempt+1, "hint", hint)
		t := time.NewTimer(backoff(attempt))
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%s: %w (last error: %w)", what, ctx.Err(), err)
		case <-t.C:
		}
	}
}

// publishAsyncTimeout bounds how long an async publish stays pending
// without an acknowledgement.
const publishAsyncTimeout = 30 * time.Second
