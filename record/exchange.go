package record

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// mayHoldSecret is the hot path's test: false proves the review carries no
// Secret, so it is kept as received without being parsed. Redact
// redacts an object whose kind decodes to "Secret"; in JSON that string is
// either written as is or with \u escapes.
func mayHoldSecret(review []byte) bool {
	return bytes.Contains(review, []byte("Secret")) || bytes.Contains(review, []byte(`\u`))
}

// RedactExchange redacts a review that may hold a Secret (Redact),
// and the answer's patch values under /data and /stringData when the object
// is a Secret: a webhook that writes a Secret's data must not leak it either.
// Other reviews come back as they are.
func RedactExchange(review, answer []byte) ([]byte, []byte, error) {
	if !mayHoldSecret(review) {
		return review, answer, nil
	}
	red, err := Redact(review)
	if err != nil {
		return nil, nil, err
	}
	if len(answer) == 0 || !isSecretReview(review) {
		return red, answer, nil
	}
	ans, err := redactAnswer(answer)
	if err != nil {
		return nil, nil, err
	}
	return red, ans, nil
}

// isSecretReview reports whether the review's object or oldObject is a
// Secret. Keys match ignoring case, as in Redact.
func isSecretReview(review []byte) bool {
	var rv struct {
		Request struct {
			Object, OldObject struct{ Kind string }
		}
	}
	if err := json.Unmarshal(review, &rv); err != nil {
		return false
	}
	return rv.Request.Object.Kind == "Secret" || rv.Request.OldObject.Kind == "Secret"
}

// redactAnswer replaces the values of patch operations on a Secret's data or
// stringData by Redacted.
func redactAnswer(answer []byte) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(answer, &doc); err != nil {
		return nil, fmt.Errorf("decode answer: %w", err)
	}
	resp, _ := doc["response"].(map[string]any)
	b64, _ := resp["patch"].(string)
	if b64 == "" {
		return answer, nil
	}
	var raw []byte
	if err := json.Unmarshal([]byte(`"`+b64+`"`), &raw); err != nil {
		return nil, fmt.Errorf("decode patch: %w", err)
	}
	var ops []map[string]any
	if err := json.Unmarshal(raw, &ops); err != nil {
		return nil, fmt.Errorf("decode patch: %w", err)
	}
	for _, op := range ops {
		p, _ := op["path"].(string)
		if v, ok := op["value"]; ok {
			op["value"] = redactPatchValue(p, v)
		}
	}
	// The marker stays readable: no \u003c escapes.
	var patch bytes.Buffer
	enc := json.NewEncoder(&patch)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(ops); err != nil {
		return nil, fmt.Errorf("encode patch: %w", err)
	}
	resp["patch"] = bytes.TrimRight(patch.Bytes(), "\n")
	out, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("encode answer: %w", err)
	}
	return out, nil
}

// lastAppliedPath is the JSON pointer to kubectl's last-applied copy.
var lastAppliedPath = "/metadata/annotations/" + strings.ReplaceAll(lastApplied, "/", "~1")

// redactPatchValue redacts what a patch operation writes at path in a
// Secret: its data, or kubectl's last-applied copy of it, written alone or
// inside the metadata or annotations that hold it.
func redactPatchValue(path string, v any) any {
	switch {
	case path == "" || path == "/":
		if m, ok := v.(map[string]any); ok {
			redactSecret(m)
			return m
		}
		return Redacted
	case secretDataPath(path):
		return redactValue(v)
	case path == lastAppliedPath:
		return redactLastApplied(v)
	case strings.EqualFold(path, "/metadata/annotations"):
		if m, ok := v.(map[string]any); ok {
			redactAnnotations(m)
		}
	case strings.EqualFold(path, "/metadata"):
		if m, ok := v.(map[string]any); ok {
			redactMetadata(m)
		}
	}
	return v
}

// secretDataPath reports whether a JSON pointer is a Secret's data or
// stringData, or inside them.
func secretDataPath(p string) bool {
	for _, top := range []string{"/data", "/stringData"} {
		if strings.EqualFold(p, top) || len(p) > len(top) && strings.EqualFold(p[:len(top)+1], top+"/") {
			return true
		}
	}
	return false
}

// redactValue redacts a value written at or under /data or /stringData:
// data as a whole keeps its keys, anything inside is replaced.
func redactValue(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return Redacted
	}
	for k := range m {
		m[k] = Redacted
	}
	return m
}
