package policy

import (
	"fmt"
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Manifests are a Set's objects as start --policy-enforce applies them:
// copies, as unstructured objects, that the caller renames, narrows and
// labels (registration.PreparePolicies). They are the objects as read, with
// the defaults the apiserver would give them (Load's).
type Manifests struct {
	// Policies are the ValidatingAdmissionPolicies and
	// MutatingAdmissionPolicies that have a binding: one without is never
	// evaluated, so enforcing it would only leave an object behind.
	Policies []*unstructured.Unstructured
	// Bindings are every binding of the set.
	Bindings []*unstructured.Unstructured
	// Params are the objects of the set whose apiVersion and kind are a
	// bound policy's paramKind.
	Params []*unstructured.Unstructured
}

// Manifests returns the set's bound policies, bindings and params as
// unstructured copies: the set is not changed.
func (s *Set) Manifests() (*Manifests, error) {
	m := &Manifests{}
	unbound := s.Unbound()
	var kinds []admissionregistrationv1.ParamKind
	add := func(kind string, obj runtime.Object, into *[]*unstructured.Unstructured) error {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return fmt.Errorf("%s: %w", kind, err)
		}
		o := &unstructured.Unstructured{Object: u}
		o.SetGroupVersionKind(gvkOf(kind))
		unstructured.RemoveNestedField(o.Object, "status")
		unstructured.RemoveNestedField(o.Object, "metadata", "creationTimestamp")
		*into = append(*into, o)
		return nil
	}
	for _, p := range s.Validating {
		if slices.Contains(unbound, KindValidating+"/"+p.Name) {
			continue
		}
		if p.Spec.ParamKind != nil {
			kinds = append(kinds, *p.Spec.ParamKind)
		}
		if err := add(KindValidating, p, &m.Policies); err != nil {
			return nil, err
		}
	}
	for _, p := range s.Mutating {
		if slices.Contains(unbound, KindMutating+"/"+p.Name) {
			continue
		}
		if p.Spec.ParamKind != nil {
			kinds = append(kinds, *p.Spec.ParamKind)
		}
		if err := add(KindMutating, p, &m.Policies); err != nil {
			return nil, err
		}
	}
	for _, b := range s.ValidatingBinding {
		if err := add(KindValidatingBinding, b, &m.Bindings); err != nil {
			return nil, err
		}
	}
	for _, b := range s.MutatingBinding {
		if err := add(KindMutatingBinding, b, &m.Bindings); err != nil {
			return nil, err
		}
	}
	for _, o := range s.Objects {
		if slices.ContainsFunc(kinds, func(k admissionregistrationv1.ParamKind) bool {
			return k.APIVersion == o.GetAPIVersion() && k.Kind == o.GetKind()
		}) {
			m.Params = append(m.Params, o.DeepCopy())
		}
	}
	return m, nil
}
