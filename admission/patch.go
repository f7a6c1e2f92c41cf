package admission

import (
	"encoding/json"
	"strings"
)

// PatchOp is one JSON patch (RFC 6902) operation. Handlers build the
// operations they mean against the raw request object (append a toleration,
// set one annotation, replace one quantity) instead of diffing a re-encoded
// typed object: a typed round trip drops every field the client library does
// not know, and a diff of it would remove those fields from the object the
// apiserver stores.
type PatchOp struct {
	Op    string
	Path  string
	Value any
}

// MarshalJSON writes the operation; remove carries no value, add and replace
// always do (even a JSON null).
func (o PatchOp) MarshalJSON() ([]byte, error) {
	if o.Op == "remove" {
		return json.Marshal(struct {
			Op   string `json:"op"`
			Path string `json:"path"`
		}{o.Op, o.Path})
	}
	return json.Marshal(struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value"`
	}{o.Op, o.Path, o.Value})
}

// Pointer joins unescaped reference tokens into an RFC 6901 JSON pointer,
// escaping "~" and "/" (label and annotation keys carry "/").
func Pointer(tokens ...string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(pointerEscaper.Replace(t))
	}
	return b.String()
}

// "~" first: escaping "/" to "~1" must not be escaped again.
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// Add is an "add" operation at path.
func Add(path string, value any) PatchOp { return PatchOp{Op: "add", Path: path, Value: value} }

// Replace is a "replace" operation at path; the member must exist.
func Replace(path string, value any) PatchOp { return PatchOp{Op: "replace", Path: path, Value: value} }

// Remove is a "remove" operation at path; the member must exist.
func Remove(path string) PatchOp { return PatchOp{Op: "remove", Path: path} }

// AppendOps appends items to the array at path. present says whether the
// object holds a non-empty array there: if not (absent, null or empty), one
// "add" writes the whole array, which creates the member or replaces the null
// or empty one; otherwise each item is added at "-", leaving what is there
// untouched.
func AppendOps[T any](path string, present bool, items ...T) []PatchOp {
	if len(items) == 0 {
		return nil
	}
	if !present {
		return []PatchOp{Add(path, items)}
	}
	ops := make([]PatchOp, len(items))
	for i, it := range items {
		ops[i] = Add(path+"/-", it)
	}
	return ops
}

// SetKeyOp sets key in the string map at path (labels, annotations). present
// says whether the object holds a non-empty map there: if not, the map is
// written whole with the one key; otherwise only the key is added (an "add"
// on an existing key replaces its value).
func SetKeyOp(path string, present bool, key string, value string) PatchOp {
	if !present {
		return Add(path, map[string]string{key: value})
	}
	return Add(path+Pointer(key), value)
}
