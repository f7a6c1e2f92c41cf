package load

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hookback/hookback/load/loadplot"
)

// publish tells the inspector of the run after each step, the knee as far
// as it went, the errors by kind; an inspector that refuses it is noted
// once and not tried again.
func TestPublish(t *testing.T) {
	var mu sync.Mutex
	var got []loadplot.Run
	var refuse atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/load" {
			http.NotFound(w, r)
			return
		}
		if refuse.Load() {
			http.Error(w, "load run: id \"\"", http.StatusBadRequest)
			return
		}
		var v loadplot.Run
		if err := json.NewDecoder(r.Body).Decode(&v); err != nil {
			t.Errorf("decode: %v", err)
		}
		mu.Lock()
		got = append(got, v)
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()

	r := &run{inspector: inspectorURL(srv.URL), id: "team-a-1"}
	rep := &Report{Namespace: "team-a", Rates: []float64{10, 20}, BudgetMs: 100}
	ctx := context.Background()
	r.publish(ctx, rep, false)
	rep.Steps = append(rep.Steps, Step{Step: 1, OfferedRate: 10, P99Ms: 150, Sent: 10, Skipped: 2, ErrorRate: 0.2,
		Outcomes: map[string]int{KindOK: 7, KindTimeout: 1, KindDenied: 2}})
	r.publish(ctx, rep, false)
	rep.finish(Gates{})
	r.publish(ctx, rep, true)
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 3 || len(got[0].Steps) != 0 || got[0].Planned != 2 || got[0].ID != "team-a-1" {
		t.Fatalf("the inspector got %+v", got)
	}
	if s := got[1]; s.Done || s.Knee != 1 || !strings.Contains(s.KneeReason, "errors start") ||
		len(s.Steps[0].Errors) != 2 || s.Steps[0].Errors[KindTimeout] != 1 || s.Steps[0].Errors["skipped"] != 2 {
		t.Errorf("after step 1: %+v", s)
	}
	if !got[2].Done || got[2].Knee != 1 {
		t.Errorf("at the end: %+v", got[2])
	}

	refuse.Store(true)
	r.publish(ctx, rep, true)
	r.publish(ctx, rep, true)
	if len(r.notes) != 1 || !strings.Contains(r.notes[0], "400 Bad Request") || r.inspector != "" {
		t.Errorf("notes %q, inspector %q: want one note and no more tries", r.notes, r.inspector)
	}
}

func TestInspectorURL(t *testing.T) {
	for in, want := range map[string]string{"": "", "127.0.0.1:8682": "http://127.0.0.1:8682/load", "http://[::1]:9/": "http://[::1]:9/load"} {
		if got := inspectorURL(in); got != want {
			t.Errorf("inspectorURL(%q) = %q, want %q", in, got, want)
		}
	}
}
