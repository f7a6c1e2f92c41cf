package audit

import (
	"fmt"
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hookback/hookback/internal/admitmatch"
)

// Target is one resource a webhook's rules match, in the version the
// review is sent in, with the operation the audit sends for it.
type Target struct {
	GVR         schema.GroupVersionResource
	Kind        schema.GroupVersionKind
	Subresource string
	Namespaced  bool
	Operation   admissionregistrationv1.OperationType
}

// Resource names the target as kubectl does: pods, deployments.apps,
// nodes/status.
func (t Target) Resource() string {
	s := t.GVR.Resource
	if t.GVR.Group != "" {
		s += "." + t.GVR.Group
	}
	if t.Subresource != "" {
		s += "/" + t.Subresource
	}
	return s
}

// APIResource is one resource the apiserver serves (discovery).
type APIResource struct {
	GVR schema.GroupVersionResource
	// Kind is the kind of the resource's objects.
	Kind schema.GroupVersionKind
	// Subresource is set for "status"; the objects are the parent's.
	Subresource string
	Namespaced  bool
	Listable    bool
	// Preferred is the group's preferred version.
	Preferred bool
}

// neverCalled are the resources the apiserver never sends to admission
// webhooks, so that a webhook cannot lock the cluster out of fixing it.
var neverCalled = map[schema.GroupResource]bool{
	{Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations"}:   true,
	{Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations"}:     true,
	{Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicies"}:       true,
	{Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicybindings"}: true,
	{Group: "admissionregistration.k8s.io", Resource: "mutatingadmissionpolicies"}:         true,
	{Group: "admissionregistration.k8s.io", Resource: "mutatingadmissionpolicybindings"}:   true,
	{Group: "authentication.k8s.io", Resource: "tokenreviews"}:                             true,
	{Group: "authorization.k8s.io", Resource: "subjectaccessreviews"}:                      true,
	{Group: "authorization.k8s.io", Resource: "selfsubjectaccessreviews"}:                  true,
	{Group: "authorization.k8s.io", Resource: "localsubjectaccessreviews"}:                 true,
	{Group: "authorization.k8s.io", Resource: "selfsubjectrulesreviews"}:                   true,
	{Group: "authentication.k8s.io", Resource: "selfsubjectreviews"}:                       true,
}

// Targets are the resources rules match among served, one version per
// group and resource (the group's preferred version when a rule matches
// it, as a client would most likely use it, else the first a rule
// matches), each with the operation the audit sends: op when set, else
// CREATE when the matching rule includes it, else UPDATE. Rules that match
// neither (DELETE, CONNECT only) or that name a subresource without stored
// objects of its own (pods/exec, pods/eviction) give no target.
func Targets(rules []admissionregistrationv1.RuleWithOperations, served []APIResource, op admissionregistrationv1.OperationType) []Target {
	type key struct {
		gr  schema.GroupResource
		sub string
	}
	chosen := map[key]Target{}
	var order []key
	for _, rule := range rules {
		ruleOp, ok := operationFor(rule.Operations, op)
		if !ok {
			continue
		}
		for _, r := range served {
			if !r.Listable || neverCalled[r.GVR.GroupResource()] || !ruleMatches(rule.Rule, r) {
				continue
			}
			k := key{r.GVR.GroupResource(), r.Subresource}
			t := Target{GVR: r.GVR, Kind: r.Kind, Subresource: r.Subresource, Namespaced: r.Namespaced, Operation: ruleOp}
			prev, seen := chosen[k]
			switch {
			case !seen:
				order = append(order, k)
				chosen[k] = t
			case r.Preferred && prev.GVR.Version != r.GVR.Version:
				chosen[k] = t
			case prev.Operation != admissionregistrationv1.Create && ruleOp == admissionregistrationv1.Create:
				prev.Operation = ruleOp
				chosen[k] = prev
			}
		}
	}
	out := make([]Target, 0, len(order))
	for _, k := range order {
		out = append(out, chosen[k])
	}
	return out
}

func operationFor(ops []admissionregistrationv1.OperationType, forced admissionregistrationv1.OperationType) (admissionregistrationv1.OperationType, bool) {
	has := func(o admissionregistrationv1.OperationType) bool {
		return slices.Contains(ops, o) || slices.Contains(ops, admissionregistrationv1.OperationAll)
	}
	switch {
	case forced != "":
		return forced, has(forced)
	case has(admissionregistrationv1.Create):
		return admissionregistrationv1.Create, true
	case has(admissionregistrationv1.Update):
		return admissionregistrationv1.Update, true
	}
	return "", false
}

// ruleMatches is the apiserver's rule matching (apiGroups, apiVersions,
// resources with their "*" and "/" forms, scope) for one served resource.
func ruleMatches(rule admissionregistrationv1.Rule, r APIResource) bool {
	if !matchesAny(rule.APIGroups, r.GVR.Group) || !matchesAny(rule.APIVersions, r.GVR.Version) {
		return false
	}
	if !admitmatch.ResourceMatches(rule.Resources, r.GVR.Resource, r.Subresource) {
		return false
	}
	scope := admissionregistrationv1.AllScopes
	if rule.Scope != nil {
		scope = *rule.Scope
	}
	switch scope {
	case admissionregistrationv1.ClusterScope:
		return !r.Namespaced
	case admissionregistrationv1.NamespacedScope:
		return r.Namespaced
	}
	return true
}

func matchesAny(list []string, s string) bool {
	return slices.Contains(list, "*") || slices.Contains(list, s)
}

// Selects reports whether a label selector matches set: a nil selector
// matches everything, as the apiserver reads it.
func Selects(sel *metav1.LabelSelector, set map[string]string) (bool, error) {
	if sel == nil {
		return true, nil
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return false, fmt.Errorf("label selector: %w", err)
	}
	return s.Matches(labels.Set(set)), nil
}
