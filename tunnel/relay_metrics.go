package tunnel

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// DefaultMetricsPort is where the relay pod serves /metrics and /healthz.
const DefaultMetricsPort = 8080

// relayMetrics count what the relay carries, so a tunnel that fails open
// (no laptop attached) shows on a dashboard rather than only in a log line
// printed once.
type relayMetrics struct {
	registry *prometheus.Registry
	attached prometheus.Gauge
	attaches *prometheus.CounterVec
	conns    *prometheus.CounterVec
	active   prometheus.Gauge
}

func newRelayMetrics() *relayMetrics {
	m := &relayMetrics{
		registry: prometheus.NewRegistry(),
		attached: prometheus.NewGauge(prometheus.GaugeOpts{Name: "hookback_relay_laptop_attached",
			Help: "1 while a laptop is attached, else 0 (connections are then closed at once: the webhooks fail open)"}),
		attaches: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hookback_relay_attaches_total",
			Help: "Control connections by result: attached, or refused (wrong secret, bad handshake)"}, []string{"result"}),
		conns: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hookback_relay_connections_total",
			Help: "apiserver connections by result: carried to the laptop, no_laptop (closed at once), stream_failed"}, []string{"result"}),
		active: prometheus.NewGauge(prometheus.GaugeOpts{Name: "hookback_relay_connections_active",
			Help: "apiserver connections being carried now"}),
	}
	m.registry.MustRegister(m.attached, m.attaches, m.conns, m.active,
		prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	for _, r := range []string{"attached", "refused"} {
		m.attaches.WithLabelValues(r)
	}
	for _, r := range []string{"carried", "no_laptop", "stream_failed"} {
		m.conns.WithLabelValues(r)
	}
	return m
}

// metricsServer serves /metrics and /healthz on ln until ctx is done.
func (m *relayMetrics) serve(ctx context.Context, ln net.Listener) error {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	err := srv.Serve(ln)
	<-done
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return fmt.Errorf("relay metrics: %w", err)
}
