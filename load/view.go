package load

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/hookback/hookback/load/loadplot"
)

// inspectorTimeout bounds one report to the inspector: a run does not wait
// on a page.
const inspectorTimeout = 2 * time.Second

// View is the report as the plot and the inspector show it.
func (r *Report) View(id string, planned int) loadplot.Run {
	v := loadplot.Run{ID: id, Server: r.Server, Namespace: r.Namespace, BudgetMs: r.BudgetMs, Knee: r.Knee,
		KneeReason: r.KneeReason, Planned: planned, Interrupted: r.Interrupted, Passed: r.Passed}
	for _, s := range r.Steps {
		p := loadplot.Point{Step: s.Step, OfferedRate: s.OfferedRate, AchievedRate: s.AchievedRate, Sent: s.Sent,
			P50Ms: s.P50Ms, P95Ms: s.P95Ms, P99Ms: s.P99Ms, MaxMs: s.MaxMs, ErrorRate: s.ErrorRate}
		p.Errors = stepErrors(s)
		v.Steps = append(v.Steps, p)
	}
	return v
}

// stepErrors counts a step's errors by kind, skipped requests included
// (nil: none).
func stepErrors(s Step) map[string]int {
	var out map[string]int
	add := func(kind string, n int) {
		if n > 0 {
			if out == nil {
				out = map[string]int{}
			}
			out[kind] = n
		}
	}
	for k, n := range s.Outcomes {
		if isError(k) {
			add(k, n)
		}
	}
	add("skipped", s.Skipped)
	return out
}

// WritePlot writes latency against rate as an SVG (loadplot's drawing, the
// inspector's too).
func (r *Report) WritePlot(w io.Writer) error {
	v := r.View("", len(r.Rates))
	return v.WriteSVG(w)
}

// publish sends the run as far as it went to the inspector at
// r.inspector; one that cannot be reached is noted once and not tried
// again: the load goes on without it.
func (r *run) publish(ctx context.Context, rep *Report, done bool) {
	if r.inspector == "" {
		return
	}
	v := rep.View(r.id, len(rep.Rates))
	v.Done = done
	if !done {
		v.Knee, v.KneeReason = knee(rep.Steps, rep.BudgetMs)
	}
	body, err := json.Marshal(v)
	if err == nil {
		err = postView(ctx, r.inspector, body)
	}
	if err != nil {
		r.notes = append(r.notes, fmt.Sprintf("the inspector (%s) not told: %v", r.inspector, err))
		r.inspector = ""
	}
}

func postView(ctx context.Context, url string, body []byte) error {
	// Not the run's ctx alone: after Ctrl-C the last report still goes.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), inspectorTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := localClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent && resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(msg))
	}
	return nil
}

// inspectorURL is where an inspector at base takes a run.
func inspectorURL(base string) string {
	if base == "" {
		return ""
	}
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	return strings.TrimSuffix(base, "/") + "/load"
}
