package controllers

import (
	"context"
	"log/slog"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
)

func TestCleanup(t *testing.T) {
	other := map[string]string{"owner": "ops"}
	role := func(labels map[string]string) *rbacv1.ClusterRole {
		return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: ExecRBACObjectName, Labels: labels, UID: "r"}}
	}
	binding := func(ns string, labels map[string]string) *rbacv1.RoleBinding {
		b := ourBinding(ns)
		b.Labels = labels
		return b
	}
	// Another RoleBinding in a namespace hookback uses: never looked at.
	unrelated := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "view", Namespace: "a", Labels: managedBy}}
	tests := []struct {
		name     string
		objs     []runtime.Object
		selected []string
		// remain lists what exists afterwards, as "kind[ namespace]".
		remain []string
	}{
		{
			name: "managed objects are deleted, bindings in every namespace and the legacy binding too",
			objs: []runtime.Object{role(managedBy), binding("a", managedBy), binding("b", managedBy),
				legacyBinding(managedBy), unrelated},
			selected: Names(),
			remain:   []string{"RoleBinding a view"},
		},
		{
			name:     "someone else's objects stay",
			objs:     []runtime.Object{role(other), binding("a", other), legacyBinding(other)},
			selected: Names(),
			remain:   []string{"ClusterRole", "RoleBinding a", "ClusterRoleBinding"},
		},
		{
			name:     "only hookback's binding goes, another namespace's foreign one stays",
			objs:     []runtime.Object{role(managedBy), binding("a", managedBy), binding("b", nil)},
			selected: []string{"exec-rbac"},
			remain:   []string{"RoleBinding b"},
		},
		{
			name:     "exec-rbac not selected: nothing deleted",
			objs:     []runtime.Object{role(managedBy), binding("a", managedBy)},
			selected: []string{"pod-name-label"},
			remain:   []string{"ClusterRole", "RoleBinding a"},
		},
		{name: "nothing there: no error", selected: Names()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cs := fake.NewClientset(tc.objs...)
			ctx := context.Background()
			if err := Cleanup(ctx, cs, tc.selected, managedBy, slog.New(slog.DiscardHandler)); err != nil {
				t.Fatal(err)
			}
			exists := func(err error) bool {
				if err != nil && !apierrors.IsNotFound(err) {
					t.Fatal(err)
				}
				return err == nil
			}
			var remain []string
			if _, err := cs.RbacV1().ClusterRoles().Get(ctx, ExecRBACObjectName, metav1.GetOptions{}); exists(err) {
				remain = append(remain, "ClusterRole")
			}
			list, err := cs.RbacV1().RoleBindings("").List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range list.Items {
				s := "RoleBinding " + b.Namespace
				if b.Name != ExecRBACObjectName {
					s += " " + b.Name
				}
				remain = append(remain, s)
			}
			if _, err := cs.RbacV1().ClusterRoleBindings().Get(ctx, ExecRBACObjectName, metav1.GetOptions{}); exists(err) {
				remain = append(remain, "ClusterRoleBinding")
			}
			if len(remain) != len(tc.remain) {
				t.Fatalf("remaining %q, want %q", remain, tc.remain)
			}
			for i := range remain {
				if remain[i] != tc.remain[i] {
					t.Errorf("remaining %q, want %q", remain, tc.remain)
					break
				}
			}
		})
	}
}
