package webhooks

import "github.com/hookback/hookback/rbac"

// Permissions returns what the named webhooks need beyond serving, from
// their rows (the pod cache of pod-eviction, the node restore of
// node-status on exit). Events are not listed: the recorder hookback hands
// every part declares them.
func Permissions(names []string) []rbac.Permission {
	var out []rbac.Permission
	for _, b := range rows(names) {
		for _, p := range b.permissions {
			p.Part = b.name
			out = append(out, p)
		}
	}
	return out
}
