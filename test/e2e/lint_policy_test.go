package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hookback/hookback/lint"
)

// TestLintClusterPolicy: lint --cluster reads the cluster's
// ValidatingAdmissionPolicies and bindings. A policy that reads params,
// failurePolicy Fail, bound with Deny everywhere and without a paramRef:
// lint predicts that its expressions fail (policy-params) and that the
// control plane's namespaces are behind it (control-plane-namespaces). On
// the apiserver a LimitRange create (dry run; no test and no component
// writes LimitRanges) is rejected in kube-system and in the test's
// namespace; with lint's fix for the binding applied, kube-system's is
// admitted while the test namespace's is still rejected: the policy still
// runs, only the control plane is out of it.
func TestLintClusterPolicy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t)
	name := "e2e-lint-policy-" + ns
	fail := admissionregistrationv1.Fail
	reg := env.client.AdmissionregistrationV1()
	// Not labelled as hookback's: a hookback starting beside this test
	// would take them for a stale session's policies and delete them.
	pol := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{FailurePolicy: &fail,
			ParamKind: &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"},
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"limitranges"}}}}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "object.metadata.name != params.data.banned"}}}}
	if _, err := reg.ValidatingAdmissionPolicies().Create(ctx, pol, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = reg.ValidatingAdmissionPolicies().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	bind := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}}}
	if _, err := reg.ValidatingAdmissionPolicyBindings().Create(ctx, bind, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = reg.ValidatingAdmissionPolicyBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
	})

	fs := lintCluster(t, name)
	if f := findingOf(fs, "policy-params"); f == nil || f.Severity != lint.Error {
		t.Errorf("lint --cluster did not predict the params failure: %+v", fs)
	}
	f := findingOf(fs, "control-plane-namespaces")
	if f == nil || f.Object != "ValidatingAdmissionPolicyBinding/"+name || !strings.Contains(f.Message, "kube-system") {
		t.Fatalf("lint --cluster did not find the control plane behind the policy: %+v", fs)
	}
	rejected := func(ctx context.Context, in string) (bool, error) {
		lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-lint-"}}
		_, err := env.client.CoreV1().LimitRanges(in).Create(ctx, lr, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil && !strings.Contains(err.Error(), name) {
			return false, err
		}
		return err != nil, nil
	}
	// The policy reaches the apiserver's informer shortly.
	eventually(t, "a LimitRange in kube-system rejected by the policy", func(ctx context.Context) (bool, error) { return rejected(ctx, "kube-system") })
	p, err := json.Marshal(f.Fix)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.ValidatingAdmissionPolicyBindings().Patch(ctx, name, types.JSONPatchType, p, metav1.PatchOptions{}); err != nil {
		t.Fatalf("apply lint's fix %s: %v", p, err)
	}
	if g := findingOf(lintCluster(t, name), "control-plane-namespaces"); g != nil {
		t.Errorf("after lint's fix, still: %+v", g)
	}
	eventually(t, "a LimitRange in kube-system admitted once the fix is applied", func(ctx context.Context) (bool, error) {
		r, err := rejected(ctx, "kube-system")
		return !r, err
	})
	if r, err := rejected(ctx, ns); err != nil || !r {
		t.Errorf("a LimitRange in %s: rejected %v (%v), want still rejected by the policy", ns, r, err)
	}
}
