// Package loadplot is a load run's view: per step the rates and the
// end-to-end percentiles, the knee and the budget, and latency against
// rate drawn as an SVG. It is a leaf, so that both hookback load, which
// writes the SVG beside its report, and the inspector, which shows a run
// live, draw it with the one code without importing each other.
package loadplot

import (
	"errors"
	"fmt"
)

// MaxSteps bounds a run's steps: the inspector refuses more.
const MaxSteps = 1000

// Run is a load run as far as it went. JSON is how hookback load sends it
// to an inspector, after each step and at the end.
type Run struct {
	// ID tells runs apart: each report of the same run replaces the last.
	ID        string  `json:"id"`
	Server    string  `json:"server"`
	Namespace string  `json:"namespace"`
	BudgetMs  float64 `json:"budgetMs"`
	// Knee is the first step (1-based) whose p99 passed the budget or that
	// had errors; 0: none yet.
	Knee       int    `json:"knee,omitempty"`
	KneeReason string `json:"kneeReason,omitempty"`
	// Planned is the number of steps the run means to take.
	Planned int     `json:"planned"`
	Steps   []Point `json:"steps"`
	// Done: the run ended (Interrupted: by Ctrl-C); Passed: every gate
	// passed (meaningful once done).
	Done        bool `json:"done"`
	Interrupted bool `json:"interrupted,omitempty"`
	Passed      bool `json:"passed"`
}

// Point is one step, latencies in milliseconds, end to end.
type Point struct {
	Step         int     `json:"step"`
	OfferedRate  float64 `json:"offeredRate"`
	AchievedRate float64 `json:"achievedRate"`
	Sent         int     `json:"sent"`
	P50Ms        float64 `json:"p50Ms"`
	P95Ms        float64 `json:"p95Ms"`
	P99Ms        float64 `json:"p99Ms"`
	MaxMs        float64 `json:"maxMs"`
	ErrorRate    float64 `json:"errorRate"`
	// Errors counts the step's errors by kind (timeout, throttled, ...).
	Errors map[string]int `json:"errors,omitempty"`
}

// Validate checks a run received from elsewhere (the inspector's input).
func (r *Run) Validate() error {
	var errs []error
	if r.ID == "" || len(r.ID) > 100 {
		errs = append(errs, fmt.Errorf("id %q: want 1 to 100 characters", r.ID))
	}
	if len(r.Steps) > MaxSteps {
		errs = append(errs, fmt.Errorf("%d steps: at most %d", len(r.Steps), MaxSteps))
	}
	if r.Knee < 0 || r.Knee > len(r.Steps) {
		errs = append(errs, fmt.Errorf("knee %d: want 0 or one of the %d steps", r.Knee, len(r.Steps)))
	}
	for _, p := range r.Steps {
		if p.OfferedRate < 0 || p.P99Ms < 0 || p.P95Ms < 0 || p.P50Ms < 0 {
			errs = append(errs, fmt.Errorf("step %d: negative rate or latency", p.Step))
			break
		}
	}
	return errors.Join(errs...)
}
