package audit

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Formats of Write.
const (
	FormatTable = "table"
	FormatJSON  = "json"
	FormatJUnit = "junit"
)

// Formats lists what Write accepts.
var Formats = []string{FormatTable, FormatJSON, FormatJUnit}

// Write prints results in format; failPatched makes a patch a JUnit
// failure, as it is one for the exit code.
func Write(w io.Writer, format string, results []Result, failPatched bool) error {
	switch format {
	case FormatJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if results == nil {
			results = []Result{}
		}
		return enc.Encode(results)
	case FormatJUnit:
		return writeJUnit(w, results, failPatched)
	case FormatTable, "":
		return writeTable(w, results)
	}
	return fmt.Errorf("output format %q: want one of %s", format, strings.Join(Formats, ", "))
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

type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Name    string       `xml:"name,attr"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// writeJUnit writes a testsuite per webhook, a testcase per object, a
// failure per denial (and per patch with failPatched), an error per error.
func writeJUnit(w io.Writer, results []Result, failPatched bool) error {
	return encodeJUnit(w, junitResults(results, failPatched))
}

func junitResults(results []Result, failPatched bool) junitSuites {
	out := junitSuites{Name: "hookback audit"}
	index := map[string]int{}
	for _, r := range results {
		i, ok := index[r.Webhook]
		if !ok {
			i = len(out.Suites)
			index[r.Webhook] = i
			out.Suites = append(out.Suites, junitSuite{Name: r.Webhook})
		}
		s := &out.Suites[i]
		c := junitCase{Name: strings.TrimSpace(fmt.Sprintf("%s %s %s", r.Resource, objectName(r), r.Operation)), Classname: r.Webhook}
		switch {
		case r.Result == Denied, r.Result == Lost, r.Result == Failed, r.Result == Unconvertible, r.Result == Patched && failPatched:
			c.Failure = &junitProblem{Message: string(r.Result), Type: string(r.Result), Text: detail(r)}
			s.Failures++
		case r.Result == Error:
			c.Error = &junitProblem{Message: oneLine(r.Message), Type: "error", Text: r.Message}
			s.Errors++
		}
		s.Tests++
		s.Cases = append(s.Cases, c)
	}
	return out
}

func encodeJUnit(w io.Writer, out junitSuites) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}
