// Package api is the operator's console of a running coordinator: the
// HTTP handlers for listing, inspecting, pausing, deleting and re-weighting
// URLs, reading the stored copy, exporting and importing, the charts'
// time series, and the web dashboard served at / (plain HTML, CSS and
// JavaScript embedded in the binary; nothing is fetched from elsewhere).
//
// It works over a small Backend the coordinator satisfies, so it holds no
// scheduling logic of its own; the read-only parts also run on a store
// alone (the CLI's offline fallback) with a nil Views. The coordinator's
// Handler routes the console's handlers (Server.Serve…) on the one mux of
// its HTTP API, and its own handlers answer through WriteJSON and
// WriteError too.
package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/freshcrawl/freshcrawl/internal/optcheck"
	"github.com/freshcrawl/freshcrawl/internal/schedule"
	"github.com/freshcrawl/freshcrawl/internal/seed"
	"github.com/freshcrawl/freshcrawl/store"
)

// Views is what the scheduler knows that the store does not: the state of
// active URLs (given up, due, scheduled), their intervals in force and
// whether a fetch is in flight.
type Views interface {
	// URLViews returns the scheduler's view of each known URL of urls.
	URLViews(urls []string) map[string]schedule.URLView
	// URLsIn lists the URLs in a scheduler state, sorted.
	URLsIn(state string) []string
}

// Backend is what the console needs of a running coordinator.
type Backend interface {
	Views
	// Store is the coordinator's store. The console writes it only
	// through the lifecycle methods below, which keep the schedule in
	// step.
	Store() *store.DB
	// Overview is the coordinator's numbers now.
	Overview() Overview
	Hosts() []schedule.HostView
	Captures() []schedule.CaptureStatus
	Probes() []schedule.ProbeStatus

	// Pause, Resume, Delete and SetSeed change URLs in the store and the
	// live schedule and return how many they changed. Delete also takes
	// the URLs' queued tasks off the task queue.
	Pause(urls []string) (int, error)
	Resume(urls []string) (int, error)
	Delete(ctx context.Context, urls []string, purge bool) (int, error)
	SetSeed(urls []string, ch store.SeedChange) (int, error)
	// Adopt schedules URLs an import just added to the store.
	Adopt(recs []store.URL)
}

// Overview is what the overview page shows and charts.
type Overview struct {
	Time time.Time `json:"time"`
	// Queue: tasks waiting, delivered and not acknowledged, delivered
	// more than once, and results not folded yet.
	Pending     int `json:"pending"`
	AckPending  int `json:"ack_pending"`
	Redelivered int `json:"redelivered"`
	Unfolded    int `json:"unfolded"`
	InFlight    int `json:"in_flight"`
	MaxInFlight int `json:"max_in_flight"`

	URLs       int      `json:"urls"`
	Hosts      int      `json:"hosts"`
	Disallowed int      `json:"disallowed"`
	Gone       int      `json:"gone"`
	GivenUp    int      `json:"given_up"`
	Capped     int      `json:"hosts_at_cap"`
	Workers    []string `json:"workers"`

	Fetches int64            `json:"fetches"`
	Changes int64            `json:"changes"`
	Failed  int64            `json:"failed"`
	Errors  map[string]int64 `json:"errors"`

	Policy     string  `json:"policy"`
	Budget     float64 `json:"budget_per_s"`
	InUse      float64 `json:"budget_in_use_per_s"`
	Unabsorbed float64 `json:"budget_unabsorbed_per_s"`
	// Freshness is the plan's model freshness; FreshnessLo and
	// FreshnessHi bound it with every rate estimate at the upper or lower
	// end of its 90% interval.
	Freshness   float64 `json:"model_freshness"`
	FreshnessLo float64 `json:"model_freshness_lo"`
	FreshnessHi float64 `json:"model_freshness_hi"`
	Age         float64 `json:"model_age_s"`
}

// Options tune a Server. Start from DefaultOptions: a field's value is
// its value, and New refuses what Validate refuses.
type Options struct {
	// Every is the sampling period of the charts' series; an hour of
	// samples is kept.
	Every time.Duration
	// Log receives structured logs; nil is slog.Default().
	Log *slog.Logger
	// AllowPrivateWebhooks lets an import's seeds name webhooks on
	// non-public addresses, as seeding may (notify.Options.AllowPrivate).
	AllowPrivateWebhooks bool
}

// DefaultOptions are the defaults of a console server.
func DefaultOptions() Options { return Options{Every: 5 * time.Second} }

// Validate reports every field New would refuse, each by its name.
func (o Options) Validate() error {
	var errs optcheck.Errors
	if o.Every <= 0 {
		errs.Check("Every", fmt.Errorf("must be > 0, got %s", o.Every))
	}
	return errs.Err()
}

// Server serves the console over a Backend.
type Server struct {
	b      Backend
	log    *slog.Logger
	series *series
	seeds  seed.Parser // the rules of an import's seed fields
}

// New returns a console server; Run must run for the charts to fill.
func New(b Backend, o Options) (*Server, error) {
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("console options: %w", err)
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	return &Server{b: b, log: o.Log, series: newSeries(o.Every, time.Hour), seeds: seed.Parser{AllowPrivateWebhooks: o.AllowPrivateWebhooks}}, nil
}

// Run samples the backend's overview until ctx is done. It may run again
// after it returned (a coordinator that stepped down and took its lease
// back): the samples so far are kept.
func (s *Server) Run(ctx context.Context) error {
	t := time.NewTicker(s.series.every)
	defer t.Stop()
	s.series.open()
	s.series.add(s.b.Overview())
	for {
		select {
		case <-ctx.Done():
			s.series.close()
			return nil
		case <-t.C:
			s.series.add(s.b.Overview())
		}
	}
}

// The console's handlers, which the coordinator's Handler routes
// alongside its own. Each answers one route, named in its comment.

// ServeOverview answers GET /api/overview: Overview now.
func (s *Server) ServeOverview(w http.ResponseWriter, r *http.Request) {
	WriteJSON(w, http.StatusOK, s.b.Overview())
}

// ServeCapture answers GET /api/capture: the capture URLs' period, phases
// and recall.
func (s *Server) ServeCapture(w http.ResponseWriter, r *http.Request) {
	WriteJSON(w, http.StatusOK, nonNil(s.b.Captures()))
}

// ServeContent answers GET /api/content?url=U: the stored copy.
func (s *Server) ServeContent(w http.ResponseWriter, r *http.Request) {
	serveContent(s.b.Store(), w, r)
}

// ServeDiff answers GET /api/diff?url=U&seq=N.
func (s *Server) ServeDiff(w http.ResponseWriter, r *http.Request) {
	serveDiff(s.b.Store(), w, r)
}

// ServeExport answers GET /api/export: every URL as JSON lines.
func (s *Server) ServeExport(w http.ResponseWriter, r *http.Request) {
	serveExport(s.b.Store(), w, r)
}

// ServePause, ServeResume, ServeDelete and ServeSet answer POST
// /api/url/pause, /resume, /delete and /set.
func (s *Server) ServePause(w http.ResponseWriter, r *http.Request) {
	s.lifecycle(w, r, opPause)
}

func (s *Server) ServeResume(w http.ResponseWriter, r *http.Request) {
	s.lifecycle(w, r, opResume)
}

func (s *Server) ServeDelete(w http.ResponseWriter, r *http.Request) {
	s.lifecycle(w, r, opDelete)
}

func (s *Server) ServeSet(w http.ResponseWriter, r *http.Request) {
	s.lifecycle(w, r, opSet)
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// WriteJSON answers with code and v as indented JSON: the one encoding of
// every JSON answer of the API. It encodes v before it writes the status
// line, so that a value JSON cannot carry (NaN, Inf) is a 500 with the
// reason instead of a 200 with an empty body.
func WriteJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	w.Header().Set("Content-Type", "application/json")
	if err != nil {
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintf(w, "{\"error\": %q}\n", "encode response: "+err.Error())
		return
	}
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}

// Error is the body of every error answer.
type Error struct {
	Error string `json:"error"`
}

// WriteError answers with code and Error{err}.
func WriteError(w http.ResponseWriter, code int, err error) {
	WriteJSON(w, code, Error{Error: err.Error()})
}

func statusOf(err error) int {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, errBadRequest):
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

// errBadRequest marks errors in what the client sent.
var errBadRequest = errors.New("bad request")

func badRequest(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errBadRequest, fmt.Sprintf(format, args...))
}
