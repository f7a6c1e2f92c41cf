package lint

import (
	"encoding/json"
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// The admission policy kinds lint reads (admissionregistration.k8s.io v1,
// and v1beta1 for MutatingAdmissionPolicy before 1.36: the fields lint
// reads are the same).
const (
	kindVAP  = "ValidatingAdmissionPolicy"
	kindVAPB = "ValidatingAdmissionPolicyBinding"
	kindMAP  = "MutatingAdmissionPolicy"
	kindMAPB = "MutatingAdmissionPolicyBinding"
)

// Policy is a ValidatingAdmissionPolicy or MutatingAdmissionPolicy. It
// runs in the apiserver (no Service, no timeout), only through a binding;
// its failurePolicy applies when it is misconfigured or an expression
// errors (a missing field, params not found, the cost budget).
type Policy struct {
	Obj      *Object
	Mutating bool
	spec     policySpec
	// readsParams: an expression names params.
	readsParams bool
}

// Binding binds a Policy (by name) to what its matchResources select.
type Binding struct {
	Obj      *Object
	Mutating bool
	spec     bindingSpec
}

// policySpec and bindingSpec are the fields lint reads of both kinds of
// policy and binding.
type policySpec struct {
	ParamKind        *admissionregistrationv1.ParamKind         `json:"paramKind,omitempty"`
	MatchConstraints *admissionregistrationv1.MatchResources    `json:"matchConstraints,omitempty"`
	FailurePolicy    *admissionregistrationv1.FailurePolicyType `json:"failurePolicy,omitempty"`
	MatchConditions  []admissionregistrationv1.MatchCondition   `json:"matchConditions,omitempty"`
}

type bindingSpec struct {
	PolicyName        string                                     `json:"policyName"`
	ParamRef          *admissionregistrationv1.ParamRef          `json:"paramRef,omitempty"`
	MatchResources    *admissionregistrationv1.MatchResources    `json:"matchResources,omitempty"`
	ValidationActions []admissionregistrationv1.ValidationAction `json:"validationActions,omitempty"`
}

// fails is the policy's failurePolicy, Fail by default.
func (p *Policy) fails() bool {
	return p.spec.FailurePolicy == nil || *p.spec.FailurePolicy == admissionregistrationv1.Fail
}

// readPolicy adds a policy or binding of the input to in.
func (in *Input) readPolicy(o *Object, u *unstructured.Unstructured) error {
	spec, _, _ := unstructured.NestedMap(u.Object, "spec")
	mutating := o.Kind == kindMAP || o.Kind == kindMAPB
	switch o.Kind {
	case kindVAP, kindMAP:
		p := &Policy{Obj: o, Mutating: mutating}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(spec, &p.spec); err != nil {
			return fmt.Errorf("spec: %w", err)
		}
		for _, f := range []string{"validations", "mutations", "variables", "auditAnnotations", "matchConditions"} {
			b, _ := json.Marshal(spec[f])
			p.readsParams = p.readsParams || strings.Contains(string(b), "params")
		}
		in.policies = append(in.policies, p)
	default:
		b := &Binding{Obj: o, Mutating: mutating}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(spec, &b.spec); err != nil {
			return fmt.Errorf("spec: %w", err)
		}
		in.bindings = append(in.bindings, b)
	}
	return nil
}

// policyOf is the policy a binding names, nil when there is none.
func (in *Input) policyOf(b *Binding) *Policy {
	for _, p := range in.policies {
		if p.Mutating == b.Mutating && p.Obj.Name == b.spec.PolicyName {
			return p
		}
	}
	return nil
}

// bound is a policy with one of its bindings: what the apiserver runs.
type bound struct {
	policy  *Policy
	binding *Binding
}

// boundPolicies are every binding whose policy exists, with it.
func (in *Input) boundPolicies() []bound {
	var bs []bound
	for _, b := range in.bindings {
		if p := in.policyOf(b); p != nil {
			bs = append(bs, bound{p, b})
		}
	}
	return bs
}

// matcher is match as a Hook, so that a policy's and a binding's
// matchResources are judged by the webhooks' code: rules (an empty list
// matches everything, as the policy matcher has it), selectors,
// matchPolicy; the rules with resourceNames are left out (lint's probes
// name no object). excluded is excludeResourceRules as a Hook's rules.
func matcher(name string, m *admissionregistrationv1.MatchResources, conds []admissionregistrationv1.MatchCondition, fail bool) (h, excluded *Hook) {
	fp := admissionregistrationv1.Ignore
	if fail {
		fp = admissionregistrationv1.Fail
	}
	h = &Hook{ValidatingWebhook: admissionregistrationv1.ValidatingWebhook{Name: name, FailurePolicy: &fp, MatchConditions: conds}}
	excluded = &Hook{ValidatingWebhook: admissionregistrationv1.ValidatingWebhook{Name: name, FailurePolicy: &fp}}
	if m == nil {
		m = &admissionregistrationv1.MatchResources{}
	}
	h.NamespaceSelector, h.ObjectSelector, h.MatchPolicy = m.NamespaceSelector, m.ObjectSelector, m.MatchPolicy
	h.Rules = namedRules(m.ResourceRules)
	if len(m.ResourceRules) == 0 {
		h.Rules = []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll},
			Rule: admissionregistrationv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*/*"}}}}
	}
	excluded.MatchPolicy = m.MatchPolicy
	excluded.Rules = namedRules(m.ExcludeResourceRules)
	defaults(h, false)
	defaults(excluded, false)
	return h, excluded
}

func namedRules(rs []admissionregistrationv1.NamedRuleWithOperations) []admissionregistrationv1.RuleWithOperations {
	var out []admissionregistrationv1.RuleWithOperations
	for _, r := range rs {
		if len(r.ResourceNames) == 0 {
			out = append(out, r.RuleWithOperations)
		}
	}
	return out
}

// hooks are the policy's and the binding's matching as Hooks.
func (b bound) hooks() (policy, binding []*Hook) {
	ph, pex := matcher(b.policy.Obj.Name, b.policy.spec.MatchConstraints, b.policy.spec.MatchConditions, b.policy.fails())
	if b.binding.spec.MatchResources == nil {
		return []*Hook{ph, pex}, nil
	}
	bh, bex := matcher(b.binding.Obj.Name, b.binding.spec.MatchResources, nil, b.policy.fails())
	return []*Hook{ph, pex}, []*Hook{bh, bex}
}

// appliesTo is whether the apiserver runs the bound policy for r: the
// policy's matchConstraints and conditions, and the binding's
// matchResources, each with its exclusions.
func (in *Input) appliesTo(b bound, r request) bool {
	policy, binding := b.hooks()
	for _, m := range [][]*Hook{policy, binding} {
		if m == nil {
			continue
		}
		if !in.calledFor(m[0], r) || (len(m[1].Rules) > 0 && m[1].ruleMatches(r)) {
			return false
		}
	}
	return true
}

// denies is whether a failure of the bound policy rejects the request: its
// failurePolicy is Fail and, for a validating one, the binding's
// validationActions include Deny (under Warn or Audit only, a failure is a
// warning or an audit annotation).
func (b bound) denies() bool {
	if !b.policy.fails() {
		return false
	}
	if b.policy.Mutating {
		return true
	}
	for _, a := range b.binding.spec.ValidationActions {
		if a == admissionregistrationv1.Deny {
			return true
		}
	}
	return false
}

// objFinding starts a Finding about a policy or a binding.
func objFinding(o *Object, r *Rule, sev Severity, path, format string, args ...any) Finding {
	return Finding{Rule: r.ID, Severity: sev, Object: o.Ref(), Path: path, Message: fmt.Sprintf(format, args...), Link: r.Link}
}

// excludeNamespacesFromBinding is the patch that adds
// "kubernetes.io/metadata.name NotIn nss" to the binding's
// matchResources.namespaceSelector, ANDed with what is there.
func excludeNamespacesFromBinding(b *Binding, nss ...string) []PatchOp {
	expr := map[string]any{"key": nameLabel, "operator": "NotIn", "values": nss}
	sel := map[string]any{"matchExpressions": []any{expr}}
	m := b.spec.MatchResources
	switch {
	case m == nil:
		return []PatchOp{{Op: "add", Path: "/spec/matchResources", Value: map[string]any{"namespaceSelector": sel}}}
	case m.NamespaceSelector == nil:
		return []PatchOp{{Op: "add", Path: "/spec/matchResources/namespaceSelector", Value: sel}}
	case len(m.NamespaceSelector.MatchExpressions) > 0:
		return []PatchOp{{Op: "add", Path: "/spec/matchResources/namespaceSelector/matchExpressions/-", Value: expr}}
	}
	return []PatchOp{{Op: "add", Path: "/spec/matchResources/namespaceSelector/matchExpressions", Value: []any{expr}}}
}

// policyProbes are control-plane probes for the policy's own resource
// rules (all pods when it names none).
func policyProbes(b bound, ns string) []request {
	h, _ := matcher("", b.policy.spec.MatchConstraints, nil, true)
	if b.policy.spec.MatchConstraints == nil || len(b.policy.spec.MatchConstraints.ResourceRules) == 0 {
		h.Rules = []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{create},
			Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}}
		defaults(h, false)
	}
	return probes(h, ns)
}

// Empty is whether the input has nothing lint checks: no webhook, no
// admission policy, no binding.
func (in *Input) Empty() bool {
	return len(in.Hooks) == 0 && len(in.policies) == 0 && len(in.bindings) == 0
}
