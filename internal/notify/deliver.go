package notify

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/freshcrawl/freshcrawl/internal/logx"
	"github.com/freshcrawl/freshcrawl/internal/optcheck"
	"github.com/freshcrawl/freshcrawl/internal/seed"
	"github.com/freshcrawl/freshcrawl/store"
	"github.com/freshcrawl/freshcrawl/worker/fetch"
)

// routeCursor is the Deliverer's place in the change log.
const routeCursor = "webhooks"

// routeBatch is how many changes one transaction routes.
const routeBatch = 512

// Options configure a Deliverer. Start from DefaultOptions: every field
// is taken as it is, and NewDeliverer refuses what Validate refuses.
type Options struct {
	// Webhooks are the config's webhooks.
	Webhooks []Webhook
	// Secret signs the requests of webhooks without a secret of their own
	// and of every per-seed webhook.
	Secret string
	// Attempts failed deliveries of one event to one URL make it a dead
	// letter.
	Attempts int
	// Backoff is the wait after the first failure, doubled with each
	// further one up to MaxBackoff; each wait is drawn between half and
	// all of that, so that many events held by one receiver's outage do
	// not come back in lockstep.
	Backoff, MaxBackoff time.Duration
	// Timeout bounds one request.
	Timeout time.Duration
	// AllowPrivate lets webhooks (the config's and the seeds') name
	// loopback, private, link-local and reserved addresses. Without it
	// such a URL is refused when it is given, and a delivery whose host
	// resolves to one is refused at connect and dead-lettered: whoever
	// names a webhook must not thereby reach the crawler's own network or
	// the cloud metadata service.
	AllowPrivate bool
	// UserAgent is sent with every request.
	UserAgent string
	// Log receives structured logs (nil: slog.Default()).
	Log *slog.Logger
}

// DefaultOptions are the defaults of the webhook settings; the config
// takes them from here. Ten failed deliveries make a dead letter: with
// the default backoff they span about 8½ minutes (1+2+…+256 s), enough to
// ride out a receiver's restart, short enough that an operator hears of
// a broken one the same hour.
func DefaultOptions() Options {
	return Options{Attempts: 10, Backoff: time.Second, MaxBackoff: 10 * time.Minute, Timeout: 10 * time.Second, UserAgent: "freshcrawl-webhook"}
}

// Validate reports every field NewDeliverer would refuse, each by its
// name.
func (o Options) Validate() error {
	var errs optcheck.Errors
	if o.Attempts < 1 {
		errs.Check("Attempts", fmt.Errorf("must be ≥ 1, got %d", o.Attempts))
	}
	if o.Backoff <= 0 {
		errs.Check("Backoff", fmt.Errorf("must be > 0, got %s", o.Backoff))
	}
	switch {
	case o.MaxBackoff <= 0:
		errs.Check("MaxBackoff", fmt.Errorf("must be > 0, got %s", o.MaxBackoff))
	case o.MaxBackoff < o.Backoff:
		errs.Check("MaxBackoff", fmt.Errorf("%s is shorter than the backoff, %s", o.MaxBackoff, o.Backoff))
	}
	if o.Timeout <= 0 {
		errs.Check("Timeout", fmt.Errorf("must be > 0, got %s", o.Timeout))
	}
	if o.UserAgent == "" {
		errs.Check("UserAgent", errors.New("must not be empty"))
	}
	if !o.AllowPrivate {
		for i, w := range o.Webhooks {
			errs.Check(fmt.Sprintf("Webhooks[%d].URL", i), seed.CheckWebhookHost(w.URL))
		}
	}
	return errs.Err()
}

// Deliverer routes the change log to webhooks and delivers it: one lane
// per webhook URL, each sending one event at a time, oldest first, so a
// receiver sees its events in order and a slow or dead one holds up no
// other.
type Deliverer struct {
	db      *store.DB
	o       Options
	client  *http.Client
	secrets map[string]string // webhook URL → secret
	wake    chan struct{}

	mu    sync.Mutex
	lanes map[string]chan struct{} // webhook URL → its lane's wake-up
	ctx   context.Context          // Run's, for lanes started later

	delivered, failed, dead atomic.Int64
	lanesWG                 sync.WaitGroup
	// unsigned says once that seeds' webhooks go without a signature.
	unsigned logx.Condition[bool]
}

// NewDeliverer returns a deliverer of db's change log. A store that never
// had one starts at its newest change: its history is not sent as new.
func NewDeliverer(db *store.DB, o Options) (*Deliverer, error) {
	if db == nil {
		return nil, errNoStore
	}
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("webhook options: %w", err)
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	// The cursor is set here, before the caller folds anything: a change
	// logged between construction and Run is routed, not skipped.
	if _, err := db.InitCursor(routeCursor); err != nil {
		return nil, err
	}
	d := &Deliverer{db: db, o: o, client: newClient(o), secrets: map[string]string{}, wake: make(chan struct{}, 1), lanes: map[string]chan struct{}{}}
	for _, w := range o.Webhooks {
		if _, ok := d.secrets[w.URL]; ok {
			continue
		}
		s := w.Secret
		if s == "" {
			s = o.Secret
		}
		d.secrets[w.URL] = s
	}
	return d, nil
}

// Wake tells the deliverer the change log grew.
func (d *Deliverer) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run routes and delivers until ctx is done, then waits for its lanes.
func (d *Deliverer) Run(ctx context.Context) error {
	d.mu.Lock()
	d.ctx = ctx
	d.mu.Unlock()
	defer d.client.CloseIdleConnections()
	defer d.lanesWG.Wait()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	// A store that fails now may recover (a full disk freed): like the
	// routing below, the queues left by the last run are read again every
	// second rather than stopping the coordinator over it.
	var unreadable logx.Condition[string]
	for {
		queued, err := d.db.QueuedEndpoints()
		if err == nil {
			unreadable.End(ctx, d.o.Log, "webhook queues read again")
			for ep := range queued {
				d.kick(ep)
			}
			break
		}
		unreadable.Hold(ctx, d.o.Log, slog.LevelWarn, err.Error(), "reading the webhook queues failed; retrying every second", "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
	failing := false
	for {
		eps, more, err := d.db.RouteChanges(routeCursor, routeBatch, d.route)
		// The first failure of a run of them is logged, not every retry.
		switch {
		case err != nil && !failing:
			d.o.Log.Warn("routing changes to webhooks failed; retrying every second", "err", err)
		case err == nil && failing:
			d.o.Log.Info("routing changes to webhooks again")
		}
		failing = err != nil
		for _, ep := range eps {
			d.kick(ep)
		}
		if more && err == nil {
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-d.wake:
		case <-tick.C:
		}
	}
}

// route returns the deliveries of one change: one per distinct URL among
// the webhooks whose filters it passes and its URL's own webhook.
func (d *Deliverer) route(ch store.Change, rec *store.URL) ([]store.Delivery, error) {
	var targets []string
	for i := range d.o.Webhooks {
		w := &d.o.Webhooks[i]
		if w.match(ch) && !contains(targets, w.URL) {
			targets = append(targets, w.URL)
		}
	}
	if rec != nil && rec.Webhook != "" && !contains(targets, rec.Webhook) {
		targets = append(targets, rec.Webhook)
		if d.o.Secret == "" {
			d.unsigned.Hold(context.Background(), d.o.Log, slog.LevelWarn, true, "seeds' webhooks are sent unsigned: set --webhook-secret", "url", rec.Webhook)
		}
	}
	if len(targets) == 0 {
		return nil, nil
	}
	body, ev, err := encodeEvent(ch)
	if err != nil {
		return nil, err
	}
	out := make([]store.Delivery, len(targets))
	for i, t := range targets {
		out[i] = store.Delivery{Endpoint: t, EventID: ev.ID, Body: body}
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// kick wakes the lane of endpoint, starting it if needed.
func (d *Deliverer) kick(endpoint string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ctx == nil || d.ctx.Err() != nil {
		return
	}
	wake, ok := d.lanes[endpoint]
	if !ok {
		wake = make(chan struct{}, 1)
		d.lanes[endpoint] = wake
		d.lanesWG.Add(1)
		ctx := d.ctx
		go func() {
			defer d.lanesWG.Done()
			d.lane(ctx, endpoint, wake)
		}()
	}
	select {
	case wake <- struct{}{}:
	default:
	}
}

// lane delivers endpoint's queue, one event at a time.
func (d *Deliverer) lane(ctx context.Context, endpoint string, wake <-chan struct{}) {
	for ctx.Err() == nil {
		del, ok, err := d.db.NextDelivery(endpoint)
		if err != nil {
			d.o.Log.Warn("webhook queue", "url", endpoint, "err", err)
			if !sleep(ctx, time.Second) {
				return
			}
			continue
		}
		if !ok {
			select {
			case <-ctx.Done():
				return
			case <-wake:
			}
			continue
		}
		err = d.post(ctx, del)
		if ctx.Err() != nil {
			return // shutting down: the attempt does not count
		}
		if err == nil {
			if err := d.db.Delivered(del); err != nil {
				d.o.Log.Warn("webhook delivered, but not recorded; it will be sent again", "url", endpoint, "event", del.EventID, "err", err)
				sleep(ctx, time.Second)
				continue
			}
			d.delivered.Add(1)
			continue
		}
		d.failed.Add(1)
		del.Attempts++
		del.LastErr, del.LastAt = err.Error(), time.Now()
		// A refused address is the operator's policy, not an outage:
		// retrying would only put off telling them.
		var refused *refusedError
		deadNow := del.Attempts >= d.o.Attempts || errors.As(err, &refused)
		if deadNow {
			del.DeadAt = del.LastAt
		}
		if err := d.db.DeliveryFailed(del, deadNow); err != nil {
			d.o.Log.Warn("record failed webhook delivery", "url", endpoint, "err", err)
		}
		if deadNow {
			d.dead.Add(1)
			d.o.Log.Warn("webhook delivery gave up: event moved to the dead-letter list", "url", endpoint, "event", del.EventID, "attempts", del.Attempts, "err", del.LastErr)
			continue
		}
		if del.Attempts == 1 {
			d.o.Log.Info("webhook delivery failed; retrying with backoff", "url", endpoint, "event", del.EventID, "err", del.LastErr)
		}
		if !sleep(ctx, d.backoff(del.Attempts)) {
			return
		}
	}
}

// backoff is the wait after the n-th failed attempt.
func (d *Deliverer) backoff(n int) time.Duration {
	b := d.o.Backoff
	for i := 1; i < n && b < d.o.MaxBackoff; i++ {
		b *= 2
	}
	b = min(b, d.o.MaxBackoff)
	return b/2 + rand.N(b/2+1)
}

func sleep(ctx context.Context, dt time.Duration) bool {
	t := time.NewTimer(dt)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// post sends one delivery; any answer but 2xx is a failure.
func (d *Deliverer) post(ctx context.Context, del store.Delivery) error {
	rctx, cancel := context.WithTimeout(ctx, d.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, del.Endpoint, bytes.NewReader(del.Body))
	if err != nil {
		return fmt.Errorf("webhook request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", d.o.UserAgent)
	req.Header.Set(eventIDHeader, del.EventID)
	if s := d.secret(del.Endpoint); s != "" {
		req.Header.Set(signatureHeader, sign(s, del.Body))
	}
	resp, err := d.client.Do(req)
	if err != nil {
		if addr, ok := fetch.BlockedAddr(err); ok {
			return &refusedError{host: req.URL.Hostname(), addr: addr}
		}
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	switch {
	case resp.StatusCode >= 300 && resp.StatusCode <= 399:
		// The receiver's Location goes into the dead-letter list: cut
		// short, so an answer cannot fill it.
		loc := resp.Header.Get("Location")
		if len(loc) > 256 {
			loc = strings.ToValidUTF8(loc[:256], "") + "…"
		}
		return fmt.Errorf("webhook answered %s (Location %q): redirects are not followed", resp.Status, loc)
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return fmt.Errorf("webhook answered %s", resp.Status)
	}
	return nil
}

// refusedError is a delivery the address check refused.
type refusedError struct{ host, addr string }

func (e *refusedError) Error() string {
	return fmt.Sprintf("refused: webhook host %s is at %s, not a public address (loopback, private, link-local or reserved); --allow-private-webhooks allows it", e.host, e.addr)
}

// newClient is the webhook client. A receiver, or whoever named it in a
// seed, chooses where it connects, so it connects only where a fetch
// may (unless o.AllowPrivate): every connection is vetted after name
// resolution, no proxy from the environment hides the target from that
// check, and a redirect is an answer, not an instruction (it would turn
// a public receiver into a way to POST anywhere).
func newClient(o Options) *http.Client {
	dialer := fetch.SafeDialer(o.Timeout)
	if o.AllowPrivate {
		dialer.Control = nil
	}
	return &http.Client{
		Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           dialer.DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConnsPerHost:   2,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   o.Timeout,
			ResponseHeaderTimeout: o.Timeout,
			TLSClientConfig:       &tls.Config{MinVersion: tls.VersionTLS12},
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

func (d *Deliverer) secret(endpoint string) string {
	if s, ok := d.secrets[endpoint]; ok {
		return s
	}
	return d.o.Secret
}

// Retry moves dead letters (all when ids is empty) back to the heads of
// their queues and returns how many.
func (d *Deliverer) Retry(ids []string) (int, error) {
	eps, n, err := d.db.RetryDead(ids)
	for _, ep := range eps {
		d.kick(ep)
	}
	return n, err
}

// Drop deletes dead letters (all when ids is empty) and returns how many.
func (d *Deliverer) Drop(ids []string) (int, error) {
	return d.db.DropDead(ids)
}

// Status is what status and the dashboard show of webhooks.
type Status struct {
	// Webhooks are the config's, by name and URL.
	Webhooks []WebhookView `json:"webhooks"`
	// Queued are the deliveries waiting, by webhook URL.
	Queued map[string]int `json:"queued"`
	// Delivered, Failed and DeadLettered count since the start.
	Delivered    int64 `json:"delivered"`
	Failed       int64 `json:"failed_attempts"`
	DeadLettered int64 `json:"dead_lettered"`
	// Dead is the size of the dead-letter list; DeadLetters its first
	// entries.
	Dead        int          `json:"dead"`
	DeadLetters []DeadLetter `json:"dead_letters"`
}

// WebhookView is a configured webhook without its secret.
type WebhookView struct {
	Name         string   `json:"name"`
	URL          string   `json:"url"`
	Hosts        []string `json:"hosts,omitempty"`
	Prefixes     []string `json:"prefixes,omitempty"`
	MinMagnitude float64  `json:"min_magnitude,omitempty"`
	Signed       bool     `json:"signed"`
}

// DeadLetter is one entry of the dead-letter list.
type DeadLetter struct {
	ID       string    `json:"id"`
	URL      string    `json:"url"`
	EventID  string    `json:"event_id"`
	Seq      uint64    `json:"seq"`
	Attempts int       `json:"attempts"`
	LastErr  string    `json:"last_err"`
	DeadAt   time.Time `json:"dead_at"`
}

// Counts are the deliveries, failed attempts and dead letters since the
// start.
func (d *Deliverer) Counts() (delivered, failed, dead int64) {
	return d.delivered.Load(), d.failed.Load(), d.dead.Load()
}

// Status reports the webhooks, their queues and up to limit dead letters.
func (d *Deliverer) Status(limit int) (Status, error) {
	s := Status{Delivered: d.delivered.Load(), Failed: d.failed.Load(), DeadLettered: d.dead.Load(), Webhooks: []WebhookView{}, DeadLetters: []DeadLetter{}}
	for _, w := range d.o.Webhooks {
		s.Webhooks = append(s.Webhooks, WebhookView{Name: w.Name, URL: w.URL, Hosts: w.Hosts, Prefixes: w.Prefixes, MinMagnitude: w.MinMagnitude, Signed: d.secret(w.URL) != ""})
	}
	q, err := d.db.QueuedEndpoints()
	if err != nil {
		return s, err
	}
	s.Queued = q
	dl, total, err := d.db.DeadLetters(limit)
	if err != nil {
		return s, err
	}
	s.Dead = total
	for _, x := range dl {
		s.DeadLetters = append(s.DeadLetters, DeadLetter{ID: x.ID(), URL: x.Endpoint, EventID: x.EventID, Seq: x.Seq, Attempts: x.Attempts, LastErr: x.LastErr, DeadAt: x.DeadAt})
	}
	sort.SliceStable(s.DeadLetters, func(i, j int) bool { return s.DeadLetters[i].DeadAt.Before(s.DeadLetters[j].DeadAt) })
	return s, nil
}

// Unsigned reports whether some configured webhook has no secret at all.
func (d *Deliverer) Unsigned() bool {
	for _, w := range d.o.Webhooks {
		if d.secret(w.URL) == "" {
			return true
		}
	}
	return false
}
