package session

import (
	"context"
	"net/url"
	"slices"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/audit"
	"github.com/hookback/hookback/inspector"
	"github.com/hookback/hookback/policy"
	"github.com/hookback/hookback/registration"
)

// policyEvalTimeout bounds evaluating the policies beside a webhook's
// answer: the answer is already made, and the apiserver may have stopped
// waiting for it (a breakpoint), so the review's own deadline does not.
const policyEvalTimeout = 5 * time.Second

// wrap has each of hooks (your webhooks, the built-ins) also evaluate the
// policies that match its reviews and compare them with its answer (the
// migration, start --policy beside a webhook). The observers at skip are
// left as they are; under --shadow your webhook's own answer is compared,
// not the copy's allow. Without --policy the hooks are returned as they are.
func (p *livePolicies) wrap(hooks []admission.Webhook, skip ...string) []admission.Webhook {
	if p == nil {
		return hooks
	}
	out := slices.Clone(hooks)
	for i, h := range out {
		if h.Path == PolicyObserverPath || slices.Contains(skip, h.Path) {
			continue
		}
		if s, ok := h.Handler.(*shadowed); ok {
			c := *s
			c.local = p.compare(h.Name, h.Path, s.local)
			out[i].Handler = &c
			continue
		}
		out[i].Handler = p.compare(h.Name, h.Path, h.Handler)
	}
	return out
}

// compare is inner, whose answer is also compared with each policy whose
// matchConstraints match the review.
func (p *livePolicies) compare(webhook, path string, inner admission.Handler) admission.Handler {
	return admission.HandlerFunc(func(ctx context.Context, req admission.Request) admission.Response {
		resp := inner.Handle(ctx, req)
		e := p.engine.Load()
		if e == nil {
			return resp
		}
		var refs []policy.PolicyRef
		for _, ref := range e.Policies() {
			if p.comparable(path, ref.Kind) && constraintsMatch(ref.Rules, &req.AdmissionRequest) {
				refs = append(refs, ref)
			}
		}
		if len(refs) == 0 {
			return resp
		}
		ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), policyEvalTimeout)
		defer cancel()
		v := inspector.PolicyView{Webhook: webhook, Path: path, Request: identityOf(&req.AdmissionRequest)}
		for _, ref := range refs {
			v.Comparisons = append(v.Comparisons, compareOne(ectx, e, &req.AdmissionRequest, webhook, resp, ref))
		}
		p.out.compared(v)
		return resp
	})
}

// compareOne evaluates one policy alone on req, answers as the apiserver
// would (policyResponse, as audit --policy does) and compares that with
// the webhook's answer w (audit.CompareAnswers).
func compareOne(ctx context.Context, e *policy.Engine, req *admissionv1.AdmissionRequest, webhook string, w admission.Response, ref policy.PolicyRef) inspector.PolicyComparison {
	c := inspector.PolicyComparison{Policy: ref.String()}
	var pr admission.Response
	ev, err := e.EvaluatePolicy(ctx, req, ref.Kind, ref.Name)
	if err != nil {
		c.Error = err.Error()
		pr = admission.CallFailed(err)
	} else {
		c.Evaluation = redactEvaluation(req, ev)
		pr = policyResponse(ev)
	}
	d, differ := audit.CompareAnswers(req, webhook, w, c.Policy, pr)
	c.Agree = !differ
	if differ {
		c.Disagreement = &d
	}
	return c
}

// constraintsMatch says whether a policy's matchConstraints' resource
// rules (less its excludeResourceRules) select req's resource and
// operation; the selectors, matchConditions and bindings are the engine's.
func constraintsMatch(m *admissionregistrationv1.MatchResources, req *admissionv1.AdmissionRequest) bool {
	if m == nil {
		return false
	}
	match := func(r admissionregistrationv1.NamedRuleWithOperations) bool { return namedRuleMatches(r, req) }
	return slices.ContainsFunc(m.ResourceRules, match) && !slices.ContainsFunc(m.ExcludeResourceRules, match)
}

func namedRuleMatches(r admissionregistrationv1.NamedRuleWithOperations, req *admissionv1.AdmissionRequest) bool {
	if len(r.ResourceNames) > 0 && !slices.Contains(r.ResourceNames, req.Name) {
		return false
	}
	ops := make([]string, len(r.Operations))
	for i, op := range r.Operations {
		ops[i] = string(op)
	}
	return anyOf(ops, string(req.Operation)) && anyOf(r.APIGroups, req.Resource.Group) &&
		anyOf(r.APIVersions, req.Resource.Version) && resourceMatches(r.Resources, req.Resource.Resource, req.SubResource)
}

func anyOf(list []string, s string) bool {
	return slices.Contains(list, "*") || slices.Contains(list, s)
}

// resourceMatches reads a rule's resources as the apiserver does: "*" is
// every resource but no subresource, "*/*" everything, "pods/*" every
// subresource of pods, "*/status" the status of every resource.
func resourceMatches(patterns []string, resource, sub string) bool {
	for _, p := range patterns {
		res, psub, hasSub := strings.Cut(p, "/")
		switch {
		case p == "*/*":
			return true
		case !hasSub && sub == "" && (res == "*" || res == resource):
			return true
		case hasSub && sub != "" && (res == "*" || res == resource) && (psub == "*" || psub == sub):
			return true
		}
	}
	return false
}

// learn records, from the configurations the session registers, which
// kind of webhook each served path answers for: a ValidatingAdmissionPolicy
// is compared with validating webhooks' answers, a MutatingAdmissionPolicy
// with mutating ones'. The loop calls it at each render.
func (p *livePolicies) learn(objs []*unstructured.Unstructured) {
	if p == nil {
		return
	}
	kinds := map[string][]string{}
	for _, o := range objs {
		kind := policy.KindValidating
		switch o.GetKind() {
		case registration.KindMutatingHook:
			kind = policy.KindMutating
		case registration.KindValidatingHook:
		default:
			continue
		}
		hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
		for _, h := range hooks {
			m, _ := h.(map[string]any)
			path := hookPath(m)
			if path != "" && !slices.Contains(kinds[path], kind) {
				kinds[path] = append(kinds[path], kind)
			}
		}
	}
	p.kinds.Store(&kinds)
}

// hookPath is the path of a webhook's clientConfig (url or service).
func hookPath(hook map[string]any) string {
	if s, ok, _ := unstructured.NestedString(hook, "clientConfig", "url"); ok {
		if u, err := url.Parse(s); err == nil {
			return u.Path
		}
	}
	s, _, _ := unstructured.NestedString(hook, "clientConfig", "service", "path")
	return s
}

// comparable says whether a policy of kind is compared with the answers
// served at path: a validating policy with a validating webhook's, a
// mutating one with a mutating webhook's; before the first render, any.
func (p *livePolicies) comparable(path, kind string) bool {
	k := p.kinds.Load()
	if k == nil {
		return true
	}
	return slices.Contains((*k)[path], kind)
}
