// Package jsondiff compares two JSON objects field by field and names each
// difference by its field path as a person writes it (spec.color,
// metadata.labels["example.com/x"]) with its value before and after, in
// short JSON: what audit's conversion round trips and the conversion
// fuzzer report. (The chain view's differ speaks JSON pointers and raw
// values, for patches: it is package chain's.)
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
	keys := unionKeys(before, after)
	for _, k := range keys {
		if k == "apiVersion" || k == "kind" || k == "metadata" {
			continue
		}
		diffValue(FieldPath("", k), before[k], after[k], hasKey(before, k), hasKey(after, k), &out)
	}
	mb, _ := before["metadata"].(map[string]any)
	ma, _ := after["metadata"].(map[string]any)
	for _, k := range []string{"labels", "annotations"} {
		b, _ := mb[k].(map[string]any)
		a, _ := ma[k].(map[string]any)
		if k == "annotations" {
			a = withoutBookkeeping(b, a)
		}
		for _, key := range unionKeys(b, a) {
			diffValue(FieldPath("metadata."+k, key), b[key], a[key], hasKey(b, key), hasKey(a, key), &out)
		}
	}
	slices.SortFunc(out, func(x, y FieldChange) int { return strings.Compare(x.Path, y.Path) })
	return out
}

func hasKey(m map[string]any, k string) bool {
	_, ok := m[k]
	return ok
}

func unionKeys(a, b map[string]any) []string {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
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

// diffValue appends the differences between a and b at path; inA and inB
// say whether the field exists on each side.
func diffValue(path string, a, b any, inA, inB bool, out *[]FieldChange) {
	if !inA && !inB {
		return
	}
	if !inA || !inB {
		*out = append(*out, FieldChange{Path: path, Before: shown(a, inA), After: shown(b, inB)})
		return
	}
	switch av := a.(type) {
	case map[string]any:
		if bv, ok := b.(map[string]any); ok {
			for _, k := range unionKeys(av, bv) {
				diffValue(FieldPath(path, k), av[k], bv[k], hasKey(av, k), hasKey(bv, k), out)
			}
			return
		}
	case []any:
		if bv, ok := b.([]any); ok {
			for i := range max(len(av), len(bv)) {
				var x, y any
				if i < len(av) {
					x = av[i]
				}
				if i < len(bv) {
					y = bv[i]
				}
				diffValue(fmt.Sprintf("%s[%d]", path, i), x, y, i < len(av), i < len(bv), out)
			}
			return
		}
	}
	if !equalJSON(a, b) {
		*out = append(*out, FieldChange{Path: path, Before: shown(a, true), After: shown(b, true)})
	}
}

func equalJSON(a, b any) bool {
	x, errA := json.Marshal(a)
	y, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(x) == string(y)
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
