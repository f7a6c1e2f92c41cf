package session

import (
	"context"
	"log/slog"

	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"

	"github.com/hookback/hookback/field"
	"github.com/hookback/hookback/plan"
	"github.com/hookback/hookback/policy"
)

// loadPolicyEngine reads the policies, checks that the cluster serves
// them at admissionregistration.k8s.io/v1, logs the expressions the
// apiserver would refuse to compile (they are evaluated anyway, and fail
// under their failurePolicy as the plugin makes them), and connects the
// engine to the cluster (namespaces, params, authorizer, schemas).
func loadPolicyEngine(ctx context.Context, in plan.PolicyInput, cs kubernetes.Interface, dyn dynamic.Interface, log *slog.Logger) (*policy.Engine, *policy.Set, error) {
	set, err := policy.Load(in.Paths, in.Stdin)
	if err != nil {
		return nil, nil, err
	}
	e, err := connectPolicies(ctx, set, cs, dyn, log)
	if err != nil {
		return nil, nil, err
	}
	return e, set, nil
}

// connectPolicies is loadPolicyEngine on a set already read: start reads
// its policies before it connects (render prints their observer), and
// again at each edit.
func connectPolicies(ctx context.Context, set *policy.Set, cs kubernetes.Interface, dyn dynamic.Interface, log *slog.Logger) (*policy.Engine, error) {
	if err := set.CheckCluster(cs.Discovery()); err != nil {
		return nil, field.Errorf("plan.PolicyInput.Paths", "", "%w", err)
	}
	errs := set.CompileErrors()
	for _, name := range policy.Names(errs) {
		log.Warn("the apiserver would refuse this policy: it does not compile", "policy", name, "error", errs[name].ToAggregate().Error())
	}
	for _, name := range set.Unbound() {
		log.Warn("policy without a binding: never evaluated, by the apiserver or by hookback", "policy", name)
	}
	e, err := policy.New(ctx, set, policy.Options{
		Client: cs, Dynamic: dyn, Log: log, OpenAPI: cs.Discovery().OpenAPIV3(),
		Mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cs.Discovery())),
	})
	if err != nil {
		return nil, field.Errorf("plan.PolicyInput.Paths", "", "%w", err)
	}
	return e, nil
}
