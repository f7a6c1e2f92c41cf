package controllers

import (
	"strings"

	"github.com/hookback/hookback/admission"
	rbacv1 "k8s.io/api/rbac/v1"
)

// Permissions returns what the named controllers (resolved names, as Build
// takes them) need, without duplicates. Namespace is empty (all namespaces)
// because the controllers watch every namespace. Name is set where hookback
// only touches one object, so that a grant restricted by resourceNames
// passes; create cannot be restricted by name.
//
// Events are not listed: they go through the recorder shared with the
// webhooks (core/v1 events create and patch).
func Permissions(selected []string) ([]admission.Permission, error) {
	want, err := selectControllers(selected)
	if err != nil {
		return nil, err
	}
	var out []admission.Permission
	add := func(reason, group, resource, subresource, name string, verbs ...string) {
		part, _, _ := strings.Cut(reason, " ")
		for _, v := range verbs {
			out = append(out, admission.Permission{Verb: v, Group: group, Resource: resource, Subresource: subresource,
				Name: name, Why: reason, Part: part})
		}
	}
	if want[PodNameLabelName] {
		add("pod-name-label watches pods", "", "pods", "", "", "list", "watch")
		add("pod-name-label sets the pod-name label", "", "pods", "", "", "patch")
		// A removal whose test failed is answered 422, as a refusal is: the
		// pod is read from the apiserver (the cache may lag) to tell them apart.
		add("pod-name-label re-reads a pod whose label removal failed", "", "pods", "", "", "get")
	}
	if want[ExecRBACName] {
		rbac := rbacv1.GroupName
		add("exec-rbac watches pods", "", "pods", "", "", "list", "watch")
		add("exec-rbac maintains clusterrole "+ExecRBACObjectName, rbac, "clusterroles", "", ExecRBACObjectName,
			"get", "list", "watch", "update", "delete")
		add("exec-rbac creates clusterrole "+ExecRBACObjectName, rbac, "clusterroles", "", "", "create")
		// In every namespace: any namespace may get pods that enable the
		// agent. list and watch select metadata.name, so the name applies.
		add("exec-rbac maintains rolebindings "+ExecRBACObjectName+" in namespaces with xxl-agent pods", rbac,
			"rolebindings", "", ExecRBACObjectName, "get", "list", "watch", "update", "delete")
		add("exec-rbac creates rolebindings "+ExecRBACObjectName, rbac, "rolebindings", "", "", "create")
		// Only to remove the cluster-wide binding older versions made; get
		// because only one carrying the managed-by labels is deleted.
		add("exec-rbac deletes the clusterrolebinding "+ExecRBACObjectName+" older versions made", rbac,
			"clusterrolebindings", "", ExecRBACObjectName, "get", "delete")
		// RBAC escalation prevention: writing the ClusterRole requires
		// holding its permissions (or "escalate" on clusterroles), and
		// creating or updating a RoleBinding to it requires holding them in
		// the binding's namespace (or "bind" on the clusterrole); this list
		// cannot express the alternatives. Cluster-wide, since a binding may
		// go in any namespace.
		for _, r := range ExecRBACRules() {
			for _, res := range r.Resources {
				resource, sub, _ := strings.Cut(res, "/")
				add("exec-rbac grants it in ClusterRole "+ExecRBACObjectName, r.APIGroups[0], resource, sub, "", r.Verbs...)
			}
		}
	}
	return admission.MergePermissions(out), nil
}
