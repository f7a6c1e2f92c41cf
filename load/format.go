package load

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/hookback/hookback/internal/report"
)

// WriteTable writes the steps, the webhooks of each, the knee and the
// gates.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "STEP\tOFFERED/S\tACHIEVED/S\tSENT\tP50 MS\tP95 MS\tP99 MS\tMAX MS\tOK\tDENIED\tERRORS\tERROR RATE\n")
	for _, s := range r.Steps {
		fmt.Fprintf(tw, "%d\t%g\t%g\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%d\t%d\t%s\t%.2f%%\n", s.Step, round(s.OfferedRate, 1), s.AchievedRate, s.Sent,
			s.P50Ms, s.P95Ms, s.P99Ms, s.MaxMs, s.Outcomes[KindOK], s.Outcomes[KindDenied], errorKinds(s), s.ErrorRate*100)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := r.writeWebhooks(w); err != nil {
		return err
	}
	switch {
	case r.Knee > 0:
		fmt.Fprintf(w, "\nknee: step %d at %g/s: %s\n", r.Knee, round(r.Steps[r.Knee-1].OfferedRate, 1), r.KneeReason)
	case len(r.Steps) > 0:
		fmt.Fprintf(w, "\nknee: none up to %g/s (p99 within %g ms, no errors)\n", round(r.Steps[len(r.Steps)-1].OfferedRate, 1), r.BudgetMs)
	}
	for _, g := range r.Gates {
		verdict := "passed"
		if !g.Passed {
			verdict = "FAILED"
		}
		fmt.Fprintf(w, "gate %s %g: %s (worst %g, step %d)\n", g.Gate, g.Limit, verdict, g.Worst, g.Step)
	}
	for _, s := range r.Steps {
		for _, k := range Kinds {
			if m := s.FirstErrors[k]; m != "" {
				fmt.Fprintf(w, "step %d, first %s: %s\n", s.Step, k, m)
			}
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	if r.Interrupted {
		fmt.Fprintln(w, "interrupted: the steps above are those measured before")
	}
	return nil
}

// errorKinds is "0", or each error kind's count: "3 timeout, 1 throttled".
func errorKinds(s Step) string {
	var parts []string
	for _, k := range Kinds {
		if isError(k) && s.Outcomes[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", s.Outcomes[k], k))
		}
	}
	if s.Skipped > 0 {
		parts = append(parts, fmt.Sprintf("%d skipped", s.Skipped))
	}
	if len(parts) == 0 {
		return "0"
	}
	return strings.Join(parts, ", ")
}

func (r *Report) writeWebhooks(w io.Writer) error {
	header := false
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, s := range r.Steps {
		for _, h := range s.Webhooks {
			if !header {
				fmt.Fprintf(tw, "\nSTEP\tWEBHOOK\tSEEN BY\tCALLS\tP50 MS\tP99 MS\tMEAN MS\tYOUR SERVER P50/P99 MS\tHOOKBACK'S OWN P50/P99/MEAN MS\n")
				header = true
			}
			up, own := "-", "-"
			if h.UpstreamP50Ms != nil {
				up = fmt.Sprintf("%.2f / %.2f", *h.UpstreamP50Ms, *h.UpstreamP99Ms)
				own = fmt.Sprintf("%.3f / %.3f / %.3f", *h.OwnP50Ms, *h.OwnP99Ms, *h.OwnMeanMs)
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%.2f\t%.2f\t%.2f\t%s\t%s\n", s.Step, h.Webhook, h.Source, strconv.FormatFloat(h.Calls, 'f', -1, 64),
				h.P50Ms, h.P99Ms, h.MeanMs, up, own)
		}
	}
	return tw.Flush()
}

// JUnit is a testcase per step (failed when a gate fails on it) and one
// per gate, for CI.
func (r *Report) JUnit() report.JUnit {
	j := report.JUnit{Name: "hookback load"}
	for _, s := range r.Steps {
		c := report.Case{Name: fmt.Sprintf("step %d at %g/s", s.Step, round(s.OfferedRate, 1)), Classname: "load.steps",
			SystemOut: fmt.Sprintf("achieved %g/s, p50 %.1f ms, p95 %.1f ms, p99 %.1f ms, max %.1f ms, errors %s (%.2f%%)",
				s.AchievedRate, s.P50Ms, s.P95Ms, s.P99Ms, s.MaxMs, errorKinds(s), s.ErrorRate*100)}
		for _, g := range r.Gates {
			if !g.Passed && g.Step == s.Step {
				c.Failure = &report.Problem{Type: "gate", Message: fmt.Sprintf("%s %g: worst %g", g.Gate, g.Limit, g.Worst)}
			}
		}
		j.Add("steps", c)
	}
	for _, g := range r.Gates {
		c := report.Case{Name: g.Gate, Classname: "load.gates", SystemOut: fmt.Sprintf("limit %g, worst %g at step %d", g.Limit, g.Worst, g.Step)}
		if !g.Passed {
			c.Failure = &report.Problem{Type: "gate", Message: fmt.Sprintf("%s %g: worst %g at step %d", g.Gate, g.Limit, g.Worst, g.Step)}
		}
		j.Add("gates", c)
	}
	return j
}
