package controllers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
)

// Cleanup deletes what the selected controllers created in the cluster: the
// exec-rbac RoleBindings (in every namespace), the ClusterRoleBinding older
// versions made, and the ClusterRole, but only while they carry the
// managed-by labels, so an object someone else owns is never deleted.
// Bindings go before the role: they are what grants. hookback runs it after
// deregistering its webhooks, when no other live session runs exec-rbac.
func Cleanup(ctx context.Context, cs kubernetes.Interface, selected []string, managedBy map[string]string, log *slog.Logger) error {
	want, err := selectControllers(selected)
	if err != nil || !want[ExecRBACName] {
		return err
	}
	if len(managedBy) == 0 {
		return errors.New("controller cleanup: no managed-by labels to recognise hookback's objects by")
	}
	rbac := cs.RbacV1()
	c := &cleaner{managedBy: managedBy, log: log}
	// Listed by name in every namespace: what the permissions grant (a
	// resourceNames rule matches a list selecting metadata.name).
	list, err := rbac.RoleBindings(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", ExecRBACObjectName).String(),
	})
	if err != nil {
		c.errs = append(c.errs, fmt.Errorf("list rolebindings %s: %w", ExecRBACObjectName, err))
	} else {
		for i := range list.Items {
			rb := &list.Items[i]
			if rb.Name != ExecRBACObjectName { // the fake clientset ignores field selectors
				continue
			}
			c.delete("RoleBinding", rb.Namespace, rb, nil, func(o metav1.DeleteOptions) error {
				return rbac.RoleBindings(rb.Namespace).Delete(ctx, ExecRBACObjectName, o)
			})
		}
	}
	crb, err := rbac.ClusterRoleBindings().Get(ctx, ExecRBACObjectName, metav1.GetOptions{})
	c.delete("ClusterRoleBinding", "", crb, err, func(o metav1.DeleteOptions) error {
		return rbac.ClusterRoleBindings().Delete(ctx, ExecRBACObjectName, o)
	})
	role, err := rbac.ClusterRoles().Get(ctx, ExecRBACObjectName, metav1.GetOptions{})
	c.delete("ClusterRole", "", role, err, func(o metav1.DeleteOptions) error {
		return rbac.ClusterRoles().Delete(ctx, ExecRBACObjectName, o)
	})
	return errors.Join(c.errs...)
}

// cleaner deletes exec-rbac's objects that carry managedBy, collecting
// what failed.
type cleaner struct {
	managedBy map[string]string
	log       *slog.Logger
	errs      []error
}

// delete deletes obj (read just before, err being the read's error) if it
// is hookback's, by UID so that an object recreated meanwhile stays.
func (c *cleaner) delete(kind, namespace string, obj metav1.Object, err error, remove func(metav1.DeleteOptions) error) {
	name := ExecRBACObjectName
	if namespace != "" {
		name = namespace + "/" + name
	}
	if apierrors.IsNotFound(err) {
		return
	}
	if err != nil {
		c.errs = append(c.errs, fmt.Errorf("get %s %s: %w", kind, name, err))
		return
	}
	if !hasLabels(obj.GetLabels(), c.managedBy) {
		c.log.Info("leaving object not managed by hookback", "kind", kind, "name", name)
		return
	}
	uid := obj.GetUID()
	err = remove(metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) {
		c.errs = append(c.errs, fmt.Errorf("delete %s %s: %w", kind, name, err))
		return
	}
	c.log.Info("deleted", "kind", kind, "name", name)
}
