package plan

import (
	"slices"
	"strconv"
	"strings"

	"github.com/hookback/hookback/field"
	"github.com/hookback/hookback/manifests"
	"github.com/hookback/hookback/rbac"
	"github.com/hookback/hookback/takeover"
)

// TakeOverTargets reads Options.TakeOver. A target without a namespace is
// in the one namespace of the scope, else in the one namespace your
// manifests' Services are in (a project's config/default).
func TakeOverTargets(o Options, m *manifests.Set) ([]takeover.Target, error) {
	def := ""
	if len(o.Scope.Namespaces) == 1 {
		def = o.Scope.Namespaces[0]
	} else if m != nil {
		def = oneNamespace(m.Services())
	}
	var out []takeover.Target
	for _, s := range o.TakeOver {
		t, err := takeover.ParseTarget(s, def)
		if err != nil {
			return nil, field.New("plan.Options.TakeOver", strconv.Quote(s), err.Error())
		}
		out = append(out, t)
	}
	return out, nil
}

// takeOverUser is o.User as Validate judges it: with --take-over, the
// operator's configurations read from the cluster are manifests too (they
// say which requests go to the upstream), and an upstream is needed.
func takeOverUser(o Options) UserWebhooks {
	u := o.User
	if len(o.TakeOver) > 0 && len(u.Manifests) == 0 && (len(u.Upstream) > 0 || len(u.Upstreams) > 0) {
		u.Manifests = []string{"the cluster (take-over)"}
	}
	return u
}

// validateTakeOver: the operator's webhooks need somewhere to go.
func validateTakeOver(o Options) error {
	u := o.User
	if len(o.TakeOver) > 0 && len(u.Upstream) == 0 && len(u.Upstreams) == 0 {
		return field.Clause("plan.Options.TakeOver", "", "needs {plan.UserWebhooks.Upstream}: your webhook server, which the operator's webhooks call while it is taken over (a project's is https://127.0.0.1:9443)")
	}
	return nil
}

// oneNamespace is the namespace every NAMESPACE/NAME of services is in; ""
// when there are none or several.
func oneNamespace(services []string) string {
	ns := ""
	for _, s := range services {
		n, _, _ := strings.Cut(s, "/")
		if ns != "" && n != ns {
			return ""
		}
		ns = n
	}
	return ns
}

// takeOverPermissions are what --take-over needs in the namespaces of its
// targets; none without.
func takeOverPermissions(o Options, m *manifests.Set) []rbac.Permission {
	if len(o.TakeOver) == 0 {
		return nil
	}
	var namespaces []string
	if targets, err := TakeOverTargets(o, m); err == nil {
		for _, t := range targets {
			if !slices.Contains(namespaces, t.Namespace) {
				namespaces = append(namespaces, t.Namespace)
			}
		}
	}
	return takeover.Permissions(namespaces)
}
