package policy

import (
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestLoadRefuses(t *testing.T) {
	tests := []struct {
		name, manifest string
		want           []string
	}{
		{"an older API version names the version", `apiVersion: admissionregistration.k8s.io/v1beta1
kind: ValidatingAdmissionPolicy
metadata: {name: old}
spec: {}`, []string{`ValidatingAdmissionPolicy "old" is admissionregistration.k8s.io/v1beta1`, "admissionregistration.k8s.io/v1 only", "<stdin> document 1"}},
		{"a binding whose policy is missing", `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: a}
spec: {}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: b}
spec: {policyName: nope}`, []string{`ValidatingAdmissionPolicyBinding "b" binds policy "nope"`}},
		{"no policy at all", `apiVersion: v1
kind: ConfigMap
metadata: {name: c}`, []string{"no ValidatingAdmissionPolicy or MutatingAdmissionPolicy"}},
		{"an unknown field", `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: m}
spec: {mutationz: []}`, []string{`MutatingAdmissionPolicy "m"`, "mutationz"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load([]string{"-"}, strings.NewReader(tt.manifest))
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, ErrPolicy) {
				t.Errorf("error %v is not ErrPolicy", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestCheckServed(t *testing.T) {
	set, err := Load([]string{"testdata/mutating/policy.yaml"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := set.CheckServed([]string{"v1"}, []string{"mutatingadmissionpolicies", "mutatingadmissionpolicybindings"}); err != nil {
		t.Errorf("served: %v", err)
	}
	err = set.CheckServed([]string{"v1", "v1beta1"}, []string{"validatingadmissionpolicies", "validatingadmissionpolicybindings"})
	if err == nil || !strings.Contains(err.Error(), "mutatingadmissionpolicies, mutatingadmissionpolicybindings at admissionregistration.k8s.io/v1") || !strings.Contains(err.Error(), "versions: v1, v1beta1") {
		t.Errorf("not served: %v", err)
	}
}

func TestUnbound(t *testing.T) {
	set, err := Load([]string{"-"}, strings.NewReader(`apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: lonely}
spec: {}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := set.Unbound(); len(got) != 1 || got[0] != "ValidatingAdmissionPolicy/lonely" {
		t.Errorf("unbound %q", got)
	}
}

func TestCheckCluster(t *testing.T) {
	set, err := Load([]string{"testdata/basic/policy.yaml"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs := fake.NewClientset()
	cs.Resources = []*metav1.APIResourceList{{GroupVersion: "admissionregistration.k8s.io/v1beta1", APIResources: []metav1.APIResource{{Name: "validatingadmissionpolicies"}}}}
	err = set.CheckCluster(cs.Discovery())
	if err == nil || !strings.Contains(err.Error(), "versions: v1beta1") {
		t.Errorf("a cluster serving v1beta1 only: %v", err)
	}
	cs.Resources = []*metav1.APIResourceList{{GroupVersion: "admissionregistration.k8s.io/v1", APIResources: []metav1.APIResource{{Name: "validatingadmissionpolicies"}, {Name: "validatingadmissionpolicybindings"}}}}
	if err := set.CheckCluster(cs.Discovery()); err != nil {
		t.Errorf("a cluster serving v1: %v", err)
	}
}
