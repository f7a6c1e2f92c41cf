package session

import (
	"context"
	"net/http"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/audit"
	"github.com/hookback/hookback/policy"
)

// PolicyWebhooks makes each policy of e an audit webhook: its rules are
// the policy's matchConstraints' resourceRules (what to list and send);
// its handler evaluates the policy alone, with the apiserver's code, and
// answers as the apiserver would (denied with the failing validation's
// message, warnings for Warn, patched with the mutations' changes).
func PolicyWebhooks(e *policy.Engine) []audit.Webhook {
	var hooks []audit.Webhook
	for _, p := range e.Policies() {
		var rules []admissionregistrationv1.RuleWithOperations
		if p.Rules != nil {
			for _, r := range p.Rules.ResourceRules {
				rules = append(rules, r.RuleWithOperations)
			}
		}
		hooks = append(hooks, audit.Webhook{
			Name: p.String(), Mutating: p.Kind == policy.KindMutating, Rules: rules,
			ReviewVersions: []string{"v1"}, Policy: true, Handler: policyHandler(e, p),
		})
	}
	return hooks
}

func policyHandler(e *policy.Engine, p policy.PolicyRef) admission.Handler {
	return admission.HandlerFunc(func(ctx context.Context, req admission.Request) admission.Response {
		ev, err := e.DecidePolicy(ctx, &req.AdmissionRequest, p.Kind, p.Name)
		if err != nil {
			return admission.CallFailed(err)
		}
		return policyResponse(ev)
	})
}

// policyResponse is an evaluation as a webhook's answer would carry it.
func policyResponse(ev *policy.Evaluation) admission.Response {
	var resp admission.Response
	switch {
	case !ev.Allowed:
		resp = admission.Denied(ev.Reason())
		resp.Result.Code = http.StatusUnprocessableEntity
	case ev.Patched:
		ops := make([]admission.PatchOp, len(ev.Patch))
		for i, op := range ev.Patch {
			ops[i] = admission.PatchOp{Op: op.Op, Path: op.Path, Value: op.Value}
		}
		resp = admission.Patched("", ops...)
	case len(ev.Bindings) == 0:
		resp = admission.Allowed("not matched by any binding")
	default:
		resp = admission.Allowed("")
	}
	return resp.WithWarnings(ev.Warnings...)
}
