package takeover

import "github.com/hookback/hookback/rbac"

// Part is the name of the take-over's permissions.
const Part = "take-over"

// Permissions are what taking over the Deployments of namespaces needs,
// and giving them back after a crash: Deployments are listed in every
// namespace, since a crashed session's may be anywhere.
func Permissions(namespaces []string) []rbac.Permission {
	var ps []rbac.Permission
	add := func(verb, group, resource, ns, why string) {
		ps = append(ps, rbac.Permission{Verb: verb, Group: group, Resource: resource, Namespace: ns, Why: why, Part: Part})
	}
	for _, ns := range namespaces {
		add("get", "apps", "deployments", ns, "read the Deployment to take over")
		add("patch", "apps", "deployments", ns, "scale the Deployment to zero and back")
		add("list", "", "services", ns, "find the Services that select its pods")
		add("list", "", "pods", ns, "find its pods, and wait for them to stop")
		add("get", "", "pods", ns, "tell at exit whether a pod of the re-deployed operator leads already")
		add("list", "coordination.k8s.io", "leases", ns, "find its manager's leader-election Lease, and at exit the Leases released")
		add("get", "coordination.k8s.io", "leases", ns, "release that Lease, and again at exit")
		add("update", "coordination.k8s.io", "leases", ns, "release that Lease, and again at exit")
		add("list", "autoscaling", "horizontalpodautoscalers", ns, "find an autoscaler of the Deployment")
	}
	add("list", "apps", "deployments", "", "find Deployments a crashed session took over, to give them back")
	for _, r := range []string{"mutatingwebhookconfigurations", "validatingwebhookconfigurations"} {
		for _, verb := range []string{"get", "list", "patch"} {
			add(verb, "admissionregistration.k8s.io", r, "", "redirect the operator's webhooks to hookback and back")
		}
	}
	for _, verb := range []string{"get", "list", "patch"} {
		add(verb, "apiextensions.k8s.io", "customresourcedefinitions", "", "set aside and restore the CA injection of the operator's CRDs")
	}
	return ps
}
