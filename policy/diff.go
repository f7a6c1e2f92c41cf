package policy

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Diff is the JSON patch that turns before into after: objects are
// compared key by key, lists of the same length item by item, and a list
// whose length changed is replaced whole (a policy's list edits are
// merges or whole replacements, which this shows as they are). Keys are
// visited in sorted order so that the same change gives the same patch.
func Diff(before, after map[string]any) []PatchOp {
	var ops []PatchOp
	diffValue("", before, after, &ops)
	return ops
}

func diffValue(path string, a, b any, ops *[]PatchOp) {
	switch av := a.(type) {
	case map[string]any:
		if bv, ok := b.(map[string]any); ok {
			diffMap(path, av, bv, ops)
			return
		}
	case []any:
		if bv, ok := b.([]any); ok && len(av) == len(bv) {
			for i := range av {
				diffValue(path+"/"+strconv.Itoa(i), av[i], bv[i], ops)
			}
			return
		}
	}
	if !reflect.DeepEqual(a, b) {
		*ops = append(*ops, PatchOp{Op: "replace", Path: path, Value: b})
	}
}

func diffMap(path string, a, b map[string]any, ops *[]PatchOp) {
	for _, k := range sortedKeys(a) {
		p := path + "/" + escape(k)
		if bv, ok := b[k]; ok {
			diffValue(p, a[k], bv, ops)
		} else {
			*ops = append(*ops, PatchOp{Op: "remove", Path: p})
		}
	}
	for _, k := range sortedKeys(b) {
		if _, ok := a[k]; !ok {
			*ops = append(*ops, PatchOp{Op: "add", Path: path + "/" + escape(k), Value: b[k]})
		}
	}
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// escape is RFC 6901's escaping of a key in a JSON pointer.
func escape(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}
