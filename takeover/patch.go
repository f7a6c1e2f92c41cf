package takeover

import (
	"encoding/json"
	"maps"

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
	// Labels are the object's labels that hookback's labels replaced.
	Labels map[string]string `json:"labels,omitempty"`
	// Holder is a released Lease's holder before the take-over.
	Holder string `json:"holder,omitempty"`
}

func (s state) encode() string {
	b, _ := json.Marshal(s) // plain values only: cannot fail
	return string(b)
}

// patchOp is one JSON patch operation.
type patchOp = jsonpatch.Op

// ours labels and annotates an object as this session's take-over; a
// label it replaces (a scaffold's app.kubernetes.io/managed-by: kustomize)
// is kept in st, to be put back.
func (t *Taker) ours(labels, anns map[string]string, st state) []patchOp {
	st.Labels = registration.ReplacedLabels(labels, st.Labels)
	ops := jsonpatch.MapOps("/metadata/annotations", anns != nil, map[string]string{AnnotationState: st.encode(), registration.AnnotationLease: t.LeaseRef})
	return append(ops, jsonpatch.MapOps("/metadata/labels", labels != nil, registration.SessionLabels(t.Session))...)
}

// unmarkOps drops what ours added, putting back the labels it replaced.
func unmarkOps(labels, anns map[string]string, st state) []patchOp {
	ops := jsonpatch.RemoveOps("/metadata/annotations", anns, 0, AnnotationState, registration.AnnotationLease)
	return append(ops, registration.UnlabelOps(labels, st.Labels)...)
}

// mark is ours for an object written whole (a Lease): its labels and
// annotations with the session's marks.
func (t *Taker) mark(labels, anns map[string]string, st *state) (map[string]string, map[string]string) {
	st.Labels = registration.ReplacedLabels(labels, st.Labels)
	labels, anns = maps.Clone(labels), maps.Clone(anns)
	if labels == nil {
		labels = map[string]string{}
	}
	if anns == nil {
		anns = map[string]string{}
	}
	maps.Copy(labels, registration.SessionLabels(t.Session))
	anns[AnnotationState], anns[registration.AnnotationLease] = st.encode(), t.LeaseRef
	return labels, anns
}

// unmark is unmarkOps for an object written whole; an empty map hookback
// made is nil again.
func unmark(labels, anns map[string]string, st state) (map[string]string, map[string]string) {
	anns = maps.Clone(anns)
	delete(anns, AnnotationState)
	delete(anns, registration.AnnotationLease)
	if len(anns) == 0 {
		anns = nil
	}
	return registration.Unlabel(labels, st.Labels), anns
}
