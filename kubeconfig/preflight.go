package kubeconfig

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Permission is one verb on one resource that hookback needs.
type Permission struct {
	Verb        string
	Group       string
	Resource    string
	Subresource string
	// Namespace scopes the check; empty means all namespaces / cluster scope.
	Namespace string
	// Name restricts the check to one object, for grants by resourceNames.
	Name string
	// Why is shown next to a missing permission.
	Why string
	// Part is what needs it: PartCore, or a webhook or controller name, so
	// a run that disables that part does not need the permission.
	Part string
}

// PartCore marks permissions every run needs.
const PartCore = "core"

// String renders the permission the way kubectl auth can-i takes it.
func (p Permission) String() string {
	r := p.Resource
	if p.Group != "" {
		r += "." + p.Group
	}
	if p.Subresource != "" {
		r += "/" + p.Subresource
	}
	if p.Name != "" {
		r += " " + p.Name
	}
	return p.Verb + " " + r
}

// RequiredPermissions lists what hookback start itself and its webhooks
// need, grouped by the part that needs it; controllers list their own. leaseNamespace is where sessions keep their Lease and
// where the canary ConfigMap is dry-run created.
func RequiredPermissions(leaseNamespace string) []Permission {
	var ps []Permission
	for _, res := range []string{"mutatingwebhookconfigurations", "validatingwebhookconfigurations"} {
		for _, verb := range []string{"list", "create", "update", "patch", "delete"} {
			ps = append(ps, Permission{Verb: verb, Group: "admissionregistration.k8s.io", Resource: res, Why: "register webhooks", Part: PartCore})
		}
	}
	for _, verb := range []string{"get", "list", "create", "update", "delete"} {
		ps = append(ps, Permission{Verb: verb, Group: "coordination.k8s.io", Resource: "leases", Namespace: leaseNamespace, Why: "session heartbeat", Part: PartCore})
	}
	ps = append(ps,
		Permission{Verb: "create", Resource: "events", Why: "Warning Events", Part: PartCore},
		Permission{Verb: "patch", Resource: "events", Why: "Warning Events (repeats)", Part: PartCore},
	)
	for _, verb := range []string{"list", "watch"} {
		ps = append(ps, Permission{Verb: verb, Resource: "pods", Why: "pod cache of pod-eviction", Part: "pod-eviction"})
	}
	ps = append(ps,
		Permission{Verb: "list", Resource: "nodes", Why: "node-status restores nodes on exit", Part: "node-status"},
		Permission{Verb: "patch", Resource: "nodes", Subresource: "status", Why: "node-status restores nodes on exit", Part: "node-status"},
	)
	ps = append(ps, Permission{Verb: "create", Resource: "configmaps", Namespace: leaseNamespace, Why: "canary verification (dry-run)", Part: PartCore})
	return ps
}

// Only keeps the permissions whose Part is PartCore or in parts.
func Only(perms []Permission, parts ...string) []Permission {
	var out []Permission
	for _, p := range perms {
		if p.Part == PartCore || slices.Contains(parts, p.Part) {
			out = append(out, p)
		}
	}
	return out
}

// PermissionResult is the outcome of one SelfSubjectAccessReview.
type PermissionResult struct {
	Permission
	Allowed bool
	Reason  string
}

// CheckPermissions asks the apiserver, one SelfSubjectAccessReview per
// permission, whether the current user may do each thing. Reviews run a few at
// a time: on a remote cluster one after another would cost a second.
func CheckPermissions(ctx context.Context, cs kubernetes.Interface, perms []Permission) ([]PermissionResult, error) {
	out := make([]PermissionResult, len(perms))
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i, p := range perms {
		g.Go(func() error {
			ssar := &authzv1.SelfSubjectAccessReview{Spec: authzv1.SelfSubjectAccessReviewSpec{
				ResourceAttributes: &authzv1.ResourceAttributes{
					Verb: p.Verb, Group: p.Group, Resource: p.Resource, Subresource: p.Subresource, Namespace: p.Namespace, Name: p.Name,
				},
			}}
			res, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, ssar, metav1.CreateOptions{})
			if err != nil {
				return fmt.Errorf("check permission %q: %w", p, Explain(err))
			}
			out[i] = PermissionResult{Permission: p, Allowed: res.Status.Allowed, Reason: res.Status.Reason}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

// Missing returns the permissions that were denied.
func Missing(results []PermissionResult) []Permission {
	var m []Permission
	for _, r := range results {
		if !r.Allowed {
			m = append(m, r.Permission)
		}
	}
	return m
}

// ErrMissingPermissions is wrapped by MissingError.
var ErrMissingPermissions = errors.New("kubeconfig: missing permissions")

// MissingError builds the one-line summary of what is missing.
func MissingError(user string, missing []Permission) error {
	names := make([]string, len(missing))
	for i, p := range missing {
		names[i] = p.String()
	}
	return fmt.Errorf("%w: user %q cannot %s; ask a cluster admin to grant them (see `hookback check`)",
		ErrMissingPermissions, user, strings.Join(names, ", "))
}

// Identity is who the apiserver thinks the client is.
type Identity struct {
	Username string
	Groups   []string
}

// WhoAmI asks the apiserver through a SelfSubjectReview.
func WhoAmI(ctx context.Context, cs kubernetes.Interface) (Identity, error) {
	r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return Identity{}, fmt.Errorf("self subject review: %w", Explain(err))
	}
	return Identity{Username: r.Status.UserInfo.Username, Groups: r.Status.UserInfo.Groups}, nil
}
