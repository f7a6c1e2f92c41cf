// Package lint checks webhook configurations against the ways they have
// taken clusters down in the field: a webhook that must admit its own pods
// to come back (self-deadlock), the control plane's namespaces and objects
// behind a failurePolicy Fail webhook, timeouts that add up past the
// request's deadline even under failurePolicy Ignore, and the fields that
// break dry-run, hide versions or let anyone opt out; and admission
// policies (Validating and MutatingAdmissionPolicy) bound where they can
// fail the control plane, bound to nothing, or bound without the params or
// the Deny they need. It reads manifests
// only (no cluster): each Finding names the rule, the object and the field,
// why it matters (the Kubernetes documentation or the incident), and the
// fix as a JSON patch of the object where one exists. Rules decide whether
// the apiserver would call a webhook with k8s.io/apiserver's own matching
// (internal/admitmatch), so that lint and the apiserver agree.
package lint
