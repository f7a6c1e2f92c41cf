package incluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/hookback/hookback/assembly"
	"github.com/hookback/hookback/kubeconfig"
	"github.com/hookback/hookback/rbac"
	"github.com/hookback/hookback/registration"
)

// UninstallConfig says which install to remove.
type UninstallConfig struct {
	Kubeconfig kubeconfig.Options
	Namespace  string
	// PodsTimeout bounds the wait for the pods to stop before the shared
	// cleanup, which a running leader would undo.
	PodsTimeout time.Duration
	// LeaseNamespace is where laptop sessions keep their Leases: their
	// parts' shared objects stay while one of them is alive.
	LeaseNamespace string
	Log            *slog.Logger
}

// uninstallStep is one kind of object the install has, in deletion order.
type uninstallStep struct {
	gvr        schema.GroupVersionResource
	namespaced bool
}

func gvr(group, version, resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: group, Version: version, Resource: resource}
}

var (
	// First the configurations, so the apiserver stops calling; then the
	// pods, so no leader rewrites what the shared cleanup removes.
	stopSteps = []uninstallStep{
		{gvr("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations"), false},
		{gvr("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations"), false},
		{gvr("apps", "v1", "deployments"), true},
	}
	restSteps = []uninstallStep{
		{gvr("policy", "v1", "poddisruptionbudgets"), true},
		{gvr("", "v1", "services"), true},
		{gvr("cert-manager.io", "v1", "certificates"), true},
		{gvr("cert-manager.io", "v1", "issuers"), true},
		{gvr("", "v1", "secrets"), true},
		{gvr("", "v1", "configmaps"), true},
		{gvr("coordination.k8s.io", "v1", "leases"), true},
		{gvr("rbac.authorization.k8s.io", "v1", "rolebindings"), true},
		{gvr("rbac.authorization.k8s.io", "v1", "roles"), true},
		// Bindings first: belongs learns their roles from them.
		{gvr("rbac.authorization.k8s.io", "v1", "clusterrolebindings"), false},
		{gvr("rbac.authorization.k8s.io", "v1", "clusterroles"), false},
		{gvr("", "v1", "serviceaccounts"), true},
		{gvr("", "v1", "namespaces"), false},
	}
)

// UninstallPermissions are what Uninstall lists and deletes.
func UninstallPermissions(namespace string) []rbac.Permission {
	var out []rbac.Permission
	for _, s := range append(append([]uninstallStep{}, stopSteps...), restSteps...) {
		if s.gvr.Group == "cert-manager.io" {
			continue // optional: only with --cert-manager
		}
		ns := ""
		if s.namespaced {
			ns = namespace
		}
		for _, verb := range []string{"list", "delete"} {
			out = append(out, rbac.Permission{Verb: verb, Group: s.gvr.Group, Resource: s.gvr.Resource, Namespace: ns,
				Why: "uninstall", Part: registration.PartCore})
		}
	}
	return append(out, rbac.Permission{Verb: "list", Resource: "pods", Namespace: namespace, Why: "wait for the pods to stop", Part: registration.PartCore})
}

// Uninstall removes everything labelled as the install in cfg.Namespace
// (and its cluster-scoped objects): the webhook configurations first, then
// the Deployment, whose pods it waits for; then what the built-ins wrote
// outside it (node CPU, exec RBAC) unless a live laptop session still runs
// those parts; then the rest, the namespace last. It returns what it
// deleted, as KIND/NAME.
func Uninstall(ctx context.Context, cfg UninstallConfig) ([]string, error) {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.PodsTimeout == 0 {
		cfg.PodsTimeout = time.Minute
	}
	cl, err := kubeconfig.Connect(ctx, cfg.Kubeconfig, cfg.Log, UninstallPermissions(cfg.Namespace))
	if err != nil {
		return nil, err
	}
	u := &uninstaller{dyn: cl.Dynamic, ns: cfg.Namespace, log: cfg.Log}
	errs := []error{u.delete(ctx, stopSteps)}
	if err := u.waitPodsGone(ctx, cfg.PodsTimeout); err != nil {
		errs = append(errs, err)
	} else {
		errs = append(errs, assembly.CleanupShared(ctx, cl.Client, cl.Dynamic, cfg.LeaseNamespace, PresenceSession, cl.Now, cfg.Log))
	}
	errs = append(errs, u.delete(ctx, restSteps))
	return u.deleted, errors.Join(errs...)
}

type uninstaller struct {
	dyn     dynamic.Interface
	ns      string
	log     *slog.Logger
	deleted []string
	// roles are the ClusterRoles the deleted bindings granted.
	roles []string
}

// belongs tells whether a cluster-scoped object is this namespace's
// install's, not another's with the same labels: configurations calling
// its Service, bindings to its ServiceAccount and their roles, the
// namespace itself.
func (u *uninstaller) belongs(o *unstructured.Unstructured) bool {
	switch o.GetKind() {
	case "Namespace":
		return o.GetName() == u.ns
	case "ClusterRole":
		return slices.Contains(u.roles, o.GetName())
	case "ClusterRoleBinding":
		subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
		for _, sub := range subjects {
			if m, ok := sub.(map[string]any); ok && m["kind"] == "ServiceAccount" && m["namespace"] == u.ns {
				name, _, _ := unstructured.NestedString(o.Object, "roleRef", "name")
				u.roles = append(u.roles, name)
				return true
			}
		}
		return false
	default: // webhook configurations
		hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
		for _, h := range hooks {
			if m, ok := h.(map[string]any); ok {
				if ns, _, _ := unstructured.NestedString(m, "clientConfig", "service", "namespace"); ns == u.ns {
					return true
				}
			}
		}
		return false
	}
}

func (u *uninstaller) delete(ctx context.Context, steps []uninstallStep) error {
	sel := labels.SelectorFromSet(Labels()).String()
	var errs []error
	for _, s := range steps {
		var ri dynamic.ResourceInterface = u.dyn.Resource(s.gvr)
		if s.namespaced {
			ri = u.dyn.Resource(s.gvr).Namespace(u.ns)
		}
		list, err := ri.List(ctx, metav1.ListOptions{LabelSelector: sel})
		if apierrors.IsNotFound(err) && s.gvr.Group == "cert-manager.io" {
			continue // cert-manager is not installed
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("list %s: %w", s.gvr.Resource, err))
			continue
		}
		for _, o := range list.Items {
			if !s.namespaced && !u.belongs(&o) {
				continue
			}
			if o.GetKind() == "Namespace" {
				if what := u.occupant(ctx); what != "" {
					u.log.Warn("left the namespace: it holds what the install did not write (render's Namespace labels one that already existed); delete it yourself if it should go",
						"namespace", u.ns, "holds", what)
					continue
				}
			}
			err := ri.Delete(ctx, o.GetName(), metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)})
			if err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("delete %s %q: %w", o.GetKind(), o.GetName(), err))
				continue
			}
			u.deleted = append(u.deleted, o.GetKind()+"/"+o.GetName())
			u.log.Info("deleted", "kind", o.GetKind(), "name", o.GetName(), "namespace", o.GetNamespace())
		}
	}
	return errors.Join(errs...)
}

// occupant names something in the namespace that the install did not
// write, "" when there is nothing; a list that fails counts as something.
// `kubectl apply` of render's output labels a namespace that already
// existed as the install's, so the label alone does not say the namespace
// is the install's to delete. What every namespace gets on its own (the
// default ServiceAccount, the kube-root-ca.crt ConfigMap) does not count.
func (u *uninstaller) occupant(ctx context.Context) string {
	install := labels.SelectorFromSet(Labels())
	automatic := map[string]string{"ConfigMap": "kube-root-ca.crt", "ServiceAccount": "default"}
	return registration.Occupant(ctx, u.dyn, u.ns, []schema.GroupVersionResource{
		gvr("apps", "v1", "deployments"), gvr("", "v1", "pods"), gvr("", "v1", "services"),
		gvr("", "v1", "secrets"), gvr("", "v1", "configmaps"), gvr("", "v1", "serviceaccounts"),
	}, func(o *unstructured.Unstructured) bool {
		return automatic[o.GetKind()] == o.GetName() || install.Matches(labels.Set(o.GetLabels()))
	})
}

// waitPodsGone waits until no pod of the install is left.
func (u *uninstaller) waitPodsGone(ctx context.Context, timeout time.Duration) error {
	sel := labels.SelectorFromSet(Labels()).String()
	pods := u.dyn.Resource(gvr("", "v1", "pods")).Namespace(u.ns)
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return false, err
		}
		return len(list.Items) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("pods of %s/%s still running after %s, so node CPU and exec RBAC were left in place (a leader would write them again): wait for them, then run hookback uninstall again: %w",
			u.ns, Name, timeout, err)
	}
	return nil
}
