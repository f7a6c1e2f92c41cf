// Package jsonpatch writes the JSON patch (RFC 6902) operations hookback
// sends to mark and give back what it changes on objects it did not create
// (a CRD's conversion redirected, an operator taken over): operations
// against the object as stored, with the keys of its labels and
// annotations added or removed one by one, never a diff of re-encoded
// objects.
package jsonpatch

import (
	"encoding/json"
	"slices"
	"strings"
)

// Op is one JSON patch operation.
type Op struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// Pointer escapes one JSON pointer segment (RFC 6901).
func Pointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// MapOps adds the keys of kv to the map at path, making the map when it
// does not exist (exists false), in key order.
func MapOps(path string, exists bool, kv map[string]string) []Op {
	if !exists {
		m := map[string]any{}
		for k, v := range kv {
			m[k] = v
		}
		return []Op{{Op: "add", Path: path, Value: m}}
	}
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	ops := make([]Op, 0, len(kv))
	for _, k := range keys {
		ops = append(ops, Op{Op: "add", Path: path + "/" + Pointer(k), Value: kv[k]})
	}
	return ops
}

// RemoveOps removes the keys among keys that have holds from the map at
// path; the map itself when nothing else is left in it (hookback's add
// made it) and the same patch adds nothing to it (added is 0).
func RemoveOps(path string, have map[string]string, added int, keys ...string) []Op {
	var ops []Op
	for _, k := range keys {
		if _, ok := have[k]; ok {
			ops = append(ops, Op{Op: "remove", Path: path + "/" + Pointer(k)})
		}
	}
	if added == 0 && len(ops) > 0 && len(ops) == len(have) {
		return []Op{{Op: "remove", Path: path}}
	}
	return ops
}

// Encode is ops as a patch body. Ops hold plain values only, so it
// cannot fail.
func Encode(ops []Op) []byte {
	b, _ := json.Marshal(ops)
	return b
}
