package takeover

import (
	"encoding/json"

	"github.com/hookback/hookback/internal/jsonpatch"
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
type patchOp = jsonpatch.Op

// ours labels and annotates an object as this session's take-over.
func (t *Taker) ours(labels, anns map[string]string, st state) []patchOp {
	ops := jsonpatch.MapOps("/metadata/annotations", anns != nil, map[string]string{AnnotationState: st.encode(), registration.AnnotationLease: t.LeaseRef})
	return append(ops, jsonpatch.MapOps("/metadata/labels", labels != nil, map[string]string{
		registration.LabelManagedBy: registration.ManagedByValue, registration.LabelSession: t.Session})...)
}

// release drops what ours added.
func release(labels, anns map[string]string) []patchOp {
	ops := jsonpatch.RemoveOps("/metadata/annotations", anns, 0, AnnotationState, registration.AnnotationLease)
	return append(ops, jsonpatch.RemoveOps("/metadata/labels", labels, 0, registration.LabelManagedBy, registration.LabelSession)...)
}
