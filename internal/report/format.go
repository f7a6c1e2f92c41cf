// Package report is the one place hookback's output formats live: each
// command's report declares the formats it supports by the interfaces it
// implements (Tabler, JUniter, ...; JSON always), Check validates -o
// against them before anything runs, and Write prints. The JUnit document
// CI tools read is here too, so that every command writes the same shape.
package report

import (
	"fmt"
	"io"
	"strings"
)

// A Format is one way to print a report. A report is any value a command
// prints: it supports a format by implementing that format's interface
// (Tabler, JUniter, ...), and every report supports JSON, which is the
// value as encoding/json encodes it. Adding a format is one file declaring
// its Format and its interface, and its entry in formats.
type Format struct {
	// Name is what -o takes.
	Name string
	// Supports reports whether v can be written in this format.
	Supports func(v any) bool
	// Write writes v; it is only called for a v that Supports.
	Write func(w io.Writer, v any) error
}

// formats is every format, in the order help and errors list them.
var formats = []Format{textFormat, tableFormat, jsonFormat, junitFormat, sarifFormat}

// Names lists the formats a report like v supports.
func Names(v any) []string {
	var names []string
	for _, f := range formats {
		if f.Supports(v) {
			names = append(names, f.Name)
		}
	}
	return names
}

// Check returns an error naming the supported formats when v cannot be
// written in the format called name: what a command's flag validation
// calls with a zero value of its report type, so that an unsupported -o
// fails before anything runs.
func Check(name string, v any) error {
	for _, f := range formats {
		if f.Name == name && f.Supports(v) {
			return nil
		}
	}
	return fmt.Errorf("output format %q: want one of %s", name, strings.Join(Names(v), ", "))
}

// Write writes v in the format called name.
func Write(w io.Writer, name string, v any) error {
	if err := Check(name, v); err != nil {
		return err
	}
	for _, f := range formats {
		if f.Name == name {
			return f.Write(w, v)
		}
	}
	return nil
}
