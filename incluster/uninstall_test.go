package incluster

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestUninstallTakesOnlyItsOwn checks which cluster-scoped objects with
// the install's labels uninstall --namespace hb deletes: another
// namespace's install keeps its own.
func TestUninstallTakesOnlyItsOwn(t *testing.T) {
	obj := func(kind, name string, fields map[string]any) *unstructured.Unstructured {
		o := &unstructured.Unstructured{Object: fields}
		o.SetKind(kind)
		o.SetName(name)
		return o
	}
	hook := func(ns string) map[string]any {
		return map[string]any{"webhooks": []any{map[string]any{"clientConfig": map[string]any{"service": map[string]any{"namespace": ns}}}}}
	}
	binding := func(ns, role string) map[string]any {
		return map[string]any{"subjects": []any{map[string]any{"kind": "ServiceAccount", "namespace": ns, "name": "hookback"}},
			"roleRef": map[string]any{"name": role}}
	}
	u := &uninstaller{ns: "hb"}
	tests := []struct {
		name string
		obj  *unstructured.Unstructured
		want bool
	}{
		{"its configuration", obj("ValidatingWebhookConfiguration", "hookback-validating", hook("hb")), true},
		{"another install's configuration", obj("ValidatingWebhookConfiguration", "other", hook("other")), false},
		{"a url configuration", obj("MutatingWebhookConfiguration", "x", map[string]any{"webhooks": []any{map[string]any{
			"clientConfig": map[string]any{"url": "https://192.0.2.1"}}}}), false},
		{"another install's binding", obj("ClusterRoleBinding", "other", binding("other", "other-role")), false},
		{"its binding", obj("ClusterRoleBinding", "hookback", binding("hb", "hookback")), true},
		// After its binding: the role is the one that binding granted.
		{"its role", obj("ClusterRole", "hookback", map[string]any{}), true},
		{"another role", obj("ClusterRole", "other-role", map[string]any{}), false},
		{"its namespace", obj("Namespace", "hb", map[string]any{}), true},
		{"another namespace", obj("Namespace", "other", map[string]any{}), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := u.belongs(tt.obj); got != tt.want {
				t.Errorf("belongs = %v, want %v", got, tt.want)
			}
		})
	}
}
