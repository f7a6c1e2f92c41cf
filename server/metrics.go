package server

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/hookback/hookback/internal/admissionhttp"
)

// Metrics are hookback's Prometheus metrics, kept in a registry of their own
// rather than the global one.
type Metrics struct {
	Registry *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	// upstream and own split latency, for a webhook that forwards, into
	// the wait on the user's server and hookback's share (hookback load
	// reads both).
	upstream, own *prometheus.HistogramVec
}

// NewMetrics registers the admission metrics and the Go runtime collectors.
func NewMetrics() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "hookback", Name: "admission_requests_total",
			Help: "Admission requests by webhook and decision (allowed, denied, errored, bad_request).",
		}, []string{"webhook", "decision"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "hookback", Name: "admission_duration_seconds",
			Help:    "Time to decode, decide and answer one admission request.",
			Buckets: []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1},
		}, []string{"webhook"}),
		upstream: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "hookback", Name: "upstream_duration_seconds",
			Help:    "Time spent waiting on your webhook server (--upstream) for one admission request.",
			Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
		}, []string{"webhook"}),
		own: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "hookback", Name: "admission_own_duration_seconds",
			Help:    "hookback's own share of a forwarded admission request: its duration less the wait on your webhook server.",
			Buckets: []float64{0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1},
		}, []string{"webhook"}),
	}
	m.Registry.MustRegister(m.requests, m.latency, m.upstream, m.own,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

var (
	_ admissionhttp.Observer         = (*Metrics)(nil)
	_ admissionhttp.UpstreamObserver = (*Metrics)(nil)
)

// Observe implements admissionhttp.Observer.
func (m *Metrics) Observe(webhook, decision string, took time.Duration) {
	m.requests.WithLabelValues(webhook, decision).Inc()
	if decision != "bad_request" {
		m.latency.WithLabelValues(webhook).Observe(took.Seconds())
	}
}

// ObserveUpstream implements admissionhttp.UpstreamObserver.
func (m *Metrics) ObserveUpstream(webhook string, waited, own time.Duration) {
	m.upstream.WithLabelValues(webhook).Observe(waited.Seconds())
	m.own.WithLabelValues(webhook).Observe(own.Seconds())
}
