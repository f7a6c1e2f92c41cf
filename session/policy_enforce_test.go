package session

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/hookback/hookback/plan"
	"github.com/hookback/hookback/registration"
)

func discoveryServing(groups ...*metav1.APIResourceList) *fake.Clientset {
	cs := fake.NewClientset()
	cs.Resources = groups
	return cs
}

var (
	policiesV1 = &metav1.APIResourceList{GroupVersion: "admissionregistration.k8s.io/v1", APIResources: []metav1.APIResource{
		{Name: "validatingadmissionpolicies", Kind: "ValidatingAdmissionPolicy"}, {Name: "validatingadmissionpolicybindings", Kind: "ValidatingAdmissionPolicyBinding"},
	}}
	policiesV1beta1 = &metav1.APIResourceList{GroupVersion: "admissionregistration.k8s.io/v1beta1", APIResources: []metav1.APIResource{
		{Name: "validatingadmissionpolicies", Kind: "ValidatingAdmissionPolicy"},
	}}
	coreV1 = &metav1.APIResourceList{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Verbs: metav1.Verbs{"get", "list", "create"}},
	}}
)

func TestLoadEnforced(t *testing.T) {
	in := plan.PolicyEnforce{Enabled: true, Input: plan.PolicyInput{Paths: []string{"../policy/testdata/params/policy.yaml"}}}
	tests := []struct {
		name    string
		cluster *fake.Clientset
		wantErr string
	}{
		{name: "a cluster that serves the policies at v1beta1 only is named with its versions", cluster: discoveryServing(policiesV1beta1, coreV1),
			wantErr: "its admissionregistration.k8s.io versions: v1beta1"},
		{name: "a param whose kind the cluster does not serve", cluster: discoveryServing(policiesV1),
			wantErr: `param ConfigMap "limits": the cluster does not serve its kind`},
		{name: "served: the session's copies", cluster: discoveryServing(policiesV1, coreV1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := loadEnforced(in, tt.cluster.Discovery(), "s1", "default/hookback-s1", registration.Scope{Namespaces: []string{"team-a"}})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), "plan.PolicyEnforce.Enabled: ") {
					t.Fatalf("error %v, want one naming the field and %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Policies) != 1 || got.Policies[0].GetName() != "replica-limit-s1" {
				t.Fatalf("policies %v", got.Policies)
			}
			if len(got.Bindings) != 1 || got.Bindings[0].GetName() != "replica-limit-team-a-s1" {
				t.Fatalf("bindings %v", got.Bindings)
			}
			if len(got.Params) != 1 || got.Params[0].Resource.Resource != "configmaps" || !got.Params[0].Namespaced ||
				got.Params[0].Object.GetName() != "limits-s1" || got.Params[0].Object.GetNamespace() != "team-a" {
				t.Fatalf("params %+v", got.Params)
			}
		})
	}
}

func TestBuiltinParamKinds(t *testing.T) {
	tests := []struct {
		name       string
		apiVersion string
		want       string
	}{
		{name: "core ConfigMap", apiVersion: "v1", want: "v1/ConfigMap"},
		{name: "a k8s.io group", apiVersion: "rbac.authorization.k8s.io/v1", want: "rbac.authorization.k8s.io/v1/ConfigMap"},
		{name: "a dotless group", apiVersion: "apps/v1", want: "apps/v1/ConfigMap"},
		{name: "a custom resource's group is not built in", apiVersion: "example.com/v1", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"paramKind": map[string]any{"apiVersion": tt.apiVersion, "kind": "ConfigMap"}}}}
			if got := strings.Join(builtinParamKinds([]*unstructured.Unstructured{p}), ","); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}
