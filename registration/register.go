package registration

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// FieldManager owns the fields hookback applies.
const FieldManager = "hookback"

var configResources = map[string]schema.GroupVersionResource{
	KindMutatingHook:   {Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"},
	KindValidatingHook: {Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"},
}

// Registrar writes, prunes and deletes the webhook configurations of one
// session, and finds those of dead sessions.
type Registrar struct {
	Client  kubernetes.Interface
	Dynamic dynamic.Interface
	Session string
	Log     *slog.Logger
	// Wrote, when set, gets every configuration as the apiserver returned
	// it from an apply (Drift.Wrote: hookback's own versions).
	Wrote func(*unstructured.Unstructured)
}

// Apply server-side-applies every object, then deletes this session's
// configurations that the registration no longer contains (a webhook removed
// from the template) except those named in keep.
func (r *Registrar) Apply(ctx context.Context, reg *Registration, keep ...string) error {
	for _, o := range reg.Objects {
		if err := r.ApplyObject(ctx, o); err != nil {
			return err
		}
		keep = append(keep, o.GetKind()+"/"+o.GetName())
	}
	_, err := r.deleteSession(ctx, r.Session, keep)
	return err
}

// ApplyObject server-side-applies one configuration (the canary).
func (r *Registrar) ApplyObject(ctx context.Context, o *unstructured.Unstructured) error {
	got, err := r.Dynamic.Resource(configResources[o.GetKind()]).Apply(ctx, o.GetName(), o, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	if err != nil {
		return fmt.Errorf("apply %s %q: %w", o.GetKind(), o.GetName(), err)
	}
	if r.Wrote != nil && got != nil {
		if got.GetKind() == "" {
			got.SetKind(o.GetKind())
		}
		r.Wrote(got)
	}
	return nil
}

// Deregister deletes every configuration of this session, and its
// enforced admission policies (start --policy-enforce).
func (r *Registrar) Deregister(ctx context.Context) error {
	_, err := r.deleteSession(ctx, r.Session, nil)
	_, perr := r.deletePolicies(ctx, r.Session)
	return errors.Join(err, perr)
}

// DeleteObject deletes one configuration; a missing one is fine.
func (r *Registrar) DeleteObject(ctx context.Context, kind, name string) error {
	err := r.Dynamic.Resource(configResources[kind]).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete %s %q: %w", kind, name, err)
	}
	return nil
}

// deleteSession deletes session's configurations whose kind/name is not in keep.
func (r *Registrar) deleteSession(ctx context.Context, session string, keep []string) (int, error) {
	sel := ManagedSelector + "," + LabelSession + "=" + session
	deleted := 0
	var errs []error
	for kind, gvr := range configResources {
		list, err := r.Dynamic.Resource(gvr).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			errs = append(errs, fmt.Errorf("list %ss of session %s: %w", kind, session, err))
			continue
		}
		for _, o := range list.Items {
			if slices.Contains(keep, kind+"/"+o.GetName()) {
				continue
			}
			if _, lent := o.GetAnnotations()[AnnotationTakeOver]; lent {
				continue // someone else's, taken over: package takeover gives it back
			}
			if err := r.DeleteObject(ctx, kind, o.GetName()); err != nil {
				errs = append(errs, err)
				continue
			}
			deleted++
			r.Log.Info("deleted webhook configuration", "kind", kind, "name", o.GetName(), "session", session)
		}
	}
	return deleted, errors.Join(errs...)
}

// Sessions lists the sessions that own webhook configurations or
// admission policies, with the lease each recorded.
func (r *Registrar) Sessions(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	for kind, gvr := range configResources {
		list, err := r.Dynamic.Resource(gvr).List(ctx, metav1.ListOptions{LabelSelector: ManagedSelector})
		if err != nil {
			return nil, fmt.Errorf("list %ss managed by hookback: %w", kind, err)
		}
		for _, o := range list.Items {
			s := o.GetLabels()[LabelSession]
			if s == "" {
				continue
			}
			if _, ok := out[s]; !ok || out[s] == "" {
				out[s] = o.GetAnnotations()[AnnotationLease]
			}
		}
	}
	if err := r.addPolicySessions(ctx, out); err != nil {
		return nil, err
	}
	return out, nil
}

// LeaseNamespaces lists defaultNS and every namespace a session recorded
// its Lease in, so that sessions started with another --lease-namespace are
// seen too.
func (r *Registrar) LeaseNamespaces(ctx context.Context, defaultNS string) ([]string, error) {
	sessions, err := r.Sessions(ctx)
	if err != nil {
		return nil, err
	}
	out := []string{defaultNS}
	for s, ref := range sessions {
		ns, _ := SplitLeaseRef(ref, defaultNS, s)
		if !slices.Contains(out, ns) {
			out = append(out, ns)
		}
	}
	return out, nil
}

// CleanupOptions selects which sessions Cleanup removes.
type CleanupOptions struct {
	// All removes every session, alive or not.
	All bool
	// Sessions removes these sessions, alive or not.
	Sessions []string
	// Stale removes sessions whose Lease expired or is gone, except Except.
	Stale bool
	// Except is never removed as stale (the caller's own session).
	Except string
	// DefaultLeaseNamespace is where a session's Lease is looked up when its
	// configurations did not record one.
	DefaultLeaseNamespace string
	// Now is the apiserver's clock, by which Leases expire (Heartbeat.Now);
	// nil is the local clock.
	Now func() time.Time
}

// Cleanup deletes the configurations (and Leases) of the selected sessions
// and returns the sessions it removed.
func (r *Registrar) Cleanup(ctx context.Context, opts CleanupOptions) ([]string, error) {
	// Conversion first: it has no failurePolicy to fail open.
	restored, rerr := r.RestoreCRDs(ctx, opts)
	sessions, err := r.Sessions(ctx)
	if err != nil {
		return restored, errors.Join(rerr, err)
	}
	// A session with no configurations (--webhooks none) has only its Lease.
	if err := r.addLeaseSessions(ctx, opts.DefaultLeaseNamespace, sessions); err != nil {
		return nil, err
	}
	for _, s := range opts.Sessions {
		if _, ok := sessions[s]; !ok {
			sessions[s] = ""
		}
	}
	removed := restored
	errs := []error{rerr}
	for s, ref := range sessions {
		ns, name := SplitLeaseRef(ref, opts.DefaultLeaseNamespace, s)
		remove, err := opts.Selects(ctx, r.Client, s, ref)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !remove {
			continue
		}
		n, err := r.deleteSession(ctx, s, nil)
		np, perr := r.deletePolicies(ctx, s)
		n, err = n+np, errors.Join(err, perr)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		leaseGone, err := deleteLease(ctx, r.Client, ns, name)
		if err != nil {
			errs = append(errs, err)
		}
		if (n > 0 || leaseGone) && !slices.Contains(removed, s) {
			r.Log.Info("cleaned up session", "session", s, "lease", ns+"/"+name)
			removed = append(removed, s)
		}
	}
	slices.Sort(removed)
	return removed, errors.Join(errs...)
}

// addLeaseSessions adds the sessions that have a Lease in namespace.
func (r *Registrar) addLeaseSessions(ctx context.Context, namespace string, sessions map[string]string) error {
	leases, err := r.Client.CoordinationV1().Leases(namespace).List(ctx, metav1.ListOptions{LabelSelector: ManagedSelector})
	if err != nil {
		return fmt.Errorf("list session leases in %s: %w", namespace, err)
	}
	for _, l := range leases.Items {
		if s := l.Labels[LabelSession]; s != "" && sessions[s] == "" {
			sessions[s] = namespace + "/" + l.Name
		}
	}
	return nil
}

// Selects reports whether opts remove session, whose objects recorded the
// Lease reference leaseRef: every session with All, the named ones, and
// with Stale those whose Lease expired or is gone, except Except.
func (o CleanupOptions) Selects(ctx context.Context, cs kubernetes.Interface, session, leaseRef string) (bool, error) {
	if o.All || slices.Contains(o.Sessions, session) {
		return true, nil
	}
	if !o.Stale || session == o.Except {
		return false, nil
	}
	ns, name := SplitLeaseRef(leaseRef, o.DefaultLeaseNamespace, session)
	alive, err := leaseAlive(ctx, cs, ns, name, o.Now)
	return !alive, err
}

func leaseAlive(ctx context.Context, cs kubernetes.Interface, ns, name string, now func() time.Time) (bool, error) {
	l, err := cs.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("get lease %s/%s: %w", ns, name, err)
	}
	return !LeaseExpired(l, nowOf(now)), nil
}

// SplitLeaseRef splits a recorded namespace/name Lease reference; an
// empty or malformed one is session's Lease in defaultNS.
func SplitLeaseRef(ref, defaultNS, session string) (string, string) {
	if ns, name, ok := strings.Cut(ref, "/"); ok && ns != "" && name != "" {
		return ns, name
	}
	return defaultNS, LeaseName(session)
}
