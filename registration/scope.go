package registration

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/hookback/hookback/field"
)

// Scope narrows every webhook hookback registers to what one developer asked
// for, on a cluster shared with others. It is ANDed with each webhook's own
// selectors and matchConditions, never replacing them: a scoped webhook sees
// a subset of what it would see unscoped. The canary is never scoped (it is
// not rendered through Apply): it selects only its own ConfigMap.
type Scope struct {
	// Namespaces opt namespaces in by name (kubernetes.io/metadata.name In):
	// --namespace/-n. For the built-ins that select seed 002's label
	// admission-webhook=enabled, naming namespaces replaces the label
	// (the template renders the list instead).
	Namespaces []string
	// NamespaceSelector and ObjectSelector are label selectors in kubectl
	// syntax (--namespace-selector, --object-selector).
	NamespaceSelector, ObjectSelector string
	// OnlyMine adds the matchCondition request.userInfo.username ==
	// Username (--only-mine); Resolve fills Username.
	OnlyMine bool
	Username string
	// AllNamespaces says the developer means cluster-wide on a cluster
	// that is not local (--all-namespaces).
	AllNamespaces bool
	// ConvertCRDs name the CRDs whose conversion is redirected on a cluster
	// that is not local (--convert).
	ConvertCRDs []string
	// Local is set by Resolve: the cluster is the developer's own.
	Local bool
}

// Names of what Apply adds, so a reader of the cluster sees where it came from.
const (
	// AnnotationScope records the scope on every scoped configuration.
	AnnotationScope = "hookback.dev/scope"
	// OnlyMineCondition names the matchCondition of --only-mine.
	OnlyMineCondition = "hookback-only-mine"
	// LabelNamespaceName is the label the apiserver sets on every namespace.
	LabelNamespaceName = "kubernetes.io/metadata.name"
)

// Validate reports every problem at once, each a field.Error naming its
// field.
func (s Scope) Validate() error {
	var errs []error
	for _, ns := range s.Namespaces {
		if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
			errs = append(errs, field.New("registration.Scope.Namespaces", strconv.Quote(ns), strings.Join(msgs, "; ")))
		}
	}
	if _, err := parseSelector(s.NamespaceSelector); err != nil {
		errs = append(errs, field.Errorf("registration.Scope.NamespaceSelector", strconv.Quote(s.NamespaceSelector), "%w (kubectl syntax: env=dev,team in (a,b),!legacy)", err))
	}
	if _, err := parseSelector(s.ObjectSelector); err != nil {
		errs = append(errs, field.Errorf("registration.Scope.ObjectSelector", strconv.Quote(s.ObjectSelector), "%w (kubectl syntax: app=web,tier!=db)", err))
	}
	if s.AllNamespaces && (len(s.Namespaces) > 0 || s.NamespaceSelector != "") {
		errs = append(errs, field.Clause("registration.Scope.AllNamespaces", "", "contradicts {registration.Scope.Namespaces} and {registration.Scope.NamespaceSelector}: give one or the other"))
	}
	for _, crd := range s.ConvertCRDs {
		if msgs := validation.IsDNS1123Subdomain(crd); len(msgs) > 0 || !strings.Contains(crd, ".") {
			errs = append(errs, field.New("registration.Scope.ConvertCRDs", strconv.Quote(crd), "want a CRD name, PLURAL.GROUP (widgets.example.com)"))
		}
	}
	return errors.Join(errs...)
}

// Narrowed reports whether anything narrows what reaches hookback.
func (s Scope) Narrowed() bool {
	return s.namespaced() || s.ObjectSelector != "" || s.OnlyMine
}

// namespaced reports whether a namespace scope applies: namespaceSelector
// does not narrow cluster-scoped resources, so they are left out.
func (s Scope) namespaced() bool { return len(s.Namespaces) > 0 || s.NamespaceSelector != "" }

// String describes the scope in one line, for logs, the banner and render.
func (s Scope) String() string {
	var parts []string
	if len(s.Namespaces) > 0 {
		parts = append(parts, "namespaces "+strings.Join(s.Namespaces, ","))
	}
	if s.NamespaceSelector != "" {
		parts = append(parts, "namespace selector "+s.NamespaceSelector)
	}
	if s.ObjectSelector != "" {
		parts = append(parts, "object selector "+s.ObjectSelector)
	}
	if s.OnlyMine {
		who := s.Username
		if who == "" {
			who = "you"
		}
		parts = append(parts, "only requests by "+who)
	}
	if len(parts) == 0 {
		return "cluster-wide (each webhook's own selectors)"
	}
	return strings.Join(parts, "; ")
}

// Apply narrows every webhook of objs in place and returns the objects to
// register, with one note per webhook left out: under a namespace scope a
// webhook whose rules match only cluster-scoped resources is not
// registered, since no namespace selector can narrow it. A configuration
// left with no webhook is dropped. Call after Validate and Resolve.
func (s Scope) Apply(objs []*unstructured.Unstructured) ([]*unstructured.Unstructured, []string, error) {
	if !s.Narrowed() {
		return objs, nil, nil
	}
	if s.OnlyMine && s.Username == "" {
		return nil, nil, field.New("registration.Scope.OnlyMine", "", "the username is unknown (the SelfSubjectReview was not made)")
	}
	var kept []*unstructured.Unstructured
	var notes []string
	for _, o := range objs {
		hooks, _, err := unstructured.NestedSlice(o.Object, "webhooks")
		if err != nil {
			return nil, nil, fmt.Errorf("scope %s %q: webhooks: %w", o.GetKind(), o.GetName(), err)
		}
		var out []any
		for _, h := range hooks {
			hm, ok := h.(map[string]any)
			if !ok {
				return nil, nil, fmt.Errorf("scope %s %q: a webhook is not an object", o.GetKind(), o.GetName())
			}
			if !s.applyHook(hm) {
				notes = append(notes, fmt.Sprintf("webhook %v not registered: its rules match only cluster-scoped resources, which a namespace scope cannot narrow", hm["name"]))
				continue
			}
			out = append(out, hm)
		}
		if len(out) == 0 {
			continue
		}
		if err := unstructured.SetNestedSlice(o.Object, out, "webhooks"); err != nil {
			return nil, nil, fmt.Errorf("scope %s %q: %w", o.GetKind(), o.GetName(), err)
		}
		ann := o.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[AnnotationScope] = s.String()
		o.SetAnnotations(ann)
		kept = append(kept, o)
	}
	return kept, notes, nil
}

// applyHook narrows one webhook; false when nothing of it is left.
func (s Scope) applyHook(hook map[string]any) bool {
	if s.namespaced() && !namespacedRules(hook) {
		return false
	}
	var nsReqs []any
	if len(s.Namespaces) > 0 {
		nsReqs = append(nsReqs, requirement(LabelNamespaceName, "In", s.Namespaces))
	}
	nsReqs = append(nsReqs, requirements(s.NamespaceSelector)...)
	andSelector(hook, "namespaceSelector", nsReqs)
	andSelector(hook, "objectSelector", requirements(s.ObjectSelector))
	if s.OnlyMine {
		conds, _, _ := unstructured.NestedSlice(hook, "matchConditions")
		conds = slices.DeleteFunc(conds, func(c any) bool {
			m, _ := c.(map[string]any)
			return m["name"] == OnlyMineCondition
		})
		conds = append(conds, map[string]any{"name": OnlyMineCondition,
			"expression": "request.userInfo.username == " + strconv.Quote(s.Username)})
		hook["matchConditions"] = conds
	}
	return true
}

// namespacedRules narrows the rules to namespaced resources: a rule for
// cluster-scoped ones only is dropped, one for any scope ("*" or unset)
// becomes Namespaced. False when no rule is left.
func namespacedRules(hook map[string]any) bool {
	rules, _, _ := unstructured.NestedSlice(hook, "rules")
	var out []any
	for _, r := range rules {
		rm, ok := r.(map[string]any)
		if !ok {
			continue
		}
		switch rm["scope"] {
		case "Cluster":
			continue
		case "Namespaced":
		default:
			rm["scope"] = "Namespaced"
		}
		out = append(out, rm)
	}
	hook["rules"] = out
	return len(out) > 0
}

// andSelector adds reqs to the matchExpressions of hook's selector field;
// an expression already there is not added twice.
func andSelector(hook map[string]any, field string, reqs []any) {
	if len(reqs) == 0 {
		return
	}
	sel, _, _ := unstructured.NestedMap(hook, field)
	if sel == nil {
		sel = map[string]any{}
	}
	exprs, _, _ := unstructured.NestedSlice(sel, "matchExpressions")
	for _, r := range reqs {
		if !slices.ContainsFunc(exprs, func(e any) bool { return sameRequirement(e, r) }) {
			exprs = append(exprs, r)
		}
	}
	sel["matchExpressions"] = exprs
	hook[field] = sel
}

func sameRequirement(a, b any) bool {
	am, _ := a.(map[string]any)
	bm, _ := b.(map[string]any)
	return fmt.Sprint(am["key"], am["operator"], am["values"]) == fmt.Sprint(bm["key"], bm["operator"], bm["values"])
}

func requirement(key, op string, values []string) map[string]any {
	r := map[string]any{"key": key, "operator": op}
	if len(values) > 0 {
		vs := make([]any, len(values))
		for i, v := range values {
			vs[i] = v
		}
		r["values"] = vs
	}
	return r
}

// requirements are the matchExpressions of a kubectl selector; matchLabels
// become In expressions, so that they are ANDed with the webhook's own
// matchLabels instead of overwriting a key.
func requirements(selector string) []any {
	ls, _ := parseSelector(selector)
	if ls == nil {
		return nil
	}
	var out []any
	keys := make([]string, 0, len(ls.MatchLabels))
	for k := range ls.MatchLabels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		out = append(out, requirement(k, "In", []string{ls.MatchLabels[k]}))
	}
	for _, e := range ls.MatchExpressions {
		out = append(out, requirement(e.Key, string(e.Operator), e.Values))
	}
	return out
}

// parseSelector parses kubectl label selector syntax; "" is no selector.
func parseSelector(s string) (*metav1.LabelSelector, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	return metav1.ParseToLabelSelector(s)
}
