package cli

import (
	"errors"
	"io"
	"slices"

	"github.com/hookback/hookback/session"
)

// startPolicyOptions are --policy on start and render, and start's
// --policy-enforce: admission policies evaluated live by an observer
// webhook registered for them and beside your webhooks' answers, or, with
// --policy-enforce, applied to the cluster for the session instead
// (docs/policies.md).
type startPolicyOptions struct {
	// Policy are --policy's manifests.
	Policy []string
	// Enforce is --policy-enforce (start only).
	Enforce bool
}

var startPolicyExamples = []Example{
	{Command: "hookback start --policy policies/ --webhooks none --controllers none", Comment: "the inner loop of a ValidatingAdmissionPolicy: every request it matches is evaluated with the apiserver's code and shown in the inspector; edit the file and the next request uses the edit", Serves: true},
	{Command: "hookback start --policy policies/policy.yaml --webhooks pod-name --controllers none", Comment: "a migration: each review is answered by the webhook and compared with the policy; disagreements are logged, counted, shown and summed up at exit", Serves: true},
}

var renderPolicyExamples = []Example{
	{Command: "hookback render --policy policies/ --advertise-address 192.0.2.10 --webhooks none", Comment: "with the observer --policy registers for the policies' resources"},
}

func (o *startPolicyOptions) bind(b *binder) {
	bind(b, &o.Policy, "policy", catUser, "ValidatingAdmissionPolicies and MutatingAdmissionPolicies (admissionregistration.k8s.io/v1) with their bindings and params (file, directory, kustomize directory, or - for stdin; repeatable): an observer webhook is registered for the resources they match (always allows, scoped like the session), each request is evaluated with the apiserver's own policy code and shown in the inspector and --record-dir, and beside --upstream, the built-ins or --shadow every answer is compared with the policies; hot-reloaded; with --policy-enforce applied to the cluster instead (docs/policies.md)", sets("session.PolicyInput.Paths"))
}

// bindEnforce binds --policy-enforce, which only start has.
func (o *startPolicyOptions) bindEnforce(b *binder) {
	bind(b, &o.Enforce, "policy-enforce", catUser, "apply --policy's policies, bindings and params to the cluster so the apiserver itself decides, instead of evaluating them beside it: named with the session, each binding narrowed to the session's scope, labelled, and removed at exit (or after a crash by the next start or hookback cleanup)", sets("session.PolicyEnforce.Enabled"))
}

// Validate reports what the flags alone get wrong.
func (o startPolicyOptions) Validate(webhookConfig []string) error {
	var errs []error
	if slices.Contains(o.Policy, "-") && slices.Contains(webhookConfig, "-") {
		errs = append(errs, errors.New("--policy - and --webhook-config - both read stdin: give one of them a file"))
	}
	if o.Enforce && len(o.Policy) == 0 {
		errs = append(errs, errors.New("--policy-enforce applies the policies of --policy: name them with --policy FILE|DIR"))
	}
	return errors.Join(errs...)
}

// apply sets the session's policies: evaluated live, or enforced.
func (o startPolicyOptions) apply(cfg *session.Options, stdin io.Reader) {
	in := session.PolicyInput{Paths: o.Policy, Stdin: stdin}
	switch {
	case o.Enforce:
		cfg.PolicyEnforce = session.PolicyEnforce{Enabled: true, Input: in}
	case len(o.Policy) > 0:
		cfg.Policies = in
	}
}
