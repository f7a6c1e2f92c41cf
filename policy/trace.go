package policy

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// The apiserver's dispatchers keep each validation's result, each
// mutation's output and the matchConditions' outcome to themselves. The
// wrappers below sit between a dispatcher and the evaluators it calls,
// pass every call through unchanged, and note what came back in the trace
// the evaluation put into the context.

// trace is what one dispatch of one binding did.
type trace struct {
	mu    sync.Mutex
	calls []call
}

// call is one evaluation of the policy with one param.
type call struct {
	params    runtime.Object
	attr      *admission.VersionedAttributes
	namespace *corev1.Namespace
	resource  schema.GroupVersionResource
	// excluded: the matchConditions did not match; failedCondition names
	// the one that did not.
	excluded        bool
	failedCondition string
	result          validating.ValidateResult
	mutations       []mutationCall
}

type mutationCall struct {
	index         int
	before, after runtime.Object
	err           error
}

type traceKey struct{}

func withTrace(ctx context.Context, t *trace) context.Context {
	return context.WithValue(ctx, traceKey{}, t)
}

func traceFrom(ctx context.Context) *trace {
	t, _ := ctx.Value(traceKey{}).(*trace)
	return t
}

func (t *trace) add(c call) {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.calls = append(t.calls, c)
	t.mu.Unlock()
}

// last returns the call of these params, adding one when the params
// changed: a mutating policy's calls for one param come in a row.
func (t *trace) last(params runtime.Object, attr *admission.VersionedAttributes, r patch.Request) *call {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n := len(t.calls); n > 0 && t.calls[n-1].params == params && !t.calls[n-1].excluded {
		return &t.calls[n-1]
	}
	t.calls = append(t.calls, call{params: params, attr: attr, namespace: r.Namespace, resource: r.MatchedResource})
	return &t.calls[len(t.calls)-1]
}

// tracingValidator notes each Validate call of a validating policy.
type tracingValidator struct{ inner validating.Validator }

var _ validating.Validator = tracingValidator{}

func (v tracingValidator) Validate(ctx context.Context, resource schema.GroupVersionResource, attr *admission.VersionedAttributes, params runtime.Object, ns *corev1.Namespace, budget int64, authz authorizer.Authorizer) validating.ValidateResult {
	res := v.inner.Validate(ctx, resource, attr, params, ns, budget, authz)
	t := traceFrom(ctx)
	t.add(call{params: params, attr: attr, namespace: ns, resource: resource, result: res})
	return res
}

func (v tracingValidator) CompileError() error { return v.inner.CompileError() }

// tracingMatcher notes a mutating policy's matchConditions that excluded
// a request (the validating ones show as a Validate with no decisions).
type tracingMatcher struct{ inner matchconditions.Matcher }

var _ matchconditions.Matcher = tracingMatcher{}

func (m tracingMatcher) Match(ctx context.Context, attr *admission.VersionedAttributes, params runtime.Object, authz authorizer.Authorizer) matchconditions.MatchResult {
	res := m.inner.Match(ctx, attr, params, authz)
	if res.Error == nil && !res.Matches {
		traceFrom(ctx).add(call{params: params, attr: attr, excluded: true, failedCondition: res.FailedConditionName})
	}
	return res
}

// tracingPatcher notes each mutation's input and output.
type tracingPatcher struct {
	inner patch.Patcher
	index int
}

var _ patch.Patcher = tracingPatcher{}

func (p tracingPatcher) Patch(ctx context.Context, r patch.Request, budget int64) (runtime.Object, error) {
	before := r.VersionedAttributes.VersionedObject
	out, err := p.inner.Patch(ctx, r, budget)
	if t := traceFrom(ctx); t != nil {
		c := t.last(r.OptionalVariables.VersionedParams, r.VersionedAttributes, r)
		t.mu.Lock()
		c.mutations = append(c.mutations, mutationCall{index: p.index, before: before, after: out, err: err})
		t.mu.Unlock()
	}
	return out, err
}
