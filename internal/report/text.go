package report

import "io"

// FormatText is prose as the tool it stands in for prints it (validate:
// the apiserver's own messages), for a report that has such a form.
const FormatText = "text"

// Texter is a report that can print itself as text.
type Texter interface {
	WriteText(w io.Writer) error
}

var textFormat = Format{
	Name:     FormatText,
	Supports: func(v any) bool { _, ok := v.(Texter); return ok },
	Write:    func(w io.Writer, v any) error { return v.(Texter).WriteText(w) },
}
