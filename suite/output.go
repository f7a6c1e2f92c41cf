package suite

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

// Counts sums rows by status.
type Counts struct{ Rows, Passed, Failed, Errors int }

// Count sums rows.
func Count(rows []Row) Counts {
	c := Counts{Rows: len(rows)}
	for _, r := range rows {
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

// Write prints rows in format.
func Write(w io.Writer, format string, rows []Row) error {
	switch format {
	case FormatJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if rows == nil {
			rows = []Row{}
		}
		return enc.Encode(rows)
	case FormatJUnit:
		return writeJUnit(w, rows)
	case FormatTable, "":
		return writeTable(w, rows)
	}
	return fmt.Errorf("output format %q: want one of %s", format, strings.Join(Formats, ", "))
}

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

// JUnit: a testsuite per suite file, a testcase per case and webhook, a
// failure with the diff; an error for a case that could not run.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Suites   []junitSuite `xml:"testsuite"`
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
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

func writeJUnit(w io.Writer, rows []Row) error {
	out := junitSuites{Name: "hookback test"}
	index := map[string]int{}
	for _, r := range rows {
		i, ok := index[r.File]
		if !ok {
			i = len(out.Suites)
			index[r.File] = i
			out.Suites = append(out.Suites, junitSuite{Name: r.File})
		}
		s := &out.Suites[i]
		c := junitCase{Name: r.Case + " [" + r.Webhook + "]", Classname: r.File, SystemOut: r.ServerOutput}
		text := r.Diff
		if text == "" {
			text = r.Detail
		}
		switch r.Status {
		case Fail:
			c.Failure = &junitProblem{Message: oneLine(r.Detail, 200), Type: "mismatch", Text: text}
			s.Failures++
			out.Failures++
		case Erred:
			c.Error = &junitProblem{Message: oneLine(r.Detail, 200), Type: "error", Text: text}
			s.Errors++
			out.Errors++
		}
		s.Tests++
		out.Tests++
		s.Cases = append(s.Cases, c)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
