package main

import (
	"slices"

	"github.com/hookback/hookback/controller"
	"github.com/hookback/hookback/kubeconfig"
	"github.com/hookback/hookback/webhook"
)

// permissions lists what a run with these webhooks and controllers needs:
// hookback's own, the enabled webhooks', and the controllers' (which they
// declare themselves).
func permissions(leaseNamespace string, hookNames, ctlNames []string) ([]kubeconfig.Permission, error) {
	var parts []string
	for _, n := range webhook.Names() {
		if slices.Contains(hookNames, n) || slices.Contains(hookNames, webhook.All) {
			parts = append(parts, n)
		}
	}
	perms := kubeconfig.Only(kubeconfig.RequiredPermissions(leaseNamespace), parts...)
	ctl, err := controller.Permissions(ctlNames)
	if err != nil {
		return nil, err
	}
	for _, p := range ctl {
		perm := kubeconfig.Permission{Verb: p.Verb, Group: p.Group, Resource: p.Resource, Subresource: p.Subresource,
			Name: p.Name, Why: p.Reason, Part: "controllers"}
		if !slices.ContainsFunc(perms, func(q kubeconfig.Permission) bool {
			return q.String() == perm.String() && q.Name == perm.Name && q.Namespace == ""
		}) {
			perms = append(perms, perm)
		}
	}
	return perms, nil
}
