package controllers

import (
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
)

// staleRead reports errors that mean the object read was out of date: the
// cache lagged behind the apiserver (often behind hookback's own previous
// write) or someone else wrote in between. The next attempt reads the
// apiserver instead of the cache.
func staleRead(err error) bool {
	return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)
}

func (c *execRBAC) desiredRole() *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: ExecRBACObjectName, Labels: maps.Clone(c.labels)},
		Rules:      ExecRBACRules(),
	}
}

func (c *execRBAC) desiredRoleRef() rbacv1.RoleRef {
	return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ExecRBACObjectName}
}

func (c *execRBAC) desiredBinding(ns string, subjects []rbacv1.Subject) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ExecRBACObjectName, Namespace: ns, Labels: maps.Clone(c.labels)},
		RoleRef:    c.desiredRoleRef(),
		Subjects:   subjects,
	}
}

// getRole reads the ClusterRole from the cache, or from the apiserver when
// live. The cached object must not be modified.
func (c *execRBAC) getRole(ctx context.Context, live bool) (*rbacv1.ClusterRole, error) {
	if live {
		return c.client.RbacV1().ClusterRoles().Get(ctx, ExecRBACObjectName, metav1.GetOptions{})
	}
	return c.roles.Get(ExecRBACObjectName)
}

func (c *execRBAC) getBinding(ctx context.Context, ns string, live bool) (*rbacv1.RoleBinding, error) {
	if live {
		return c.client.RbacV1().RoleBindings(ns).Get(ctx, ExecRBACObjectName, metav1.GetOptions{})
	}
	return c.bindings.RoleBindings(ns).Get(ExecRBACObjectName)
}

// ensureRole creates the ClusterRole or puts its rules back. The role is
// hookback's once it carries the managed-by labels: rules someone else added
// are removed, and an aggregationRule is dropped because the aggregation
// controller would otherwise rewrite the rules behind hookback's back. A role
// of that name without the labels belongs to someone else and is not touched.
func (c *execRBAC) ensureRole(ctx context.Context) (ours bool, err error) {
	want := c.desiredRole()
	live := false
	ours = true
	err = retry.OnError(retry.DefaultRetry, staleRead, func() error {
		cur, err := c.getRole(ctx, live)
		live = true
		if apierrors.IsNotFound(err) {
			if _, err := c.client.RbacV1().ClusterRoles().Create(ctx, want,
				metav1.CreateOptions{FieldManager: fieldManager}); err != nil {
				return fmt.Errorf("create clusterrole %s: %w", ExecRBACObjectName, err)
			}
			c.log.Info("clusterrole created", "name", ExecRBACObjectName)
			return nil
		}
		if err != nil {
			return fmt.Errorf("get clusterrole %s: %w", ExecRBACObjectName, err)
		}
		if !hasLabels(cur.Labels, c.labels) {
			c.notManaged(cur, "UpdateClusterRole")
			ours = false
			return nil
		}
		if cur.AggregationRule == nil && equality.Semantic.DeepEqual(cur.Rules, want.Rules) {
			return nil
		}
		upd := cur.DeepCopy()
		upd.Rules, upd.AggregationRule = want.Rules, nil
		if _, err := c.client.RbacV1().ClusterRoles().Update(ctx, upd,
			metav1.UpdateOptions{FieldManager: fieldManager}); err != nil {
			return fmt.Errorf("update clusterrole %s: %w", ExecRBACObjectName, err)
		}
		c.log.Info("clusterrole updated", "name", ExecRBACObjectName)
		return nil
	})
	return ours, err
}

// ensureBinding makes the ServiceAccount subjects of the namespace's
// RoleBinding exactly want. It is created with the first subject and deleted
// when none is left (unless someone added a User or Group to it: then it
// keeps those). A binding of that name without the managed-by labels belongs
// to someone else and is not touched.
func (c *execRBAC) ensureBinding(ctx context.Context, ns string, want []rbacv1.Subject) error {
	bindings := c.client.RbacV1().RoleBindings(ns)
	live := false
	return retry.OnError(retry.DefaultRetry, staleRead, func() error {
		cur, err := c.getBinding(ctx, ns, live)
		live = true
		if apierrors.IsNotFound(err) {
			if len(want) == 0 {
				return nil
			}
			_, err := bindings.Create(ctx, c.desiredBinding(ns, want), metav1.CreateOptions{FieldManager: fieldManager})
			if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
				// Its pods go with it; nothing to grant, nobody to tell.
				return nil
			}
			if err != nil {
				return fmt.Errorf("create rolebinding %s/%s: %w", ns, ExecRBACObjectName, err)
			}
			c.log.Info("rolebinding created", "namespace", ns, "name", ExecRBACObjectName, "subjects", subjectNames(want))
			return nil
		}
		if err != nil {
			return fmt.Errorf("get rolebinding %s/%s: %w", ns, ExecRBACObjectName, err)
		}
		if cur.RoleRef != c.desiredRoleRef() {
			// roleRef is immutable, so this binding was made by someone else
			// for another role: leave it alone and say why nothing happens.
			c.log.Warn("rolebinding has a foreign roleRef, not touching it", "namespace", ns, "roleRef", cur.RoleRef.Name)
			c.recorder.Eventf(cur, nil, corev1.EventTypeWarning, "RoleRefMismatch", "UpdateRoleBinding",
				"roleRef is %s %s, not ClusterRole %s: subjects are not managed", cur.RoleRef.Kind, cur.RoleRef.Name, ExecRBACObjectName)
			return nil
		}
		if !hasLabels(cur.Labels, c.labels) {
			c.notManaged(cur, "UpdateRoleBinding")
			return nil
		}
		subjects := mergeSubjects(cur.Subjects, want)
		if len(subjects) == 0 {
			// The preconditions make a binding someone changed meanwhile a
			// conflict, read again, rather than deleted.
			uid, rv := cur.UID, cur.ResourceVersion
			err := bindings.Delete(ctx, ExecRBACObjectName, metav1.DeleteOptions{
				Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}})
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete rolebinding %s/%s: %w", ns, ExecRBACObjectName, err)
			}
			c.log.Info("rolebinding deleted", "namespace", ns, "name", ExecRBACObjectName)
			return nil
		}
		if slices.Equal(cur.Subjects, subjects) {
			return nil
		}
		upd := cur.DeepCopy()
		upd.Subjects = subjects
		if _, err := bindings.Update(ctx, upd, metav1.UpdateOptions{FieldManager: fieldManager}); err != nil {
			return fmt.Errorf("update rolebinding %s/%s: %w", ns, ExecRBACObjectName, err)
		}
		c.log.Info("rolebinding updated", "namespace", ns, "name", ExecRBACObjectName, "subjects", subjectNames(want))
		return nil
	})
}

// deleteLegacyBinding deletes the ClusterRoleBinding older versions of
// hookback used, which let every subject exec into every pod of the cluster;
// only while it carries the managed-by labels. It is looked for until it is
// gone: after that no new one appears, as this version never creates it.
func (c *execRBAC) deleteLegacyBinding(ctx context.Context) error {
	if c.legacyGone.Load() {
		return nil
	}
	crbs := c.client.RbacV1().ClusterRoleBindings()
	cur, err := crbs.Get(ctx, ExecRBACObjectName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		c.legacyGone.Store(true)
		return nil
	case refused(err):
		// Not worth a retry loop: the next change to the role tries again.
		c.log.Warn("cannot look for a legacy clusterrolebinding", "name", ExecRBACObjectName, "error", err)
		return nil
	case err != nil:
		return fmt.Errorf("get legacy clusterrolebinding %s: %w", ExecRBACObjectName, err)
	case !hasLabels(cur.Labels, c.labels):
		c.notManaged(cur, "DeleteClusterRoleBinding")
		c.legacyGone.Store(true)
		return nil
	}
	uid := cur.UID
	err = crbs.Delete(ctx, ExecRBACObjectName, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) {
		return c.writeFailed(cur, "DeleteClusterRoleBinding", fmt.Errorf("delete legacy clusterrolebinding %s: %w", ExecRBACObjectName, err))
	}
	c.log.Info("legacy clusterrolebinding deleted: exec is now granted per namespace", "name", ExecRBACObjectName)
	c.legacyGone.Store(true)
	return nil
}

// notManaged reports an object named ExecRBACObjectName that lacks the
// managed-by labels: someone else (often the in-cluster deployment of these
// controllers) made it, so hookback neither writes it nor, on exit, deletes
// it. The Event is recorded on every reconcile (the recorder folds repeats
// into a series); the log line is written once per object.
func (c *execRBAC) notManaged(obj interface {
	runtime.Object
	metav1.Object
}, action string,
) {
	kind := "clusterrole"
	switch obj.(type) {
	case *rbacv1.RoleBinding:
		kind = "rolebinding"
	case *rbacv1.ClusterRoleBinding:
		kind = "clusterrolebinding"
	}
	if _, logged := c.notManagedLogged.LoadOrStore(kind+"/"+string(obj.GetUID()), true); !logged {
		c.log.Warn(kind+" lacks the managed-by labels, not touching it",
			"namespace", obj.GetNamespace(), "name", obj.GetName(), "labels", c.labels)
	}
	c.recorder.Eventf(obj, nil, corev1.EventTypeWarning, "NotManaged", action,
		"%s %s lacks the labels %v: not managed by hookback, left as it is", kind, obj.GetName(), c.labels)
}

// mergeSubjects keeps the subjects hookback does not manage (Users, Groups),
// in their order, followed by the wanted ServiceAccounts.
func mergeSubjects(cur, want []rbacv1.Subject) []rbacv1.Subject {
	out := make([]rbacv1.Subject, 0, len(cur)+len(want))
	for _, s := range cur {
		if s.Kind != rbacv1.ServiceAccountKind {
			out = append(out, s)
		}
	}
	return append(out, want...)
}

func subjectNames(subjects []rbacv1.Subject) []string {
	out := make([]string, len(subjects))
	for i, s := range subjects {
		out[i] = s.Namespace + "/" + s.Name
	}
	return out
}

// hasLabels reports whether have contains every label of want.
func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}
