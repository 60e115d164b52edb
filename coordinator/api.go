package coordinator

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/freshcrawl/freshcrawl/internal/api"
	"github.com/freshcrawl/freshcrawl/internal/broker"
	"github.com/freshcrawl/freshcrawl/internal/notify"
	"github.com/freshcrawl/freshcrawl/internal/schedule"
	"github.com/freshcrawl/freshcrawl/internal/version"
	"github.com/freshcrawl/freshcrawl/store"
)

// Status is what `freshcrawl status` prints and GET /api/status returns.
type Status struct {
	// Version is the coordinator's (freshcrawl --version).
	Version       string           `json:"version"`
	Time          time.Time        `json:"time"`
	Queue         broker.QueueInfo `json:"queue"`
	InFlight      int              `json:"in_flight"`
	MaxInFlight   int              `json:"max_in_flight"`
	Workers       []string         `json:"workers"`
	URLs          int              `json:"urls"`
	Hosts         int              `json:"hosts"`
	Disallowed    int              `json:"disallowed"`
	Gone          int              `json:"gone"`
	Fetches       int64            `json:"fetches"`
	Changes       int64            `json:"changes"`
	Failed        int64            `json:"failed"`
	FetchesPerMin int64            `json:"fetches_per_min"`
	ChangesPerMin int64            `json:"changes_per_min"`
	Errors        map[string]int64 `json:"errors"`

	Policy      string  `json:"policy"`
	Budget      float64 `json:"budget_per_s"`
	BudgetInUse float64 `json:"budget_in_use_per_s"`
	Unabsorbed  float64 `json:"budget_unabsorbed_per_s"`
	// ModelFreshness is the model's expected freshness of the copies as
	// of the last plan (docs/design.md §3.3: a URL never fetched is
	// stale, a copy fetched a ago is fresh with probability E[e^{−λa}]
	// under the URL's posterior); PlanFreshness is what the plan's
	// frequencies are expected to hold in the steady state.
	ModelFreshness float64   `json:"model_freshness"`
	PlanFreshness  float64   `json:"plan_freshness"`
	ModelAge       float64   `json:"model_age_s"`
	GivenUp        int       `json:"given_up"`
	CappedHosts    int       `json:"hosts_at_cap"`
	PlannedAt      time.Time `json:"planned_at,omitzero"`

	// ModelFreshnessLo and ModelFreshnessHi are the model's freshness with
	// every change-rate estimate at the upper or lower end of its 90%
	// interval.
	ModelFreshnessLo float64 `json:"model_freshness_lo"`
	ModelFreshnessHi float64 `json:"model_freshness_hi"`

	// Capture URLs (Ashish, Kulkarni & Wang): how many, how many still learning, the
	// mean expected change recall of the learnt ones, and the first few.
	CaptureURLs     int                      `json:"capture_urls"`
	CaptureLearning int                      `json:"capture_learning"`
	CaptureRecall   float64                  `json:"capture_expected_recall"`
	Capture         []schedule.CaptureStatus `json:"capture,omitempty"`

	// Probes are the keyword-search sources and their last round.
	Probes []schedule.ProbeStatus `json:"probes,omitempty"`

	// Signals counts the sitemap and feed fetches since this
	// coordinator started, and the entries they listed.
	Signals SignalStatus `json:"signals"`
	// Hints are the fetches made because a URL tied to the fetched one
	// changed, or a sitemap said it had, by what said so, with how many
	// found a change (docs/design.md §3.8).
	Hints []schedule.CoChangeStats `json:"hints,omitempty"`

	// Webhooks are the webhook queues and the first dead letters.
	Webhooks *notify.Status `json:"webhooks,omitempty"`
	// Role is "active": this coordinator holds the lease (a standby
	// answers with "standby" and no other field).
	Role string `json:"role"`
	// NATS is the coordinator's connection to NATS.
	NATS *broker.LinkState `json:"nats,omitempty"`
	// Lease is the coordinator lease this coordinator holds.
	Lease *broker.LeaseInfo `json:"lease,omitempty"`
	// Store is the store's file and the last fold that failed, if the
	// store refuses writes now.
	Store StoreStatus `json:"store"`
}

// StoreStatus is the store part of Status.
type StoreStatus struct {
	Path      string       `json:"path"`
	FoldError *foldFailure `json:"fold_error,omitempty"`
}

// deadLettersShown is how many dead letters status lists.
const deadLettersShown = 20

// Status reports the coordinator's state now.
func (c *Coordinator) Status() Status {
	now := time.Now()
	s := Status{Version: version.String(), Time: now, InFlight: c.disp.InFlight(), MaxInFlight: c.opts.MaxInFlight, Policy: c.opts.Policy.Name(), Budget: c.opts.Budget}
	if q := c.queue.Load(); q != nil {
		s.Queue = *q
	}
	var caps []schedule.CaptureStatus
	c.disp.Do(func(sc *schedule.Scheduler) {
		plan, planAt, inUse := sc.Plan()
		s.URLs, s.Hosts, s.Disallowed, s.Gone = sc.Len(), sc.Hosts(), sc.Disallowed(), sc.Gone()
		s.ModelFreshness, s.PlanFreshness, s.ModelAge, s.GivenUp, s.CappedHosts = plan.ModelFreshness, plan.Freshness, plan.Age, plan.GivenUp, plan.CappedHosts
		s.Unabsorbed, s.PlannedAt, s.BudgetInUse = plan.Unabsorbed, planAt, inUse
		_, s.ModelFreshnessLo, s.ModelFreshnessHi = sc.FreshnessBand()
		caps = sc.CaptureStatus(math.MaxInt)
		s.Hints = sc.CoChange()
	})
	s.Probes = c.probeStatus()
	s.Signals = c.sigc.status()
	c.workers.Lock()
	for id, at := range c.workers.seen {
		if now.Sub(at) <= time.Minute {
			s.Workers = append(s.Workers, id)
		}
	}
	c.workers.Unlock()
	sort.Strings(s.Workers)
	learnt := 0
	for _, cs := range caps {
		s.CaptureURLs++
		if cs.Learning {
			s.CaptureLearning++
		} else if cs.ExpectedRecall > 0 {
			learnt++
			s.CaptureRecall += cs.ExpectedRecall
		}
	}
	if learnt > 0 {
		s.CaptureRecall /= float64(learnt)
	}
	c.m.captureRecall.Set(finite(s.CaptureRecall))
	c.m.captureLearning.Set(float64(s.CaptureLearning))
	s.Capture = caps[:min(len(caps), 20)]
	// The totals are the store's, kept by the folds, so they count what
	// every coordinator on this store folded, not only this one.
	if tot, err := c.db.Totals(); err != nil {
		c.log.Warn("status: read the totals", "err", err)
	} else {
		s.Fetches, s.Changes, s.Failed, s.Errors = tot.Fetches, tot.Changes, tot.Failed, tot.Errors
	}
	if s.Errors == nil {
		s.Errors = map[string]int64{}
	}
	s.FetchesPerMin = c.fetchWin.lastMinute(now)
	s.ChangesPerMin = c.chgWin.lastMinute(now)
	if ws, err := c.hooks.Status(deadLettersShown); err != nil {
		c.log.Warn("webhook status", "err", err)
	} else if len(ws.Webhooks) > 0 || len(ws.Queued) > 0 || ws.Dead > 0 || ws.Delivered > 0 {
		s.Webhooks = &ws
	}
	s.Role = "active"
	if c.opts.Link != nil {
		ls := c.opts.Link.State()
		s.NATS = &ls
	}
	if l := c.lease.Load(); l != nil {
		li := l.Info()
		s.Lease = &li
	}
	s.Store = StoreStatus{Path: c.db.Path(), FoldError: c.foldErr.Load()}
	// One bad figure must not make the whole status unencodable: JSON has
	// no NaN or Inf.
	for _, f := range []*float64{&s.Budget, &s.BudgetInUse, &s.Unabsorbed, &s.ModelFreshness, &s.PlanFreshness, &s.ModelAge, &s.CaptureRecall} {
		*f = finite(*f)
	}
	return s
}

// health says whether the coordinator can do its work now, and if not,
// why: NATS unreachable, or the store refusing folds (a full disk).
func (c *Coordinator) health() (ok bool, lines []string) {
	ok = true
	if c.opts.Link != nil {
		ls := c.opts.Link.State()
		if ls.Connected() {
			lines = append(lines, fmt.Sprintf("nats: connected to %s", ls.URL))
		} else {
			ok = false
			lines = append(lines, fmt.Sprintf("nats: %s since %s (%s)", ls.State, ls.Since.Format(time.RFC3339), ls.LastError))
		}
	}
	if f := c.foldErr.Load(); f != nil {
		ok = false
		lines = append(lines, fmt.Sprintf("store: folds failing since %s: %s", f.Since.Format(time.RFC3339), f.Err))
	} else {
		lines = append(lines, "store: "+c.db.Path())
	}
	if l := c.lease.Load(); l != nil {
		lines = append(lines, fmt.Sprintf("role: active coordinator (lease fence %d)", l.Fence()))
	}
	return ok, lines
}

// ServeHealth answers GET /healthz: 200 and "ok" when the process can do
// its work, 503 and the reason otherwise, then one line per part.
func ServeHealth(w http.ResponseWriter, ok bool, lines []string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	head := "ok"
	if !ok {
		head = "unavailable"
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	fmt.Fprintln(w, head)
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
}

// finite is x, or 0 when x is NaN or infinite: JSON and Prometheus
// consumers get a number they can read.
func finite(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	return x
}

// Handler serves the HTTP API, the operator's console and /metrics: every
// route of the coordinator's HTTP server is registered here.
//
//	POST /api/seeds              seed lines in the body (as a seed file; Content-Type application/x-ndjson)
//	GET  /api/status             Status as JSON
//	GET  /api/url?url=U          the URL's record
//	GET  /api/versions?url=U     versions of a capture URL (&show=N for one, with text)
//	GET  /api/changes?after=N    the change log after sequence N (&limit=, &url=U for one URL)
//	POST /api/items?source=S     tracked items of a keyword-search source (JSON lines)
//	GET  /api/items?source=S     the tracked items with value, rate and last sync
//	GET  /api/webhooks           webhooks, their queues and dead letters
//	POST /api/webhooks/retry     dead letters back to their queues (body {"ids": [...]}, none: all)
//	POST /api/webhooks/drop      dead letters deleted (the same body)
//	GET  /api/backup             a consistent copy of the store (bbolt file)
//	GET  /api/estimates          every URL's host, weight and rate (JSON lines)
//	GET  /metrics                Prometheus metrics
//	GET  /healthz                200 "ok" or 503 and why (NATS, store)
//
// and the operator's console (internal/api):
//
//	GET  /                        the dashboard
//	GET  /ui/{file}               its assets
//	GET  /api/whoami              the role of the token sent: admin, read or open
//	GET  /api/overview            Overview now
//	GET  /api/series              the last hour of samples; /api/events streams new ones (SSE)
//	GET  /api/hosts               hosts: cap, Crawl-delay, backoff, robots, in flight, URLs, fetches
//	GET  /api/urls                URLs: filters, sort, cursor paging
//	GET  /api/url/show?url=U      one URL: record, schedule, estimate, fetches, changes, versions, copy
//	POST /api/url/pause           body Selection; also resume, delete (?purge=1), set (SetRequest)
//	GET  /api/content?url=U       the stored copy (&raw=1: the raw body as fetched, a download)
//	GET  /api/diff?url=U&seq=N    line diff of capture version N against N-1
//	GET  /api/capture             capture URLs: period, phases, recall
//	GET  /api/sources             keyword-search sources: rounds, coverage, speedup, freshness
//	GET  /api/export              every URL as JSON lines; POST /api/import?name=F takes them
//
// Every route but GET and HEAD takes a JSON body (api.RequireType), as the
// guard in front of the mux (api.Guard) also demands.
func (c *Coordinator) Handler() http.Handler {
	mux := http.NewServeMux()

	mux.HandleFunc("POST /api/seeds", c.handleSeeds)
	mux.HandleFunc("GET /api/status", func(w http.ResponseWriter, r *http.Request) { api.WriteJSON(w, http.StatusOK, c.Status()) })
	mux.HandleFunc("GET /api/url", c.handleURL)
	mux.HandleFunc("GET /api/versions", c.handleVersions)
	mux.HandleFunc("GET /api/changes", c.handleChanges)
	mux.HandleFunc("POST /api/items", c.handleAddItems)
	mux.HandleFunc("GET /api/items", func(w http.ResponseWriter, r *http.Request) { serveItems(c.db, w, r) })
	mux.HandleFunc("GET /api/webhooks", c.handleWebhooks)
	mux.HandleFunc("POST /api/webhooks/retry", c.handleDeadLetters(c.hooks.Retry))
	mux.HandleFunc("POST /api/webhooks/drop", c.handleDeadLetters(c.hooks.Drop))
	mux.HandleFunc("GET /api/backup", c.handleBackup)
	mux.HandleFunc("GET /api/estimates", c.handleEstimates)
	var g prometheus.Gatherer = c.m.reg
	if c.opts.Metrics != nil {
		g = prometheus.Gatherers{c.m.reg, c.opts.Metrics}
	}
	mux.Handle("GET /metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		ok, lines := c.health()
		ServeHealth(w, ok, lines)
	})

	con := c.console
	mux.HandleFunc("GET /{$}", api.ServeIndex)
	mux.Handle("GET /ui/", http.StripPrefix("/ui/", api.Assets()))
	mux.HandleFunc("GET /api/whoami", api.WhoAmI)
	mux.HandleFunc("GET /api/overview", con.ServeOverview)
	mux.HandleFunc("GET /api/series", con.ServeSeries)
	mux.HandleFunc("GET /api/events", con.ServeEvents)
	mux.HandleFunc("GET /api/hosts", con.ServeHosts)
	mux.HandleFunc("GET /api/urls", con.ServeURLs)
	mux.HandleFunc("GET /api/url/show", con.ServeShow)
	mux.HandleFunc("POST /api/url/pause", con.ServePause)
	mux.HandleFunc("POST /api/url/resume", con.ServeResume)
	mux.HandleFunc("POST /api/url/delete", con.ServeDelete)
	mux.HandleFunc("POST /api/url/set", con.ServeSet)
	mux.HandleFunc("GET /api/content", con.ServeContent)
	mux.HandleFunc("GET /api/diff", con.ServeDiff)
	mux.HandleFunc("GET /api/capture", con.ServeCapture)
	mux.HandleFunc("GET /api/sources", con.ServeSources)
	mux.HandleFunc("GET /api/export", con.ServeExport)
	mux.HandleFunc("POST /api/import", con.ServeImport)
	return mux
}

// handleBackup streams a consistent copy of the store: the state of one
// read transaction, written while folds go on.
func (c *Coordinator) handleBackup(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", `attachment; filename="freshcrawl.db"`)
	started := false
	_, err := c.db.BackupSized(w, func(n int64) {
		w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
		started = true
	})
	if err != nil {
		c.log.Warn("backup over the API", "err", err)
		if !started {
			api.WriteError(w, http.StatusInternalServerError, err)
		}
	}
}

// Estimate is one line of GET /api/estimates: what `freshcrawl plan
// --data` needs of a URL while a coordinator holds the store.
type Estimate struct {
	URL    string  `json:"url"`
	Host   string  `json:"host"`
	Weight float64 `json:"weight"`
	// Rate is the estimated change rate, changes per second (0: never
	// observed).
	Rate float64 `json:"rate"`
}

func (c *Coordinator) handleEstimates(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(w)
	err := c.db.ForEach(func(u store.URL) error {
		return enc.Encode(Estimate{URL: u.URL, Host: u.Host, Weight: u.Weight, Rate: u.Rate})
	})
	if err != nil {
		// Mid-stream: a last line the reader cannot decode as an
		// estimate says the list is cut short.
		_ = enc.Encode(map[string]string{"error": err.Error()})
	}
}

// handleWebhooks answers GET /api/webhooks: the configured webhooks,
// their queues and the dead-letter list (&limit=, default 100).
func (c *Coordinator) handleWebhooks(w http.ResponseWriter, r *http.Request) {
	limit, err := strconv.Atoi(r.URL.Query().Get("limit"))
	if err != nil || limit <= 0 || limit > 10000 {
		limit = 100
	}
	st, err := c.hooks.Status(limit)
	if err != nil {
		api.WriteError(w, http.StatusInternalServerError, err)
		return
	}
	api.WriteJSON(w, http.StatusOK, st)
}

// deadLetterRequest is the body of POST /api/webhooks/retry and /drop.
type deadLetterRequest struct {
	// IDs are dead letters' ids; with none, All must be true.
	IDs []string `json:"ids"`
	All bool     `json:"all"`
}

// handleDeadLetters answers a retry or drop of dead letters with
// {"n": how many}.
func (c *Coordinator) handleDeadLetters(op func([]string) (int, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !api.RequireType(w, r, "application/json") {
			return
		}
		var req deadLetterRequest
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			api.WriteError(w, http.StatusBadRequest, fmt.Errorf("body: want {\"ids\": [...]} or {\"all\": true}: %w", err))
			return
		}
		if len(req.IDs) == 0 && !req.All {
			api.WriteError(w, http.StatusBadRequest, errors.New(`body: give "ids", or "all": true for every dead letter`))
			return
		}
		n, err := op(req.IDs)
		if err != nil {
			code := http.StatusInternalServerError
			if errors.Is(err, store.ErrBadID) {
				code = http.StatusBadRequest
			}
			api.WriteError(w, code, err)
			return
		}
		api.WriteJSON(w, http.StatusOK, map[string]int{"n": n})
	}
}

func (c *Coordinator) handleSeeds(w http.ResponseWriter, r *http.Request) {
	if !api.RequireType(w, r, api.StreamTypes...) {
		return
	}
	name := r.URL.Query().Get("name")
	if name == "" {
		name = "request"
	}
	sum, err := c.AddSeeds(r.Body, name)
	if err != nil {
		api.WriteJSON(w, http.StatusBadRequest, map[string]any{"error": err.Error(), "summary": sum})
		return
	}
	api.WriteJSON(w, http.StatusOK, sum)
}

func (c *Coordinator) handleURL(w http.ResponseWriter, r *http.Request) {
	u := r.URL.Query().Get("url")
	rec, err := c.db.Get(u)
	if err != nil {
		api.WriteError(w, statusOf(err), err)
		return
	}
	api.WriteJSON(w, http.StatusOK, rec)
}

func (c *Coordinator) handleVersions(w http.ResponseWriter, r *http.Request) {
	serveVersions(c.db, w, r)
}

// serveVersions answers GET /api/versions from db (shared with the CLI's
// offline mode).
func serveVersions(db *store.DB, w http.ResponseWriter, r *http.Request) {
	u := r.URL.Query().Get("url")
	if u == "" {
		api.WriteError(w, http.StatusBadRequest, errors.New("missing url parameter"))
		return
	}
	if show := r.URL.Query().Get("show"); show != "" {
		n, err := strconv.ParseUint(show, 10, 64)
		if err != nil {
			api.WriteError(w, http.StatusBadRequest, fmt.Errorf("show=%q: want a version number", show))
			return
		}
		v, err := db.Version(u, n)
		if err != nil {
			api.WriteError(w, statusOf(err), err)
			return
		}
		api.WriteJSON(w, http.StatusOK, v)
		return
	}
	vs, err := db.Versions(u)
	if err != nil {
		api.WriteError(w, statusOf(err), err)
		return
	}
	if vs == nil {
		vs = []store.Version{}
	}
	api.WriteJSON(w, http.StatusOK, vs)
}

func (c *Coordinator) handleChanges(w http.ResponseWriter, r *http.Request) {
	after, _ := strconv.ParseUint(r.URL.Query().Get("after"), 10, 64)
	limit, err := strconv.Atoi(r.URL.Query().Get("limit"))
	if err != nil || limit <= 0 || limit > 10000 {
		limit = 100
	}
	var ch []store.Change
	if u := r.URL.Query().Get("url"); u != "" {
		ch, err = c.db.ChangesOf(u, after, limit) // one URL's changes, through its index
	} else {
		ch, err = c.db.Changes(after, limit)
	}
	if err != nil {
		api.WriteError(w, http.StatusInternalServerError, err)
		return
	}
	if ch == nil {
		ch = []store.Change{}
	}
	api.WriteJSON(w, http.StatusOK, ch)
}

func statusOf(err error) int {
	if errors.Is(err, store.ErrNotFound) {
		return http.StatusNotFound
	}
	return http.StatusInternalServerError
}

func (c *Coordinator) handleAddItems(w http.ResponseWriter, r *http.Request) {
	if !api.RequireType(w, r, api.StreamTypes...) {
		return
	}
	src := r.URL.Query().Get("source")
	if c.sourceByName(src) == nil {
		api.WriteError(w, http.StatusBadRequest, fmt.Errorf("unknown source %q (define it under sources: in the config file)", src))
		return
	}
	name := r.URL.Query().Get("name")
	if name == "" {
		name = "request"
	}
	sum, err := IngestItems(c.db, r.Body, name, src)
	if err != nil {
		api.WriteJSON(w, http.StatusBadRequest, map[string]any{"error": err.Error(), "summary": sum})
		return
	}
	api.WriteJSON(w, http.StatusOK, sum)
}

// ItemView is one tracked item as the API and CLI show it.
type ItemView struct {
	ID       string            `json:"id"`
	Value    *float64          `json:"value"`
	Rate     float64           `json:"rate_per_s"`
	LastSync *time.Time        `json:"last_sync"`
	Syncs    int64             `json:"syncs"`
	Changes  int64             `json:"changes"`
	Attrs    map[string]string `json:"attrs"`
}

// Items returns the views of source's tracked items.
func Items(db *store.DB, source string) ([]ItemView, error) {
	items, err := db.Items(source)
	if err != nil {
		return nil, err
	}
	out := make([]ItemView, 0, len(items))
	for _, it := range items {
		v := ItemView{ID: it.ID, Rate: it.Rate, Syncs: it.Syncs, Changes: it.Changes, Attrs: it.Attrs}
		if it.HasValue {
			val := it.Value
			v.Value = &val
		}
		if !it.LastSync.IsZero() {
			t := it.LastSync
			v.LastSync = &t
		}
		out = append(out, v)
	}
	return out, nil
}

// serveItems answers GET /api/items.
func serveItems(db *store.DB, w http.ResponseWriter, r *http.Request) {
	items, err := Items(db, r.URL.Query().Get("source"))
	if err != nil {
		api.WriteError(w, http.StatusInternalServerError, err)
		return
	}
	api.WriteJSON(w, http.StatusOK, items)
}
