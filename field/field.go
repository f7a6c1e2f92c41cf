// Package field is the error a library package returns when one option's
// value is wrong: it names the Go field that holds the value, as the
// library's own types spell it ("plan.Options.Port",
// "certs.Options.Mode"), so a program that embeds hookback, which has no
// flags, reads what to change in its own code. The CLI binds every flag to
// one field (cli/binder.go) and renders the same error with the flag's name
// instead ("--port 0: want a TCP port, 1 to 65535"); the rule and its
// message live once, here in the library.
//
// It is a package of its own, public, because callers outside this module
// use errors.As on it; internal/ could not be named by them. A name is the
// declaring package, the type and the field ("pkg.Type.Field"), not a path
// from one root: the same certs.Options is checked under plan.Options,
// incluster.ServeConfig and audit, and a qualified name needs no prefix
// added by each caller. k8s.io/apimachinery's validation field.Error was
// considered: its text ("Invalid value: ...") would change every message
// the CLI prints, and it has neither a cause to unwrap nor a way to name a
// second field in its advice.
package field

import (
	"errors"
	"fmt"
	"regexp"
)

// Error says that the value of one field is wrong, and what to do.
type Error struct {
	// Field is the field's qualified name, pkg.Type.Field (a nested field
	// continues with dots: plan.InspectorConfig.Keep).
	Field string
	// Value is the value as the message shows it (quoted when a string
	// needs it); empty when the message shows none.
	Value string
	// Detail says what is wrong and what to do. A reference to another
	// field is written {pkg.Type.Field}; Error shows it as the field's
	// name, and the CLI as its flag.
	Detail string
	// Clause: Detail goes on the sentence the field starts ("X needs Y")
	// instead of following a colon ("X 0: want ...").
	Clause bool
	// Advice: Detail is the whole message, about something other than the
	// field's value ("refusing to register cluster-wide ...: add
	// {registration.Scope.Namespaces} NS"); Field is the field it advises
	// to set, and Value is empty.
	Advice bool
	// Err is the cause, when there is one; its text is part of Detail.
	Err error
}

// Error is "Field Value: Detail" with references shown as field names.
func (e *Error) Error() string { return e.Text(func(f string) string { return f }) }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// ref is a reference to a field in Detail.
var ref = regexp.MustCompile(`\{([a-z][a-z0-9]*\.[A-Z][A-Za-z0-9]*(?:\.[A-Z][A-Za-z0-9]*)+)\}`)

// Text is the message with each field, this one and those Detail refers
// to, shown as name(field): the CLI passes the field's flag.
func (e *Error) Text(name func(field string) string) string {
	refs := func(s string) string {
		return ref.ReplaceAllStringFunc(s, func(m string) string { return name(m[1 : len(m)-1]) })
	}
	if e.Advice {
		return refs(e.Detail)
	}
	s := name(e.Field)
	if e.Value != "" {
		s += " " + e.Value
	}
	switch {
	case e.Detail == "":
		return s
	case e.Clause:
		s += " "
	default:
		s += ": "
	}
	return s + refs(e.Detail)
}

// Refs are the fields Detail refers to.
func (e *Error) Refs() []string {
	var out []string
	for _, m := range ref.FindAllStringSubmatch(e.Detail, -1) {
		out = append(out, m[1])
	}
	return out
}

// New returns an Error for field holding value (as shown) with detail.
func New(field, value, detail string) *Error {
	return &Error{Field: field, Value: value, Detail: detail}
}

// Clause returns an Error whose detail goes on the sentence the field and
// value start: Clause(f, "files", "needs {certs.Options.CertFile}") reads
// "f files needs certs.Options.CertFile".
func Clause(field, value, detail string) *Error {
	return &Error{Field: field, Value: value, Detail: detail, Clause: true}
}

// Errorf is New with a detail formatted as fmt.Errorf does: a %w verb
// makes its operand the cause.
func Errorf(field, value, format string, args ...any) *Error {
	err := fmt.Errorf(format, args...)
	return &Error{Field: field, Value: value, Detail: err.Error(), Err: errors.Unwrap(err)}
}

// Advise returns an Error whose message, formatted as fmt.Errorf does
// (a %w verb makes its operand the cause), is about something other than
// field's value and advises to set field, referred to in it as {field}.
func Advise(field, format string, args ...any) *Error {
	err := fmt.Errorf(format, args...)
	return &Error{Field: field, Detail: err.Error(), Advice: true, Err: errors.Unwrap(err)}
}

// All returns every Error in err's tree, outermost first, for a caller that
// shows them differently (the CLI).
func All(err error) []*Error {
	var out []*Error
	var walk func(error)
	walk = func(err error) {
		if err == nil {
			return
		}
		if fe, ok := err.(*Error); ok {
			out = append(out, fe)
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e)
			}
		}
	}
	walk(err)
	return out
}
