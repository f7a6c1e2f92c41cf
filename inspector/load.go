package inspector

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/hookback/hookback/load/loadplot"
)

// maxLoadBody bounds a load run posted to the inspector: a thousand steps
// fit many times over.
const maxLoadBody = 1 << 20

// loadRuns holds the latest load run that told the inspector of itself
// (hookback load --inspector-address): one run at a time is shown.
type loadRuns struct {
	mu     sync.Mutex
	latest *loadplot.Run
}

// postLoad takes a run as far as it went; a report of another run
// replaces the one shown.
func (s *Server) postLoad(w http.ResponseWriter, r *http.Request) {
	var run loadplot.Run
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxLoadBody))
	if err := dec.Decode(&run); err != nil {
		http.Error(w, "decode the load run: "+err.Error()+" (hookback load sends it: give it --inspector-address)", http.StatusBadRequest)
		return
	}
	if err := run.Validate(); err != nil {
		http.Error(w, "load run: "+strings.ReplaceAll(err.Error(), "\n", "; "), http.StatusBadRequest)
		return
	}
	s.loads.mu.Lock()
	s.loads.latest = &run
	s.loads.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// latestLoad is a copy of the run shown, nil when none.
func (s *Server) latestLoad() *loadplot.Run {
	s.loads.mu.Lock()
	defer s.loads.mu.Unlock()
	if s.loads.latest == nil {
		return nil
	}
	run := *s.loads.latest
	run.Steps = slices.Clone(run.Steps)
	return &run
}

// loadPage is the data of the load page.
type loadPage struct {
	Run *loadplot.Run
	// Rows are the steps, formatted; SVG the plot, inline.
	Rows []loadRow
}

type loadRow struct {
	Step                                      int
	Offered, Achieved, P50, P95, P99, Max, ER string
	Sent                                      int
	Errors                                    string
	Knee                                      bool
}

// loadView shows the latest load run: its steps and the plot, the page
// reloading itself each second while the run goes on.
func (s *Server) loadView(w http.ResponseWriter, r *http.Request) {
	page := loadPage{Run: s.latestLoad()}
	if page.Run != nil {
		for _, p := range page.Run.Steps {
			page.Rows = append(page.Rows, loadRow{Step: p.Step, Offered: num(p.OfferedRate), Achieved: num(p.AchievedRate),
				P50: num(p.P50Ms), P95: num(p.P95Ms), P99: num(p.P99Ms), Max: num(p.MaxMs),
				ER: fmt.Sprintf("%.2f%%", p.ErrorRate*100), Sent: p.Sent, Errors: errorKinds(p.Errors), Knee: p.Step == page.Run.Knee})
		}
	}
	s.render(w, "load", page)
}

// loadPlot serves the latest run's plot, drawn by load's own SVG code.
func (s *Server) loadPlot(w http.ResponseWriter, r *http.Request) {
	run := s.latestLoad()
	if run == nil {
		http.Error(w, "no load run yet: run hookback load with --inspector-address set to this inspector's address", http.StatusNotFound)
		return
	}
	var buf bytes.Buffer
	if err := run.WriteSVG(&buf); err != nil {
		http.Error(w, "draw the plot: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(buf.Bytes())
}

// loadJSON serves the latest run as hookback load sent it.
func (s *Server) loadJSON(w http.ResponseWriter, r *http.Request) {
	run := s.latestLoad()
	if run == nil {
		http.Error(w, "no load run yet: run hookback load with --inspector-address set to this inspector's address", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(run)
}

func num(v float64) string {
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.1f", v), "0"), ".")
}

// errorKinds is "3 timeout, 1 throttled", kinds sorted, or "–".
func errorKinds(m map[string]int) string {
	if len(m) == 0 {
		return "–"
	}
	kinds := make([]string, 0, len(m))
	for k := range m {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%d %s", m[k], k)
	}
	return strings.Join(parts, ", ")
}
