package lint

import (
	"context"
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiadmission "k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/hookback/hookback/internal/admitmatch"
)

// request is a request the cluster makes, as the rules ask whether a
// webhook is called for it.
type request struct {
	Group, Version, Resource, Sub, Kind string
	Op                                  admissionregistrationv1.OperationType
	// Namespace is "" for a cluster-scoped resource.
	Namespace string
	// Labels are the object's; nil when unknown (an opt-in objectSelector
	// is then taken not to match, an opt-out one to match).
	Labels map[string]string
	// Object is the object for matchConditions; nil makes one from the
	// rest.
	Object map[string]any
	// User is who sends it, for matchConditions on request.userInfo.
	User string
}

// String names the request in messages: "CREATE pods in kube-system".
func (r request) String() string {
	res := r.Resource
	if r.Sub != "" {
		res += "/" + r.Sub
	}
	if r.Group != "" {
		res += "." + r.Group
	}
	s := string(r.Op) + " " + res
	if r.Namespace != "" {
		s += " in " + r.Namespace
	}
	return s
}

// kind names the request without its namespace: "CREATE pods".
func (r request) kind() string {
	r.Namespace = ""
	return r.String()
}

// wildcardProbe is the resource a "*" rule is probed with: pods in the
// core group (what most webhooks mean), else "*" itself, which only a
// wildcard rule matches.
func wildcardProbe(group string) string {
	if group == "" {
		return "pods"
	}
	return "*"
}

// ruleMatches is the rules' part of the apiserver's decision: group,
// version (any, under matchPolicy Equivalent, which converts the request
// to the registered version), resource and subresource, operation, scope.
func (h *Hook) ruleMatches(r request) bool {
	exact := *h.MatchPolicy == admissionregistrationv1.Exact
	for _, rule := range h.Rules {
		if !anyOf(rule.APIGroups, r.Group) || (exact && !anyOf(rule.APIVersions, r.Version)) {
			continue
		}
		if !admitmatch.ResourceMatches(rule.Resources, r.Resource, r.Sub) {
			continue
		}
		if !slices.Contains(rule.Operations, r.Op) && !slices.Contains(rule.Operations, admissionregistrationv1.OperationAll) {
			continue
		}
		switch *rule.Scope {
		case admissionregistrationv1.NamespacedScope:
			if r.Namespace == "" {
				continue
			}
		case admissionregistrationv1.ClusterScope:
			if r.Namespace != "" {
				continue
			}
		}
		return true
	}
	return false
}

func anyOf(list []string, v string) bool {
	return slices.Contains(list, v) || slices.Contains(list, "*")
}

// calledFor is whether the apiserver calls h for r: rules, the
// namespaceSelector (on the namespace's labels; a Namespace request on its
// own), the objectSelector and the matchConditions, which are evaluated
// with the apiserver's code; a condition that errors counts as a call under
// failurePolicy Fail, where the apiserver rejects the request.
func (in *Input) calledFor(h *Hook, r request) bool {
	if !h.ruleMatches(r) {
		return false
	}
	nsLabels := map[string]string(nil)
	switch {
	case r.Namespace != "":
		nsLabels = in.namespaceLabels(r.Namespace)
	case r.Group == "" && r.Resource == "namespaces" && r.Sub == "":
		nsLabels = r.Labels
	}
	if nsLabels != nil && !selects(h.NamespaceSelector, nsLabels) {
		return false
	}
	if !selects(h.ObjectSelector, r.Labels) {
		return false
	}
	if len(h.MatchConditions) == 0 {
		return true
	}
	m := admitmatch.Conditions(h.Name, h.MatchConditions, false, h.FailurePolicy)
	ok, err := admitmatch.Match(context.Background(), m, r.attributes())
	return ok || err != nil
}

// selects evaluates a label selector; one that does not parse is taken to
// match (the apiserver refuses to store it, so it never runs).
func selects(s *metav1.LabelSelector, l map[string]string) bool {
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		return true
	}
	return sel.Matches(labels.Set(l))
}

func (r request) attributes() apiadmission.Attributes {
	obj := r.Object
	if obj == nil {
		gv := schema.GroupVersion{Group: r.Group, Version: r.Version}
		md := map[string]any{"name": "hookback-lint"}
		if r.Namespace != "" {
			md["namespace"] = r.Namespace
		}
		if len(r.Labels) > 0 {
			l := map[string]any{}
			for k, v := range r.Labels {
				l[k] = v
			}
			md["labels"] = l
		}
		obj = map[string]any{"apiVersion": gv.String(), "kind": r.Kind, "metadata": md}
	}
	o := &unstructured.Unstructured{Object: obj}
	gvk := schema.GroupVersionKind{Group: r.Group, Version: r.Version, Kind: r.Kind}
	gvr := schema.GroupVersionResource{Group: r.Group, Version: r.Version, Resource: r.Resource}
	return apiadmission.NewAttributesRecord(o, nil, gvk, r.Namespace, o.GetName(), gvr, r.Sub,
		apiadmission.Operation(r.Op), nil, false, &user.DefaultInfo{Name: r.User})
}
