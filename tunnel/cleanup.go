package tunnel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/hookback/hookback/registration"
)

// Cleanup deletes the relays of the sessions opts selects, found by their
// Deployments (a crashed tunnel session leaves its relay running): in every
// namespace when the user may list Deployments cluster-wide, since each
// session chose its own --tunnel-namespace, else in fallback. A tunnel
// namespace a session created goes too once nothing else is left in it,
// except keep: the caller's own, where it is about to deploy its relay.
// It returns the sessions whose relays it deleted.
func Cleanup(ctx context.Context, c Clients, fallback, keep string, opts registration.CleanupOptions, log *slog.Logger) ([]string, error) {
	deps, err := listRelays(ctx, c, fallback, log)
	if err != nil || deps == nil {
		return nil, err
	}
	var removed []string
	var errs []error
	emptied := map[string]bool{}
	for _, d := range deps.Items {
		s := d.Labels[registration.LabelSession]
		if s == "" {
			continue
		}
		remove, err := opts.Selects(ctx, c.Client, s, d.Annotations[registration.AnnotationLease])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !remove {
			continue
		}
		if err := deleteRelays(ctx, c, d.Namespace, s, log); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, s)
		emptied[d.Namespace] = d.Namespace != keep
	}
	for _, ns := range slices.Sorted(maps.Keys(emptied)) {
		if emptied[ns] {
			errs = append(errs, removeNamespace(ctx, c, ns, log))
		}
	}
	return removed, errors.Join(errs...)
}

// listRelays lists every relay Deployment, or those in fallback when the
// user may not list cluster-wide; nil when it may not list there either.
func listRelays(ctx context.Context, c Clients, fallback string, log *slog.Logger) (*appsv1.DeploymentList, error) {
	opts := metav1.ListOptions{LabelSelector: registration.ManagedSelector + ",app.kubernetes.io/name=" + AppName}
	deps, err := c.Client.AppsV1().Deployments(metav1.NamespaceAll).List(ctx, opts)
	if err == nil {
		return deps, nil
	}
	if !apierrors.IsForbidden(err) {
		return nil, fmt.Errorf("list relays: %w", err)
	}
	deps, err = c.Client.AppsV1().Deployments(fallback).List(ctx, opts)
	if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
		log.Debug("no relays looked for", "namespace", fallback, "error", err)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list relays in %s: %w", fallback, err)
	}
	return deps, nil
}

// deleteRelays deletes the relay objects of session in namespace.
func deleteRelays(ctx context.Context, c Clients, namespace, session string, log *slog.Logger) error {
	var errs []error
	for _, r := range relayResources {
		list, err := c.Dynamic.Resource(r.gvr).Namespace(namespace).List(ctx, metav1.ListOptions{LabelSelector: sessionSelector(session)})
		if err != nil {
			errs = append(errs, fmt.Errorf("list the relay's %ss: %w", r.kind, err))
			continue
		}
		for _, o := range list.Items {
			err := c.Dynamic.Resource(r.gvr).Namespace(namespace).Delete(ctx, o.GetName(),
				metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
			if err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("delete the relay's %s %s/%s: %w", r.kind, namespace, o.GetName(), err))
				continue
			}
			log.Info("deleted the relay's "+r.kind, "namespace", namespace, "name", o.GetName(), "session", session)
		}
	}
	return errors.Join(errs...)
}

// removeNamespace deletes namespace when a tunnel session created it and
// nothing but what hookback wrote is left in it: no Deployment (another
// session's relay), and no Pod, Service or Secret without hookback's
// managed-by label (someone else's work, put in a namespace they may not
// know hookback made).
func removeNamespace(ctx context.Context, c Clients, namespace string, log *slog.Logger) error {
	ns, err := c.Client.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
	if err != nil || ns.Labels[labelTunnelNamespace] != "true" {
		return nil // not ours to delete, or not readable: leave it
	}
	if what := occupant(ctx, c, namespace); what != "" {
		log.Info("left the tunnel namespace: it is not empty", "namespace", namespace, "holds", what)
		return nil
	}
	if err := c.Client.CoreV1().Namespaces().Delete(ctx, namespace, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		if apierrors.IsForbidden(err) {
			return nil // created by someone who could; they may delete it
		}
		return fmt.Errorf("delete the tunnel namespace %q: %w", namespace, err)
	}
	log.Info("deleted the tunnel namespace", "namespace", namespace)
	return nil
}

// occupant names something in namespace that keeps it from being deleted:
// any Deployment (another session's relay is hookback's too), or a Pod,
// Service or Secret without hookback's managed-by label. It lists only what
// a tunnel session may list there anyway.
func occupant(ctx context.Context, c Clients, namespace string) string {
	deployments := []schema.GroupVersionResource{{Group: "apps", Version: "v1", Resource: "deployments"}}
	if what := registration.Occupant(ctx, c.Dynamic, namespace, deployments, func(*unstructured.Unstructured) bool { return false }); what != "" {
		return what
	}
	return registration.Occupant(ctx, c.Dynamic, namespace, []schema.GroupVersionResource{
		{Version: "v1", Resource: "pods"}, {Version: "v1", Resource: "services"}, {Version: "v1", Resource: "secrets"},
	}, func(o *unstructured.Unstructured) bool {
		return o.GetLabels()[registration.LabelManagedBy] == registration.ManagedByValue
	})
}
