package audit

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var served = []APIResource{
	{GVR: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Kind: schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, Namespaced: true, Listable: true, Preferred: true},
	{GVR: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Kind: schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, Subresource: "status", Namespaced: true, Listable: true, Preferred: true},
	{GVR: schema.GroupVersionResource{Version: "v1", Resource: "nodes"}, Kind: schema.GroupVersionKind{Version: "v1", Kind: "Node"}, Listable: true, Preferred: true},
	{GVR: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, Kind: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, Namespaced: true, Listable: true, Preferred: true},
	{GVR: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}, Kind: schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}, Namespaced: true, Listable: true},
	{GVR: schema.GroupVersionResource{Group: "example.com", Version: "v2", Resource: "widgets"}, Kind: schema.GroupVersionKind{Group: "example.com", Version: "v2", Kind: "Widget"}, Namespaced: true, Listable: true, Preferred: true},
	{GVR: schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}, Listable: true, Preferred: true},
	{GVR: schema.GroupVersionResource{Group: "authorization.k8s.io", Version: "v1", Resource: "selfsubjectaccessreviews"}, Preferred: true},
}

func rule(groups, versions, resources []string, ops ...admissionregistrationv1.OperationType) admissionregistrationv1.RuleWithOperations {
	return admissionregistrationv1.RuleWithOperations{Operations: ops,
		Rule: admissionregistrationv1.Rule{APIGroups: groups, APIVersions: versions, Resources: resources}}
}

func TestTargets(t *testing.T) {
	all := []string{"*"}
	create, update := admissionregistrationv1.Create, admissionregistrationv1.Update
	cluster := admissionregistrationv1.ClusterScope
	clusterRule := rule(all, all, all, create)
	clusterRule.Scope = &cluster
	tests := []struct {
		name   string
		rules  []admissionregistrationv1.RuleWithOperations
		forced admissionregistrationv1.OperationType
		want   []string
	}{
		{"pods CREATE", []admissionregistrationv1.RuleWithOperations{rule([]string{""}, []string{"v1"}, []string{"pods"}, create, update)}, "", []string{"v1/pods/ CREATE"}},
		{"UPDATE only", []admissionregistrationv1.RuleWithOperations{rule([]string{""}, []string{"v1"}, []string{"pods"}, update)}, "", []string{"v1/pods/ UPDATE"}},
		{"operation forced", []admissionregistrationv1.RuleWithOperations{rule([]string{""}, []string{"v1"}, []string{"pods"}, create, update)}, update, []string{"v1/pods/ UPDATE"}},
		{"forced operation the rule lacks", []admissionregistrationv1.RuleWithOperations{rule([]string{""}, []string{"v1"}, []string{"pods"}, create)}, update, nil},
		{"DELETE only", []admissionregistrationv1.RuleWithOperations{rule([]string{""}, []string{"v1"}, []string{"pods"}, admissionregistrationv1.Delete)}, "", nil},
		{"status subresource", []admissionregistrationv1.RuleWithOperations{rule([]string{""}, []string{"v1"}, []string{"pods/status"}, update)}, "", []string{"v1/pods/status UPDATE"}},
		{"pods/* takes subresources only", []admissionregistrationv1.RuleWithOperations{rule([]string{""}, []string{"v1"}, []string{"pods/*"}, update)}, "", []string{"v1/pods/status UPDATE"}},
		{"unlistable subresource", []admissionregistrationv1.RuleWithOperations{rule([]string{""}, []string{"v1"}, []string{"pods/eviction"}, create)}, "", nil},
		{"preferred version wins", []admissionregistrationv1.RuleWithOperations{rule([]string{"example.com"}, all, []string{"widgets"}, create)}, "", []string{"example.com/v2/widgets/ CREATE"}},
		{"named version kept", []admissionregistrationv1.RuleWithOperations{rule([]string{"example.com"}, []string{"v1"}, []string{"widgets"}, create)}, "", []string{"example.com/v1/widgets/ CREATE"}},
		{"cluster scope, never webhook configurations", []admissionregistrationv1.RuleWithOperations{clusterRule}, "", []string{"v1/nodes/ CREATE"}},
		{"wildcards skip reviews and webhook configurations", []admissionregistrationv1.RuleWithOperations{rule(all, all, []string{"*"}, create)},
			"", []string{"v1/pods/ CREATE", "v1/nodes/ CREATE", "apps/v1/deployments/ CREATE", "example.com/v2/widgets/ CREATE"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, tg := range Targets(tt.rules, served, tt.forced) {
				got = append(got, tg.GVR.GroupVersion().String()+"/"+tg.GVR.Resource+"/"+tg.Subresource+" "+string(tg.Operation))
			}
			if len(got) != len(tt.want) {
				t.Fatalf("targets %q, want %q", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("targets %q, want %q", got, tt.want)
				}
			}
		})
	}
}
