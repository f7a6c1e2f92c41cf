package crdvalidate

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/hookback/hookback/internal/report"
	"github.com/hookback/hookback/manifests"
)

// Result is the verdict on one object.
type Result struct {
	// File and Index name the document ("widgets.yaml", 2).
	File  string `json:"file"`
	Index int    `json:"index"`
	// Kind is "apiVersion Kind"; Name is namespace/name or name.
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Operation is CREATE, UPDATE or UPDATE status.
	Operation string `json:"operation,omitempty"`
	Allowed   bool   `json:"allowed"`
	// Message is the apiserver's whole error message.
	Message  string   `json:"message,omitempty"`
	Errors   []string `json:"errors,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
	// Problem says why the object could not be judged at all.
	Problem string `json:"problem,omitempty"`
}

func resultOf(d manifests.Document) Result {
	o := d.Object
	name := o.GetName()
	if name == "" {
		name = o.GetGenerateName() + "*"
	}
	if ns := o.GetNamespace(); ns != "" {
		name = ns + "/" + name
	}
	return Result{File: d.Source, Index: d.Index, Kind: strings.TrimSpace(o.GetAPIVersion() + " " + o.GetKind()), Name: name}
}

// Verdict is "allowed", "denied" or "error" (not judged).
func (r Result) Verdict() string {
	switch {
	case r.Problem != "":
		return "error"
	case r.Allowed:
		return "allowed"
	}
	return "denied"
}

// Report is every object's Result, in input order.
type Report []Result

// Counts are a Report's verdicts.
type Counts struct{ Allowed, Denied, Errors int }

// Count counts the verdicts.
func (rep Report) Count() Counts {
	var n Counts
	for _, r := range rep {
		switch r.Verdict() {
		case "allowed":
			n.Allowed++
		case "denied":
			n.Denied++
		default:
			n.Errors++
		}
	}
	return n
}

// WriteText writes what kubectl would print for each object: the
// apiserver's message for a denial, its warnings, and a line per object
// allowed.
func (rep Report) WriteText(w io.Writer) error {
	for _, r := range rep {
		where := fmt.Sprintf("%s document %d: %s %s", r.File, r.Index, r.Kind, r.Name)
		for _, warn := range r.Warnings {
			if _, err := fmt.Fprintf(w, "%s: Warning: %s\n", where, warn); err != nil {
				return err
			}
		}
		var err error
		switch r.Verdict() {
		case "allowed":
			_, err = fmt.Fprintf(w, "%s: valid\n", where)
		case "denied":
			_, err = fmt.Fprintf(w, "%s: %s\n", where, r.Message)
		default:
			_, err = fmt.Fprintf(w, "%s: not judged: %s\n", where, r.Problem)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// WriteTable writes one aligned row per object, each followed by an
// indented line per error, problem and warning.
func (rep Report) WriteTable(w io.Writer) error {
	rows := make([]tableRow, len(rep))
	for i, r := range rep {
		rows[i].cells = []string{fmt.Sprintf("%s:%d", r.File, r.Index), r.Kind, r.Name, r.Operation, r.Verdict()}
		for _, e := range r.Errors {
			rows[i].details = append(rows[i].details, "error: "+e)
		}
		if r.Problem != "" {
			rows[i].details = append(rows[i].details, "not judged: "+r.Problem)
		}
		for _, warn := range r.Warnings {
			rows[i].details = append(rows[i].details, "warning: "+warn)
		}
	}
	return writeTable(w, []string{"FILE", "KIND", "NAME", "OPERATION", "VERDICT"}, rows)
}

// tableRow is a row's cells and the indented lines under it.
type tableRow struct {
	cells, details []string
}

// writeTable aligns the rows' cells under header, and writes each row's
// details under it, outside the columns.
func writeTable(w io.Writer, header []string, rows []tableRow) error {
	var aligned bytes.Buffer
	tw := tabwriter.NewWriter(&aligned, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r.cells, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	lines := strings.SplitAfter(aligned.String(), "\n")
	var b strings.Builder
	b.WriteString(lines[0])
	for i, r := range rows {
		b.WriteString(lines[i+1])
		for _, d := range r.details {
			b.WriteString("    " + d + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// JUnit is a testsuite per file, a testcase per object: a failure per
// denial, an error per object not judged, warnings as system-out.
func (rep Report) JUnit() report.JUnit {
	j := report.JUnit{Name: "hookback validate"}
	for _, r := range rep {
		c := report.Case{Name: fmt.Sprintf("%s %s (document %d)", r.Kind, r.Name, r.Index), Classname: r.File,
			SystemOut: strings.Join(r.Warnings, "\n")}
		switch r.Verdict() {
		case "denied":
			c.Failure = &report.Problem{Message: r.Message, Type: "denied", Text: strings.Join(r.Errors, "\n")}
		case "error":
			c.Error = &report.Problem{Message: r.Problem, Type: "not judged"}
		}
		j.Add(r.File, c)
	}
	return j
}
