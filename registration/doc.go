// Package registration writes a session's objects into a cluster and takes
// them out again. It has three jobs:
//
//  1. Render what a session registers: the webhook configuration template
//     (template.go), configurations pointing at a Service (service.go), and
//     the scope that narrows them to the developer's namespaces and refuses
//     cluster-wide on a cluster that is not local (scope*.go); the routes
//     that name each upstream target (routes.go).
//  2. Apply them and keep them, then remove or restore them: server-side
//     apply, labelled and session-suffixed (register.go), CRD conversion
//     redirects and their exact restore (crd*.go), the labels hookback's
//     replace on an object it did not create, put back (labels.go), drift
//     from a colleague's edit (drift.go), and the session Lease by which a
//     later run removes a crashed session's objects (lease.go, occupant.go).
//  3. Prove with a canary webhook that the apiserver really calls back, and
//     diagnose why when it does not (verify.go).
//
// Reading the user's manifests is package manifests'; the permissions and
// the roles derived from them are package rbac's.
package registration

import "github.com/hookback/hookback/rbac"

// Permissions is what registering a session needs: webhook configurations,
// the session Lease and the canary's dry-run ConfigMap in leaseNamespace.
func Permissions(leaseNamespace string) []rbac.Permission {
	var ps []rbac.Permission
	for _, res := range []string{"mutatingwebhookconfigurations", "validatingwebhookconfigurations"} {
		for _, verb := range []string{"list", "watch", "create", "update", "patch", "delete"} {
			ps = append(ps, rbac.Permission{Verb: verb, Group: "admissionregistration.k8s.io", Resource: res, Why: "register webhooks, and notice changes by others", Part: PartCore})
		}
	}
	for _, verb := range []string{"get", "list", "create", "update", "delete"} {
		ps = append(ps, rbac.Permission{Verb: verb, Group: "coordination.k8s.io", Resource: "leases", Namespace: leaseNamespace, Why: "session heartbeat", Part: PartCore})
	}
	return append(ps, rbac.Permission{Verb: "create", Resource: "configmaps", Namespace: leaseNamespace, Why: "canary verification (dry-run)", Part: PartCore})
}

// PartCore is the Part of what hookback itself needs, whatever is enabled.
const PartCore = "core"
