package incluster

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/scheme"
)

// TestUninstallTakesOnlyItsOwn checks which cluster-scoped objects with
// the install's labels uninstall --install-namespace hb deletes: another
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

// TestUninstallOccupant: the namespace goes only when nothing but the
// install's objects and what every namespace gets on its own is left in it.
func TestUninstallOccupant(t *testing.T) {
	ours := func(o metav1.Object) runtime.Object {
		o.SetLabels(Labels())
		return o.(runtime.Object)
	}
	tests := []struct {
		name string
		objs []runtime.Object
		want string
	}{
		{name: "empty", want: ""},
		{name: "only what every namespace has", objs: []runtime.Object{
			&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "hb"}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt", Namespace: "hb"}}}, want: ""},
		{name: "the install's pod, still terminating", objs: []runtime.Object{
			ours(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "hookback-x", Namespace: "hb"}})}, want: ""},
		{name: "someone's Deployment", objs: []runtime.Object{
			&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "hb"}}}, want: "Deployment/api"},
		{name: "someone's ConfigMap", objs: []runtime.Object{
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "hb"}}}, want: "ConfigMap/settings"},
		{name: "someone's Secret", objs: []runtime.Object{
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "hb"}}}, want: "Secret/db"},
		{name: "in another namespace: not this one's", objs: []runtime.Object{
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "other"}}}, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := &uninstaller{dyn: dynamicfake.NewSimpleDynamicClient(scheme.Scheme, tt.objs...), ns: "hb"}
			if got := u.occupant(context.Background()); got != tt.want {
				t.Errorf("occupant = %q, want %q", got, tt.want)
			}
		})
	}
}
