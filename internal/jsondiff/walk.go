package jsondiff

import (
	"encoding/json"
	"reflect"
	"slices"
)

// step is one step of a path into a JSON document: a key of an object, or
// an index of an array (index >= 0).
type step struct {
	key   string
	index int
}

// leaf is called for each place two documents differ: a field or an
// element present on one side only (inA or inB false), or two values that
// are not both objects or both arrays and are not equal.
type leaf func(path []step, a, b any, inA, inB bool)

// walk compares a and b, decoded JSON, objects key by key (in key order)
// and arrays index by index (an insertion shows as changes at each later
// index and an addition at the end: what a JSON patch against the same
// array says), and calls visit for every difference. skip, when set, leaves
// out the subtrees it names.
func walk(path []step, a, b any, inA, inB bool, skip func([]step) bool, visit leaf) {
	if (!inA && !inB) || (skip != nil && skip(path)) {
		return
	}
	if !inA || !inB {
		visit(path, a, b, inA, inB)
		return
	}
	switch av := a.(type) {
	case map[string]any:
		if bv, ok := b.(map[string]any); ok {
			for _, k := range unionKeys(av, bv) {
				x, inX := av[k]
				y, inY := bv[k]
				walk(append(slices.Clip(path), step{key: k, index: -1}), x, y, inX, inY, skip, visit)
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
				walk(append(slices.Clip(path), step{index: i}), x, y, i < len(av), i < len(bv), skip, visit)
			}
			return
		}
	}
	if !equal(a, b) {
		visit(path, a, b, true, true)
	}
}

// equal compares two decoded scalars (or mismatched kinds): the same Go
// value, or the same JSON (1 decoded as int64 and as float64).
func equal(a, b any) bool {
	if reflect.DeepEqual(a, b) {
		return true
	}
	x, errA := json.Marshal(a)
	y, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(x) == string(y)
}

func unionKeys(a, b map[string]any) []string {
	keys := make([]string, 0, len(a)+len(b))
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
