package session

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/hookback/hookback/internal/report"
)

// How the apiserver answered one of the drill's requests.
const (
	DrillAdmitted = "admitted"
	DrillDenied   = "denied"
	DrillTimedOut = "timed out"
	DrillFailed   = "failed"
	DrillSkipped  = "skipped"
)

// DrillReport is what `hookback drill` prints: table, json or junit.
type DrillReport struct {
	Results []DrillResult `json:"results"`
}

// DrillResult is one request under one fault.
type DrillResult struct {
	Fault     string `json:"fault"`
	Request   string `json:"request"`
	Namespace string `json:"namespace,omitempty"`
	Outcome   string `json:"outcome"`
	Latency   string `json:"latency"`
	Message   string `json:"message,omitempty"`
	// Predicted are lint's findings that predict this request fails.
	Predicted string `json:"predicted,omitempty"`
}

// Failing reports whether the request failed: each one the drill sends is
// one the cluster needs to heal or to run your workloads.
func (r DrillResult) Failing() bool { return r.Outcome != DrillAdmitted && r.Outcome != DrillSkipped }

// Failing are the results that failed.
func (r *DrillReport) Failing() []DrillResult {
	var out []DrillResult
	for _, res := range r.Results {
		if res.Failing() {
			out = append(out, res)
		}
	}
	return out
}

// WriteTable prints one line per request.
func (r *DrillReport) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FAULT\tREQUEST\tNAMESPACE\tOUTCOME\tLATENCY\tLINT PREDICTED\tMESSAGE")
	for _, res := range r.Results {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", res.Fault, res.Request, orDash(res.Namespace), res.Outcome, res.Latency, orDash(res.Predicted), orDash(res.Message))
	}
	return tw.Flush()
}

// JUnit is a testsuite per fault, a failure per request that failed.
func (r *DrillReport) JUnit() report.JUnit {
	j := report.JUnit{Name: "hookback drill"}
	for _, res := range r.Results {
		c := report.Case{Name: res.Request + " " + res.Namespace, Classname: "drill." + res.Fault}
		if res.Failing() {
			c.Failure = &report.Problem{Message: res.Outcome + " after " + res.Latency, Type: res.Outcome, Text: res.Message}
		}
		j.Add("fault "+res.Fault, c)
	}
	return j
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
