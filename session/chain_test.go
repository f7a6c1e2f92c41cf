package session

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/hookback/hookback/chain"
	"github.com/hookback/hookback/server"
)

// TestChainMetrics: a chain the publisher's full queue drops is counted in
// hookback_chain_views_dropped_total, a view the collector's full queue
// drops in hookback_chain_observations_dropped_total, and each observer's
// call in hookback_admission_requests_total under its name, on the
// session's metrics.
func TestChainMetrics(t *testing.T) {
	c := &chainRun{publisher: chain.NewPublisher(chain.Publisher{}), collector: chain.NewCollector(&chain.Joiner{}, chain.CollectorOptions{})}
	m := server.NewMetrics()
	if err := c.register(m); err != nil {
		t.Fatal(err)
	}
	for range 300 { // nothing publishes: the queue (256) fills
		c.publisher.Done(&chain.Chain{})
	}
	review, err := os.ReadFile(filepath.Join("..", "testdata", "admission", "pod-create.v1.json"))
	if err != nil {
		t.Fatal(err)
	}
	first := c.handlers()[chain.PathFirst]
	for range 1030 { // nothing joins: the collector's queue (1024) fills
		r := httptest.NewRequest(http.MethodPost, chain.PathFirst, bytes.NewReader(review))
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		first.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			t.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
	mfs, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, x := range mf.GetMetric() {
			got[mf.GetName()+labelsOf(x)] = x.GetCounter().GetValue()
		}
	}
	for name, want := range map[string]float64{
		"hookback_chain_views_dropped_total":                                          300 - 256,
		"hookback_chain_observations_dropped_total":                                   1030 - 1024,
		`hookback_admission_requests_total{decision="allowed",webhook="chain-first"}`: 1030,
	} {
		if v, ok := got[name]; !ok || v != want {
			t.Errorf("%s = %v (present %t), want %v", name, v, ok, want)
		}
	}
	var off *chainRun
	if err := off.register(m); err != nil {
		t.Errorf("without --chain: %v", err)
	}
	if h := off.handlers(); h != nil {
		t.Errorf("without --chain, observers served: %v", h)
	}
}

func labelsOf(m *dto.Metric) string {
	if len(m.GetLabel()) == 0 {
		return ""
	}
	s := "{"
	for i, l := range m.GetLabel() {
		if i > 0 {
			s += ","
		}
		s += l.GetName() + `="` + l.GetValue() + `"`
	}
	return s + "}"
}
