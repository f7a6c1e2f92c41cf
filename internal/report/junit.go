package report

import (
	"encoding/xml"
	"fmt"
	"io"
)

// FormatJUnit is a JUnit testsuites document, as CI tools read it.
const FormatJUnit = "junit"

// JUniter is a report that can be written as a JUnit document.
type JUniter interface {
	JUnit() JUnit
}

var junitFormat = Format{
	Name:     FormatJUnit,
	Supports: func(v any) bool { _, ok := v.(JUniter); return ok },
	Write: func(w io.Writer, v any) error {
		j := v.(JUniter).JUnit()
		return j.Write(w)
	},
}

// JUnit is a testsuites document. Its counts and its suites' are kept by
// Add; the zero value (with a Name) is ready to use.
type JUnit struct {
	XMLName  xml.Name `xml:"testsuites"`
	Name     string   `xml:"name,attr"`
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Errors   int      `xml:"errors,attr"`
	Suites   []Suite  `xml:"testsuite"`
	index    map[string]int
}

// Suite is one testsuite.
type Suite struct {
	Name     string `xml:"name,attr"`
	Tests    int    `xml:"tests,attr"`
	Failures int    `xml:"failures,attr"`
	Errors   int    `xml:"errors,attr"`
	Cases    []Case `xml:"testcase"`
}

// Case is one testcase: passed, or with a Failure or an Error.
type Case struct {
	Name      string   `xml:"name,attr"`
	Classname string   `xml:"classname,attr"`
	Failure   *Problem `xml:"failure,omitempty"`
	Error     *Problem `xml:"error,omitempty"`
	SystemOut string   `xml:"system-out,omitempty"`
}

// Problem is a failure or an error.
type Problem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// Add appends c to the suite named suite, made at its first case, and
// counts it there and in the document.
func (j *JUnit) Add(suite string, c Case) {
	if j.index == nil {
		j.index = map[string]int{}
	}
	i, ok := j.index[suite]
	if !ok {
		i = len(j.Suites)
		j.index[suite] = i
		j.Suites = append(j.Suites, Suite{Name: suite})
	}
	s := &j.Suites[i]
	s.Cases = append(s.Cases, c)
	s.Tests++
	j.Tests++
	switch {
	case c.Failure != nil:
		s.Failures++
		j.Failures++
	case c.Error != nil:
		s.Errors++
		j.Errors++
	}
}

// Write writes the document with its XML header.
func (j *JUnit) Write(w io.Writer) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(j); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}
