package e2e

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// TestLintPolicyBindings: unbound-policy and validation-actions on the
// apiserver. A Fail policy that rejects ConfigMaps named "banned" in the
// test's namespace: without a binding it never runs (the ConfigMap is
// admitted) and lint --cluster finds it unbound; bound with
// validationActions [Warn] nothing is rejected either and lint finds the
// missing Deny; with each fix (the binding lint advises, then lint's patch)
// the ConfigMap is rejected by the policy, and another one still admitted.
func TestLintPolicyBindings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t)
	name := "e2e-lint-bindings-" + ns
	fail := admissionregistrationv1.Fail
	reg := env.client.AdmissionregistrationV1()
	// Not labelled as hookback's: a hookback starting beside this test
	// would take them for a stale session's policies and delete them.
	pol := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{NamespaceSelector: onlyNamespace(ns),
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: rulesFor("", "configmaps")[0]}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "object.metadata.name != 'banned'"}}}}
	if _, err := reg.ValidatingAdmissionPolicies().Create(ctx, pol, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = reg.ValidatingAdmissionPolicies().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	rejected := func(ctx context.Context, cm string) (bool, error) {
		_, err := env.client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: cm}},
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil && !strings.Contains(err.Error(), name) {
			return false, err
		}
		return err != nil, nil
	}

	if f := findingOf(lintCluster(t, name), "unbound-policy"); f == nil {
		t.Fatalf("lint --cluster did not find the policy without a binding")
	}
	if r, err := rejected(ctx, "banned"); err != nil || r {
		t.Fatalf("unbound: the ConfigMap rejected %v (%v), want admitted: the policy never runs", r, err)
	}
	// The rule's fix (advice): a binding; here one that only warns.
	bind := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn}}}
	if _, err := reg.ValidatingAdmissionPolicyBindings().Create(ctx, bind, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = reg.ValidatingAdmissionPolicyBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	fs := lintCluster(t, name)
	if g := findingOf(fs, "unbound-policy"); g != nil {
		t.Errorf("bound, lint still finds unbound-policy: %s", g.Message)
	}
	f := findingOf(fs, "validation-actions")
	if f == nil || len(f.Fix) == 0 {
		t.Fatalf("lint --cluster did not find the binding without Deny: %+v", fs)
	}
	// The binding reaches the apiserver's informer shortly: its warning
	// shows the policy runs, and admits.
	dyn, warnings := warningClient(t)
	cms := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	eventually(t, "the banned ConfigMap admitted with the policy's warning (Warn, no Deny)", func(ctx context.Context) (bool, error) {
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "banned"}}}
		if _, err := dyn.Resource(cms).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			return false, err
		}
		return slices.ContainsFunc(warnings.take(), func(w string) bool { return strings.Contains(w, name) }), nil
	})
	p, err := json.Marshal(f.Fix)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.ValidatingAdmissionPolicyBindings().Patch(ctx, name, types.JSONPatchType, p, metav1.PatchOptions{}); err != nil {
		t.Fatalf("apply lint's fix %s: %v", p, err)
	}
	if g := findingOf(lintCluster(t, name), "validation-actions"); g != nil {
		t.Errorf("after lint's fix, still: %s", g.Message)
	}
	eventually(t, "the banned ConfigMap rejected by the policy once the binding denies", func(ctx context.Context) (bool, error) {
		return rejected(ctx, "banned")
	})
	if r, err := rejected(ctx, "fine"); err != nil || r {
		t.Errorf("another ConfigMap: rejected %v (%v), want admitted", r, err)
	}
}
