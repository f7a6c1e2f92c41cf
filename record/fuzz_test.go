package record

import (
	"encoding/json"
	"testing"
)

// FuzzRedact: any review redacts or fails with an error, never a panic; a
// Secret in request.object or request.oldObject never keeps a value, nor
// kubectl's last-applied copy of itself.
func FuzzRedact(f *testing.F) {
	f.Add([]byte(`{"request":{"object":{"apiVersion":"v1","kind":"Secret","data":{"k":"c2VjcmV0"}}}}`))
	f.Add([]byte(`{"request":{"oldObject":{"kind":"Secret","stringData":{"p":"hunter2"}}}}`))
	f.Add([]byte(`{"request":null}`))
	f.Add([]byte(`{"request":{"object":{"kind":"Secret","metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"x"}}}}}`))
	f.Fuzz(func(t *testing.T, review []byte) {
		out, err := Redact(review)
		if err != nil {
			return
		}
		// Decoded as hookback's transport decodes a review (encoding/json,
		// keys matched ignoring case).
		var doc struct {
			Request struct {
				Object, OldObject map[string]any
			}
		}
		if json.Unmarshal(out, &doc) != nil {
			return
		}
		for _, obj := range []map[string]any{doc.Request.Object, doc.Request.OldObject} {
			if !isSecret(obj) {
				continue
			}
			for _, md := range folded(obj, "metadata") {
				meta, _ := md.(map[string]any)
				for _, a := range folded(meta, "annotations") {
					if ann, ok := a.(map[string]any); ok {
						if v, ok := ann[lastApplied]; ok && v != Redacted {
							t.Fatalf("last-applied-configuration survived redaction: %s", out)
						}
					}
				}
			}
			for _, field := range []string{"data", "stringData"} {
				for _, d := range folded(obj, field) {
					m, _ := d.(map[string]any)
					for k, v := range m {
						if v != Redacted {
							t.Fatalf("%s.%s survived redaction: %s", field, k, out)
						}
					}
				}
			}
		}
	})
}
