package cli

import (
	"errors"
	"io"
	"slices"

	"github.com/hookback/hookback/session"
)

// startPolicyOptions are --policy on start and render: admission policies
// evaluated live by an observer webhook registered for them, and beside
// your webhooks' answers (docs/policies.md).
type startPolicyOptions struct {
	// Policy are --policy's manifests.
	Policy []string
}

var startPolicyExamples = []Example{
	{Command: "hookback start --policy policies/ --webhooks none --controllers none", Comment: "the inner loop of a ValidatingAdmissionPolicy: every request it matches is evaluated with the apiserver's code and shown in the inspector; edit the file and the next request uses the edit", Serves: true},
	{Command: "hookback start --policy policies/policy.yaml --webhooks pod-name --controllers none", Comment: "a migration: each review is answered by the webhook and compared with the policy; disagreements are logged, counted, shown and summed up at exit", Serves: true},
}

var renderPolicyExamples = []Example{
	{Command: "hookback render --policy policies/ --advertise-address 192.0.2.10 --webhooks none", Comment: "with the observer --policy registers for the policies' resources"},
}

func (o *startPolicyOptions) bind(b *binder) {
	bind(b, &o.Policy, "policy", catUser, "ValidatingAdmissionPolicies and MutatingAdmissionPolicies (admissionregistration.k8s.io/v1) with their bindings and params (file, directory, kustomize directory, or - for stdin; repeatable): an observer webhook is registered for the resources they match (always allows, scoped like the session), each request is evaluated with the apiserver's own policy code and shown in the inspector and --record-dir, and beside --upstream, the built-ins or --shadow every answer is compared with the policies; hot-reloaded (docs/policies.md)")
}

// Validate reports what the flag alone gets wrong.
func (o startPolicyOptions) Validate(webhookConfig []string) error {
	if slices.Contains(o.Policy, "-") && slices.Contains(webhookConfig, "-") {
		return errors.New("--policy - and --webhook-config - both read stdin: give one of them a file")
	}
	return nil
}

// apply sets the session's policies.
func (o startPolicyOptions) apply(cfg *session.Options, stdin io.Reader) {
	if len(o.Policy) > 0 {
		cfg.Policies = session.PolicyInput{Paths: o.Policy, Stdin: stdin}
	}
}
