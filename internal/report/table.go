package report

import (
	"io"
)

// FormatTable is the text a person reads; the default of every command.
const FormatTable = "table"

// Tabler is a report that can print itself as a table.
type Tabler interface {
	WriteTable(w io.Writer) error
}

var tableFormat = Format{
	Name:     FormatTable,
	Supports: func(v any) bool { _, ok := v.(Tabler); return ok },
	Write:    func(w io.Writer, v any) error { return v.(Tabler).WriteTable(w) },
}
