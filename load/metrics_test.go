package load

import (
	"context"
	"math"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// The apiserver's histogram as client_golang exposes it, read before and
// after some calls: the difference holds those calls only, summed over
// type and rejected, CREATE only.
func TestScrapeApiserverHistogram(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    apiserverWebhookHistogram,
		Buckets: []float64{0.005, 0.025, 0.1, 0.5, 1, 2.5},
	}, []string{"name", "type", "operation", "rejected"})
	other := prometheus.NewCounter(prometheus.CounterOpts{Name: "apiserver_request_total"})
	reg.MustRegister(h, other)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()

	h.WithLabelValues("a.example", "admit", "CREATE", "false").Observe(0.003) // before
	before, err := scrape(context.Background(), srv.Client(), srv.URL, apiserverSpec)
	if err != nil {
		t.Fatal(err)
	}
	for range 98 {
		h.WithLabelValues("a.example", "admit", "CREATE", "false").Observe(0.010)
	}
	h.WithLabelValues("a.example", "validating", "CREATE", "true").Observe(0.3)
	h.WithLabelValues("a.example", "admit", "CREATE", "false").Observe(2)
	h.WithLabelValues("a.example", "admit", "UPDATE", "false").Observe(2) // not a create
	after, err := scrape(context.Background(), srv.Client(), srv.URL, apiserverSpec)
	if err != nil {
		t.Fatal(err)
	}
	d := after[apiserverWebhookHistogram]["a.example"].minus(before[apiserverWebhookHistogram]["a.example"])
	tests := []struct {
		name     string
		got      float64
		from, to float64
	}{
		{"calls", d.count, 100, 100},
		{"p50 within its bucket", d.quantile(0.5), 0.005, 0.025},
		{"p99 within the 0.1-0.5 bucket", d.quantile(0.99), 0.1, 0.5},
		{"p100 within the 1-2.5 bucket", d.quantile(1), 1, 2.5},
		{"mean", d.mean(), (98*0.010 + 0.3 + 2) / 100 * 0.999, (98*0.010 + 0.3 + 2) / 100 * 1.001},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got < tt.from || tt.got > tt.to {
				t.Errorf("%s = %v, want %v to %v", tt.name, tt.got, tt.from, tt.to)
			}
		})
	}
}

func TestQuantileEdges(t *testing.T) {
	inf := math.Inf(1)
	tests := []struct {
		name string
		h    *histogram
		q    float64
		want float64
	}{
		{name: "empty", h: &histogram{bounds: []float64{1, inf}, counts: []float64{0, 0}}, q: 0.5, want: math.NaN()},
		{name: "all in +Inf: the highest finite bound", h: &histogram{bounds: []float64{1, inf}, counts: []float64{0, 4}, count: 4}, q: 0.5, want: 1},
		{name: "interpolated", h: &histogram{bounds: []float64{1, 2, inf}, counts: []float64{0, 4, 4}, count: 4}, q: 0.5, want: 1.5},
		{name: "first bucket from zero", h: &histogram{bounds: []float64{1, inf}, counts: []float64{2, 2}, count: 2}, q: 0.5, want: 0.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.h.quantile(tt.q)
			if got != tt.want && !(math.IsNaN(got) && math.IsNaN(tt.want)) {
				t.Errorf("quantile(%v) = %v, want %v", tt.q, got, tt.want)
			}
		})
	}
}

// A /metrics that answers an error is an error, for the note.
func TestScrapeRefused(t *testing.T) {
	srv := httptest.NewServer(promhttp.HandlerFor(prometheus.NewRegistry(), promhttp.HandlerOpts{}))
	url := srv.URL
	srv.Close()
	if _, err := scrape(context.Background(), srv.Client(), url, hookbackSpec); err == nil {
		t.Error("scrape of a closed server: no error")
	}
}
