package session

import (
	"context"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"

	"github.com/hookback/hookback/field"
	"github.com/hookback/hookback/plan"
	"github.com/hookback/hookback/policy"
	"github.com/hookback/hookback/registration"
)

// loadEnforced reads the policies, checks that the cluster serves them at
// admissionregistration.k8s.io/v1, and prepares the session's copies.
func loadEnforced(pe plan.PolicyEnforce, d discovery.DiscoveryInterface, session, leaseRef string, scope registration.Scope) (*registration.EnforcedPolicies, error) {
	set, err := policy.Load(pe.Input.Paths, pe.Input.Stdin)
	if err != nil {
		return nil, field.Errorf("plan.PolicyEnforce.Enabled", "", "%w", err)
	}
	if err := set.CheckCluster(d); err != nil {
		return nil, field.Errorf("plan.PolicyEnforce.Enabled", "", "%w", err)
	}
	m, err := set.Manifests()
	if err != nil {
		return nil, field.Errorf("plan.PolicyEnforce.Enabled", "", "%w", err)
	}
	in := &registration.EnforcedPolicies{Policies: m.Policies, Bindings: m.Bindings}
	if len(m.Params) > 0 {
		mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(d))
		for _, o := range m.Params {
			p, err := paramOf(mapper, o)
			if err != nil {
				return nil, err
			}
			in.Params = append(in.Params, p)
		}
	}
	if err := registration.PreparePolicies(in, session, leaseRef, scope); err != nil {
		return nil, field.Errorf("plan.PolicyEnforce.Enabled", "", "%w", err)
	}
	return in, nil
}

// builtinParamKinds are the paramKinds of policies whose group is one the
// apiserver serves itself (the core group, *.k8s.io, or no dot).
func builtinParamKinds(policies []*unstructured.Unstructured) []string {
	var out []string
	for _, p := range policies {
		apiVersion, _, _ := unstructured.NestedString(p.Object, "spec", "paramKind", "apiVersion")
		kind, _, _ := unstructured.NestedString(p.Object, "spec", "paramKind", "kind")
		group, _, found := strings.Cut(apiVersion, "/")
		if kind == "" {
			continue
		}
		if !found {
			group = ""
		}
		if (group == "" || !strings.Contains(group, ".") || strings.HasSuffix(group, ".k8s.io")) && !slices.Contains(out, apiVersion+"/"+kind) {
			out = append(out, apiVersion+"/"+kind)
		}
	}
	return out
}

func paramOf(mapper meta.RESTMapper, o *unstructured.Unstructured) (registration.PolicyParam, error) {
	gvk := o.GroupVersionKind()
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return registration.PolicyParam{}, field.Errorf("plan.PolicyEnforce.Enabled", "", "param %s %q: the cluster does not serve its kind (%s): %w", o.GetKind(), o.GetName(), gvk, err)
	}
	return registration.PolicyParam{Object: o, Resource: m.Resource, Namespaced: m.Scope.Name() == meta.RESTScopeNameNamespace}, nil
}

// enforcePolicies applies the session's copies of the policies, when
// --policy-enforce asks for it; Deregister removes them.
func (r *run) enforcePolicies(ctx context.Context) error {
	pe := r.cfg.PolicyEnforce
	if !pe.Enabled {
		return nil
	}
	in, err := loadEnforced(pe, r.cluster.Client.Discovery(), r.cfg.Session, r.leaseRef, r.cfg.Scope)
	if err != nil {
		return err
	}
	if err := r.registrar.ApplyPolicies(ctx, in); err != nil {
		return field.Errorf("plan.PolicyEnforce.Enabled", "", "%w", err)
	}
	for _, kind := range builtinParamKinds(in.Policies) {
		r.cfg.Log.Warn("a param of a built-in kind: kube-apiserver (1.36) stops watching a built-in paramKind for good once no binding uses it, so if this session's bindings are its only users, policies with such params created after this session ends are denied \"no params found\" until the apiserver restarts (kubernetes/kubernetes#130887)",
			"paramKind", kind)
	}
	r.cfg.Log.Info("policies enforced by the apiserver for this session", "policies", len(in.Policies), "bindings", len(in.Bindings),
		"params", len(in.Params), "scope", r.cfg.Scope.String())
	return nil
}
