package cli

import (
	"errors"
	"io"

	"github.com/hookback/hookback/session"
)

// StartPolicyOptions are start's admission policy flags. --policy is
// read as audit's and test's are; this branch's start uses it only with
// --policy-enforce (the live evaluation of --policy alone is another
// change, issue 42).
type StartPolicyOptions struct {
	// Policy are --policy's manifests.
	Policy []string
	// Enforce is --policy-enforce.
	Enforce bool
}

func (o *StartPolicyOptions) bind(b *binder) {
	bind(b, &o.Policy, "policy", catUser, "ValidatingAdmissionPolicies and MutatingAdmissionPolicies (admissionregistration.k8s.io/v1) with their bindings and params (file, directory, kustomize directory, or - for stdin; repeatable); with --policy-enforce applied to the cluster")
	bind(b, &o.Enforce, "policy-enforce", catUser, "apply --policy's policies, bindings and params to the cluster so the apiserver itself decides: named with the session, each binding narrowed to the session's scope, labelled, and removed at exit (or after a crash by the next start or hookback cleanup)")
}

// Validate reports the flags' misuse.
func (o StartPolicyOptions) Validate() error {
	switch {
	case o.Enforce && len(o.Policy) == 0:
		return errors.New("--policy-enforce applies the policies of --policy: name them with --policy FILE|DIR")
	case len(o.Policy) > 0 && !o.Enforce:
		return errors.New("start --policy: add --policy-enforce to apply the policies to the cluster for the session (hookback audit --policy and hookback test --policy evaluate them without writing anything)")
	}
	return nil
}

func (o StartPolicyOptions) config(stdin io.Reader) session.PolicyEnforce {
	return session.PolicyEnforce{Enabled: o.Enforce, Input: session.PolicyInput{Paths: o.Policy, Stdin: stdin}}
}
