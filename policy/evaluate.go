package policy

import (
	"context"
	"errors"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/authentication/user"
)

// request is an AdmissionRequest decoded once for every dispatch.
type request struct {
	kind      schema.GroupVersionKind
	resource  schema.GroupVersionResource
	sub       string
	op        admission.Operation
	ns, name  string
	object    map[string]any
	oldObject map[string]any
	options   runtime.Object
	dryRun    bool
	user      user.Info
	// brief: the caller needs the answer, not the variables' values
	// (evaluated a second time, for the inspector).
	brief bool
}

func decodeRequest(r *admissionv1.AdmissionRequest) (request, error) {
	req := request{
		kind: schema.GroupVersionKind(r.Kind), resource: schema.GroupVersionResource(r.Resource), sub: r.SubResource,
		op: admission.Operation(r.Operation), ns: r.Namespace, name: r.Name, dryRun: r.DryRun != nil && *r.DryRun,
		user: &user.DefaultInfo{Name: r.UserInfo.Username, UID: r.UserInfo.UID, Groups: r.UserInfo.Groups, Extra: extra(r.UserInfo.Extra)},
	}
	var err error
	if req.object, err = decodeRaw(r.Object.Raw, "object"); err != nil {
		return req, err
	}
	if req.oldObject, err = decodeRaw(r.OldObject.Raw, "oldObject"); err != nil {
		return req, err
	}
	if req.options, err = decodeOptions(r.Options.Raw); err != nil {
		return req, err
	}
	return req, nil
}

func extra(in map[string]authenticationv1.ExtraValue) map[string][]string {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string][]string, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}

func decodeRaw(raw []byte, what string) (map[string]any, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var m map[string]any
	if err := utiljson.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("decode the request's %s: %w", what, err)
	}
	return m, nil
}

// attributes are the admission attributes of the request with object as
// its object; copy for a mutating dispatch, which writes into it.
func (r request) attributes(object map[string]any, copy bool) admission.Attributes {
	var obj, old runtime.Object
	if object != nil {
		if copy {
			object = runtime.DeepCopyJSON(object)
		}
		obj = &unstructured.Unstructured{Object: object}
	}
	if r.oldObject != nil {
		old = &unstructured.Unstructured{Object: r.oldObject}
	}
	return admission.NewAttributesRecord(obj, old, r.kind, r.ns, r.name, r.resource, r.sub, r.op, r.options, r.dryRun, r.user)
}

// Evaluate runs the request through the mutating policies (in order, each
// seeing the object the previous ones produced), then the validating ones
// on the mutated object, as the apiserver's admission chain does, and
// says what each binding did and what the apiserver would answer. An error
// is a request that cannot be decoded; a policy's failure is a result.
func (e *Engine) Evaluate(ctx context.Context, r *admissionv1.AdmissionRequest) (*Evaluation, error) {
	return e.evaluate(ctx, r, nil)
}

// EvaluatePolicy is Evaluate with one policy alone (kind KindValidating
// or KindMutating): a validating policy then sees the request's object,
// not one other policies mutated.
func (e *Engine) EvaluatePolicy(ctx context.Context, r *admissionv1.AdmissionRequest, kind, name string) (*Evaluation, error) {
	return e.evaluate(ctx, r, func(k, n string) bool { return k == kind && n == name })
}

// Policies names the engine's policies that have a binding, as
// "Kind/name", mutating ones first, each kind sorted.
func (e *Engine) Policies() []PolicyRef {
	var out []PolicyRef
	for i, b := range e.mbindings {
		if i == 0 || e.mbindings[i-1].policy != b.policy {
			out = append(out, PolicyRef{Kind: KindMutating, Name: b.policy.Name, Rules: b.policy.Spec.MatchConstraints})
		}
	}
	for i, b := range e.vbindings {
		if i == 0 || e.vbindings[i-1].policy != b.policy {
			out = append(out, PolicyRef{Kind: KindValidating, Name: b.policy.Name, Rules: b.policy.Spec.MatchConstraints})
		}
	}
	return out
}

// PolicyRef is one policy of an Engine.
type PolicyRef struct {
	Kind, Name string
	// Rules are the policy's matchConstraints.
	Rules *admissionregistrationv1.MatchResources
}

// String is "Kind/name".
func (p PolicyRef) String() string { return p.Kind + "/" + p.Name }

func (e *Engine) evaluate(ctx context.Context, r *admissionv1.AdmissionRequest, only func(kind, name string) bool) (*Evaluation, error) {
	req, err := decodeRequest(r)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	return e.evaluateDecoded(ctx, req, only), nil
}

func (e *Engine) evaluateDecoded(ctx context.Context, req request, only func(kind, name string) bool) *Evaluation {
	ev := &Evaluation{Allowed: true, Object: req.object}
	if mutates(req.op) {
		for i := range e.mbindings {
			if only == nil || only(KindMutating, e.mbindings[i].policy.Name) {
				e.evaluateMutating(ctx, &e.mbindings[i], req, ev)
			}
		}
	}
	if ev.Patched { // two mutations may undo each other
		ev.Patch = Diff(req.object, ev.Object)
		ev.Patched = len(ev.Patch) > 0
	}
	for i := range e.vbindings {
		if only == nil || only(KindValidating, e.vbindings[i].policy.Name) {
			e.evaluateValidating(ctx, &e.vbindings[i], req, ev)
		}
	}
	return ev
}

// mutates: the MutatingAdmissionPolicy plugin handles these operations
// only (its admission.NewHandler).
func mutates(op admission.Operation) bool {
	return op == admission.Create || op == admission.Update || op == admission.Connect
}

func (e *Engine) evaluateValidating(ctx context.Context, b *vbinding, req request, ev *Evaluation) {
	t := &trace{}
	warnings := &warningRecorder{}
	attr := req.attributes(ev.Object, false)
	err := e.validate.Dispatch(withWarnings(withTrace(ctx, t), warnings), attr, e.oi, []validating.PolicyHook{b.hook})
	if err == nil && len(t.calls) == 0 {
		return // the policy or the binding does not match
	}
	res := BindingResult{Kind: KindValidating, Policy: b.policy.Name, Binding: b.binding.Name, Decision: Admit}
	excluded := len(t.calls) > 0
	for _, c := range t.calls {
		if name := paramName(c.params); name != "" {
			res.Params = append(res.Params, name)
		}
		if len(c.result.Decisions) > 0 || len(b.policy.Spec.Validations) == 0 {
			excluded = false
		}
		res.Validations = append(res.Validations, validationResults(b.policy, c.result)...)
		if !req.brief {
			res.Variables = append(res.Variables, e.variables(ctx, b.vars, b.policy.Spec.Variables, c)...)
		}
		for _, a := range c.result.AuditAnnotations {
			if a.Action == validating.AuditAnnotationActionPublish {
				if res.AuditAnnotations == nil {
					res.AuditAnnotations = map[string]string{}
				}
				res.AuditAnnotations[b.policy.Name+"/"+a.Key] = a.Value
			}
		}
	}
	res.Decision = validatingDecision(res.Validations, excluded, err)
	res.Actions, res.Message = validatingActions(b.binding, res, err, warnings.list)
	ev.Warnings = append(ev.Warnings, warnings.list...)
	e.deny(ev, err)
	ev.Bindings = append(ev.Bindings, res)
}

func validationResults(p *admissionregistrationv1.ValidatingAdmissionPolicy, r validating.ValidateResult) []ValidationResult {
	var out []ValidationResult
	for i, d := range r.Decisions {
		v := ValidationResult{Index: i, Message: d.Message}
		if i < len(p.Spec.Validations) && len(r.Decisions) == len(p.Spec.Validations) {
			v.Expression = p.Spec.Validations[i].Expression
		}
		switch d.Evaluation {
		case validating.EvalAdmit:
			v.Result = "true"
		case validating.EvalDeny:
			v.Result = "false"
		default:
			v.Result = "error"
		}
		out = append(out, v)
	}
	return out
}

func validatingDecision(vs []ValidationResult, excluded bool, err error) Decision {
	d := Admit
	for _, v := range vs {
		switch {
		case v.Result == "false":
			return Deny
		case v.Result == "error":
			d = Error
		}
	}
	switch {
	case d == Admit && err != nil:
		return Error // a configuration error, or an auditAnnotation's
	case d == Admit && excluded:
		return Excluded
	}
	return d
}

func validatingActions(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding, res BindingResult, err error, warnings []string) ([]string, string) {
	var actions []string
	msg := ""
	if err != nil {
		msg = statusMessage(err)
	}
	switch res.Decision {
	case Deny:
		for _, a := range b.Spec.ValidationActions {
			actions = append(actions, map[admissionregistrationv1.ValidationAction]string{
				admissionregistrationv1.Deny: ActionDeny, admissionregistrationv1.Warn: ActionWarn, admissionregistrationv1.Audit: ActionAudit,
			}[a])
		}
		if msg == "" && len(warnings) > 0 {
			msg = warnings[0]
		}
	case Error:
		if err != nil {
			actions = append(actions, ActionDeny)
		} else {
			actions = append(actions, ActionIgnore)
		}
	}
	if msg == "" {
		for _, v := range res.Validations {
			if v.Result != "true" {
				msg = v.Message
				break
			}
		}
	}
	return actions, msg
}

// deny records a dispatch's denial: the first one gives the message.
func (e *Engine) deny(ev *Evaluation, err error) {
	if err == nil {
		return
	}
	if ev.Allowed {
		ev.Message = statusMessage(err)
	}
	ev.Allowed = false
}

// statusMessage is the message the client sees for a dispatcher's error.
func statusMessage(err error) string {
	var se *apierrors.StatusError
	if errors.As(err, &se) {
		return se.ErrStatus.Message
	}
	return err.Error()
}

func (e *Engine) evaluateMutating(ctx context.Context, b *mbinding, req request, ev *Evaluation) {
	t := &trace{}
	attr := req.attributes(ev.Object, true)
	err := e.mutate.Dispatch(withTrace(ctx, t), attr, e.oi, []mutating.PolicyHook{b.hook})
	if err == nil && len(t.calls) == 0 {
		return
	}
	res := BindingResult{Kind: KindMutating, Policy: b.policy.Name, Binding: b.binding.Name, Decision: Admit}
	excluded := len(t.calls) > 0
	for _, c := range t.calls {
		if name := paramName(c.params); name != "" {
			res.Params = append(res.Params, name)
		}
		if !c.excluded {
			excluded = false
		}
		if !req.brief {
			res.Variables = append(res.Variables, e.variables(ctx, b.vars, b.policy.Spec.Variables, c)...)
		}
		for _, m := range c.mutations {
			res.Mutations = append(res.Mutations, mutationResult(b.policy, m))
		}
	}
	for _, m := range res.Mutations {
		if m.Error != "" {
			res.Decision = Error
		}
	}
	switch {
	case err != nil:
		res.Decision, res.Actions, res.Message = Error, []string{ActionDeny}, statusMessage(err)
		e.deny(ev, err)
	case res.Decision == Error:
		res.Actions = []string{ActionIgnore}
	case excluded:
		res.Decision = Excluded
	}
	if err == nil {
		if obj, ok := attr.GetObject().(*unstructured.Unstructured); ok && obj != nil {
			res.Patch = Diff(ev.Object, obj.Object)
			if len(res.Patch) > 0 {
				res.Actions = append(res.Actions, ActionMutate)
				ev.Object = obj.Object
				ev.Patched = true
			}
		}
	}
	ev.Bindings = append(ev.Bindings, res)
}

func mutationResult(p *admissionregistrationv1.MutatingAdmissionPolicy, m mutationCall) MutationResult {
	r := MutationResult{Index: m.index}
	if m.index < len(p.Spec.Mutations) {
		r.PatchType = string(p.Spec.Mutations[m.index].PatchType)
	}
	if m.err != nil {
		r.Error = m.err.Error()
		return r
	}
	before, _ := m.before.(*unstructured.Unstructured)
	after, _ := m.after.(*unstructured.Unstructured)
	if before != nil && after != nil {
		r.Patch = Diff(before.Object, after.Object)
	}
	return r
}
