package controller

import (
	"context"
	"log/slog"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestCleanup(t *testing.T) {
	managed := map[string]string{"app.kubernetes.io/managed-by": "hookback"}
	tests := []struct {
		name       string
		labels     map[string]string
		selected   []string
		wantExists bool
	}{
		{name: "managed objects are deleted", labels: managed, selected: []string{"all"}},
		{name: "someone else's objects stay", labels: map[string]string{"owner": "ops"}, selected: []string{"all"}, wantExists: true},
		{name: "exec-rbac not selected: nothing deleted", labels: managed, selected: []string{"pod-name-label"}, wantExists: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			meta := metav1.ObjectMeta{Name: ExecRBACObjectName, Labels: tc.labels, UID: "u1"}
			cs := fake.NewClientset(&rbacv1.ClusterRole{ObjectMeta: meta}, &rbacv1.ClusterRoleBinding{ObjectMeta: meta})
			if err := Cleanup(context.Background(), cs, tc.selected, managed, slog.New(slog.DiscardHandler)); err != nil {
				t.Fatal(err)
			}
			_, errRole := cs.RbacV1().ClusterRoles().Get(context.Background(), ExecRBACObjectName, metav1.GetOptions{})
			_, errBinding := cs.RbacV1().ClusterRoleBindings().Get(context.Background(), ExecRBACObjectName, metav1.GetOptions{})
			if (errRole == nil) != tc.wantExists || (errBinding == nil) != tc.wantExists {
				t.Errorf("role err %v, binding err %v; want exists=%v", errRole, errBinding, tc.wantExists)
			}
		})
	}
}
