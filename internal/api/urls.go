package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/freshcrawl/freshcrawl/estimate"
	"github.com/freshcrawl/freshcrawl/internal/schedule"
	"github.com/freshcrawl/freshcrawl/internal/seed"
	"github.com/freshcrawl/freshcrawl/store"
)

// URL states, in order of precedence: what `urls --state` and
// /api/urls?state= filter on and what the console shows.
const (
	statePaused     = store.StatePaused
	stateGone       = store.StateGone
	stateDisallowed = store.StateDisallowed
	stateFailed     = store.StateFailed
	stateGivenUp    = schedule.StateGivenUp
	stateDue        = schedule.StateDue
	stateScheduled  = schedule.StateScheduled
)

// States lists every state a URL can be in.
var States = []string{statePaused, stateGone, stateDisallowed, stateFailed, stateGivenUp, stateDue, stateScheduled}

// z90 is the normal quantile of a two-sided 90% interval.
const z90 = 1.6448536269514722

// ListQuery is a URL listing as `freshcrawl urls` and GET /api/urls take it.
type ListQuery struct {
	Host   string `json:"host,omitempty"`
	Prefix string `json:"prefix,omitempty"`
	Search string `json:"q,omitempty"`
	Mode   string `json:"mode,omitempty"`
	State  string `json:"state,omitempty"`
	Sort   string `json:"sort,omitempty"`
	Desc   bool   `json:"desc,omitempty"`
	After  string `json:"after,omitempty"`
	Limit  int    `json:"limit,omitempty"`
}

// Values encodes q as URL query parameters.
func (q ListQuery) Values() url.Values {
	v := url.Values{}
	set := func(k, s string) {
		if s != "" {
			v.Set(k, s)
		}
	}
	set("host", q.Host)
	set("prefix", q.Prefix)
	set("q", q.Search)
	set("mode", q.Mode)
	set("state", q.State)
	set("sort", q.Sort)
	set("after", q.After)
	if q.Desc {
		v.Set("desc", "1")
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	return v
}

// parseListQuery reads a ListQuery from URL query parameters.
func parseListQuery(v url.Values) (ListQuery, error) {
	q := ListQuery{Host: strings.ToLower(v.Get("host")), Prefix: v.Get("prefix"), Search: v.Get("q"), Mode: v.Get("mode"),
		State: v.Get("state"), Sort: v.Get("sort"), After: v.Get("after")}
	switch v.Get("desc") {
	case "", "0", "false":
	case "1", "true":
		q.Desc = true
	default:
		return q, badRequest("desc=%q: want 1 or 0", v.Get("desc"))
	}
	if l := v.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n <= 0 || n > store.MaxLimit {
			return q, badRequest("limit=%q: want 1..%d", l, store.MaxLimit)
		}
		q.Limit = n
	}
	return q, q.check()
}

func (q ListQuery) check() error {
	if q.Mode != "" && q.Mode != "freshness" && q.Mode != "capture" {
		return badRequest("mode %q: want freshness or capture", q.Mode)
	}
	if q.State != "" && !slices.Contains(States, q.State) {
		return badRequest("state %q: want one of %s", q.State, strings.Join(States, ", "))
	}
	if q.Sort != "" && !slices.Contains(store.Sorts, q.Sort) {
		return badRequest("sort %q: want one of %s", q.Sort, strings.Join(store.Sorts, ", "))
	}
	return nil
}

// Row is one URL of a listing.
type Row struct {
	URL         string        `json:"url"`
	Host        string        `json:"host"`
	Mode        string        `json:"mode"`
	Weight      float64       `json:"weight"`
	State       string        `json:"state"`
	Rate        float64       `json:"rate_per_s"`
	RateLo      float64       `json:"rate_lo_per_s"`
	RateHi      float64       `json:"rate_hi_per_s"`
	Interval    time.Duration `json:"interval"`
	NextDue     time.Time     `json:"next_due,omitzero"`
	InFlight    bool          `json:"in_flight,omitempty"`
	LastFetch   time.Time     `json:"last_fetch,omitzero"`
	LastChange  time.Time     `json:"last_change,omitzero"`
	Fetches     int64         `json:"fetches"`
	Changes     int64         `json:"changes"`
	Errors      int64         `json:"errors"`
	LastErrKind string        `json:"last_err_kind,omitempty"`
}

// ListPage is one page of a listing.
type ListPage struct {
	URLs  []Row  `json:"urls"`
	Next  string `json:"next,omitempty"`
	Total int    `json:"total"` // -1 when counting would cost a scan
}

// stateOf is the state of u given the scheduler's view (nil: offline,
// where due and scheduled come from the stored next due time).
func stateOf(u *store.URL, v *schedule.URLView, now time.Time) string {
	if st := store.RecordState(u); st != "" {
		return st
	}
	if v != nil {
		return v.State
	}
	if !u.NextDue.After(now) {
		return stateDue
	}
	return stateScheduled
}

// rateBounds is the 90% interval of a stored estimate (the rate itself
// when no error is known yet).
func rateBounds(rate, se float64) (float64, float64) {
	if !(se > 0) {
		return rate, rate
	}
	lo, hi := estimate.RateInterval(rate, se, z90)
	if math.IsInf(hi, 0) {
		hi = math.MaxFloat64
	}
	return lo, hi
}

func row(u *store.URL, v *schedule.URLView, now time.Time) Row {
	r := Row{URL: u.URL, Host: u.Host, Mode: u.Mode, Weight: u.Weight, State: stateOf(u, v, now), Rate: u.Rate, Interval: u.Interval, NextDue: u.NextDue,
		LastFetch: u.LastFetch, LastChange: u.LastChange, Fetches: u.Fetches, Changes: u.Changes, Errors: u.Errors, LastErrKind: u.LastErrKind}
	r.RateLo, r.RateHi = rateBounds(u.Rate, u.RateSE)
	if v != nil {
		r.Interval, r.NextDue, r.InFlight = v.Interval, v.NextDue, v.InFlight
	}
	return r
}

// List answers a listing from the store, with the scheduler's views when
// views is not nil (offline, "given up" cannot be told and due and
// scheduled follow the stored next due time).
func List(db *store.DB, views Views, q ListQuery) (ListPage, error) {
	if err := q.check(); err != nil {
		return ListPage{}, err
	}
	now := time.Now()
	sq := store.Query{Host: q.Host, Prefix: q.Prefix, Search: q.Search, Mode: q.Mode, Sort: q.Sort, Desc: q.Desc, After: q.After, Limit: q.Limit, State: q.State}
	if sq.Limit <= 0 {
		sq.Limit = 50
	}
	var keep func(u *store.URL) bool
	switch q.State {
	case stateGivenUp, stateDue, stateScheduled:
		sq.State = store.StateActive
		switch {
		case views != nil:
			// Never nil: a nil list would mean no restriction.
			sq.Only = append([]string{}, views.URLsIn(q.State)...)
		case q.State == stateGivenUp:
			return ListPage{}, badRequest("state %q needs a running coordinator (its plan says which URLs it gives up on)", q.State)
		default:
			// Offline the stored next due time decides, a field no
			// index filters on: pages are read until one is full.
			due := q.State == stateDue
			keep = func(u *store.URL) bool { return !u.NextDue.After(now) == due }
		}
	}
	limit := sq.Limit
	rows := []Row{}
	var next string
	total := -1
	for {
		sq.Limit = limit - len(rows)
		p, err := db.ListURLs(sq)
		if errors.Is(err, store.ErrBadQuery) {
			return ListPage{}, badRequest("%v", err)
		}
		if err != nil {
			return ListPage{}, err
		}
		urls := make([]string, len(p.URLs))
		for i := range p.URLs {
			urls[i] = p.URLs[i].URL
		}
		var vs map[string]schedule.URLView
		if views != nil {
			vs = views.URLViews(urls)
		}
		for i := range p.URLs {
			u := &p.URLs[i]
			if keep != nil && !keep(u) {
				continue
			}
			var v *schedule.URLView
			if vv, ok := vs[u.URL]; ok {
				v = &vv
			}
			rows = append(rows, row(u, v, now))
		}
		next = p.Next
		if keep == nil {
			total = p.Total
		}
		if keep == nil || next == "" || len(rows) >= limit {
			break
		}
		sq.After = next
	}
	return ListPage{URLs: rows, Next: next, Total: total}, nil
}

// ServeURLs answers GET /api/urls: URLs by filters and sort, a page at
// a time.
func (s *Server) ServeURLs(w http.ResponseWriter, r *http.Request) {
	q, err := parseListQuery(r.URL.Query())
	if err != nil {
		WriteError(w, statusOf(err), err)
		return
	}
	p, err := List(s.b.Store(), s.b, q)
	if err != nil {
		WriteError(w, statusOf(err), err)
		return
	}
	WriteJSON(w, http.StatusOK, p)
}

// Detail is everything about one URL: `freshcrawl url show` and GET
// /api/url/show.
type Detail struct {
	Record store.URL `json:"record"`
	// Deleted says the URL was deleted and Record is what was kept.
	Deleted  bool              `json:"deleted,omitempty"`
	State    string            `json:"state"`
	Schedule *schedule.URLView `json:"schedule,omitempty"`
	// RateLo and RateHi bound the change rate with 90% confidence.
	RateLo   float64         `json:"rate_lo_per_s"`
	RateHi   float64         `json:"rate_hi_per_s"`
	Fetches  []store.Fetch   `json:"fetches"`
	Changes  []store.Change  `json:"changes"` // newest first
	Versions []store.Version `json:"versions,omitempty"`
	Copy     CopyInfo        `json:"copy"`
}

// CopyInfo describes the stored copy of a URL.
type CopyInfo struct {
	Hash   string     `json:"hash,omitempty"`
	Length int        `json:"text_length"`
	Raw    *store.Raw `json:"raw,omitempty"` // without its body
}

// detailChanges is how many change-log entries a Detail carries.
const detailChanges = 50

// Show gathers the Detail of rawURL (normalised first).
func Show(db *store.DB, views Views, rawURL string) (Detail, error) {
	u, _, err := seed.Normalize(rawURL)
	if err != nil {
		return Detail{}, badRequest("url: %v", err)
	}
	var d Detail
	rec, err := db.Get(u)
	if errors.Is(err, store.ErrNotFound) {
		if rec, err = db.Deleted(u); err != nil {
			return d, fmt.Errorf("url %s: %w", u, store.ErrNotFound)
		}
		d.Deleted = true
	} else if err != nil {
		return d, err
	}
	rec.Estimate = nil
	d.Record = rec
	if views != nil && !d.Deleted {
		if v, ok := views.URLViews([]string{u})[u]; ok {
			d.Schedule = &v
		}
	}
	d.State = stateOf(&rec, d.Schedule, time.Now())
	if d.Deleted {
		d.State = "deleted"
	}
	d.RateLo, d.RateHi = rateBounds(rec.Rate, rec.RateSE)
	if d.Fetches, err = db.FetchLog(u); err != nil {
		return d, err
	}
	if d.Fetches == nil {
		d.Fetches = []store.Fetch{}
	}
	if d.Changes, err = db.LastChangesOf(u, detailChanges); err != nil {
		return d, err
	}
	if d.Changes == nil {
		d.Changes = []store.Change{}
	}
	if rec.Mode == "capture" || rec.Versions > 0 {
		if d.Versions, err = db.Versions(u); err != nil {
			return d, err
		}
	}
	text, err := db.Content(u)
	if err != nil {
		return d, err
	}
	d.Copy = CopyInfo{Hash: rec.Hash, Length: len(text)}
	if raw, found, err := db.Raw(u, false); err != nil {
		return d, err
	} else if found {
		d.Copy.Raw = &raw
	}
	return d, nil
}

// ServeShow answers GET /api/url/show?url=U: everything known of one URL.
func (s *Server) ServeShow(w http.ResponseWriter, r *http.Request) {
	d, err := Show(s.b.Store(), s.b, r.URL.Query().Get("url"))
	if err != nil {
		WriteError(w, statusOf(err), err)
		return
	}
	WriteJSON(w, http.StatusOK, d)
}

// Selection names URLs for a bulk operation: a list, every URL of a host,
// or every URL under a prefix (their union).
type Selection struct {
	URLs   []string `json:"urls,omitempty"`
	Host   string   `json:"host,omitempty"`
	Prefix string   `json:"prefix,omitempty"`
}

// SetRequest is the body of POST /api/url/set.
type SetRequest struct {
	Selection
	store.SeedChange
}

// OpResult is what a lifecycle operation did.
type OpResult struct {
	Selected int `json:"selected"`
	Changed  int `json:"changed"`
}

// maxSelection bounds the URLs one request may name in its list.
const maxSelection = 100000

// Resolve turns a selection into normalised URLs (deduplicated, the list
// first); bad list entries are an error naming them.
func Resolve(db *store.DB, sel Selection) ([]string, error) {
	if len(sel.URLs) == 0 && sel.Host == "" && sel.Prefix == "" {
		return nil, badRequest("select URLs with urls, host or prefix")
	}
	if len(sel.URLs) > maxSelection {
		return nil, badRequest("%d URLs in one request; at most %d", len(sel.URLs), maxSelection)
	}
	seen := map[string]bool{}
	var out []string
	for i, raw := range sel.URLs {
		u, _, err := seed.Normalize(raw)
		if err != nil {
			return nil, badRequest("urls[%d]: %v", i, err)
		}
		if !seen[u] {
			seen[u] = true
			out = append(out, u)
		}
	}
	add := func(q store.Query) error {
		return db.EachURL(q, func(u string) error {
			if !seen[u] {
				seen[u] = true
				out = append(out, u)
			}
			return nil
		})
	}
	if sel.Host != "" {
		if err := add(store.Query{Host: strings.ToLower(sel.Host)}); err != nil {
			return nil, err
		}
	}
	if sel.Prefix != "" {
		if err := add(store.Query{Prefix: sel.Prefix}); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// CheckSeedChange validates a `url set` with the seed format's own rules.
func CheckSeedChange(ch store.SeedChange) error {
	if ch.Empty() {
		return badRequest("nothing to set: give weight, selector, ignore, mode or keep_raw")
	}
	line := map[string]any{"url": "http://check.invalid/"}
	if ch.Weight != nil {
		line["weight"] = *ch.Weight
	}
	if ch.Selector != nil {
		line["selector"] = *ch.Selector
	}
	if ch.Ignore != nil {
		line["ignore"] = *ch.Ignore
	}
	if ch.Mode != nil {
		line["mode"] = *ch.Mode
		if *ch.Mode == "" {
			return badRequest(`field "mode": want "freshness" or "capture"`)
		}
	}
	if ch.Weight != nil && (math.IsNaN(*ch.Weight) || math.IsInf(*ch.Weight, 0)) {
		return badRequest(`field "weight": must be a finite number > 0, got %v`, *ch.Weight)
	}
	b, err := json.Marshal(line)
	if err != nil {
		return badRequest("%v", err)
	}
	if _, err := seed.ParseLine(b); err != nil {
		return badRequest("%v", err)
	}
	return nil
}

type op int

const (
	opPause op = iota
	opResume
	opDelete
	opSet
)

// maxOpBody bounds a lifecycle request body (a list of up to
// maxSelection URLs).
const maxOpBody = 64 << 20

// lifecycle answers POST /api/url/{pause,resume,delete,set}: o on the
// selected URLs.
func (s *Server) lifecycle(w http.ResponseWriter, r *http.Request, o op) {
	if !RequireType(w, r, "application/json") {
		return
	}
	var req SetRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, maxOpBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		WriteError(w, http.StatusBadRequest, fmt.Errorf("body: %w", err))
		return
	}
	if o != opSet && !req.SeedChange.Empty() {
		WriteError(w, http.StatusBadRequest, errors.New("seed fields are only for /api/url/set"))
		return
	}
	if o == opSet {
		if err := CheckSeedChange(req.SeedChange); err != nil {
			WriteError(w, statusOf(err), err)
			return
		}
	}
	purge := false
	if o == opDelete {
		switch r.URL.Query().Get("purge") {
		case "", "0", "false":
		case "1", "true":
			purge = true
		default:
			WriteError(w, http.StatusBadRequest, fmt.Errorf("purge=%q: want 1 or 0", r.URL.Query().Get("purge")))
			return
		}
	}
	urls, err := Resolve(s.b.Store(), req.Selection)
	if err != nil {
		WriteError(w, statusOf(err), err)
		return
	}
	res := OpResult{Selected: len(urls)}
	switch o {
	case opPause:
		res.Changed, err = s.b.Pause(urls)
	case opResume:
		res.Changed, err = s.b.Resume(urls)
	case opDelete:
		ctx, cancel := context.WithTimeout(r.Context(), time.Minute)
		res.Changed, err = s.b.Delete(ctx, urls, purge)
		cancel()
	case opSet:
		res.Changed, err = s.b.SetSeed(urls, req.SeedChange)
	}
	if err != nil {
		WriteError(w, http.StatusInternalServerError, err)
		return
	}
	WriteJSON(w, http.StatusOK, res)
}

// ServeHosts answers GET /api/hosts: every host's politeness state.
func (s *Server) ServeHosts(w http.ResponseWriter, r *http.Request) {
	hs, err := hostRows(s.b.Store(), s.b.Hosts())
	if err != nil {
		WriteError(w, http.StatusInternalServerError, err)
		return
	}
	WriteJSON(w, http.StatusOK, hs)
}

// hostRow joins the scheduler's and the store's view of a host.
type hostRow struct {
	schedule.HostView
	CrawlDelay time.Duration `json:"crawl_delay"`
	// BackoffTill is when the host's Retry-After ends: no request before.
	BackoffTill time.Time `json:"backoff_till,omitzero"`
	ServerErrs  int       `json:"server_errs"`
	// Slowdown is how many times the host's rate is halved (429 or 503
	// without Retry-After); its gap shows the result.
	Slowdown  int       `json:"slowdown"`
	LastFetch time.Time `json:"last_fetch,omitzero"`
	Fetches   int64     `json:"fetches"`
	Errors    int64     `json:"errors"`
	// Robots is "ok", "some disallowed" or "all disallowed" (which is also
	// what an unreachable robots.txt gives).
	Robots string `json:"robots"`
}

// hostRows joins the scheduler's host views with the stored politeness state.
func hostRows(db *store.DB, views []schedule.HostView) ([]hostRow, error) {
	stored, err := db.Hosts()
	if err != nil {
		return nil, err
	}
	byName := map[string]store.Host{}
	for _, h := range stored {
		byName[h.Host] = h
	}
	out := make([]hostRow, 0, len(views))
	for _, v := range views {
		h := byName[v.Host]
		r := hostRow{HostView: v, CrawlDelay: h.CrawlDelay, BackoffTill: h.BackoffTill, ServerErrs: h.ServerErrs, Slowdown: h.Slowdown, LastFetch: h.LastFetch, Fetches: h.Fetches, Errors: h.Errors, Robots: "ok"}
		switch {
		case v.Disallowed > 0 && v.Disallowed >= v.URLs-v.Paused-v.Gone:
			r.Robots = "all disallowed"
		case v.Disallowed > 0:
			r.Robots = "some disallowed"
		}
		out = append(out, r)
	}
	return out, nil
}

// sourceRow is a keyword-search source as the console shows it.
type sourceRow struct {
	schedule.ProbeStatus
	Items int `json:"items"`
}

// ServeSources answers GET /api/sources: the keyword-search sources.
func (s *Server) ServeSources(w http.ResponseWriter, r *http.Request) {
	out := []sourceRow{}
	for _, p := range s.b.Probes() {
		items, err := s.b.Store().Items(p.Source)
		if err != nil {
			WriteError(w, http.StatusInternalServerError, err)
			return
		}
		out = append(out, sourceRow{ProbeStatus: p, Items: len(items)})
	}
	WriteJSON(w, http.StatusOK, out)
}
