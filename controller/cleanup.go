package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Cleanup deletes what the selected controllers created in the cluster: the
// exec-rbac ClusterRoleBinding and ClusterRole, but only while they carry
// the managed-by labels, so an object someone else owns is never deleted.
// hookback runs it after deregistering its webhooks.
func Cleanup(ctx context.Context, cs kubernetes.Interface, selected []string, managedBy map[string]string, log *slog.Logger) error {
	want, err := selectControllers(selected)
	if err != nil || !want[ExecRBACName] {
		return err
	}
	if len(managedBy) == 0 {
		return errors.New("controller cleanup: no managed-by labels to recognise hookback's objects by")
	}
	rbac := cs.RbacV1()
	var errs []error
	del := func(kind string, get func() (metav1.Object, error), remove func(metav1.DeleteOptions) error) {
		obj, err := get()
		if apierrors.IsNotFound(err) {
			return
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("get %s %s: %w", kind, ExecRBACObjectName, err))
			return
		}
		if !hasLabels(obj.GetLabels(), managedBy) {
			log.Info("leaving object not managed by hookback", "kind", kind, "name", ExecRBACObjectName)
			return
		}
		uid := obj.GetUID()
		err = remove(metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete %s %s: %w", kind, ExecRBACObjectName, err))
			return
		}
		log.Info("deleted", "kind", kind, "name", ExecRBACObjectName)
	}
	del("ClusterRoleBinding", func() (metav1.Object, error) {
		return rbac.ClusterRoleBindings().Get(ctx, ExecRBACObjectName, metav1.GetOptions{})
	}, func(o metav1.DeleteOptions) error {
		return rbac.ClusterRoleBindings().Delete(ctx, ExecRBACObjectName, o)
	})
	del("ClusterRole", func() (metav1.Object, error) {
		return rbac.ClusterRoles().Get(ctx, ExecRBACObjectName, metav1.GetOptions{})
	}, func(o metav1.DeleteOptions) error { return rbac.ClusterRoles().Delete(ctx, ExecRBACObjectName, o) })
	return errors.Join(errs...)
}
