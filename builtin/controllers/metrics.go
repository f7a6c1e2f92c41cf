package controllers

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
)

// queueMetrics is a workqueue.MetricsProvider backed by one Prometheus
// registerer. It is handed to each queue in its config rather than installed
// with workqueue.SetProvider, which is process-global, first-call-wins, and
// would tie the metrics to whichever registry asked first.
//
// The metric names and the "name" label (the controller's name) are the ones
// Kubernetes components and controller-runtime use, so existing workqueue
// dashboards and alerts work unchanged.
type queueMetrics struct {
	depth          *prometheus.GaugeVec
	adds           *prometheus.CounterVec
	latency        *prometheus.HistogramVec
	workDuration   *prometheus.HistogramVec
	unfinished     *prometheus.GaugeVec
	longestRunning *prometheus.GaugeVec
	retries        *prometheus.CounterVec
}

var _ workqueue.MetricsProvider = (*queueMetrics)(nil)

// newQueueMetrics registers the workqueue metrics with reg. A collector that
// is already registered (Build called twice with the same registry) is reused
// rather than reported as an error.
func newQueueMetrics(reg prometheus.Registerer) (*queueMetrics, error) {
	label := []string{"name"}
	// From 10ns to ~1000s: queue waits and reconciles span that whole range.
	buckets := prometheus.ExponentialBuckets(10e-9, 10, 12)
	m := &queueMetrics{
		depth: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: "workqueue", Name: "depth",
			Help: "Current depth of the workqueue.",
		}, label),
		adds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "workqueue", Name: "adds_total",
			Help: "Total number of adds handled by the workqueue.",
		}, label),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "workqueue", Name: "queue_duration_seconds",
			Help:    "How long in seconds an item stays in the workqueue before being requested.",
			Buckets: buckets,
		}, label),
		workDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "workqueue", Name: "work_duration_seconds",
			Help:    "How long in seconds processing an item from the workqueue takes.",
			Buckets: buckets,
		}, label),
		unfinished: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: "workqueue", Name: "unfinished_work_seconds",
			Help: "How many seconds of work has been done that is in progress and hasn't been observed by work_duration. " +
				"Large values indicate stuck threads.",
		}, label),
		longestRunning: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: "workqueue", Name: "longest_running_processor_seconds",
			Help: "How many seconds the longest running processor for the workqueue has been running.",
		}, label),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "workqueue", Name: "retries_total",
			Help: "Total number of retries handled by the workqueue.",
		}, label),
	}
	if err := errors.Join(register(reg, &m.depth), register(reg, &m.adds), register(reg, &m.latency),
		register(reg, &m.workDuration), register(reg, &m.unfinished), register(reg, &m.longestRunning),
		register(reg, &m.retries)); err != nil {
		return nil, fmt.Errorf("register workqueue metrics: %w", err)
	}
	return m, nil
}

// register registers *c, or points *c at the equal collector registered
// before.
func register[C prometheus.Collector](reg prometheus.Registerer, c *C) error {
	err := reg.Register(*c)
	var already prometheus.AlreadyRegisteredError
	if errors.As(err, &already) {
		if existing, ok := already.ExistingCollector.(C); ok {
			*c = existing
			return nil
		}
	}
	return err
}

func (m *queueMetrics) NewDepthMetric(name string) workqueue.GaugeMetric {
	return m.depth.WithLabelValues(name)
}

func (m *queueMetrics) NewAddsMetric(name string) workqueue.CounterMetric {
	return m.adds.WithLabelValues(name)
}

func (m *queueMetrics) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return m.latency.WithLabelValues(name)
}

func (m *queueMetrics) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return m.workDuration.WithLabelValues(name)
}

func (m *queueMetrics) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return m.unfinished.WithLabelValues(name)
}

func (m *queueMetrics) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return m.longestRunning.WithLabelValues(name)
}

func (m *queueMetrics) NewRetriesMetric(name string) workqueue.CounterMetric {
	return m.retries.WithLabelValues(name)
}
