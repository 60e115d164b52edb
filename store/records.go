package store

import "time"

// URL is everything the coordinator knows about one URL.
type URL struct {
	URL string `json:"url"`
	// ID is the URL's id in the store (the url_ids bucket: URLsByID
	// spells it), set when the record is read from the store (0 in a
	// record not read from it, or stored before ids). It is the store's
	// own, never serialised.
	ID       uint64      `json:"-"`
	Host     string      `json:"host"`
	Weight   float64     `json:"weight"`
	Selector string      `json:"selector,omitempty"`
	Mode     string      `json:"mode"`
	Ignore   IgnoreRules `json:"ignore,omitzero"`
	Period   string      `json:"period,omitempty"`
	Polls    int         `json:"polls,omitempty"`
	// KeepRaw keeps the raw response body of the latest version next to
	// its extracted text (a seed option).
	KeepRaw bool `json:"keep_raw,omitempty"`
	// Webhook receives this URL's change events (a seed option), besides
	// the webhooks of the config.
	Webhook string    `json:"webhook,omitempty"`
	AddedAt time.Time `json:"added_at"`

	// Paused URLs stay in the store and the schedule but are not fetched
	// and take no share of the budget until resumed.
	Paused   bool      `json:"paused,omitempty"`
	PausedAt time.Time `json:"paused_at,omitzero"`
	// DeletedAt is set only on the copy of a deleted URL's record kept
	// with its history (DB.Deleted).
	DeletedAt time.Time `json:"deleted_at,omitzero"`
	// Gone URLs answered 410, or 404 for longer than the coordinator's
	// gone-after: like paused ones they keep their record and history and
	// are not fetched, until seeded again or resumed.
	Gone bool `json:"gone,omitempty"`

	// Counters.
	Fetches     int64            `json:"fetches"`
	Changes     int64            `json:"changes"`
	NotModified int64            `json:"not_modified"`
	Errors      int64            `json:"errors"`
	ErrorKinds  map[string]int64 `json:"error_kinds,omitempty"`
	Failed      int64            `json:"failed"` // tasks that ran out of deliveries
	Versions    int64            `json:"versions"`

	// Last fetch.
	LastFetch   time.Time `json:"last_fetch,omitzero"`
	LastOK      time.Time `json:"last_ok,omitzero"`
	LastChange  time.Time `json:"last_change,omitzero"`
	LastStatus  int       `json:"last_status,omitempty"`
	LastErrKind string    `json:"last_err_kind,omitempty"`
	LastErr     string    `json:"last_err,omitempty"`
	ETag        string    `json:"etag,omitempty"`
	LastMod     string    `json:"last_modified,omitempty"`
	Hash        string    `json:"hash,omitempty"`
	Disallowed  bool      `json:"disallowed,omitempty"`
	// Truncated: the latest version was longer than the worker's
	// max-body; its text and hash are those of the part read.
	Truncated bool `json:"truncated,omitempty"`
	// NoArchive: the page forbids a kept copy (X-Robots-Tag or robots
	// <meta>: noarchive, noindex, none). Its hash and change statistics
	// are kept, its text and raw body are not.
	NoArchive bool `json:"no_archive,omitempty"`
	// ErrStreak counts the fetches that failed in a row with an error
	// that backs the URL off (the coordinator's fold decides which),
	// 0 after a success: it sets how far the next fetch is put off.
	// NotFoundSince is the first 404 of the current run of them (zero:
	// none), from which a 404 that persists marks the URL gone.
	ErrStreak     int       `json:"err_streak,omitempty"`
	NotFoundSince time.Time `json:"not_found_since,omitzero"`

	// Estimate is the change-rate estimator's state, owned by the
	// coordinator (opaque here so the store has no view on the maths).
	Estimate []byte `json:"estimate,omitempty"`
	// Rate is the current estimated change rate, changes per second, and
	// RateSE its standard error (0 until the first estimate).
	Rate   float64 `json:"rate"`
	RateSE float64 `json:"rate_se,omitempty"`

	// Schedule: the interval the plan gives this URL and its next due time.
	Interval time.Duration `json:"interval,omitempty"`
	NextDue  time.Time     `json:"next_due,omitzero"`
}

// Version is one stored version of a capture URL.
type Version struct {
	Seq        uint64    `json:"seq"`
	URL        string    `json:"url"`
	CapturedAt time.Time `json:"captured_at"`
	// The version appeared in (After, Before]: between the previous poll
	// and this one, or exactly at Before when Exact (from a trustworthy
	// Last-Modified).
	After  time.Time `json:"after,omitzero"`
	Before time.Time `json:"before"`
	Exact  bool      `json:"exact,omitempty"`
	Hash   string    `json:"hash"`
	Text   string    `json:"text"`
	TaskID string    `json:"task_id"`
}

// Change is one entry of the change log.
type Change struct {
	Seq      uint64      `json:"seq"`
	URL      string      `json:"url"`
	Host     string      `json:"host"`
	At       time.Time   `json:"at"`
	TaskID   string      `json:"task_id"`
	Hash     string      `json:"hash"`
	PrevHash string      `json:"prev_hash,omitempty"`
	Diff     DiffSummary `json:"diff"`
}

// Host is the politeness state of one host. The least time between two
// of its fetches in force is max(1/host-rate, CrawlDelay) · 2^Slowdown,
// and none is made before BackoffTill.
type Host struct {
	Host       string        `json:"host"`
	CrawlDelay time.Duration `json:"crawl_delay,omitempty"`
	// BackoffTill is when the host's last Retry-After (on a 429 or 503)
	// ends, counted from when its answer was known; Backoff is the delay
	// it asked for.
	BackoffTill time.Time     `json:"backoff_till,omitzero"`
	Backoff     time.Duration `json:"backoff,omitempty"`
	ServerErrs  int           `json:"server_errs,omitempty"` // consecutive 5xx, 429, connect failures and timeouts
	LastFetch   time.Time     `json:"last_fetch,omitzero"`
	// Fetches and Errors count the results folded for the host.
	Fetches int64 `json:"fetches,omitempty"`
	Errors  int64 `json:"errors,omitempty"`
	// Slowdown is how many times the host's rate is halved: each 429 or
	// 503 without Retry-After adds one (up to the coordinator's cap),
	// and each run of OKStreak successes takes one off.
	Slowdown int `json:"slowdown,omitempty"`
	OKStreak int `json:"ok_streak,omitempty"`
}

// Item is a tracked item of a keyword-search source.
type Item struct {
	Source   string            `json:"source"`
	ID       string            `json:"id"`
	Attrs    map[string]string `json:"attrs"`
	Value    float64           `json:"value"`
	LastSync time.Time         `json:"last_sync,omitzero"`
	Syncs    int64             `json:"syncs"`
	Changes  int64             `json:"changes"`
	Estimate []byte            `json:"estimate,omitempty"`
	Rate     float64           `json:"rate"`
	HasValue bool              `json:"has_value"`
	// Dissimilarity is the sum of the dissimilarities seen at refreshes.
	Dissimilarity float64 `json:"dissimilarity"`
}

// The store's records have their own types for what the wire also
// carries (proto.IgnoreRules, proto.DiffSummary), so that a change to the
// wire cannot change the disk format: the bytes of a record depend on
// this package alone. The fields match the wire's one for one, so a type
// conversion crosses the boundary, and it stops compiling when either
// side gains a field, which is the moment to decide what the other does.

// IgnoreRules are a URL's noise rules, which a task carries to the worker
// as proto.IgnoreRules.
type IgnoreRules struct {
	// Selectors are CSS selectors whose elements are dropped.
	Selectors []string `json:"selectors,omitempty"`
	// Patterns are regular expressions whose matches are blanked out.
	Patterns []string `json:"patterns,omitempty"`
	// MinChange is the smallest change, as a share of the text in [0,1],
	// that counts as a change.
	MinChange float64 `json:"min_change,omitempty"`
}

// IsZero reports whether r has no rule: a record then leaves them out
// (omitzero, and no flagIgnore), whether its lists are nil or empty.
func (r IgnoreRules) IsZero() bool {
	return len(r.Selectors) == 0 && len(r.Patterns) == 0 && r.MinChange == 0
}

// DiffSummary describes a change of the log, as a worker's result
// described it (proto.DiffSummary).
type DiffSummary struct {
	LinesAdded   int `json:"lines_added"`
	LinesRemoved int `json:"lines_removed"`
	// CharsChanged is the number of characters inserted plus deleted.
	CharsChanged int `json:"chars_changed"`
	// Magnitude is the share of the text that changed in [0,1], or the
	// absolute numeric difference when the selector picks a number.
	Magnitude float64 `json:"magnitude"`
	Numeric   bool    `json:"numeric,omitempty"`
	// Preview holds the first changed lines, prefixed "+ " or "- ".
	Preview string `json:"preview,omitempty"`
}
