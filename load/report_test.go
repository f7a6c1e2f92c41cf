package load

import (
	"bytes"
	"context"
	"encoding/xml"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/hookback/hookback/server"
)

func steps(p99s ...float64) []Step {
	var out []Step
	for i, p := range p99s {
		out = append(out, Step{Step: i + 1, OfferedRate: float64(10 * (i + 1)), P50Ms: p / 2, P95Ms: p * 0.9, P99Ms: p, MaxMs: p * 1.2,
			Outcomes: map[string]int{KindOK: 10}})
	}
	return out
}

func TestKneeAndGates(t *testing.T) {
	withErrors := steps(5, 6, 7)
	withErrors[1].ErrorRate, withErrors[1].Outcomes[KindThrottled] = 0.1, 1
	tests := []struct {
		name       string
		steps      []Step
		budget     float64
		gates      Gates
		knee       int
		reason     string
		passed     bool
		failedGate string
	}{
		{name: "within budget", steps: steps(5, 8, 12), budget: 100, knee: 0, passed: true},
		{name: "p99 passes the budget", steps: steps(5, 80, 120, 300), budget: 100, knee: 3, reason: "p99 120.0 ms passes the budget of 100 ms", passed: true},
		{name: "errors start first", steps: withErrors, budget: 100, knee: 2, reason: "errors start (10.00%)", passed: true},
		{name: "p99 gate", steps: steps(5, 80, 120), gates: Gates{MaxP99: 100 * time.Millisecond}, knee: 0, passed: false, failedGate: "max-p99 (ms)"},
		{name: "error gate passes at its limit", steps: withErrors, gates: Gates{MaxErrorRate: "10%"}, knee: 2, reason: "errors start (10.00%)", passed: true},
		{name: "error gate", steps: withErrors, gates: Gates{MaxErrorRate: "0"}, knee: 2, reason: "errors start (10.00%)", passed: false, failedGate: "max-error-rate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Report{Steps: tt.steps, BudgetMs: tt.budget}
			r.finish(tt.gates)
			if r.Knee != tt.knee || r.KneeReason != tt.reason || r.Passed != tt.passed {
				t.Errorf("knee %d %q, passed %v; want %d %q, %v", r.Knee, r.KneeReason, r.Passed, tt.knee, tt.reason, tt.passed)
			}
			for _, g := range r.Gates {
				if !g.Passed && g.Gate != tt.failedGate {
					t.Errorf("gate %s failed, want only %q to", g.Gate, tt.failedGate)
				}
			}
			var table, junit, plot bytes.Buffer
			if err := r.WriteTable(&table); err != nil {
				t.Fatal(err)
			}
			if tt.failedGate != "" && !strings.Contains(table.String(), "gate "+tt.failedGate) {
				t.Errorf("table does not show the failed gate:\n%s", table.String())
			}
			j := r.JUnit()
			if (j.Failures > 0) == tt.passed {
				t.Errorf("junit has %d failures, run passed %v", j.Failures, tt.passed)
			}
			if err := j.Write(&junit); err != nil {
				t.Fatal(err)
			}
			if err := r.WritePlot(&plot); err != nil {
				t.Fatal(err)
			}
			var svg struct {
				XMLName   xml.Name
				Polylines []struct{} `xml:"polyline"`
			}
			if err := xml.Unmarshal(plot.Bytes(), &svg); err != nil || svg.XMLName.Local != "svg" || len(svg.Polylines) != 3 {
				t.Errorf("plot is not an SVG of three series (%v):\n%s", err, plot.String())
			}
		})
	}
}

// summarize counts what the step's requests reported: percentiles from
// the answers, errors by kind, skipped requests as errors.
func TestSummarize(t *testing.T) {
	end := time.Now().Add(time.Hour)
	st := newStepStats(end)
	for i := 1; i <= 100; i++ {
		st.sending()
		kind := KindOK
		switch {
		case i <= 2:
			kind = KindThrottled
		case i <= 5:
			kind = KindDenied
		}
		st.add(time.Duration(i)*time.Millisecond, kind, "message "+kind)
	}
	st.skip()
	s := summarize(1, 50, 2*time.Second, st)
	if s.Sent != 100 || s.Answered != 100 || s.Skipped != 1 || s.Outcomes[KindThrottled] != 2 || s.Outcomes[KindDenied] != 3 {
		t.Errorf("counts: %+v", s)
	}
	if s.P50Ms != 50 || s.P99Ms != 99 || s.MaxMs != 100 || s.AchievedRate != 50 {
		t.Errorf("p50 %v p99 %v max %v achieved %v; want 50, 99, 100, 50", s.P50Ms, s.P99Ms, s.MaxMs, s.AchievedRate)
	}
	if want := round(3.0/101, 4); s.ErrorRate != want {
		t.Errorf("error rate %v, want %v (2 throttled and 1 skipped of 101)", s.ErrorRate, want)
	}
	if s.FirstErrors[KindThrottled] != "message throttled" || s.FirstErrors[KindDenied] != "" {
		t.Errorf("first errors %v: want the throttled one only (a denial is no error)", s.FirstErrors)
	}
}

// hookback's own metrics (server.Metrics, as a session serves them) give
// a forwarded webhook's row its server's share and hookback's.
func TestWebhookRowsFromHookback(t *testing.T) {
	m := server.NewMetrics()
	srv := httptest.NewServer(promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{}))
	defer srv.Close()
	m.Observe("builtin", "allowed", time.Millisecond)
	read := func() map[string]snapshot {
		s, err := scrape(context.Background(), srv.Client(), srv.URL, hookbackSpec)
		if err != nil {
			t.Fatal(err)
		}
		return map[string]snapshot{SourceHookback: s}
	}
	before := read()
	for range 10 {
		m.Observe("yours", "allowed", 21*time.Millisecond)
		m.ObserveUpstream("yours", 20*time.Millisecond, time.Millisecond)
	}
	rows := webhookRows(before, read())
	if len(rows) != 1 {
		t.Fatalf("rows = %+v, want the one webhook called since", rows)
	}
	r := rows[0]
	if r.Webhook != "yours" || r.Source != SourceHookback || r.Calls != 10 || r.UpstreamP50Ms == nil {
		t.Fatalf("row = %+v", r)
	}
	if *r.UpstreamP50Ms < 10 || *r.UpstreamP50Ms > 25 || *r.OwnMeanMs != 1 || r.MeanMs != 21 {
		t.Errorf("upstream p50 %v (want 10 to 25, its bucket), own mean %v (want 1), mean %v (want 21)", *r.UpstreamP50Ms, *r.OwnMeanMs, r.MeanMs)
	}
}
