package suite

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/hookback/hookback/internal/report"
)

// Counts sums rows by status.
type Counts struct{ Rows, Passed, Failed, Errors, Notes int }

// Count sums rows.
func Count(rows []Row) Counts {
	c := Counts{Rows: len(rows)}
	for _, r := range rows {
		c.Notes += len(r.Notes)
		switch r.Status {
		case Pass:
			c.Passed++
		case Fail:
			c.Failed++
		default:
			c.Errors++
		}
	}
	return c
}

// Report is what hookback test prints: a row per case and webhook.
type Report []Row

// MarshalJSON is the rows as an array, empty rather than null.
func (r Report) MarshalJSON() ([]byte, error) {
	if r == nil {
		return []byte("[]"), nil
	}
	return json.Marshal([]Row(r))
}

// WriteTable prints CASE, WEBHOOK, RESULT, DETAIL, then each failure's
// diff and the server's output while it ran.
func (r Report) WriteTable(w io.Writer) error { return writeTable(w, r) }

// JUnit is a testsuite per suite file, a testcase per case and webhook, a
// failure with the diff, and an error for a case that could not run.
func (r Report) JUnit() report.JUnit { return junitRows(r) }

// writeTable prints CASE, WEBHOOK, RESULT, DETAIL, then each failure's
// diff and the server's output while it ran.
func writeTable(w io.Writer, rows []Row) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CASE\tWEBHOOK\tRESULT\tDETAIL")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.File+":"+r.Case, r.Webhook, r.Status, oneLine(r.Detail, 100))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range rows {
		for _, n := range r.Notes {
			fmt.Fprintf(w, "\n--- NOTE %s:%d %s (%s)\n%s\n", r.File, r.Line, r.Case, r.Webhook, n)
		}
		if r.Status == Pass {
			continue
		}
		fmt.Fprintf(w, "\n--- %s %s:%d %s (%s)\n", r.Status, r.File, r.Line, r.Case, r.Webhook)
		if r.Diff != "" {
			fmt.Fprintln(w, r.Diff)
		} else {
			fmt.Fprintln(w, r.Detail)
		}
		if r.ServerOutput != "" {
			fmt.Fprintf(w, "server output:\n%s\n", indent(strings.TrimRight(r.ServerOutput, "\n")))
		}
	}
	return nil
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n-3] + "..."
	}
	return s
}

func indent(s string) string { return "  " + strings.ReplaceAll(s, "\n", "\n  ") }

func junitRows(rows []Row) report.JUnit {
	out := report.JUnit{Name: "hookback test"}
	for _, r := range rows {
		sysOut := r.ServerOutput
		if len(r.Notes) > 0 {
			sysOut = strings.TrimLeft(sysOut+"\n"+"note: "+strings.Join(r.Notes, "\nnote: "), "\n")
		}
		c := report.Case{Name: r.Case + " [" + r.Webhook + "]", Classname: r.File, SystemOut: sysOut}
		text := r.Diff
		if text == "" {
			text = r.Detail
		}
		switch r.Status {
		case Fail:
			c.Failure = &report.Problem{Message: oneLine(r.Detail, 200), Type: "mismatch", Text: text}
		case Erred:
			c.Error = &report.Problem{Message: oneLine(r.Detail, 200), Type: "error", Text: text}
		}
		out.Add(r.File, c)
	}
	return out
}
