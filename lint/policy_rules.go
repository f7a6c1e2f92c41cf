package lint

import (
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// both runs two checks as one rule: the webhooks' and the policies'.
func both(a, b func(*Input, *Rule) []Finding) func(*Input, *Rule) []Finding {
	return func(in *Input, r *Rule) []Finding { return append(a(in, r), b(in, r)...) }
}

// checkPolicyControlPlane: a policy does not go down as a webhook does,
// but under failurePolicy Fail an expression that errors on an object it
// did not expect (a field the control plane's objects lack, params not
// found, the cost budget) rejects the request: a warning, on the binding,
// whose matchResources the fix narrows.
func checkPolicyControlPlane(in *Input, r *Rule) []Finding {
	var fs []Finding
	for _, b := range in.boundPolicies() {
		if !b.denies() {
			continue
		}
		var hit, nss []string
		for _, ns := range controlPlaneNamespaces {
			for _, req := range policyProbes(b, ns) {
				if in.appliesTo(b, req) {
					hit, nss = append(hit, req.String()), append(nss, ns)
					break
				}
			}
		}
		if len(hit) == 0 {
			continue
		}
		f := objFinding(b.binding.Obj, r, Warning, "spec.matchResources.namespaceSelector",
			"binds %s %s, failurePolicy Fail, to objects in %s (%s): an expression that errors there (a field the control plane's objects lack, params not found, the cost budget) rejects the control plane's own writes",
			b.policy.Obj.Kind, b.policy.Obj.Name, strings.Join(nss, ", "), strings.Join(hit, "; "))
		f.Fix = excludeNamespacesFromBinding(b.binding, nss...)
		f.Advice = "exclude the control plane's namespaces in the binding (the patch), or set the policy's failurePolicy Ignore"
		fs = append(fs, f)
	}
	return fs
}

// checkPolicyCritical: a Fail policy bound to what nodes and the control
// plane send all the time; one finding per policy, whose failurePolicy the
// fix sets.
func checkPolicyCritical(in *Input, r *Rule) []Finding {
	var fs []Finding
	done := map[*Policy]bool{}
	for _, b := range in.boundPolicies() {
		if done[b.policy] || !b.denies() {
			continue
		}
		var hit []string
		for _, req := range criticalRequests {
			if in.appliesTo(b, req) {
				hit = append(hit, req.String())
			}
		}
		if len(hit) == 0 {
			continue
		}
		done[b.policy] = true
		f := objFinding(b.policy.Obj, r, Warning, "spec.failurePolicy",
			"failurePolicy Fail and bound by %s to %s: an expression that errors on one of these (a field it does not have, params not found, the cost budget) makes nodes NotReady, loses leader election or fails authentication",
			b.binding.Obj.Ref(), strings.Join(hit, "; "))
		f.Fix = []PatchOp{{Op: "add", Path: "/spec/failurePolicy", Value: "Ignore"}}
		f.Advice = "or narrow matchConstraints so they leave these resources out"
		fs = append(fs, f)
	}
	return fs
}

// checkUnbound: a binding whose policy does not exist is ignored by the
// apiserver, and a policy without a binding never runs.
func checkUnbound(in *Input, r *Rule) []Finding {
	var fs []Finding
	for _, b := range in.bindings {
		if in.policyOf(b) != nil {
			continue
		}
		kind := strings.TrimSuffix(b.Obj.Kind, "Binding")
		f := objFinding(b.Obj, r, Warning, "spec.policyName", "binds %s %q, which does not exist here: the apiserver ignores the binding, and nothing it was meant to enforce is enforced", kind, b.spec.PolicyName)
		f.Advice = "name an existing policy in spec.policyName (lint --cluster reads the cluster's policies beside your manifests)"
		fs = append(fs, f)
	}
	for _, p := range in.policies {
		if slices.ContainsFunc(in.bindings, func(b *Binding) bool { return b.Mutating == p.Mutating && b.spec.PolicyName == p.Obj.Name }) {
			continue
		}
		f := objFinding(p.Obj, r, Warning, "metadata.name", "no %sBinding names this policy: it never runs", p.Obj.Kind)
		f.Advice = "add a " + p.Obj.Kind + "Binding with spec.policyName " + p.Obj.Name + " (and validationActions, for a ValidatingAdmissionPolicy)"
		fs = append(fs, f)
	}
	return fs
}

// checkParams: a policy with a paramKind whose expressions read params,
// bound without a paramRef, is evaluated with params null: every such
// expression errors, and under failurePolicy Fail every request the
// binding matches is rejected (k8s.io/apiserver's policy dispatcher).
func checkParams(in *Input, r *Rule) []Finding {
	var fs []Finding
	for _, b := range in.boundPolicies() {
		if b.policy.spec.ParamKind == nil || !b.policy.readsParams || b.binding.spec.ParamRef != nil {
			continue
		}
		sev, effect := Warning, "nothing it enforces is enforced (failurePolicy Ignore)"
		if b.denies() {
			sev, effect = Error, "every request the binding matches is rejected (failurePolicy Fail)"
		}
		f := objFinding(b.binding.Obj, r, sev, "spec.paramRef", "%s %s has paramKind %s and reads params, but this binding has no paramRef: params is null, its expressions fail, and %s",
			b.policy.Obj.Kind, b.policy.Obj.Name, b.policy.spec.ParamKind.Kind, effect)
		f.Advice = "set spec.paramRef (name or selector, and parameterNotFoundAction) to the " + b.policy.spec.ParamKind.Kind + " this binding uses"
		fs = append(fs, f)
	}
	return fs
}

// checkActions: a ValidatingAdmissionPolicy that says failurePolicy Fail
// means to reject, but a binding whose validationActions have no Deny only
// warns or audits: nothing is rejected, failures included.
func checkActions(in *Input, r *Rule) []Finding {
	var fs []Finding
	for _, b := range in.boundPolicies() {
		fp := b.policy.spec.FailurePolicy
		if b.policy.Mutating || fp == nil || *fp != admissionregistrationv1.Fail || slices.Contains(b.binding.spec.ValidationActions, admissionregistrationv1.Deny) {
			continue
		}
		f := objFinding(b.binding.Obj, r, Warning, "spec.validationActions", "binds %s, failurePolicy Fail, with validationActions %v: no Deny, so neither a failed validation nor a failure rejects anything",
			b.policy.Obj.Name, b.binding.spec.ValidationActions)
		f.Fix = []PatchOp{{Op: "add", Path: "/spec/validationActions", Value: withDeny(b.binding.spec.ValidationActions)}}
		f.Advice = "Deny to enforce (the patch); Warn or Audit alone is a dry run of the policy: then say failurePolicy Ignore"
		fs = append(fs, f)
	}
	return fs
}

// withDeny is actions with Deny: the apiserver refuses Deny beside Warn
// (the failure would be said twice), so Deny replaces Warn; Audit stays.
func withDeny(actions []admissionregistrationv1.ValidationAction) []string {
	out := []string{string(admissionregistrationv1.Deny)}
	if slices.Contains(actions, admissionregistrationv1.Audit) {
		out = append(out, string(admissionregistrationv1.Audit))
	}
	return out
}
