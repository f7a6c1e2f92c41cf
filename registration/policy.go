package registration

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hookback/hookback/field"
)

// Kinds of the admission policies start --policy-enforce applies.
const (
	KindValidatingPolicy        = "ValidatingAdmissionPolicy"
	KindValidatingPolicyBinding = "ValidatingAdmissionPolicyBinding"
	KindMutatingPolicy          = "MutatingAdmissionPolicy"
	KindMutatingPolicyBinding   = "MutatingAdmissionPolicyBinding"
	// AnnotationParams on an enforced policy lists the param objects
	// hookback applied with it (JSON, []ParamRef), so that a later run
	// removes them after a crash without searching every kind.
	AnnotationParams = "hookback.dev/params"
)

// ErrPolicyEnforce marks policies hookback cannot enforce as given.
var ErrPolicyEnforce = errors.New("registration: policy cannot be enforced")

// EnforcedPolicies are the admission policies of start --policy-enforce,
// in the order they are applied: params, policies, bindings (a binding
// never refers to something not yet there). Deletion runs the other way.
type EnforcedPolicies struct {
	Params   []PolicyParam
	Policies []*unstructured.Unstructured
	Bindings []*unstructured.Unstructured
}

// PolicyParam is a param object and the resource it is served as.
type PolicyParam struct {
	Object     *unstructured.Unstructured
	Resource   schema.GroupVersionResource
	Namespaced bool
}

// ParamRef names an applied param object (AnnotationParams).
type ParamRef struct {
	Group     string `json:"group,omitempty"`
	Version   string `json:"version"`
	Resource  string `json:"resource"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

func (p ParamRef) gvr() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: p.Group, Version: p.Version, Resource: p.Resource}
}

// PreparePolicies makes in the session's own copies, changing in place:
// every name suffixed with the session (as webhook configurations'), the
// bindings' policyName and paramRef.name following the renames, hookback's
// labels and Lease annotation on each, and each binding's matchResources
// ANDed with the scope (so it can only narrow). --only-mine, which a
// binding cannot express, becomes a matchCondition of the policy copy.
// A param with no namespace of a namespaced kind is refused: hookback
// would not know where its copy goes.
func PreparePolicies(in *EnforcedPolicies, session, leaseRef string, scope Scope) error {
	if scope.OnlyMine && scope.Username == "" {
		return field.New("registration.Scope.OnlyMine", "", "the username is unknown (the SelfSubjectReview was not made)")
	}
	params, err := prepareParams(in.Params, session, leaseRef)
	if err != nil {
		return err
	}
	policies := map[string]string{} // kind/old name -> new name
	for _, p := range in.Policies {
		old := p.GetName()
		CleanMetadata(p)
		Prepare(p, session, leaseRef)
		policies[p.GetKind()+"/"+old] = p.GetName()
		if err := notePolicyParams(p, in.Params); err != nil {
			return err
		}
		if scope.OnlyMine {
			addOnlyMine(p.Object, scope.Username)
		}
		setScopeAnnotation(p, scope)
	}
	for _, b := range in.Bindings {
		CleanMetadata(b)
		Prepare(b, session, leaseRef)
		policyName, _, _ := unstructured.NestedString(b.Object, "spec", "policyName")
		renamed, ok := policies[policyKindOf(b.GetKind())+"/"+policyName]
		if !ok {
			return fmt.Errorf("%w: %s %q binds policy %q, which is not enforced (it is not in the policy manifests)", ErrPolicyEnforce, b.GetKind(), b.GetName(), policyName)
		}
		_ = unstructured.SetNestedField(b.Object, renamed, "spec", "policyName")
		renameParamRef(b.Object, params)
		narrowBinding(b.Object, scope)
		setScopeAnnotation(b, scope)
	}
	return nil
}

// prepareParams renames and labels the params; the result maps
// "namespace/name" of each original to its copy's name.
func prepareParams(params []PolicyParam, session, leaseRef string) (map[string]string, error) {
	out := map[string]string{}
	for _, p := range params {
		o := p.Object
		if p.Namespaced && o.GetNamespace() == "" {
			return nil, fmt.Errorf("%w: param %s %q has no namespace: give it the namespace its binding's paramRef reads it from", ErrPolicyEnforce, o.GetKind(), o.GetName())
		}
		if !p.Namespaced {
			o.SetNamespace("")
		}
		old := o.GetNamespace() + "/" + o.GetName()
		ns := o.GetNamespace()
		CleanMetadata(o) // also drops the namespace, which a param keeps
		o.SetNamespace(ns)
		Prepare(o, session, leaseRef)
		out[old] = o.GetName()
	}
	return out, nil
}

// notePolicyParams records on p the params of its paramKind.
func notePolicyParams(p *unstructured.Unstructured, params []PolicyParam) error {
	apiVersion, _, _ := unstructured.NestedString(p.Object, "spec", "paramKind", "apiVersion")
	kind, _, _ := unstructured.NestedString(p.Object, "spec", "paramKind", "kind")
	var refs []ParamRef
	for _, q := range params {
		if kind == "" || q.Object.GetAPIVersion() != apiVersion || q.Object.GetKind() != kind {
			continue
		}
		refs = append(refs, ParamRef{Group: q.Resource.Group, Version: q.Resource.Version, Resource: q.Resource.Resource,
			Namespace: q.Object.GetNamespace(), Name: q.Object.GetName()})
	}
	if len(refs) == 0 {
		return nil
	}
	b, err := json.Marshal(refs)
	if err != nil {
		return fmt.Errorf("record the params of %s %q: %w", p.GetKind(), p.GetName(), err)
	}
	setAnnotation(p, AnnotationParams, string(b))
	return nil
}

// renameParamRef points a binding's paramRef.name at the copy of a param
// the files held; a param read from the cluster keeps its name (hookback
// only reads it).
func renameParamRef(b map[string]any, params map[string]string) {
	name, _, _ := unstructured.NestedString(b, "spec", "paramRef", "name")
	if name == "" {
		return
	}
	ns, _, _ := unstructured.NestedString(b, "spec", "paramRef", "namespace")
	for old, renamed := range params {
		ons, oname, _ := strings.Cut(old, "/")
		if oname == name && (ns == "" || ns == ons) {
			_ = unstructured.SetNestedField(b, renamed, "spec", "paramRef", "name")
			return
		}
	}
}

// clusterScoped is the rule that excludes every cluster-scoped resource:
// a namespace scope cannot narrow them (a policy's namespaceSelector never
// skips a cluster-scoped object other than a Namespace).
func clusterScoped() map[string]any {
	return map[string]any{"apiGroups": []any{"*"}, "apiVersions": []any{"*"}, "operations": []any{"*"},
		"resources": []any{"*/*"}, "scope": "Cluster"}
}

// narrowBinding ANDs the scope into a binding's matchResources: selectors
// gain the scope's requirements, and under a namespace scope every
// cluster-scoped resource is excluded.
func narrowBinding(b map[string]any, scope Scope) {
	mr, _, _ := unstructured.NestedMap(b, "spec", "matchResources")
	if mr == nil {
		mr = map[string]any{}
	}
	var nsReqs []any
	if len(scope.Namespaces) > 0 {
		nsReqs = append(nsReqs, requirement(LabelNamespaceName, "In", scope.Namespaces))
	}
	nsReqs = append(nsReqs, requirements(scope.NamespaceSelector)...)
	andSelector(mr, "namespaceSelector", nsReqs)
	andSelector(mr, "objectSelector", requirements(scope.ObjectSelector))
	if scope.namespaced() {
		ex, _, _ := unstructured.NestedSlice(mr, "excludeResourceRules")
		if !slices.ContainsFunc(ex, func(r any) bool {
			m, _ := r.(map[string]any)
			return m["scope"] == "Cluster" && fmt.Sprint(m["resources"]) == "[*/*]"
		}) {
			ex = append(ex, clusterScoped())
		}
		mr["excludeResourceRules"] = ex
	}
	_ = unstructured.SetNestedMap(b, mr, "spec", "matchResources")
}

// addOnlyMine adds --only-mine's matchCondition to a policy copy.
func addOnlyMine(p map[string]any, username string) {
	conds, _, _ := unstructured.NestedSlice(p, "spec", "matchConditions")
	conds = slices.DeleteFunc(conds, func(c any) bool {
		m, _ := c.(map[string]any)
		return m["name"] == OnlyMineCondition
	})
	conds = append(conds, map[string]any{"name": OnlyMineCondition,
		"expression": "request.userInfo.username == " + strconv.Quote(username)})
	_ = unstructured.SetNestedSlice(p, conds, "spec", "matchConditions")
}

func setScopeAnnotation(o *unstructured.Unstructured, scope Scope) {
	if scope.Narrowed() {
		setAnnotation(o, AnnotationScope, scope.String())
	}
}

func setAnnotation(o *unstructured.Unstructured, key, value string) {
	ann := o.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[key] = value
	o.SetAnnotations(ann)
}

// policyKindOf is the policy kind a binding kind binds.
func policyKindOf(bindingKind string) string {
	if bindingKind == KindMutatingPolicyBinding {
		return KindMutatingPolicy
	}
	return KindValidatingPolicy
}
