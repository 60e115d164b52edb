package coordinator

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/freshcrawl/freshcrawl/internal/notify"
	"github.com/freshcrawl/freshcrawl/store"
)

// metrics are the coordinator's Prometheus series, on a registry of its own
// so two coordinators in one test process do not collide.
type metrics struct {
	reg         *prometheus.Registry
	fetches     *prometheus.CounterVec // by outcome: ok, not_modified, error
	changes     prometheus.Counter
	errors      *prometheus.CounterVec // by kind
	failed      prometheus.Counter
	dispatched  prometheus.CounterFunc
	duplicates  prometheus.Counter
	bytes       prometheus.Counter
	inFlight    prometheus.GaugeFunc
	urls        prometheus.Gauge
	workers     prometheus.Gauge
	queue       *prometheus.GaugeVec // pending, ack_pending, redelivered, results
	fresh       prometheus.Gauge
	planFresh   prometheus.Gauge
	age         prometheus.Gauge
	givenUp     prometheus.Gauge
	capped      prometheus.Gauge
	budget      prometheus.Gauge
	budgetInUse prometheus.Gauge
	unabsorbed  prometheus.Gauge
	disallowed  prometheus.Gauge
	foldSeconds prometheus.Histogram
	foldLatency prometheus.Histogram
	planSeconds prometheus.Histogram
	pruned      *prometheus.CounterVec // by what: versions, changes

	captureRecall   prometheus.Gauge
	captureLearning prometheus.Gauge

	probeRequests    prometheus.Counter
	contentFreshness *prometheus.GaugeVec
	coverage         *prometheus.GaugeVec
	speedup          *prometheus.GaugeVec
}

// inFlighter is what the metrics read of the dispatcher at scrape time.
type inFlighter interface {
	InFlight() int
	Published() uint64
}

func newMetrics(d inFlighter) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	ns := "freshcrawl"
	m.fetches = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "fetches_total", Help: "Fetch results folded, by outcome (ok, not_modified, error)."}, []string{"outcome"})
	m.changes = prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "changes_total", Help: "Changes detected."})
	m.errors = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "errors_total", Help: "Failed fetches by error kind."}, []string{"kind"})
	m.failed = prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "tasks_failed_total", Help: "Tasks that ran out of deliveries (MaxDeliver)."})
	m.dispatched = prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: ns, Name: "tasks_dispatched_total", Help: "Tasks published to the task stream."}, func() float64 { return float64(d.Published()) })
	m.duplicates = prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "results_duplicate_total", Help: "Redelivered results that were already folded."})
	m.bytes = prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "fetched_bytes_total", Help: "Bytes of response bodies."})
	m.inFlight = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Name: "tasks_in_flight", Help: "Tasks dispatched and not yet folded."}, func() float64 { return float64(d.InFlight()) })
	m.urls = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "urls", Help: "URLs known."})
	m.workers = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "workers_seen", Help: "Workers heard from (a heartbeat or a result) in the last minute."})
	m.queue = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "queue_depth", Help: "Task queue depth by state (pending, ack_pending, redelivered) and results awaiting fold (results)."}, []string{"state"})
	m.fresh = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "model_freshness", Help: "The model's expected weighted freshness of the stored copies as of the last plan: E[exp(-rate*age)] under each URL's posterior, a URL never fetched counting as stale."})
	m.planFresh = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "plan_freshness", Help: "The weighted freshness the plan's frequencies are expected to hold in the steady state, under each URL's posterior."})
	m.age = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "model_age_seconds", Help: "The model's estimated weighted age of the collection."})
	m.givenUp = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "urls_given_up", Help: "URLs the optimum gives up on (f = 0; explored only)."})
	m.capped = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "hosts_at_cap", Help: "Hosts at their politeness cap."})
	m.budget = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "budget_per_second", Help: "Configured fetch budget."})
	m.budgetInUse = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "budget_in_use_per_second", Help: "Fetches per second the plan allocates."})
	m.unabsorbed = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "budget_unabsorbed_per_second", Help: "Budget no host can absorb under politeness caps."})
	m.disallowed = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "urls_disallowed", Help: "URLs disallowed by robots.txt."})
	m.foldSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "fold_batch_seconds", Help: "Time to fold one batch of results into bbolt.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)})
	m.planSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "plan_seconds", Help: "Time to re-plan (solve the policy over all URLs and apply the intervals); its count is the number of plans.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)})
	m.pruned = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "pruned_total", Help: "Versions and change-log entries deleted by the retention settings."}, []string{"what"})
	m.reg.MustRegister(m.pruned)
	m.captureRecall = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "capture_expected_recall", Help: "Mean expected change recall of the capture URLs whose update phases are learnt (Ashish, Kulkarni & Wang)."})
	m.captureLearning = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "capture_learning_urls", Help: "Capture URLs still polling uniformly while they learn their update phases."})
	m.reg.MustRegister(m.captureRecall, m.captureLearning)
	m.probeRequests = prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "probe_requests_total", Help: "Keyword-search and fetch-by-id requests planned for tracked items."})
	m.contentFreshness = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "content_freshness", Help: "The model's expected content freshness of a source's tracked items at the last round (0 = in sync; larger is staler)."}, []string{"source"})
	m.coverage = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "probe_coverage_ratio", Help: "Coverage ratio of the last probe round (the content-freshness paper §5.1)."}, []string{"source"})
	m.speedup = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "probe_speedup_ratio", Help: "Speedup ratio of the last probe round: items covered per request."}, []string{"source"})
	m.reg.MustRegister(m.probeRequests, m.contentFreshness, m.coverage, m.speedup)
	m.foldLatency = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "fold_latency_seconds", Help: "Time from a result's arrival in the results stream to the commit of its fold.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)})
	m.reg.MustRegister(m.foldLatency, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.reg.MustRegister(m.fetches, m.changes, m.errors, m.failed, m.dispatched, m.duplicates, m.bytes, m.inFlight, m.urls, m.workers, m.queue,
		m.fresh, m.planFresh, m.age, m.givenUp, m.capped, m.budget, m.budgetInUse, m.unabsorbed, m.disallowed, m.foldSeconds, m.planSeconds)
	return m
}

// window counts events in the last minute, per second.
type window struct {
	mu      sync.Mutex
	buckets [60]int64
	stamps  [60]int64
}

func (w *window) add(now time.Time, n int64) {
	s := now.Unix()
	i := s % 60
	w.mu.Lock()
	if w.stamps[i] != s {
		w.stamps[i], w.buckets[i] = s, 0
	}
	w.buckets[i] += n
	w.mu.Unlock()
}

// lastMinute is the count over the 60 seconds before now.
func (w *window) lastMinute(now time.Time) int64 {
	s := now.Unix()
	var n int64
	w.mu.Lock()
	for i := range w.buckets {
		if s-w.stamps[i] < 60 {
			n += w.buckets[i]
		}
	}
	w.mu.Unlock()
	return n
}

// addWebhooks registers the webhook series, read from the deliverer and
// the store at scrape time.
func (m *metrics) addWebhooks(d *notify.Deliverer, db *store.DB) {
	ns := "freshcrawl"
	m.reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: ns, Name: "webhook_deliveries_total", Help: "Change events delivered to webhooks (2xx answers) since the start."}, func() float64 { n, _, _ := d.Counts(); return float64(n) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: ns, Name: "webhook_failed_attempts_total", Help: "Webhook requests that failed (no answer, or not 2xx) since the start."}, func() float64 { _, n, _ := d.Counts(); return float64(n) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Name: "webhook_dead_letters", Help: "Webhook deliveries in the dead-letter list."}, func() float64 { _, n, _ := db.DeadLetters(0); return float64(n) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Name: "webhook_queued", Help: "Webhook deliveries waiting, all webhooks together."}, func() float64 {
			q, _ := db.QueuedEndpoints()
			n := 0
			for _, v := range q {
				n += v
			}
			return float64(n)
		}),
	)
}
