package e2e

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// keeperName names the policy and binding that keep the apiserver's
// ConfigMap param informer alive for the whole run.
const keeperName = "e2e-keep-configmap-params"

// keepParamInformers binds a policy of paramKind v1/ConfigMap that matches
// nothing, for as long as the tests run. kube-apiserver 1.36 stops the
// informer of a built-in paramKind for good once no binding uses that kind
// (kubernetes/kubernetes#130887): after the first test that removes the last
// ConfigMap-param binding (TestPolicyEnforce at exit, TestPolicyFidelity's
// params table at its cleanup) and the apiserver's 1 s policy refresh saw
// none, every later one is denied with "no params found" until the
// apiserver restarts: TestPolicyEnforce's second session was, for a whole
// minute, before this keeper. A plausible cause of TestPolicyFidelity's
// params case timing out once in CI (run alone with -count=3 here it
// passed with and without the keeper: its runs follow each other within
// the refresh). It is not labelled as hookback's: no cleanup under test
// removes it.
func keepParamInformers(ctx context.Context, cs kubernetes.Interface) (func(), error) {
	a := cs.AdmissionregistrationV1()
	_, err := a.ValidatingAdmissionPolicies().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: keeperName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			ParamKind: &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"},
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{"e2e.hookback.dev"}, APIVersions: []string{"v1"}, Resources: []string{"nothing"}}},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "true"}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create the param keeper policy: %w", err)
	}
	allow := admissionregistrationv1.AllowAction
	_, err = a.ValidatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: keeperName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: keeperName, ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			ParamRef: &admissionregistrationv1.ParamRef{Selector: &metav1.LabelSelector{}, ParameterNotFoundAction: &allow},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create the param keeper binding: %w", err)
	}
	return func() {
		ctx := context.Background()
		_ = a.ValidatingAdmissionPolicyBindings().Delete(ctx, keeperName, metav1.DeleteOptions{})
		_ = a.ValidatingAdmissionPolicies().Delete(ctx, keeperName, metav1.DeleteOptions{})
	}, nil
}
