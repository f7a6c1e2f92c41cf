// Package errkind ties a message written for a user to a sentinel error.
// Sentinels name their package in their text, for developers and logs;
// users read the sentence alone, without Go package prefixes, while
// errors.Is still finds the sentinel.
package errkind

type kindError struct {
	kind error
	err  error
}

func (e *kindError) Error() string        { return e.err.Error() }
func (e *kindError) Is(target error) bool { return target == e.kind }
func (e *kindError) Unwrap() error        { return e.err }

// New returns err, which errors.Is also reports as kind.
func New(kind, err error) error { return &kindError{kind: kind, err: err} }
