package registration

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/kubernetes"

	"github.com/hookback/hookback/advertise"
	"github.com/hookback/hookback/field"
	"github.com/hookback/hookback/kubeconfig"
)

// ErrClusterWide marks a start refused on a cluster that is not local.
var ErrClusterWide = errors.New("refusing to register cluster-wide on a cluster that is not local")

// matchConditionsSince is the first Kubernetes release whose apiservers
// evaluate matchConditions by default (beta; GA in 1.30).
var matchConditionsSince = version.MajorMinor(1, 28)

// localContexts are the kubeconfig contexts of clusters that run on the
// developer's machine: hookback's own (hack/cluster), kind, minikube, k3d,
// Docker Desktop, Rancher Desktop, OrbStack. A trailing '-' is a prefix.
var localContexts = []string{"kwok-hookback", "kind-", "minikube", "k3d-", "docker-desktop", "rancher-desktop", "orbstack"}

// LocalCluster reports whether the cluster of server and context is the
// developer's own, and why: the server is on this machine, or the context
// is one a local distribution writes.
func LocalCluster(server, context string) (bool, string) {
	for _, c := range localContexts {
		if context == c || (strings.HasSuffix(c, "-") && strings.HasPrefix(context, c)) {
			return true, fmt.Sprintf("context %q is a local distribution's", context)
		}
	}
	u, err := url.Parse(server)
	if err != nil || u.Hostname() == "" {
		return false, fmt.Sprintf("server %q has no host", server)
	}
	host := u.Hostname()
	if host == "localhost" || advertise.IsLocal(host) {
		return true, fmt.Sprintf("server %s is on this machine", host)
	}
	return false, fmt.Sprintf("server %s is not on this machine and context %q is not a local distribution's (%s)",
		host, context, strings.Join(localContexts, ", "))
}

// Resolve fills what the scope needs from the cluster: whether it is local
// (from the kubeconfig's server and context) and, with OnlyMine, the
// developer's username from a SelfSubjectReview, after checking that the
// apiserver evaluates matchConditions.
func (s *Scope) Resolve(ctx context.Context, cs kubernetes.Interface, server, context string) error {
	s.Local, _ = LocalCluster(server, context)
	if !s.OnlyMine {
		return nil
	}
	info, err := cs.Discovery().ServerVersion()
	if err != nil {
		return field.Errorf("registration.Scope.OnlyMine", "", "server version: %w", kubeconfig.Explain(err))
	}
	if v, err := version.ParseGeneric(info.GitVersion); err == nil && v.LessThan(matchConditionsSince) {
		return field.Clause("registration.Scope.OnlyMine", "", fmt.Sprintf("needs Kubernetes %d.%d or later (webhook matchConditions); the apiserver is %s: use {registration.Scope.Namespaces} instead",
			matchConditionsSince.Major(), matchConditionsSince.Minor(), info.GitVersion))
	}
	who, err := kubeconfig.WhoAmI(ctx, cs)
	if err != nil {
		return field.Errorf("registration.Scope.OnlyMine", "", "%w", err)
	}
	if who.Username == "" {
		return field.New("registration.Scope.OnlyMine", "", "the apiserver reports no username for this kubeconfig")
	}
	s.Username = who.Username
	return nil
}

// Refuse is the error of start on a cluster that is not local with nothing
// that narrows it and no --all-namespaces; nil when start may register.
// why says what made the cluster not local (LocalCluster).
func (s Scope) Refuse(why string) error {
	if s.Local || s.Narrowed() || s.AllNamespaces {
		return nil
	}
	return field.Advise("registration.Scope.Namespaces", "%w: %s. Every colleague's matching requests would reach this machine: "+
		"add {registration.Scope.Namespaces} NS (repeatable), or {registration.Scope.OnlyMine}, or {registration.Scope.AllNamespaces} if cluster-wide is meant (docs/shared-clusters.md)", ErrClusterWide, why)
}

// Convert reports whether the conversion of crd may be redirected to
// hookback. Conversion cannot be scoped (one webhook per CRD serves every
// reader) and has no failurePolicy, so on a cluster that is not local only
// CRDs named with --convert are, or every CRD with --all-namespaces.
func (s Scope) Convert(crd string) bool {
	return s.Local || s.AllNamespaces || slices.Contains(s.ConvertCRDs, crd)
}

// LeftAlone says which CRDs' conversion was not redirected, why, and what
// redirects it; nil when none was left alone. An error, so that the CLI
// shows the fields it names as flags where it is logged.
func (s Scope) LeftAlone(crds []string) error {
	var left []string
	for _, c := range crds {
		if !s.Convert(c) {
			left = append(left, c)
		}
	}
	if len(left) == 0 {
		return nil
	}
	return field.Advise("registration.Scope.ConvertCRDs", "conversion of %s left alone: on a cluster that is not local a redirected conversion serves every reader "+
		"and fails their reads while hookback is down; name a CRD with {registration.Scope.ConvertCRDs} (or set {registration.Scope.AllNamespaces}) to redirect it",
		strings.Join(left, ", "))
}
