package policy

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/generic"
	"k8s.io/apiserver/pkg/admission/plugin/policy/matching"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/openapi"
)

// Options connect an Engine to a cluster; all are optional. Without a
// cluster, namespaces and params come from the files alone, the
// authorizer variable has no opinion, and ApplyConfiguration mutations
// work on built-in kinds, and on custom resources whose schemas OpenAPI
// gives (crdvalidate.OpenAPI makes one from CRD files).
type Options struct {
	// Client reads Namespaces (once, and any missing one on demand) and
	// answers the authorizer variable (SubjectAccessReviews).
	Client kubernetes.Interface
	// Dynamic and Mapper read params of kinds the files do not hold.
	Dynamic dynamic.Interface
	Mapper  meta.RESTMapper
	// OpenAPI gives custom resources' schemas to ApplyConfiguration.
	OpenAPI openapi.Client
	Log     *slog.Logger
}

// Engine evaluates a Set's policies. Evaluate is safe for concurrent use.
type Engine struct {
	set       *Set
	opts      Options
	oi        admission.ObjectInterfaces
	authz     authorizer.Authorizer
	validate  generic.Dispatcher[validating.PolicyHook]
	mutate    generic.Dispatcher[mutating.PolicyHook]
	vbindings []vbinding
	mbindings []mbinding
	// paramCache is filled by New, read-only afterwards.
	paramCache map[schema.GroupVersionKind]paramSource
}

type vbinding struct {
	policy  *admissionregistrationv1.ValidatingAdmissionPolicy
	binding *admissionregistrationv1.ValidatingAdmissionPolicyBinding
	hook    validating.PolicyHook
	vars    plugincel.ConditionEvaluator
}

type mbinding struct {
	policy  *admissionregistrationv1.MutatingAdmissionPolicy
	binding *admissionregistrationv1.MutatingAdmissionPolicyBinding
	hook    mutating.PolicyHook
	vars    plugincel.ConditionEvaluator
}

// New compiles the set's policies as the admission plugins do and wires
// them to the apiserver's dispatchers, one hook per binding (sorted by
// policy, then binding name: the apiserver's own order is a map's). It
// reads what it needs from the cluster (Namespaces, params) once, here.
func New(ctx context.Context, set *Set, opts Options) (*Engine, error) {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	e := &Engine{set: set, opts: opts, paramCache: map[schema.GroupVersionKind]paramSource{}}
	ns, err := e.namespaces(ctx)
	if err != nil {
		return nil, err
	}
	var authz authorizer.Authorizer = offlineAuthorizer{}
	if opts.Client != nil {
		authz = clusterAuthorizer{client: opts.Client}
	}
	e.authz = authz
	matcher := matching.NewMatcher(ns, opts.Client)
	e.oi = admission.NewObjectInterfacesFromScheme(runtime.NewScheme())
	e.validate = validating.NewDispatcher(authz, generic.NewPolicyMatcher(matcher))
	var oc openapi.Client
	if opts.OpenAPI != nil {
		oc = opts.OpenAPI
	}
	e.mutate = mutating.NewDispatcher(authz, matcher, newTypeConverters(oc))
	e.compile(ctx)
	return e, nil
}

func (e *Engine) namespaces(ctx context.Context) (*namespaces, error) {
	n := &namespaces{byName: map[string]*corev1.Namespace{}, synthesize: e.opts.Client == nil}
	for _, o := range e.set.Objects {
		if o.GetAPIVersion() != "v1" || o.GetKind() != "Namespace" {
			continue
		}
		ns := &corev1.Namespace{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, ns); err != nil {
			return nil, fmt.Errorf("namespace %q in the policy manifests: %w", o.GetName(), err)
		}
		n.byName[ns.Name] = ns
	}
	if e.opts.Client == nil {
		return n, nil
	}
	list, err := e.opts.Client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list namespaces for the policies' namespaceSelectors: %w", err)
	}
	for i := range list.Items {
		if _, ok := n.byName[list.Items[i].Name]; !ok {
			n.byName[list.Items[i].Name] = &list.Items[i]
		}
	}
	return n, nil
}

func (e *Engine) compile(ctx context.Context) {
	vps := slices.Clone(e.set.Validating)
	slices.SortFunc(vps, func(a, b *admissionregistrationv1.ValidatingAdmissionPolicy) int {
		return strings.Compare(a.Name, b.Name)
	})
	for _, p := range vps {
		c := compileValidating(p)
		ps := e.params(ctx, p.Spec.ParamKind)
		vars := variablesEvaluator(c.compiler, p.Spec.Variables, c.opts)
		for _, b := range sortedBindings(e.set.ValidatingBinding, p.Name) {
			e.vbindings = append(e.vbindings, vbinding{policy: p, binding: b, vars: vars, hook: validating.PolicyHook{
				Policy: p, Bindings: []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
				Evaluator:     tracingValidator{inner: c.validator},
				ParamInformer: ps.informer, ParamScope: ps.scope, ConfigurationError: ps.err,
			}})
		}
	}
	mps := slices.Clone(e.set.Mutating)
	slices.SortFunc(mps, func(a, b *admissionregistrationv1.MutatingAdmissionPolicy) int {
		return strings.Compare(a.Name, b.Name)
	})
	for _, p := range mps {
		c := compileMutating(p)
		ev := c.evaluator
		if ev.Matcher != nil {
			ev.Matcher = tracingMatcher{inner: ev.Matcher}
		}
		ev.Mutators = make([]patch.Patcher, len(c.evaluator.Mutators))
		for i, m := range c.evaluator.Mutators {
			ev.Mutators[i] = tracingPatcher{inner: m, index: i}
		}
		ps := e.params(ctx, p.Spec.ParamKind)
		cerr := ps.err
		if cerr == nil && ev.Error != nil {
			cerr = ev.Error
		}
		vars := variablesEvaluator(ev.CompositedCompiler, p.Spec.Variables, c.opts)
		for _, b := range sortedBindings(e.set.MutatingBinding, p.Name) {
			e.mbindings = append(e.mbindings, mbinding{policy: p, binding: b, vars: vars, hook: mutating.PolicyHook{
				Policy: p, Bindings: []*admissionregistrationv1.MutatingAdmissionPolicyBinding{b},
				Evaluator:     ev,
				ParamInformer: ps.informer, ParamScope: ps.scope, ConfigurationError: cerr,
			}})
		}
	}
}

func sortedBindings[B interface {
	*admissionregistrationv1.ValidatingAdmissionPolicyBinding | *admissionregistrationv1.MutatingAdmissionPolicyBinding
}](all []B, policy string) []B {
	var out []B
	for _, b := range all {
		if policyNameOf(b) == policy {
			out = append(out, b)
		}
	}
	slices.SortFunc(out, func(a, b B) int { return strings.Compare(nameOf(a), nameOf(b)) })
	return out
}

func policyNameOf(b any) string {
	switch b := b.(type) {
	case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
		return b.Spec.PolicyName
	case *admissionregistrationv1.MutatingAdmissionPolicyBinding:
		return b.Spec.PolicyName
	}
	return ""
}

func nameOf(o any) string {
	if m, ok := o.(metav1.Object); ok {
		return m.GetName()
	}
	return ""
}
