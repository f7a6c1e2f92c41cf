package record

import (
	"encoding/json"
	"strings"
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
			if isSecret(obj) && !secretClean(obj) {
				t.Fatalf("a Secret's data survived redaction: %s", out)
			}
		}
	})
}

// FuzzRedactExchange: whatever patch a webhook answers a Secret's review
// with, the answer kept holds none of the Secret's data, nor kubectl's
// last-applied copy of it, at any path the patch writes them.
func FuzzRedactExchange(f *testing.F) {
	review := []byte(`{"request":{"uid":"U","object":{"kind":"Secret","data":{"k":"b2xk"}}}}`)
	for _, p := range []string{
		`[{"op":"add","path":"/data/k","value":"aHVudGVyMg=="}]`,
		`[{"op":"replace","path":"","value":{"kind":"Secret","stringData":{"p":"x"}}}]`,
		`[{"op":"add","path":"/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration","value":"{\"data\":{\"k\":\"v\"}}"}]`,
		`[{"op":"add","path":"/metadata","value":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"x"}}}]`,
	} {
		f.Add(review, []byte(p))
	}
	f.Fuzz(func(t *testing.T, review, patch []byte) {
		answer, err := json.Marshal(map[string]any{"response": map[string]any{"uid": "U", "allowed": true, "patch": patch}})
		if err != nil {
			return
		}
		_, out, err := RedactExchange(review, answer)
		if err != nil || !isSecretReview(review) {
			return
		}
		var doc struct{ Response struct{ Patch []byte } }
		if json.Unmarshal(out, &doc) != nil {
			t.Fatalf("the answer kept does not decode: %s", out)
		}
		var ops []map[string]any
		if json.Unmarshal(doc.Response.Patch, &ops) != nil {
			return
		}
		for _, op := range ops {
			p, _ := op["path"].(string)
			if v, ok := op["value"]; ok && !patchValueClean(p, v) {
				t.Fatalf("op at %q keeps a Secret's data: %s", p, doc.Response.Patch)
			}
		}
	})
}

// secretClean reports whether a Secret holds no data value nor an
// unredacted last-applied copy: the oracle of both fuzz targets.
func secretClean(obj map[string]any) bool {
	for _, field := range []string{"data", "stringData"} {
		for _, d := range folded(obj, field) {
			if !allRedacted(d) {
				return false
			}
		}
	}
	for _, md := range folded(obj, "metadata") {
		if meta, ok := md.(map[string]any); ok && !metadataClean(meta) {
			return false
		}
	}
	return true
}

func metadataClean(meta map[string]any) bool {
	for _, a := range folded(meta, "annotations") {
		if anns, ok := a.(map[string]any); ok {
			if v, ok := anns[lastApplied]; ok && !appliedClean(v) {
				return false
			}
		}
	}
	return true
}

// appliedClean: kubectl's copy is Redacted, or a Secret that is clean.
func appliedClean(v any) bool {
	if v == Redacted {
		return true
	}
	s, ok := v.(string)
	var applied map[string]any
	return ok && json.Unmarshal([]byte(s), &applied) == nil && applied != nil && secretClean(applied)
}

// allRedacted: a data map whose every value is Redacted (a map that is not
// one holds nothing the decoder would read as data).
func allRedacted(d any) bool {
	m, ok := d.(map[string]any)
	if !ok {
		return true
	}
	for _, v := range m {
		if v != Redacted {
			return false
		}
	}
	return true
}

func patchValueClean(path string, v any) bool {
	m, isMap := v.(map[string]any)
	switch {
	case path == "" || path == "/":
		return v == Redacted || isMap && secretClean(m)
	case secretDataPath(path):
		return v == Redacted || isMap && allRedacted(m)
	case path == lastAppliedPath:
		return appliedClean(v)
	case strings.EqualFold(path, "/metadata/annotations"):
		return !isMap || metadataClean(map[string]any{"annotations": m})
	case strings.EqualFold(path, "/metadata"):
		return !isMap || metadataClean(m)
	}
	return true
}
