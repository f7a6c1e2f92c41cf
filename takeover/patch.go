package takeover

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/hookback/hookback/registration"
)

// AnnotationState is registration.AnnotationTakeOver: what a take-over
// changed on an object, as JSON, to give it back.
const AnnotationState = registration.AnnotationTakeOver

// state is AnnotationState's value: each kind uses its own fields.
type state struct {
	// Replicas are a Deployment's replicas before it was scaled to zero.
	Replicas *int32 `json:"replicas,omitempty"`
	// Webhooks are a configuration's webhooks before, exactly as stored.
	Webhooks []any `json:"webhooks,omitempty"`
	// Redirected names the webhooks pointed at hookback.
	Redirected []string `json:"redirected,omitempty"`
	// Annotations are the CA injectors' annotations set aside.
	Annotations map[string]string `json:"annotations,omitempty"`
}

func (s state) encode() string {
	b, _ := json.Marshal(s) // plain values only: cannot fail
	return string(b)
}

// patchOp is one JSON patch operation.
type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

func pointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// mapOps adds keys to the map at path, creating it when it does not exist.
func mapOps(path string, exists bool, kv map[string]string) []patchOp {
	if !exists {
		m := map[string]any{}
		for k, v := range kv {
			m[k] = v
		}
		return []patchOp{{Op: "add", Path: path, Value: m}}
	}
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	ops := make([]patchOp, 0, len(kv))
	for _, k := range keys {
		ops = append(ops, patchOp{Op: "add", Path: path + "/" + pointer(k), Value: kv[k]})
	}
	return ops
}

// removeOps removes the keys of have among keys from the map at path; the
// map itself when nothing else is left in it (hookback's add made it) and
// the same patch adds nothing to it (added).
func removeOps(path string, have map[string]string, added int, keys ...string) []patchOp {
	var ops []patchOp
	for _, k := range keys {
		if _, ok := have[k]; ok {
			ops = append(ops, patchOp{Op: "remove", Path: path + "/" + pointer(k)})
		}
	}
	if added == 0 && len(ops) > 0 && len(ops) == len(have) {
		return []patchOp{{Op: "remove", Path: path}}
	}
	return ops
}

func encodeOps(ops []patchOp) []byte {
	b, _ := json.Marshal(ops) // plain values only: cannot fail
	return b
}

// ours labels and annotates an object as this session's take-over.
func (t *Taker) ours(labels, anns map[string]string, st state) []patchOp {
	ops := mapOps("/metadata/annotations", anns != nil, map[string]string{AnnotationState: st.encode(), registration.AnnotationLease: t.LeaseRef})
	return append(ops, mapOps("/metadata/labels", labels != nil, map[string]string{
		registration.LabelManagedBy: registration.ManagedByValue, registration.LabelSession: t.Session})...)
}

// release drops what ours added.
func release(labels, anns map[string]string) []patchOp {
	ops := removeOps("/metadata/annotations", anns, 0, AnnotationState, registration.AnnotationLease)
	return append(ops, removeOps("/metadata/labels", labels, 0, registration.LabelManagedBy, registration.LabelSession)...)
}
