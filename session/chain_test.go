package session

import (
	"testing"

	"github.com/hookback/hookback/chain"
	"github.com/hookback/hookback/server"
)

// TestChainDroppedMetric: a chain the publisher's full queue drops is
// counted in hookback_chain_views_dropped_total, on the session's metrics.
func TestChainDroppedMetric(t *testing.T) {
	c := &chainRun{publisher: chain.NewPublisher(chain.Publisher{})}
	m := server.NewMetrics()
	if err := c.register(m); err != nil {
		t.Fatal(err)
	}
	for range 300 { // nothing publishes: the queue (256) fills
		c.publisher.Done(&chain.Chain{})
	}
	want := float64(300 - 256)
	mfs, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, mf := range mfs {
		if mf.GetName() == "hookback_chain_views_dropped_total" {
			found = true
			if got := mf.GetMetric()[0].GetCounter().GetValue(); got != want {
				t.Errorf("dropped = %v, want %v", got, want)
			}
		}
	}
	if !found {
		t.Error("no hookback_chain_views_dropped_total on the session's metrics")
	}
	var off *chainRun
	if err := off.register(m); err != nil {
		t.Errorf("without --chain: %v", err)
	}
}
