package report

import (
	"encoding/json"
	"fmt"
	"io"
)

// FormatJSON is the report as one JSON document.
const FormatJSON = "json"

var jsonFormat = Format{
	Name:     FormatJSON,
	Supports: func(any) bool { return true },
	Write:    JSON,
}

// JSON writes v indented, followed by a newline.
func JSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("write json: %w", err)
	}
	return nil
}
