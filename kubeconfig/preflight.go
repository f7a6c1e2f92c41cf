package kubeconfig

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sync/errgroup"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/hookback/hookback/internal/errkind"
	"github.com/hookback/hookback/rbac"
)

// Permission is what preflight checks: the type every part declares its
// needs in.
type Permission = rbac.Permission

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
	return errkind.New(ErrMissingPermissions, fmt.Errorf("missing permissions: user %q cannot %s; ask a cluster admin to grant them (see `hookback check`)",
		user, strings.Join(names, ", ")))
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
