package webhooks

import "github.com/hookback/hookback/admission"

// Permissions returns what the named webhooks need beyond serving: the pod
// cache of pod-eviction, and the node restore of node-status on exit.
// Events are not listed: the recorder hookback hands every part declares
// them.
func Permissions(names []string) []admission.Permission {
	var out []admission.Permission
	for _, n := range names {
		switch n {
		case NamePodEviction:
			for _, verb := range []string{"list", "watch"} {
				out = append(out, admission.Permission{Verb: verb, Resource: "pods", Why: "pod cache of pod-eviction", Part: n})
			}
		case NameNodeStatus:
			out = append(out,
				admission.Permission{Verb: "list", Resource: "nodes", Why: "node-status restores nodes on exit", Part: n},
				admission.Permission{Verb: "patch", Resource: "nodes", Subresource: "status", Why: "node-status restores nodes on exit", Part: n})
		}
	}
	return out
}
