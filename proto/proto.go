// Package proto is the wire contract between the coordinator and the
// workers: stream and subject names, the task and result messages, their
// version and their encoding. Both roles import it and nothing else of each
// other, so a worker built from one release can serve a coordinator from the
// next as long as Version matches.
package proto

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Version is the message format version. A receiver refuses a message with a
// different major version rather than guessing at its fields.
const Version = 1

// JetStream streams, consumers and subjects.
const (
	// TaskStream is a work-queue stream: each task is delivered to one worker
	// and removed once acknowledged.
	TaskStream = "FRESHCRAWL_TASKS"
	// TaskSubjectPrefix is followed by the task kind: freshcrawl.tasks.fetch.
	TaskSubjectPrefix = "freshcrawl.tasks."
	// TaskConsumer is the one durable pull consumer all workers share.
	TaskConsumer = "workers"

	// ResultStream carries results from workers to the coordinator.
	ResultStream = "FRESHCRAWL_RESULTS"
	// ResultSubjectPrefix is followed by the task kind.
	ResultSubjectPrefix = "freshcrawl.results."
	// ResultConsumer is the coordinator's durable pull consumer.
	ResultConsumer = "coordinator"

	// ChangeSubjectPrefix is followed by the host with dots replaced by
	// underscores (freshcrawl.changes.example_com); every detected change is
	// published there as a ChangeEvent, which core NATS subscribers receive
	// and ChangeStream keeps for replay.
	ChangeSubjectPrefix = "freshcrawl.changes."
	// ChangeStream is a limits-retention stream over every change subject.
	ChangeStream = "FRESHCRAWL_CHANGES"

	// ContentSubject answers a request carrying a URL with the coordinator's
	// stored latest version of it (the extracted text), its hash in the
	// ContentHashHeader header. Workers ask only when a page's hash changed,
	// so tasks need not carry the previous text on every fetch.
	ContentSubject    = "freshcrawl.content.get"
	ContentHashHeader = "Freshcrawl-Hash"

	// HeartbeatSubject receives a Heartbeat from every worker every few
	// seconds, so the coordinator can count the workers it has seen.
	HeartbeatSubject = "freshcrawl.workers.heartbeat"
)

// Kind says what a task asks a worker to do. New kinds add a subject, never
// change the meaning of an old one.
type Kind string

const (
	// KindFetch fetches one page, extracts the content of interest and diffs
	// it against the previous version.
	KindFetch Kind = "fetch"
	// KindCapture is a fetch whose every distinct version is kept.
	KindCapture Kind = "capture"
	// KindProbe runs a keyword-search query against a source and returns the
	// items on the result pages.
	KindProbe Kind = "probe"
)

// valid reports whether k is a kind this version understands.
func (k Kind) valid() bool {
	switch k {
	case KindFetch, KindCapture, KindProbe, KindSitemap, KindFeed:
		return true
	}
	return false
}

// TaskSubject is the subject a task of kind k is published on.
func TaskSubject(k Kind) string { return TaskSubjectPrefix + string(k) }

// ResultSubject is the subject a result of kind k is published on.
func ResultSubject(k Kind) string { return ResultSubjectPrefix + string(k) }

// ChangeSubject is the subject a change on host is published on.
func ChangeSubject(host string) string {
	b := []byte(host)
	for i, c := range b {
		if c == '.' || c == '*' || c == '>' || c == ' ' {
			b[i] = '_'
		}
	}
	return ChangeSubjectPrefix + string(b)
}

// IgnoreRules remove noise before a page is hashed and diffed.
type IgnoreRules struct {
	// Selectors are CSS selectors whose elements are dropped.
	Selectors []string `json:"selectors,omitempty" yaml:"selectors,omitempty"`
	// Patterns are regular expressions whose matches are blanked out
	// (dates, counters, session ids).
	Patterns []string `json:"patterns,omitempty" yaml:"patterns,omitempty"`
	// MinChange is the smallest change, as a share of the text in [0,1],
	// that counts as a change.
	MinChange float64 `json:"min_change,omitempty" yaml:"min_change,omitempty"`
}

// IsZero reports whether r has no rule: encoding/json's omitzero then
// leaves it out whether its lists are nil or empty, so a task encodes the
// same after a round trip.
func (r IgnoreRules) IsZero() bool {
	return len(r.Selectors) == 0 && len(r.Patterns) == 0 && r.MinChange == 0
}

// Task is one unit of work for a worker.
type Task struct {
	V    int    `json:"v"`
	ID   string `json:"id"` // unique; also the Nats-Msg-Id, so a duplicate publish is dropped
	Kind Kind   `json:"kind"`
	URL  string `json:"url"`
	Host string `json:"host"`

	// NotBefore is the earliest time the worker may fetch. The coordinator
	// spaces a host's tasks; a task that waited in the queue may still arrive
	// early relative to the host's last fetch on another worker, so the
	// worker honours this as a safety net.
	NotBefore time.Time `json:"not_before,omitzero"`
	IssuedAt  time.Time `json:"issued_at"`
	// MinGap is the least time between two requests to the host now in
	// force; a worker that must fetch robots.txt first waits this long
	// before the page itself.
	MinGap time.Duration `json:"min_gap,omitempty"`

	Selector string      `json:"selector,omitempty"`
	Ignore   IgnoreRules `json:"ignore,omitzero"`

	// Validators from the previous fetch, for a conditional GET.
	ETag         string `json:"etag,omitempty"`
	LastModified string `json:"last_modified,omitempty"`

	// PrevHash is the hash of the previous extracted version. PrevText, if
	// set, is that version; when it is empty and the page changed, the
	// worker asks for it on ContentSubject. Either way the worker keeps no
	// state of its own.
	PrevHash string `json:"prev_hash,omitempty"`
	PrevText string `json:"prev_text,omitempty"`

	// Probe is set for KindProbe.
	Probe *ProbeSpec `json:"probe,omitempty"`

	// KeepRaw asks for the raw response body with the result whenever the
	// extracted text is sent (the first version, or a change); NeedRaw asks
	// for it even when the text did not change, because the coordinator has
	// none yet. A worker that does not know them sends no body, and the
	// coordinator simply keeps none.
	KeepRaw bool `json:"keep_raw,omitempty"`
	NeedRaw bool `json:"need_raw,omitempty"`
}

// ProbeSpec describes one request to a keyword-search source: a result
// page of a query, or (Item set) one item's own page. The source's
// definition travels with the task so that workers stay stateless.
type ProbeSpec struct {
	Source string          `json:"source"`
	Def    json.RawMessage `json:"def"`
	Query  []string        `json:"query,omitempty"`
	Page   int             `json:"page,omitempty"` // 1-based result page
	Item   string          `json:"item,omitempty"` // fetch by id
}

// ErrorKind classifies why a fetch failed, for metrics and backoff. Each
// kind names what happened, so that an operator (and the coordinator's
// backoff) can tell a page that is gone from a server that is overloaded
// from a network that is down.
type ErrorKind string

// Error kinds. An empty ErrorKind means success.
const (
	ErrNone    ErrorKind = ""
	ErrDNS     ErrorKind = "dns"     // the host name did not resolve
	ErrConnect ErrorKind = "connect" // no TCP connection (refused, unreachable)
	// ErrTimeout: the fetch did not complete within the worker's timeout,
	// which bounds connect, TLS, headers and body together.
	ErrTimeout ErrorKind = "timeout"
	ErrTLS     ErrorKind = "tls" // the TLS handshake or certificate failed
	// ErrNotFound is a 404 or 410: the page is not there. A 410, or a
	// 404 that persists, retires the URL (its state becomes gone).
	ErrNotFound ErrorKind = "not-found"
	// ErrRateLimited is a 429: the host asks for fewer requests. It slows
	// or pauses the host, not the URL.
	ErrRateLimited ErrorKind = "rate-limited"
	// ErrServerError is any 5xx: the server failed (a 503 with
	// Retry-After also pauses the host).
	ErrServerError ErrorKind = "server-error"
	// ErrHTTPStatus is any other status of 400 or more (401, 403, 451, …).
	ErrHTTPStatus ErrorKind = "http-status"
	// ErrTooLarge: the response headers alone exceed the worker's cap. A
	// body over max-body is not an error: its first max-body bytes are
	// kept and the result is marked Truncated.
	ErrTooLarge  ErrorKind = "too-large"
	ErrRedirects ErrorKind = "redirects"
	// ErrRobots: a rule of the host's robots.txt disallows the URL.
	ErrRobots ErrorKind = "robots"
	// ErrRobotsUnreachable: the host's robots.txt could not be fetched
	// (no connection, a timeout, a 429 or 5xx). RFC 9309 §2.3.1.4 then
	// has the whole host disallowed, as for ErrRobots, until robots.txt
	// is fetched again; the kind keeps the two causes apart.
	ErrRobotsUnreachable ErrorKind = "robots-unreachable"
	ErrBlocked           ErrorKind = "blocked-address"
	ErrBadURL            ErrorKind = "bad-url"
	ErrContent           ErrorKind = "content"
	ErrFailed            ErrorKind = "failed" // gave up after MaxDeliver deliveries
	ErrOther             ErrorKind = "other"
)

// StatusKind is the error kind of an HTTP status of 400 or more.
func StatusKind(status int) ErrorKind {
	switch {
	case status == 404 || status == 410:
		return ErrNotFound
	case status == 429:
		return ErrRateLimited
	case status >= 500:
		return ErrServerError
	}
	return ErrHTTPStatus
}

// HTTP reports whether k is the kind of an HTTP status (StatusKind): the
// server answered, so the response is complete.
func (k ErrorKind) HTTP() bool {
	switch k {
	case ErrNotFound, ErrRateLimited, ErrServerError, ErrHTTPStatus:
		return true
	}
	return false
}

// DiffSummary describes the difference between two versions.
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

// Result is what a worker reports for a task.
type Result struct {
	V        int    `json:"v"`
	TaskID   string `json:"task_id"`
	Kind     Kind   `json:"kind"`
	URL      string `json:"url"`
	Host     string `json:"host"`
	WorkerID string `json:"worker_id"`
	Attempt  int    `json:"attempt"` // JetStream delivery count

	StartedAt  time.Time     `json:"started_at"`
	FinishedAt time.Time     `json:"finished_at"`
	Duration   time.Duration `json:"duration"`

	Status   int       `json:"status,omitempty"`
	ErrKind  ErrorKind `json:"err_kind,omitempty"`
	Err      string    `json:"err,omitempty"`
	FinalURL string    `json:"final_url,omitempty"`
	Bytes    int64     `json:"bytes"`
	// Truncated: the body was longer than the worker's max-body, and Hash,
	// Text and Raw are those of its first max-body bytes.
	Truncated bool `json:"truncated,omitempty"`
	// NoArchive: an X-Robots-Tag header or a robots <meta> of the page
	// says noarchive, noindex or none, for every crawler or for this
	// one's product token. Hash and Changed are set as usual; Text, Raw
	// and the Diff's Preview are not, and the coordinator keeps no copy.
	NoArchive bool `json:"no_archive,omitempty"`

	NotModified  bool   `json:"not_modified,omitempty"` // 304
	ETag         string `json:"etag,omitempty"`
	LastModified string `json:"last_modified,omitempty"`
	ContentType  string `json:"content_type,omitempty"`

	// Hash of the extracted text; Text is sent only when Changed.
	Hash    string       `json:"hash,omitempty"`
	Changed bool         `json:"changed"`
	Text    string       `json:"text,omitempty"`
	Diff    *DiffSummary `json:"diff,omitempty"`

	// Host signals for politeness.
	RetryAfter time.Duration `json:"retry_after,omitempty"`
	CrawlDelay time.Duration `json:"crawl_delay,omitempty"`
	Disallowed bool          `json:"disallowed,omitempty"`

	// FeedTimes are the item dates of a capture task's page when it is an
	// RSS, Atom or JSON Feed document, newest first (at most
	// the extractor's cap): the feed's own update times.
	FeedTimes []time.Time `json:"feed_times,omitempty"`

	// Raw is the response body (decompressed, and for text converted to
	// UTF-8) when the task asked for it, at most the worker's raw cap;
	// RawTruncated says it was cut there (Bytes is the full length).
	Raw          []byte `json:"raw,omitempty"`
	RawTruncated bool   `json:"raw_truncated,omitempty"`

	// Items are the parsed result items of a probe task.
	Items []ProbeItem `json:"items,omitempty"`
	// Total is the result count a probe's first page showed, or -1.
	Total int `json:"total,omitempty"`

	// Signal is what a sitemap or feed task found (signal.go).
	Signal *SignalResult `json:"signal,omitempty"`
}

// OK reports whether the fetch succeeded (including 304).
func (r *Result) OK() bool { return r.ErrKind == ErrNone }

// ProbeItem is one item parsed from a search result page.
type ProbeItem struct {
	ID     string            `json:"id"`
	Fields map[string]string `json:"fields"`
}

// ChangeEvent is published on ChangeSubject(host) for every detected change,
// and is the body of every webhook request.
type ChangeEvent struct {
	V int `json:"v"`
	// ID identifies the change for de-duplication: a receiver that sees an
	// ID twice (at-least-once delivery) drops the second. It is also the
	// event's Nats-Msg-Id.
	ID string `json:"id"`
	// Seq is the change's number in the coordinator's change log
	// (GET /api/changes?after=SEQ).
	Seq      uint64      `json:"seq"`
	URL      string      `json:"url"`
	Host     string      `json:"host"`
	TaskID   string      `json:"task_id"`
	At       time.Time   `json:"at"`
	Hash     string      `json:"hash"`
	PrevHash string      `json:"prev_hash,omitempty"`
	Diff     DiffSummary `json:"diff"`
}

// Heartbeat is published by every worker every few seconds.
type Heartbeat struct {
	V        int       `json:"v"`
	WorkerID string    `json:"worker_id"`
	At       time.Time `json:"at"`
	Active   int       `json:"active"` // tasks being worked on now
}

// errVersion is returned for a message of another format version.
var errVersion = errors.New("unsupported message version")

// Encode marshals a message. Tasks and results, which every fetch sends,
// use the compact binary encoding (codec.go); everything else — change
// events and heartbeats, which other programs subscribe to — is JSON.
func Encode(v any) ([]byte, error) {
	switch m := v.(type) {
	case Task:
		return encodeTask(&m), nil
	case *Task:
		return encodeTask(m), nil
	case Result:
		return encodeResult(&m), nil
	case *Result:
		return encodeResult(m), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode %T: %w", v, err)
	}
	return b, nil
}

// DecodeTask unmarshals and validates a task, binary or JSON (as sent by
// releases before the binary encoding), told apart by the first byte.
func DecodeTask(b []byte) (Task, error) {
	var t Task
	if isBinary(b) {
		var err error
		if t, err = decodeBinaryTask(b); err != nil {
			return t, fmt.Errorf("decode task: %w", err)
		}
	} else if err := json.Unmarshal(b, &t); err != nil {
		return t, fmt.Errorf("decode task: %w", err)
	}
	if t.V != Version {
		return t, fmt.Errorf("decode task %q: %w %d (want %d)", t.ID, errVersion, t.V, Version)
	}
	if t.ID == "" || t.URL == "" || !t.Kind.valid() {
		return t, fmt.Errorf("decode task: missing id, url or valid kind (id=%q kind=%q)", t.ID, t.Kind)
	}
	return t, nil
}

// DecodeResult unmarshals and validates a result, binary or JSON.
func DecodeResult(b []byte) (Result, error) {
	var r Result
	if isBinary(b) {
		var err error
		if r, err = decodeBinaryResult(b); err != nil {
			return r, fmt.Errorf("decode result: %w", err)
		}
	} else if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("decode result: %w", err)
	}
	if r.V != Version {
		return r, fmt.Errorf("decode result %q: %w %d (want %d)", r.TaskID, errVersion, r.V, Version)
	}
	if r.TaskID == "" || r.URL == "" {
		return r, fmt.Errorf("decode result: missing task_id or url")
	}
	return r, nil
}
