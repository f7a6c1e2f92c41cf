package audit

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/hookback/hookback/internal/report"
)

// Report is what hookback audit prints: the reviews' results and, with
// --policy, the webhook-and-policy comparisons. FailPatched makes a patch
// a JUnit failure, as it is one for the exit code.
type Report struct {
	Results     []Result
	Comparisons []Comparison
	FailPatched bool
}

// MarshalJSON is one document: the results as an array, or with
// comparisons an object holding both ("reviews" and "comparisons").
func (r Report) MarshalJSON() ([]byte, error) {
	results := r.Results
	if results == nil {
		results = []Result{}
	}
	if len(r.Comparisons) == 0 {
		return json.Marshal(results)
	}
	sortComparisons(r.Comparisons)
	return json.Marshal(struct {
		Reviews     []Result     `json:"reviews"`
		Comparisons []Comparison `json:"comparisons"`
	}{results, r.Comparisons})
}

// WriteTable prints a row per result, then the comparisons' table and
// every disagreement.
func (r Report) WriteTable(w io.Writer) error {
	if err := writeTable(w, r.Results); err != nil {
		return err
	}
	if len(r.Comparisons) == 0 {
		return nil
	}
	sortComparisons(r.Comparisons)
	fmt.Fprintln(w)
	return writeComparisonTable(w, r.Comparisons)
}

// JUnit is a testsuite per webhook, a testcase per object, a failure per
// denial (and per patch with FailPatched), an error per error; then a
// testsuite per webhook and policy pair.
func (r Report) JUnit() report.JUnit {
	out := junitResults(r.Results, r.FailPatched)
	sortComparisons(r.Comparisons)
	junitComparisons(&out, r.Comparisons)
	return out
}

func writeTable(w io.Writer, results []Result) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WEBHOOK\tRESOURCE\tNAMESPACE/NAME\tOPERATION\tRESULT\tMESSAGE OR PATCH")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Webhook, orDash(r.Resource), orDash(objectName(r)), orDash(r.Operation), r.Result, oneLine(detail(r)))
	}
	return tw.Flush()
}

func objectName(r Result) string {
	if r.Namespace == "" {
		return r.Name
	}
	return r.Namespace + "/" + r.Name
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// detail is the message, or for a patch its operations as JSON.
func detail(r Result) string {
	if r.Result != Patched {
		return r.Message
	}
	b, err := json.Marshal(r.Patch)
	if err != nil {
		return r.Message
	}
	return string(b)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Counts sums results by outcome.
type Counts struct {
	Reviews, Allowed, Denied, Patched, Errors int
	RoundTrips, Kept, Lost, Failed            int
	Unconvertible                             int
}

// Findings are the results that fail the audit (exit 1): denials, lost
// or failed round trips, objects that cannot be converted to a webhook's
// version, and patches when failPatched.
func (c Counts) Findings(failPatched bool) int {
	n := c.Denied + c.Lost + c.Failed + c.Unconvertible
	if failPatched {
		n += c.Patched
	}
	return n
}

// Count sums results by outcome; Reviews counts admission reviews sent,
// RoundTrips conversion round trips.
func Count(results []Result) Counts {
	var c Counts
	for _, r := range results {
		switch {
		case r.Name != "" && strings.HasPrefix(r.Operation, OperationConvert+" "):
			c.RoundTrips++
		case r.Name != "":
			c.Reviews++
		}
		switch r.Result {
		case Allowed:
			c.Allowed++
		case Denied:
			c.Denied++
		case Patched:
			c.Patched++
		case Error:
			c.Errors++
		case Kept:
			c.Kept++
		case Lost:
			c.Lost++
		case Failed:
			c.Failed++
		case Unconvertible:
			c.Unconvertible++
		}
	}
	return c
}

func junitResults(results []Result, failPatched bool) report.JUnit {
	out := report.JUnit{Name: "hookback audit"}
	for _, r := range results {
		c := report.Case{Name: strings.TrimSpace(fmt.Sprintf("%s %s %s", r.Resource, objectName(r), r.Operation)), Classname: r.Webhook}
		switch {
		case r.Result == Denied, r.Result == Lost, r.Result == Failed, r.Result == Unconvertible, r.Result == Patched && failPatched:
			c.Failure = &report.Problem{Message: string(r.Result), Type: string(r.Result), Text: detail(r)}
		case r.Result == Error:
			c.Error = &report.Problem{Message: oneLine(r.Message), Type: "error", Text: r.Message}
		}
		out.Add(r.Webhook, c)
	}
	return out
}
