package inspector

import (
	"encoding/json"
	"fmt"
	"html/template"
)

// parseTemplates parses the embedded pages. Each page is a named template
// ("list", "detail", "replay-page", "gone") and "row" and "replay" are the
// fragments the script inserts.
func parseTemplates() (*template.Template, error) {
	t, err := template.New("inspector").Funcs(template.FuncMap{
		"sub": func(a, b int) int { return a - b },
		// prettyJSON indents a chain view's object (keys sorted).
		"prettyJSON": func(raw json.RawMessage) string { return pretty(raw) },
		// jsonValue shows a policy variable's value or a patch value.
		"jsonValue": func(v any) string {
			b, err := json.Marshal(v)
			if err != nil {
				return fmt.Sprint(v)
			}
			return string(b)
		},
	}).ParseFS(assets, "assets/*.html")
	if err != nil {
		return nil, fmt.Errorf("parse inspector pages: %w", err)
	}
	return t, nil
}
