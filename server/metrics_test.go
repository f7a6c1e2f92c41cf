package server

import (
	"testing"
	"time"
)

// A forwarded admission is counted in the upstream and own histograms
// beside the total one, labelled by webhook, for hookback load to read.
func TestMetricsObserveUpstream(t *testing.T) {
	m := NewMetrics()
	m.Observe("yours", "allowed", 5*time.Millisecond)
	m.ObserveUpstream("yours", 4*time.Millisecond, time.Millisecond)
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sums := map[string]float64{}
	for _, f := range families {
		for _, s := range f.GetMetric() {
			if h := s.GetHistogram(); h != nil && len(s.GetLabel()) == 1 && s.GetLabel()[0].GetValue() == "yours" {
				sums[f.GetName()] = h.GetSampleSum()
			}
		}
	}
	for name, want := range map[string]float64{
		"hookback_admission_duration_seconds":     0.005,
		"hookback_upstream_duration_seconds":      0.004,
		"hookback_admission_own_duration_seconds": 0.001,
	} {
		t.Run(name, func(t *testing.T) {
			if got, ok := sums[name]; !ok || got < want*0.99 || got > want*1.01 {
				t.Errorf("%s{webhook=yours} sum = %v (present %v), want %v", name, got, ok, want)
			}
		})
	}
}
