package registration

import (
	"encoding/json"
	"fmt"
	"maps"

	"github.com/hookback/hookback/internal/jsonpatch"
)

// AnnotationLabels holds, as JSON, the labels of an object hookback did not
// create that hookback's own labels replaced: a CRD installed by kustomize,
// Helm or OLM carries its own app.kubernetes.io/managed-by, and without it
// back Helm no longer takes the CRD for its own. Giving the object back
// puts them back.
const AnnotationLabels = "hookback.dev/labels"

// markedLabels are the labels hookback sets on what a session writes or
// lends: the two it replaces on someone else's object, and puts back.
var markedLabels = []string{LabelManagedBy, LabelSession}

// SessionLabels are hookback's labels of session.
func SessionLabels(session string) map[string]string {
	return map[string]string{LabelManagedBy: ManagedByValue, LabelSession: session}
}

// ReplacedLabels adds to saved the values of labels that hookback's labels
// replace; a value hookback set (a session resumed after a crash) is not
// one.
func ReplacedLabels(labels, saved map[string]string) map[string]string {
	if labels[LabelManagedBy] == ManagedByValue {
		return saved
	}
	for _, k := range markedLabels {
		if v, ok := labels[k]; ok {
			if saved == nil {
				saved = map[string]string{}
			}
			saved[k] = v
		}
	}
	return saved
}

// UnlabelOps drops hookback's labels from an object whose labels are
// labels, putting back those they replaced (saved). A managed-by that is no
// longer hookback's was set by someone since (a helm upgrade, a kubectl
// apply): it is theirs and stays.
func UnlabelOps(labels, saved map[string]string) []jsonpatch.Op {
	var drop []string
	put := map[string]string{}
	for _, k := range markedLabels {
		if v, has := labels[k]; k == LabelManagedBy && has && v != ManagedByValue {
			continue
		}
		if v, ok := saved[k]; ok {
			put[k] = v
			continue
		}
		drop = append(drop, k)
	}
	ops := jsonpatch.RemoveOps("/metadata/labels", labels, len(put), drop...)
	if len(put) == 0 {
		return ops
	}
	return append(ops, jsonpatch.MapOps("/metadata/labels", labels != nil, put)...)
}

// Unlabel is UnlabelOps for an object written whole: its labels without
// hookback's, with those they replaced; nil when none are left.
func Unlabel(labels, saved map[string]string) map[string]string {
	out := maps.Clone(labels)
	for _, k := range markedLabels {
		if v, has := out[k]; k == LabelManagedBy && has && v != ManagedByValue {
			continue
		}
		delete(out, k)
		if v, ok := saved[k]; ok {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// EncodeLabels is AnnotationLabels' value for saved; "" for none.
func EncodeLabels(saved map[string]string) string {
	if len(saved) == 0 {
		return ""
	}
	b, _ := json.Marshal(saved) // strings only: cannot fail
	return string(b)
}

// SavedLabels are the labels to put back on an object (what names it, for
// the error) whose annotations are anns: those AnnotationLabels holds and,
// when another part of the session lent the object too (a take-over whose
// own record it gives back), those in also; AnnotationLabels' come first.
func SavedLabels(what string, anns, also map[string]string) (map[string]string, error) {
	saved := maps.Clone(also)
	raw, ok := anns[AnnotationLabels]
	if !ok {
		return saved, nil
	}
	var held map[string]string
	if err := json.Unmarshal([]byte(raw), &held); err != nil {
		return nil, fmt.Errorf("%s: annotation %s is not a JSON object of strings: %w (put its labels back by hand, then remove the annotation)", what, AnnotationLabels, err)
	}
	if saved == nil {
		return held, nil
	}
	maps.Copy(saved, held)
	return saved, nil
}
