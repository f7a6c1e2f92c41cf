// Package registration writes hookback's session into a cluster and takes it
// out again: it renders the webhook configuration template, server-side
// applies the result (labelled, session-suffixed), keeps the session Lease,
// deletes a session's objects on exit or, after a crash, from a later run,
// and proves with a canary webhook that the apiserver really calls back,
// diagnosing why when it does not.
package registration

import "github.com/hookback/hookback/admission"

// Permissions is what registering a session needs: webhook configurations,
// the session Lease and the canary's dry-run ConfigMap in leaseNamespace.
func Permissions(leaseNamespace string) []admission.Permission {
	var ps []admission.Permission
	for _, res := range []string{"mutatingwebhookconfigurations", "validatingwebhookconfigurations"} {
		for _, verb := range []string{"list", "watch", "create", "update", "patch", "delete"} {
			ps = append(ps, admission.Permission{Verb: verb, Group: "admissionregistration.k8s.io", Resource: res, Why: "register webhooks, and notice changes by others", Part: PartCore})
		}
	}
	for _, verb := range []string{"get", "list", "create", "update", "delete"} {
		ps = append(ps, admission.Permission{Verb: verb, Group: "coordination.k8s.io", Resource: "leases", Namespace: leaseNamespace, Why: "session heartbeat", Part: PartCore})
	}
	return append(ps, admission.Permission{Verb: "create", Resource: "configmaps", Namespace: leaseNamespace, Why: "canary verification (dry-run)", Part: PartCore})
}

// PartCore is the Part of what hookback itself needs, whatever is enabled.
const PartCore = "core"
