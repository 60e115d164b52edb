// Package config resolves freshcrawl's settings from four layers, each
// overriding the one before: defaults, a YAML file (--config), environment
// variables (FRESHCRAWL_<KEY>, dashes as underscores) and flags. Every key
// has the same name in all of them: `--host-rate`, `host-rate:` in YAML,
// FRESHCRAWL_HOST_RATE in the environment.
package config

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"

	"github.com/freshcrawl/freshcrawl/coordinator"
	"github.com/freshcrawl/freshcrawl/internal/broker"
	"github.com/freshcrawl/freshcrawl/internal/optcheck"
	"github.com/freshcrawl/freshcrawl/internal/schedule"
	"github.com/freshcrawl/freshcrawl/proto"
	"github.com/freshcrawl/freshcrawl/store"
	"github.com/freshcrawl/freshcrawl/worker"
)

// Config holds every setting. Not every subcommand uses every key.
type Config struct {
	// ConfigFile is the YAML file given with --config (or
	// FRESHCRAWL_CONFIG); its `sources:` list defines keyword-search
	// sources.
	ConfigFile string `key:"config"`
	Data       string `key:"data"`
	NATS       string `key:"nats"`
	NATSListen string `key:"nats-listen"`
	Listen     string `key:"listen"`
	API        string `key:"api"`
	LogLevel   string `key:"log-level"`
	LogFormat  string `key:"log-format"`

	// API security: bearer tokens (admin and read-only) and TLS.
	APITokens     []string `key:"api-token"`
	APIReadTokens []string `key:"api-read-token"`
	// APIHosts are further names of the API (besides its --listen
	// address and loopback) that its Host header may carry.
	APIHosts []string `key:"api-host"`
	TLSCert  string   `key:"tls-cert"`
	TLSKey   string   `key:"tls-key"`

	// Coordinator.
	Budget      Rate          `key:"budget"`
	HostRate    Rate          `key:"host-rate"`
	MaxInFlight int           `key:"max-in-flight"`
	Policy      string        `key:"policy"`
	Objective   string        `key:"objective"`
	Replan      time.Duration `key:"replan"`
	PriorRate   Rate          `key:"prior-rate"`
	HalfLife    time.Duration `key:"half-life"`
	Explore     float64       `key:"explore"`
	// LMSkew is the clock difference tolerated when checking whether a
	// server's Last-Modified can be trusted as a change time.
	LMSkew time.Duration `key:"lm-skew"`
	// ProbePolicy refreshes tracked items of keyword-search sources.
	ProbePolicy string `key:"probe-policy"`
	// CaptureUniform is the paper-002 baseline for benchmarks.
	CaptureUniform bool `key:"capture-uniform"`
	// CoChange ties URLs that change together (coordinator.Options.CoChange).
	CoChange bool `key:"co-change"`
	// Standby: a coordinator that finds another holding the lease waits
	// to take over; false makes it refuse to start.
	Standby bool `key:"standby"`
	// LeaseTTL is how long a silent coordinator keeps the lease.
	LeaseTTL time.Duration `key:"lease-ttl"`
	// AdoptCrawl lets a coordinator take over a crawl whose last
	// coordinator wrote another store.
	AdoptCrawl bool `key:"adopt-crawl"`
	// Retention of the store's history (0: keep all).
	KeepVersions    int           `key:"keep-versions"`
	KeepVersionsFor time.Duration `key:"keep-versions-for"`
	KeepChanges     int           `key:"keep-changes"`
	KeepChangesFor  time.Duration `key:"keep-changes-for"`
	KeepFoldMarks   time.Duration `key:"keep-fold-marks-for"`
	// GoneAfter is how long a URL answers 404 before it is gone.
	GoneAfter time.Duration `key:"gone-after"`

	// NATS.
	AckWait    time.Duration `key:"ack-wait"`
	MaxDeliver int           `key:"max-deliver"`
	Replicas   int           `key:"replicas"`
	SyncAlways bool          `key:"sync-always"`
	// NATS authentication of an external server (--nats).
	NATSUser     string `key:"nats-user"`
	NATSPassword string `key:"nats-password"`
	NATSToken    string `key:"nats-token"`
	NATSNKey     string `key:"nats-nkey"`
	NATSCreds    string `key:"nats-creds"`
	NATSCA       string `key:"nats-ca"`
	NATSCert     string `key:"nats-cert"`
	NATSKey      string `key:"nats-key"`

	// Change events: the JetStream stream's retention, and webhooks.
	ChangeMaxAge      time.Duration `key:"change-stream-max-age"`
	ChangeMaxBytes    int64         `key:"change-stream-max-bytes"`
	ChangeMaxMsgs     int64         `key:"change-stream-max-msgs"`
	WebhookSecret     string        `key:"webhook-secret"`
	WebhookAttempts   int           `key:"webhook-attempts"`
	WebhookBackoff    time.Duration `key:"webhook-backoff"`
	WebhookMaxBackoff time.Duration `key:"webhook-max-backoff"`
	WebhookTimeout    time.Duration `key:"webhook-timeout"`
	// AllowPrivateWebhooks is not --allow-private: that one lets workers
	// fetch an intranet, this one lets whoever names a webhook (any seed
	// line) have the coordinator POST into it.
	AllowPrivateWebhooks bool `key:"allow-private-webhooks"`

	// Workers.
	Workers      int           `key:"workers"`
	Concurrency  int           `key:"concurrency"`
	UserAgent    string        `key:"user-agent"`
	Timeout      time.Duration `key:"timeout"`
	MaxBody      int64         `key:"max-body"`
	MaxRedirects int           `key:"max-redirects"`
	AllowPrivate bool          `key:"allow-private"`
	WorkerID     string        `key:"worker-id"`
	// StopGrace is how long a stopping worker lets its fetches finish.
	StopGrace time.Duration `key:"stop-grace"`
	// HealthListen is the HTTP address of a worker's /healthz ("": none).
	HealthListen string `key:"health-listen"`

	// Default noise rules for every URL (a seed's own rules add to them).
	IgnoreSelector string   `key:"ignore-selector"`
	IgnorePatterns []string `key:"ignore-pattern"`
	MinChange      float64  `key:"min-change"`
}

// Defaults of the settings config itself owns: where a process keeps its
// data, where it serves, how much it logs, how many workers `run` starts.
// Every other default belongs to the package that uses the setting.
const (
	defaultData     = "./freshcrawl-data"
	defaultListen   = "127.0.0.1:8080"
	defaultLogLevel = "info"
	// defaultLogFormat is log/slog's text handler: one key=value line per
	// record, for people; json is for log collectors.
	defaultLogFormat = "text"
	defaultWorkers   = 4
)

// Default returns the defaults. Every value is its owner's
// DefaultOptions, so the CLI, the library's defaults, the README and the
// compose file cannot drift apart (cmd/freshcrawl's TestConfigReference
// checks the README and the compose file against the flags).
func Default() Config {
	co, wo, bs := coordinator.DefaultOptions(), worker.DefaultOptions(), broker.DefaultSettings()
	return Config{
		Data: defaultData, NATSListen: broker.DefaultListen, Listen: defaultListen, LogLevel: defaultLogLevel, LogFormat: defaultLogFormat,
		Budget: Rate(co.Budget), HostRate: Rate(co.HostRate), MaxInFlight: co.MaxInFlight,
		Policy: schedule.DefaultPolicy, Objective: schedule.DefaultObjective, ProbePolicy: co.ProbePolicy,
		Replan: co.Replan, PriorRate: Rate(co.PriorRate), HalfLife: co.HalfLife, Explore: co.ExploreShare, LMSkew: co.LMSkew, CoChange: co.CoChange,
		KeepVersions: co.Retention.Versions, KeepVersionsFor: co.Retention.VersionsAge, KeepChanges: co.Retention.Changes,
		KeepChangesFor: co.Retention.ChangesAge, KeepFoldMarks: co.Retention.FoldMarksAge, GoneAfter: co.GoneAfter,
		Standby: true, LeaseTTL: broker.DefaultLeaseOptions().TTL, StopGrace: wo.Grace,
		AckWait: bs.AckWait, MaxDeliver: bs.MaxDeliver, Replicas: bs.Replicas,
		ChangeMaxAge: bs.Changes.MaxAge, ChangeMaxBytes: bs.Changes.MaxBytes, ChangeMaxMsgs: bs.Changes.MaxMsgs,
		WebhookAttempts: co.Webhooks.Attempts, WebhookBackoff: co.Webhooks.Backoff, WebhookMaxBackoff: co.Webhooks.MaxBackoff, WebhookTimeout: co.Webhooks.Timeout,
		Workers: defaultWorkers, Concurrency: wo.Concurrency,
		UserAgent: wo.Fetch.UserAgent, Timeout: wo.Fetch.Timeout, MaxBody: wo.Fetch.MaxBody, MaxRedirects: wo.Fetch.MaxRedirects,
	}
}

// Key describes one setting.
type Key struct {
	Name  string
	Usage string
}

// Keys lists every key with its documentation, in the order the README
// shows them.
var keyDocs = []Key{
	{"config", "YAML file with any of these keys"},
	{"data", "data directory: bbolt store and embedded NATS files"},
	{"nats", "NATS URL(s) of an external server or cluster; run and coordinator start an embedded server when it is empty, a worker needs it"},
	{"nats-listen", "client address of the embedded NATS server"},
	{"listen", "HTTP address of the API, /metrics and status"},
	{"api", "coordinator API base URL for status/seed/versions (default http://<listen>)"},
	{"log-level", "debug, info, warn or error"},
	{"log-format", "text (key=value lines) or json (one object a line)"},
	{"api-token", "bearer token with full access to the API (repeat the flag, or comma-separate, for several); once any token is set every route but /healthz and the dashboard's page needs one"},
	{"api-read-token", "bearer token that may only read the API (GET), e.g. for dashboards and Prometheus; repeatable"},
	{"api-host", "another name the API answers to without a token (host or host:port, e.g. the name a reverse proxy or another machine uses); without a token the API refuses with 421 a Host that is not its --listen address, localhost, 127.0.0.1 or [::1] at its port, or one of these; repeatable"},
	{"tls-cert", "PEM certificate (chain) to serve the API over HTTPS; clients of the API trust it too"},
	{"tls-key", "PEM private key of --tls-cert"},
	{"budget", "total fetches per unit time: 20/s, 300/m, 5000/h, 1000/d"},
	{"host-rate", "most fetches of any one host per unit time"},
	{"max-in-flight", "most tasks dispatched and not yet folded"},
	{"policy", "revisit policy: optimal, uniform or proportional"},
	{"objective", "what the optimal policy maximises: freshness or age"},
	{"replan", "how often the allocation is re-solved"},
	{"prior-rate", "change rate assumed for a URL never observed"},
	{"half-life", "age at which an observation counts half in the change-rate estimate"},
	{"explore", "largest share of the budget (and of each host's cap) exploration may take, in (0,1]: probes of URLs whose change rate is not resolved and rechecks of URLs given up (optimal); the least frequency of every URL, as a share of budget/URLs (uniform, proportional)"},
	{"probe-policy", "how tracked items of keyword-search sources are refreshed: greedy (keyword probes), naive1 or naive2 (fetch by id; baselines)"},
	{"lm-skew", "clock skew tolerated when deciding whether a server's Last-Modified can be trusted as the time of the last change"},
	{"capture-uniform", "poll capture URLs uniformly instead of at learnt phases (a baseline for comparison)"},
	{"co-change", "learn which URLs change together (the same content, the same dated last change) and refetch a URL's peers when a change seen at it makes that worth a fetch"},
	{"standby", "when another coordinator holds the lease, wait as a hot standby and take over when it stops (false: refuse to start)"},
	{"lease-ttl", "how long a coordinator that stopped renewing its lease keeps it; a standby takes over after this"},
	{"adopt-crawl", "take over a crawl whose last coordinator wrote another store (a new or unrelated store: its history is not in this one)"},
	{"keep-versions", "most versions kept per capture URL, the newest (0: all)"},
	{"keep-versions-for", "versions captured longer ago than this are deleted, except each URL's newest (0: kept forever)"},
	{"keep-changes", "most change-log entries kept, the newest (0: all)"},
	{"keep-changes-for", "change-log entries older than this are deleted (0: kept forever)"},
	{"keep-fold-marks-for", "how long the record that a result was folded is kept, to recognise a redelivered result (at least 5m)"},
	{"gone-after", "how long a URL may answer 404 before it is gone: no longer fetched until seeded again or resumed (a 410 is gone at once)"},
	{"ack-wait", "time a worker may hold a task without acknowledging it"},
	{"max-deliver", "deliveries of a task before it is recorded as failed"},
	{"replicas", "replicas of each JetStream stream (3 on a 3-node cluster)"},
	{"sync-always", "embedded NATS fsyncs every write (slower, survives an OS crash)"},
	{"nats-user", "user name for an external NATS server (with --nats-password)"},
	{"nats-password", "password of --nats-user"},
	{"nats-token", "authentication token for an external NATS server"},
	{"nats-nkey", "file holding an NKey seed (SU...) to authenticate to NATS"},
	{"nats-creds", "NATS credentials file (user JWT and NKey seed, as nsc writes it)"},
	{"nats-ca", "PEM CA certificate(s) that sign the NATS servers' certificates (turns on TLS)"},
	{"nats-cert", "PEM client certificate for NATS TLS (with --nats-key)"},
	{"nats-key", "PEM private key of --nats-cert"},
	{"change-stream-max-age", "how long the change-event stream keeps an event for replay"},
	{"change-stream-max-bytes", "most bytes the change-event stream keeps (oldest dropped first; -1: no limit)"},
	{"change-stream-max-msgs", "most events the change-event stream keeps (oldest dropped first; -1: no limit)"},
	{"webhook-secret", "shared secret of the HMAC-SHA256 signature of webhooks that give none of their own (and of every per-seed webhook)"},
	{"webhook-attempts", "failed deliveries of one event to one webhook before it goes to the dead-letter list"},
	{"webhook-backoff", "wait after a webhook's first failed delivery; it doubles with each failure (with jitter)"},
	{"webhook-max-backoff", "longest wait between two deliveries of one event"},
	{"webhook-timeout", "time allowed for one webhook request"},
	{"allow-private-webhooks", "allow webhooks (the config's and the seeds') on private, loopback and link-local addresses; --allow-private does not"},
	{"workers", "in-process workers (run, demo)"},
	{"concurrency", "tasks each worker handles at once"},
	{"user-agent", "User-Agent of every request; its first token is the robots.txt product token"},
	{"timeout", "total time allowed for one fetch"},
	{"max-body", "largest response body in bytes, after decompression"},
	{"max-redirects", "most redirects followed (0: none)"},
	{"allow-private", "allow fetching private, loopback and link-local addresses"},
	{"worker-id", "name of this worker in results and status"},
	{"stop-grace", "how long a stopping worker lets the fetches it holds finish before it hands them back"},
	{"health-listen", "HTTP address of the worker's /healthz (empty: none)"},
	{"ignore-selector", "CSS selector (group) of elements dropped from every page before hashing, e.g. \".ad, .clock\""},
	{"ignore-pattern", "regular expression blanked out of every page's text (repeat the flag; a list in YAML)"},
	{"min-change", "smallest change counted, as a share of the text (or a numeric difference)"},
}

// Keys returns every key and its usage.
func Keys() []Key { return append([]Key(nil), keyDocs...) }

func usage(name string) string {
	for _, k := range keyDocs {
		if k.Name == name {
			return k.Usage
		}
	}
	return name
}

// Register adds the flags for keys (all keys when none are named) to fs,
// bound to c's fields, plus --config.
func (c *Config) Register(fs *pflag.FlagSet, keys ...string) {
	want := map[string]bool{}
	for _, k := range keys {
		want[k] = true
	}
	on := func(k string) bool { return len(keys) == 0 || want[k] }
	if fs.Lookup("config") == nil {
		fs.StringVar(&c.ConfigFile, "config", c.ConfigFile, usage("config"))
	}
	add := func(name string, fn func(string)) {
		if on(name) && fs.Lookup(name) == nil {
			fn(usage(name))
		}
	}
	add("data", func(u string) { fs.StringVar(&c.Data, "data", c.Data, u) })
	add("nats", func(u string) { fs.StringVar(&c.NATS, "nats", c.NATS, u) })
	add("nats-listen", func(u string) { fs.StringVar(&c.NATSListen, "nats-listen", c.NATSListen, u) })
	add("listen", func(u string) { fs.StringVar(&c.Listen, "listen", c.Listen, u) })
	add("api", func(u string) { fs.StringVar(&c.API, "api", c.API, u) })
	add("log-level", func(u string) { fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, u) })
	add("log-format", func(u string) { fs.StringVar(&c.LogFormat, "log-format", c.LogFormat, u) })
	add("api-token", func(u string) { fs.StringSliceVar(&c.APITokens, "api-token", c.APITokens, u) })
	add("api-read-token", func(u string) { fs.StringSliceVar(&c.APIReadTokens, "api-read-token", c.APIReadTokens, u) })
	add("api-host", func(u string) { fs.StringSliceVar(&c.APIHosts, "api-host", c.APIHosts, u) })
	add("tls-cert", func(u string) { fs.StringVar(&c.TLSCert, "tls-cert", c.TLSCert, u) })
	add("tls-key", func(u string) { fs.StringVar(&c.TLSKey, "tls-key", c.TLSKey, u) })
	add("budget", func(u string) { fs.Var(&c.Budget, "budget", u) })
	add("host-rate", func(u string) { fs.Var(&c.HostRate, "host-rate", u) })
	add("max-in-flight", func(u string) { fs.IntVar(&c.MaxInFlight, "max-in-flight", c.MaxInFlight, u) })
	add("policy", func(u string) { fs.StringVar(&c.Policy, "policy", c.Policy, u) })
	add("objective", func(u string) { fs.StringVar(&c.Objective, "objective", c.Objective, u) })
	add("replan", func(u string) { fs.DurationVar(&c.Replan, "replan", c.Replan, u) })
	add("prior-rate", func(u string) { fs.Var(&c.PriorRate, "prior-rate", u) })
	add("half-life", func(u string) { fs.DurationVar(&c.HalfLife, "half-life", c.HalfLife, u) })
	add("explore", func(u string) { fs.Float64Var(&c.Explore, "explore", c.Explore, u) })
	add("probe-policy", func(u string) { fs.StringVar(&c.ProbePolicy, "probe-policy", c.ProbePolicy, u) })
	add("lm-skew", func(u string) { fs.DurationVar(&c.LMSkew, "lm-skew", c.LMSkew, u) })
	add("capture-uniform", func(u string) { fs.BoolVar(&c.CaptureUniform, "capture-uniform", c.CaptureUniform, u) })
	add("co-change", func(u string) { fs.BoolVar(&c.CoChange, "co-change", c.CoChange, u) })
	add("standby", func(u string) { fs.BoolVar(&c.Standby, "standby", c.Standby, u) })
	add("lease-ttl", func(u string) { fs.DurationVar(&c.LeaseTTL, "lease-ttl", c.LeaseTTL, u) })
	add("adopt-crawl", func(u string) { fs.BoolVar(&c.AdoptCrawl, "adopt-crawl", c.AdoptCrawl, u) })
	add("keep-versions", func(u string) { fs.IntVar(&c.KeepVersions, "keep-versions", c.KeepVersions, u) })
	add("keep-versions-for", func(u string) { fs.DurationVar(&c.KeepVersionsFor, "keep-versions-for", c.KeepVersionsFor, u) })
	add("keep-changes", func(u string) { fs.IntVar(&c.KeepChanges, "keep-changes", c.KeepChanges, u) })
	add("keep-changes-for", func(u string) { fs.DurationVar(&c.KeepChangesFor, "keep-changes-for", c.KeepChangesFor, u) })
	add("keep-fold-marks-for", func(u string) { fs.DurationVar(&c.KeepFoldMarks, "keep-fold-marks-for", c.KeepFoldMarks, u) })
	add("gone-after", func(u string) { fs.DurationVar(&c.GoneAfter, "gone-after", c.GoneAfter, u) })
	add("ack-wait", func(u string) { fs.DurationVar(&c.AckWait, "ack-wait", c.AckWait, u) })
	add("max-deliver", func(u string) { fs.IntVar(&c.MaxDeliver, "max-deliver", c.MaxDeliver, u) })
	add("replicas", func(u string) { fs.IntVar(&c.Replicas, "replicas", c.Replicas, u) })
	add("sync-always", func(u string) { fs.BoolVar(&c.SyncAlways, "sync-always", c.SyncAlways, u) })
	add("nats-user", func(u string) { fs.StringVar(&c.NATSUser, "nats-user", c.NATSUser, u) })
	add("nats-password", func(u string) { fs.StringVar(&c.NATSPassword, "nats-password", c.NATSPassword, u) })
	add("nats-token", func(u string) { fs.StringVar(&c.NATSToken, "nats-token", c.NATSToken, u) })
	add("nats-nkey", func(u string) { fs.StringVar(&c.NATSNKey, "nats-nkey", c.NATSNKey, u) })
	add("nats-creds", func(u string) { fs.StringVar(&c.NATSCreds, "nats-creds", c.NATSCreds, u) })
	add("nats-ca", func(u string) { fs.StringVar(&c.NATSCA, "nats-ca", c.NATSCA, u) })
	add("nats-cert", func(u string) { fs.StringVar(&c.NATSCert, "nats-cert", c.NATSCert, u) })
	add("nats-key", func(u string) { fs.StringVar(&c.NATSKey, "nats-key", c.NATSKey, u) })
	add("change-stream-max-age", func(u string) { fs.DurationVar(&c.ChangeMaxAge, "change-stream-max-age", c.ChangeMaxAge, u) })
	add("change-stream-max-bytes", func(u string) { fs.Int64Var(&c.ChangeMaxBytes, "change-stream-max-bytes", c.ChangeMaxBytes, u) })
	add("change-stream-max-msgs", func(u string) { fs.Int64Var(&c.ChangeMaxMsgs, "change-stream-max-msgs", c.ChangeMaxMsgs, u) })
	add("webhook-secret", func(u string) { fs.StringVar(&c.WebhookSecret, "webhook-secret", c.WebhookSecret, u) })
	add("webhook-attempts", func(u string) { fs.IntVar(&c.WebhookAttempts, "webhook-attempts", c.WebhookAttempts, u) })
	add("webhook-backoff", func(u string) { fs.DurationVar(&c.WebhookBackoff, "webhook-backoff", c.WebhookBackoff, u) })
	add("webhook-max-backoff", func(u string) { fs.DurationVar(&c.WebhookMaxBackoff, "webhook-max-backoff", c.WebhookMaxBackoff, u) })
	add("webhook-timeout", func(u string) { fs.DurationVar(&c.WebhookTimeout, "webhook-timeout", c.WebhookTimeout, u) })
	add("allow-private-webhooks", func(u string) {
		fs.BoolVar(&c.AllowPrivateWebhooks, "allow-private-webhooks", c.AllowPrivateWebhooks, u)
	})
	add("workers", func(u string) { fs.IntVar(&c.Workers, "workers", c.Workers, u) })
	add("concurrency", func(u string) { fs.IntVar(&c.Concurrency, "concurrency", c.Concurrency, u) })
	add("user-agent", func(u string) { fs.StringVar(&c.UserAgent, "user-agent", c.UserAgent, u) })
	add("timeout", func(u string) { fs.DurationVar(&c.Timeout, "timeout", c.Timeout, u) })
	add("max-body", func(u string) { fs.Int64Var(&c.MaxBody, "max-body", c.MaxBody, u) })
	add("max-redirects", func(u string) { fs.IntVar(&c.MaxRedirects, "max-redirects", c.MaxRedirects, u) })
	add("allow-private", func(u string) { fs.BoolVar(&c.AllowPrivate, "allow-private", c.AllowPrivate, u) })
	add("worker-id", func(u string) { fs.StringVar(&c.WorkerID, "worker-id", c.WorkerID, u) })
	add("stop-grace", func(u string) { fs.DurationVar(&c.StopGrace, "stop-grace", c.StopGrace, u) })
	add("health-listen", func(u string) { fs.StringVar(&c.HealthListen, "health-listen", c.HealthListen, u) })
	add("ignore-selector", func(u string) { fs.StringVar(&c.IgnoreSelector, "ignore-selector", c.IgnoreSelector, u) })
	add("ignore-pattern", func(u string) { fs.StringArrayVar(&c.IgnorePatterns, "ignore-pattern", c.IgnorePatterns, u) })
	add("min-change", func(u string) { fs.Float64Var(&c.MinChange, "min-change", c.MinChange, u) })
}

// EnvName is the environment variable of key.
func EnvName(key string) string {
	return "FRESHCRAWL_" + strings.ToUpper(strings.ReplaceAll(key, "-", "_"))
}

// Resolve applies the YAML file named by --config (or FRESHCRAWL_CONFIG)
// and the environment to every flag of fs the command line did not set.
// environ is os.Environ() in production.
func Resolve(fs *pflag.FlagSet, environ []string) error {
	env := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, "FRESHCRAWL_") {
			env[k] = v
		}
	}
	file := ""
	if f := fs.Lookup("config"); f != nil {
		file = f.Value.String()
		if !f.Changed {
			if v, ok := env[EnvName("config")]; ok {
				file = v
				if err := fs.Set("config", v); err != nil {
					return err
				}
			}
		}
	}
	fileVals := map[string][]string{}
	if file != "" {
		vals, err := readYAML(file)
		if err != nil {
			return err
		}
		fileVals = vals
	}
	// Unknown keys in the file or the environment are mistakes worth
	// stopping for: a typo would otherwise silently fall back to a default.
	known := map[string]bool{"config": true, "sources": true, "webhooks": true}
	for _, k := range keyDocs {
		known[k.Name] = true
	}
	var unknown []string
	for k := range fileVals {
		if !known[k] {
			unknown = append(unknown, fmt.Sprintf("%s: unknown key %q", file, k))
		}
	}
	for k := range env {
		name := strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(k, "FRESHCRAWL_")), "_", "-")
		if !known[name] {
			unknown = append(unknown, fmt.Sprintf("environment: unknown variable %s", k))
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return errors.New(strings.Join(unknown, "; "))
	}
	var errs []string
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Changed || f.Name == "config" {
			return
		}
		if v, ok := env[EnvName(f.Name)]; ok {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Sprintf("%s=%q: %v", EnvName(f.Name), v, err))
			}
			return
		}
		for _, v := range fileVals[f.Name] {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Sprintf("%s: key %q = %q: %v", file, f.Name, v, err))
			}
		}
	})
	if len(errs) > 0 {
		sort.Strings(errs)
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

func readYAML(file string) (map[string][]string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	var raw map[string]yaml.Node
	if err := yaml.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("config file %s: %w", file, err)
	}
	out := map[string][]string{}
	for k, n := range raw {
		if k == "sources" || k == "webhooks" {
			continue // structured; read by the sources and webhooks loaders
		}
		switch n.Kind {
		case yaml.ScalarNode:
			out[k] = []string{n.Value}
		case yaml.SequenceNode:
			for _, item := range n.Content {
				if item.Kind != yaml.ScalarNode {
					return nil, fmt.Errorf("config file %s line %d: key %q: list items must be single values", file, item.Line, k)
				}
				out[k] = append(out[k], item.Value)
			}
		default:
			return nil, fmt.Errorf("config file %s line %d: key %q wants a value or a list of values", file, n.Line, k)
		}
	}
	return out, nil
}

// Validate checks the values that flags cannot, each with the check of
// the package that owns the setting, and names the key at fault. A 0 the
// flags allow means 0 (--max-redirects 0 follows none, --workers 0 starts
// none), never "the default".
func (c *Config) Validate() error {
	var errs []string
	check := func(key string, err error) {
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", key, err))
		}
	}
	// The packages' Validate, each refusal under the key that set the
	// field; a key two packages check (ack-wait, max-deliver) is named
	// once, by the first.
	named := map[string]bool{}
	checkOptions := func(keys map[string]string, err error) {
		for _, e := range keyErrors(keys, err) {
			if !named[e.key] {
				named[e.key] = true
				errs = append(errs, e.String())
			}
		}
	}
	checkOptions(brokerKeys, c.BrokerSettings().Validate())
	lease := broker.DefaultLeaseOptions()
	lease.TTL = c.LeaseTTL
	checkOptions(map[string]string{"TTL": "lease-ttl"}, lease.Validate())
	co, err := c.coordinatorOptions()
	checkOptions(coordinatorKeys, err)
	checkOptions(coordinatorKeys, co.Validate())
	checkOptions(workerKeys, c.WorkerOptions("", nil).Validate())
	check("log-format", checkLogFormat(c.LogFormat))
	if (c.TLSCert == "") != (c.TLSKey == "") {
		check("tls-cert", errors.New("tls-cert and tls-key go together"))
	}
	if (c.NATSCert == "") != (c.NATSKey == "") {
		check("nats-cert", errors.New("nats-cert and nats-key go together"))
	}
	if (c.NATSUser == "") != (c.NATSPassword == "") {
		check("nats-user", errors.New("nats-user and nats-password go together"))
	}
	for _, t := range append(append([]string(nil), c.APITokens...), c.APIReadTokens...) {
		if err := checkToken(t); err != nil {
			check("api-token", err)
		}
	}
	for _, h := range c.APIHosts {
		if err := checkAPIHost(h); err != nil {
			check("api-host", err)
		}
	}
	if c.Workers < 0 {
		check("workers", fmt.Errorf("must be ≥ 0, got %d", c.Workers))
	}
	if _, err := c.level(); err != nil {
		errs = append(errs, err.Error())
	}
	if len(errs) > 0 {
		return errors.New("config: " + strings.Join(errs, "; "))
	}
	return nil
}

// keyError is a refusal of an Options' Validate under the key that set
// the field.
type keyError struct {
	key string
	err error
}

func (e keyError) String() string { return fmt.Sprintf("%s: %v", e.key, e.err) }

// keyErrors are the refusals of err, each under the key that sets the
// field (keys maps the field to it; "" drops the refusal: config reports
// it in its own terms). A field no key sets keeps its Go name.
func keyErrors(keys map[string]string, err error) []keyError {
	var out []keyError
	for _, f := range optcheck.Fields(err) {
		key, ok := keys[f.Field]
		switch {
		case !ok:
			key = f.Field
		case key == "":
			continue
		}
		out = append(out, keyError{key, f.Err})
	}
	return out
}

// coordinatorKeys are the keys of the fields of CoordinatorOptions.
var coordinatorKeys = map[string]string{
	"Budget": "budget", "HostRate": "host-rate", "MaxInFlight": "max-in-flight", "Policy": "policy", "Objective": "objective",
	"Replan": "replan", "PriorRate": "prior-rate", "HalfLife": "half-life", "ExploreShare": "explore", "LMSkew": "lm-skew", "CoChange": "co-change",
	"ProbePolicy": "probe-policy", "AckWait": "ack-wait", "MaxDeliver": "max-deliver",
	"Retention.Versions": "keep-versions", "Retention.VersionsAge": "keep-versions-for", "Retention.Changes": "keep-changes",
	"Retention.ChangesAge": "keep-changes-for", "Retention.FoldMarksAge": "keep-fold-marks-for", "GoneAfter": "gone-after",
	"Webhooks.Attempts": "webhook-attempts", "Webhooks.Backoff": "webhook-backoff", "Webhooks.MaxBackoff": "webhook-max-backoff",
	"Webhooks.Timeout":        "webhook-timeout",
	"DefaultIgnore.Selectors": "ignore-selector", "DefaultIgnore.Patterns": "ignore-pattern", "DefaultIgnore.MinChange": "min-change",
	"DefaultIgnore": "ignore",
}

// CoordinatorOptions are the coordinator's options the keys set; the
// caller adds what no key sets (sources, the webhooks of the config file,
// the log, the NATS link and lease). The error names the policy or
// objective key when no operator may choose its value.
func (c *Config) CoordinatorOptions() (coordinator.Options, error) {
	o, err := c.coordinatorOptions()
	if err != nil {
		var msgs []string
		for _, e := range keyErrors(coordinatorKeys, err) {
			msgs = append(msgs, e.String())
		}
		return o, errors.New("config: " + strings.Join(msgs, "; "))
	}
	return o, nil
}

// coordinatorOptions is CoordinatorOptions with the refusal of the policy
// or objective by field, and the default policy in its place.
func (c *Config) coordinatorOptions() (coordinator.Options, error) {
	o := coordinator.DefaultOptions()
	o.Budget, o.HostRate, o.MaxInFlight = c.Budget.PerSecond(), c.HostRate.PerSecond(), c.MaxInFlight
	o.Replan, o.PriorRate, o.HalfLife, o.ExploreShare = c.Replan, c.PriorRate.PerSecond(), c.HalfLife, c.Explore
	o.LMSkew, o.ProbePolicy, o.CaptureUniform, o.DefaultIgnore = c.LMSkew, c.ProbePolicy, c.CaptureUniform, c.defaultIgnore()
	o.CoChange = c.CoChange
	o.AckWait, o.MaxDeliver, o.Retention, o.GoneAfter = c.AckWait, c.MaxDeliver, c.retention(), c.GoneAfter
	o.Webhooks.Secret, o.Webhooks.Attempts, o.Webhooks.Timeout = c.WebhookSecret, c.WebhookAttempts, c.WebhookTimeout
	o.Webhooks.Backoff, o.Webhooks.MaxBackoff, o.Webhooks.AllowPrivate = c.WebhookBackoff, c.WebhookMaxBackoff, c.AllowPrivateWebhooks
	policy, err := schedule.OperatorPolicy(c.Policy, c.Objective)
	if err != nil {
		return o, err
	}
	o.Policy = policy
	return o, nil
}

// brokerKeys are the keys of the fields of BrokerSettings.
var brokerKeys = map[string]string{
	"Replicas": "replicas", "AckWait": "ack-wait", "MaxDeliver": "max-deliver",
	"Changes.MaxAge": "change-stream-max-age", "Changes.MaxBytes": "change-stream-max-bytes", "Changes.MaxMsgs": "change-stream-max-msgs",
}

// BrokerSettings are the NATS settings the keys set. The task consumer's
// MaxAckPending is sized to whichever bounds the tasks held more: the
// coordinator's in flight or the in-process workers' concurrency.
func (c *Config) BrokerSettings() broker.Settings {
	s := broker.DefaultSettings()
	s.Replicas, s.AckWait, s.MaxDeliver = c.Replicas, c.AckWait, c.MaxDeliver
	s.MaxAckPending = max(c.MaxInFlight, c.Workers*c.Concurrency, 1)
	s.Changes = broker.ChangeRetention{MaxAge: c.ChangeMaxAge, MaxBytes: c.ChangeMaxBytes, MaxMsgs: c.ChangeMaxMsgs}
	return s
}

// workerKeys are the keys of the fields of WorkerOptions.
var workerKeys = map[string]string{
	"Concurrency": "concurrency", "Grace": "stop-grace",
	"Fetch.UserAgent": "user-agent", "Fetch.Timeout": "timeout", "Fetch.MaxBody": "max-body", "Fetch.MaxRedirects": "max-redirects",
}

// WorkerOptions are the options of a worker named id (""; the host and
// process id) logging to log (nil: slog.Default()).
func (c *Config) WorkerOptions(id string, log *slog.Logger) worker.Options {
	o := worker.DefaultOptions()
	o.ID, o.Log, o.Concurrency, o.Grace = id, log, c.Concurrency, c.StopGrace
	o.Fetch.UserAgent, o.Fetch.Timeout, o.Fetch.MaxBody, o.Fetch.MaxRedirects, o.Fetch.AllowPrivate = c.UserAgent, c.Timeout, c.MaxBody, c.MaxRedirects, c.AllowPrivate
	return o
}

// retention is the store's retention the keep-* keys set.
func (c *Config) retention() store.Retention {
	r := store.DefaultRetention()
	r.Versions, r.VersionsAge, r.Changes, r.ChangesAge, r.FoldMarksAge = c.KeepVersions, c.KeepVersionsFor, c.KeepChanges, c.KeepChangesFor, c.KeepFoldMarks
	return r
}

// defaultIgnore is the noise rules every URL gets.
func (c *Config) defaultIgnore() proto.IgnoreRules {
	r := proto.IgnoreRules{Patterns: c.IgnorePatterns, MinChange: c.MinChange}
	if c.IgnoreSelector != "" {
		r.Selectors = []string{c.IgnoreSelector}
	}
	return r
}

// checkLogFormat reports whether f is a log format: text or json.
func checkLogFormat(f string) error {
	if f != "text" && f != "json" {
		return fmt.Errorf("%q: want text or json", f)
	}
	return nil
}

// minTokenLen is the shortest API token accepted: a token is a password
// sent on every request, and a short one can be guessed.
const minTokenLen = 16

// checkToken reports whether t can be an API token: at least minTokenLen
// characters, none of them a space or a control character (it travels in
// an Authorization header).
func checkToken(t string) error {
	if len(t) < minTokenLen {
		return fmt.Errorf("a token must have at least %d characters (got %d); make one with `openssl rand -hex 32`", minTokenLen, len(t))
	}
	for _, r := range t {
		if r <= ' ' || r == 0x7f {
			return errors.New("a token must not contain spaces or control characters")
		}
	}
	return nil
}

// Logger builds the logger the settings ask for, writing to w.
func (c *Config) Logger(w io.Writer) (*slog.Logger, error) {
	lvl, err := c.level()
	if err != nil {
		return nil, err
	}
	o := &slog.HandlerOptions{Level: lvl}
	switch c.LogFormat {
	case "", "text":
		return slog.New(slog.NewTextHandler(w, o)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, o)), nil
	}
	return nil, fmt.Errorf("log-format %q: want text or json", c.LogFormat)
}

// level parses LogLevel.
func (c *Config) level() (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(c.LogLevel)); err != nil {
		return l, fmt.Errorf("log-level %q: want debug, info, warn or error", c.LogLevel)
	}
	return l, nil
}

// APIBase is the coordinator API to talk to: --api, else the address
// the coordinator listens on (https when it serves TLS). An unspecified
// listen address (0.0.0.0, [::]) is reached on loopback.
func (c *Config) APIBase() string {
	if c.API != "" {
		return strings.TrimRight(c.API, "/")
	}
	scheme := "http://"
	if c.TLSCert != "" {
		scheme = "https://"
	}
	host, port, err := net.SplitHostPort(c.Listen)
	if err != nil {
		return scheme + c.Listen
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return scheme + net.JoinHostPort(host, port)
}

// ClientToken is the token a command sends to the API: the first admin
// token, else the first read-only one ("" if none).
func (c *Config) ClientToken() string {
	if len(c.APITokens) > 0 {
		return c.APITokens[0]
	}
	if len(c.APIReadTokens) > 0 {
		return c.APIReadTokens[0]
	}
	return ""
}

// NATSAuth is the authentication to an external NATS server the settings
// give.
func (c *Config) NATSAuth() broker.Auth {
	return broker.Auth{User: c.NATSUser, Password: c.NATSPassword, Token: c.NATSToken, NKeySeedFile: c.NATSNKey,
		CredsFile: c.NATSCreds, CAFile: c.NATSCA, CertFile: c.NATSCert, KeyFile: c.NATSKey}
}

// checkAPIHost checks an api-host value: what a Host header carries, a
// host name or IP with or without a port, and nothing else.
func checkAPIHost(s string) error {
	h := s
	if hh, p, err := net.SplitHostPort(s); err == nil {
		if _, err := strconv.ParseUint(p, 10, 16); err != nil {
			return fmt.Errorf("%q: port %q is not a port number", s, p)
		}
		h = hh
	}
	if h == "" || strings.ContainsAny(h, "/@?#*[]: \t") && net.ParseIP(h) == nil {
		return fmt.Errorf("%q: want a host name or IP, optionally with :port (no scheme, no path)", s)
	}
	return nil
}
