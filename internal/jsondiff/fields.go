// Package jsondiff compares two JSON documents, one walk for every
// caller: field by field, naming each difference by its field path as a
// person writes it (spec.color, metadata.labels["example.com/x"]) with its
// value before and after in short JSON (Fields: what audit's conversion
// round trips and the conversion fuzzer report), or by its JSON pointer
// with raw values (Pointers: the chain's views, read beside JSON patches).
package jsondiff

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// FieldChange is one field that differs, with its value before and after
// (short JSON; Missing when absent): one a conversion round trip lost or
// changed.
type FieldChange struct {
	Path   string `json:"path"`
	Before string `json:"before"`
	After  string `json:"after"`
}

// Missing stands for an absent field's value.
const Missing = "<missing>"

// maxValue bounds a value shown in a FieldChange.
const maxValue = 40

// Fields lists what differs between a stored object and its round trip:
// every top-level field but apiVersion, kind and metadata, and of the
// metadata the labels and annotations (the apiserver keeps the rest of the
// stored metadata whatever a converter answers). Annotations the round trip
// added whose key mentions conversion are a converter's bookkeeping (the
// hub's data kept on the spoke) and not reported.
func Fields(before, after map[string]any) []FieldChange {
	var out []FieldChange
	add := func(base string) leaf {
		return func(path []step, a, b any, inA, inB bool) {
			out = append(out, FieldChange{Path: fieldPath(base, path), Before: shown(a, inA), After: shown(b, inB)})
		}
	}
	for _, k := range unionKeys(before, after) {
		if k == "apiVersion" || k == "kind" || k == "metadata" {
			continue
		}
		x, inX := before[k]
		y, inY := after[k]
		walk([]step{{key: k, index: -1}}, x, y, inX, inY, nil, add(""))
	}
	mb, _ := before["metadata"].(map[string]any)
	ma, _ := after["metadata"].(map[string]any)
	for _, k := range []string{"labels", "annotations"} {
		b, _ := mb[k].(map[string]any)
		a, _ := ma[k].(map[string]any)
		if k == "annotations" {
			a = withoutBookkeeping(b, a)
		}
		walk(nil, b, a, true, true, nil, add("metadata."+k))
	}
	slices.SortFunc(out, func(x, y FieldChange) int { return strings.Compare(x.Path, y.Path) })
	return out
}

func withoutBookkeeping(before, after map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range after {
		if _, had := before[k]; !had && strings.Contains(strings.ToLower(k), "conversion") {
			continue
		}
		out[k] = v
	}
	return out
}

// fieldPath is path written after base as FieldPath writes each key, an
// index as [i].
func fieldPath(base string, path []step) string {
	p := base
	for _, s := range path {
		if s.index >= 0 {
			p = fmt.Sprintf("%s[%d]", p, s.index)
			continue
		}
		p = FieldPath(p, s.key)
	}
	return p
}

var plainKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// FieldPath appends key to path: spec.color, or
// metadata.annotations["example.com/x"] for a key that is not a plain word.
func FieldPath(path, key string) string {
	if !plainKey.MatchString(key) {
		b, _ := json.Marshal(key)
		return path + "[" + string(b) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

// shown is a value as short JSON.
func shown(v any, present bool) string {
	if !present {
		return Missing
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	s := string(b)
	if r := []rune(s); len(r) > maxValue {
		s = string(r[:maxValue-1]) + "…"
	}
	return s
}

// Text is the changes in one line: path: before -> after; ...
func Text(fields []FieldChange) string {
	parts := make([]string, len(fields))
	for i, f := range fields {
		parts[i] = fmt.Sprintf("%s: %s -> %s", f.Path, f.Before, f.After)
	}
	return strings.Join(parts, "; ")
}
