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
		if _, ok := op["value"]; ok && secretDataPath(p) {
			op["value"] = redactValue(p, op["value"])
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

// secretDataPath reports whether a JSON pointer is a Secret's data or
// stringData, or inside them, or the whole object (which holds them).
func secretDataPath(p string) bool {
	if p == "" || p == "/" {
		return true
	}
	for _, top := range []string{"/data", "/stringData"} {
		if strings.EqualFold(p, top) || len(p) > len(top) && strings.EqualFold(p[:len(top)+1], top+"/") {
			return true
		}
	}
	return false
}

// redactValue redacts a value written at path: the whole object keeps all
// but its data's values, data as a whole keeps its keys, anything inside is
// replaced.
func redactValue(path string, v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return Redacted
	}
	whole := path == "" || path == "/"
	for k, sub := range m {
		if !whole {
			m[k] = Redacted
			continue
		}
		if dm, ok := sub.(map[string]any); ok && (strings.EqualFold(k, "data") || strings.EqualFold(k, "stringData")) {
			for dk := range dm {
				dm[dk] = Redacted
			}
		}
	}
	return m
}
