package worker

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/freshcrawl/freshcrawl/proto"
)

// Metrics are a worker process's Prometheus series, shared by its
// in-process workers. They tell a slow or failing fetcher from an idle
// one: fetch latency, bytes, results by HTTP status class and error kind,
// robots.txt cache hits and the tasks in progress.
type Metrics struct {
	fetchSeconds prometheus.Histogram
	bytes        prometheus.Counter
	results      *prometheus.CounterVec // status class, error kind
	robotsHits   prometheus.Counter
	robotsMisses prometheus.Counter
	active       prometheus.Gauge
}

// NewMetrics registers a worker process's series on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	ns, sub := "freshcrawl", "worker"
	m := &Metrics{
		fetchSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub, Name: "fetch_duration_seconds",
			Help: "Time of one fetch (a page or a robots.txt): connection, request, response and body, redirects included.", Buckets: prometheus.ExponentialBuckets(0.005, 2, 14)}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "fetched_bytes_total", Help: "Bytes of response bodies read, after decompression."}),
		results: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "results_total",
			Help: "Tasks finished, by HTTP status class (2xx, 3xx, 4xx, 5xx, none) and error kind (none when the fetch succeeded)."}, []string{"status", "kind"}),
		robotsHits:   prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "robots_cache_hits_total", Help: "robots.txt checks answered from the cache (memory or the shared bucket)."}),
		robotsMisses: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "robots_cache_misses_total", Help: "robots.txt checks that fetched robots.txt."}),
		active:       prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "tasks_in_progress", Help: "Tasks being worked on now."}),
	}
	reg.MustRegister(m.fetchSeconds, m.bytes, m.results, m.robotsHits, m.robotsMisses, m.active)
	return m
}

// statusClass is the label of an HTTP status: "2xx" … "5xx", or "none"
// when no response came.
func statusClass(code int) string {
	if code < 100 || code > 599 {
		return "none"
	}
	return strconv.Itoa(code/100) + "xx"
}

func (m *Metrics) fetched(d time.Duration, bytes int64) {
	if m == nil {
		return
	}
	m.fetchSeconds.Observe(d.Seconds())
	m.bytes.Add(float64(bytes))
}

func (m *Metrics) result(r *proto.Result) {
	if m == nil {
		return
	}
	kind := string(r.ErrKind)
	if kind == "" {
		kind = "none"
	}
	m.results.WithLabelValues(statusClass(r.Status), kind).Inc()
}

func (m *Metrics) robots(fetched bool) {
	if m == nil {
		return
	}
	if fetched {
		m.robotsMisses.Inc()
	} else {
		m.robotsHits.Inc()
	}
}

func (m *Metrics) working(delta float64) {
	if m != nil {
		m.active.Add(delta)
	}
}
