// Package takeover pauses an operator that is already deployed, for the
// length of a session, and gives it back exactly: its Deployment is scaled
// to zero, the webhook configurations whose Service selects its pods are
// pointed at hookback under their own names (the apiserver calls
// configurations in name order, so the order is kept), the CA injectors'
// annotations that would undo that are set aside, and the Lease its
// leader-elected manager held is released so that a local manager leads at
// once. Everything it changes it records on the object itself (annotation
// AnnotationState, labelled as hookback's), never only on the laptop, so
// that the session's exit, the next start after a crash and `hookback
// cleanup` all restore it the same way; what someone else changed in the
// meantime is kept as they made it, and said.
package takeover
