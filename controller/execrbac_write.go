package controller

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

func (c *execRBAC) desiredBinding(subjects []rbacv1.Subject) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ExecRBACObjectName, Labels: maps.Clone(c.labels)},
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

func (c *execRBAC) getBinding(ctx context.Context, live bool) (*rbacv1.ClusterRoleBinding, error) {
	if live {
		return c.client.RbacV1().ClusterRoleBindings().Get(ctx, ExecRBACObjectName, metav1.GetOptions{})
	}
	return c.bindings.Get(ExecRBACObjectName)
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

// ensureBinding makes the binding's ServiceAccount subjects exactly want.
// Nothing is created while no pod wants exec; an existing binding is kept,
// emptied of ServiceAccounts, rather than deleted. A binding of that name
// without the managed-by labels belongs to someone else and is not touched.
func (c *execRBAC) ensureBinding(ctx context.Context, want []rbacv1.Subject) error {
	live := false
	return retry.OnError(retry.DefaultRetry, staleRead, func() error {
		cur, err := c.getBinding(ctx, live)
		live = true
		if apierrors.IsNotFound(err) {
			if len(want) == 0 {
				return nil
			}
			if _, err := c.client.RbacV1().ClusterRoleBindings().Create(ctx, c.desiredBinding(want),
				metav1.CreateOptions{FieldManager: fieldManager}); err != nil {
				return fmt.Errorf("create clusterrolebinding %s: %w", ExecRBACObjectName, err)
			}
			c.log.Info("clusterrolebinding created", "name", ExecRBACObjectName, "subjects", subjectNames(want))
			return nil
		}
		if err != nil {
			return fmt.Errorf("get clusterrolebinding %s: %w", ExecRBACObjectName, err)
		}
		if cur.RoleRef != c.desiredRoleRef() {
			// roleRef is immutable, so this binding was made by someone else
			// for another role: leave it alone and say why nothing happens.
			c.log.Warn("clusterrolebinding has a foreign roleRef, not touching it", "roleRef", cur.RoleRef.Name)
			c.recorder.Eventf(cur, nil, corev1.EventTypeWarning, "RoleRefMismatch", "UpdateClusterRoleBinding",
				"roleRef is %s %s, not ClusterRole %s: subjects are not managed", cur.RoleRef.Kind, cur.RoleRef.Name, ExecRBACObjectName)
			return nil
		}
		if !hasLabels(cur.Labels, c.labels) {
			c.notManaged(cur, "UpdateClusterRoleBinding")
			return nil
		}
		subjects := mergeSubjects(cur.Subjects, want)
		if slices.Equal(cur.Subjects, subjects) {
			return nil
		}
		upd := cur.DeepCopy()
		upd.Subjects = subjects
		if _, err := c.client.RbacV1().ClusterRoleBindings().Update(ctx, upd,
			metav1.UpdateOptions{FieldManager: fieldManager}); err != nil {
			return fmt.Errorf("update clusterrolebinding %s: %w", ExecRBACObjectName, err)
		}
		c.log.Info("clusterrolebinding updated", "name", ExecRBACObjectName, "subjects", subjectNames(want))
		return nil
	})
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
	if _, ok := obj.(*rbacv1.ClusterRoleBinding); ok {
		kind = "clusterrolebinding"
	}
	if _, logged := c.notManagedLogged.LoadOrStore(kind+"/"+string(obj.GetUID()), true); !logged {
		c.log.Warn(kind+" lacks the managed-by labels, not touching it", "name", obj.GetName(), "labels", c.labels)
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
