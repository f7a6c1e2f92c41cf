package policy

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// defaultObject applies the defaults the apiserver gives a policy or a
// binding when it is created (k8s.io/kubernetes
// pkg/apis/admissionregistration/v1 defaults), so that a policy read from
// a file is evaluated as the same policy stored in a cluster would be: the
// dispatchers refuse nil selectors, and an unset failurePolicy is Fail.
func defaultObject(o runtime.Object) {
	switch o := o.(type) {
	case *admissionregistrationv1.ValidatingAdmissionPolicy:
		if o.Spec.FailurePolicy == nil {
			fail := admissionregistrationv1.Fail
			o.Spec.FailurePolicy = &fail
		}
		defaultMatchResources(o.Spec.MatchConstraints)
	case *admissionregistrationv1.MutatingAdmissionPolicy:
		if o.Spec.FailurePolicy == nil {
			fail := admissionregistrationv1.Fail
			o.Spec.FailurePolicy = &fail
		}
		if o.Spec.ReinvocationPolicy == "" {
			o.Spec.ReinvocationPolicy = admissionregistrationv1.NeverReinvocationPolicy
		}
		defaultMatchResources(o.Spec.MatchConstraints)
	case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
		defaultMatchResources(o.Spec.MatchResources)
	case *admissionregistrationv1.MutatingAdmissionPolicyBinding:
		defaultMatchResources(o.Spec.MatchResources)
	}
}

func defaultMatchResources(m *admissionregistrationv1.MatchResources) {
	if m == nil {
		return
	}
	if m.MatchPolicy == nil {
		eq := admissionregistrationv1.Equivalent
		m.MatchPolicy = &eq
	}
	if m.NamespaceSelector == nil {
		m.NamespaceSelector = &metav1.LabelSelector{}
	}
	if m.ObjectSelector == nil {
		m.ObjectSelector = &metav1.LabelSelector{}
	}
	for _, rules := range [][]admissionregistrationv1.NamedRuleWithOperations{m.ResourceRules, m.ExcludeResourceRules} {
		for i := range rules {
			if rules[i].Scope == nil {
				all := admissionregistrationv1.AllScopes
				rules[i].Scope = &all
			}
		}
	}
}
