package plan

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/hookback/hookback/field"
	"github.com/hookback/hookback/upstream"
)

// ShadowConfig is `start --shadow TARGET`: the webhook deployed in the
// cluster, compared with your upstream on every review.
type ShadowConfig struct {
	// Target is NAMESPACE/SERVICE[:PORT] (through the apiserver's service
	// proxy) or a URL; empty: no shadow.
	Target string
	// CAFile verifies an https Target instead of the system roots.
	CAFile string
}

var serviceTarget = regexp.MustCompile(`^([a-z0-9][-a-z0-9]*)/([a-z0-9][-a-z0-9]*)(?::([0-9]{1,5}))?$`)

// Validate reports every problem at once, each a field.Error.
func (s ShadowConfig) Validate(u UserWebhooks) error {
	if s.Target == "" {
		if s.CAFile != "" {
			return field.Clause("plan.ShadowConfig.CAFile", "", "needs {plan.ShadowConfig.Target}")
		}
		return nil
	}
	var errs []error
	if len(u.Manifests) == 0 {
		errs = append(errs, field.Clause("plan.ShadowConfig.Target", "", "needs {plan.UserWebhooks.Manifests} and {plan.UserWebhooks.Upstream}: your webhooks, to compare with the deployed ones"))
	}
	if u.KeepFailurePolicy {
		errs = append(errs, field.Clause("plan.ShadowConfig.Target", "", "registers copies that never change the apiserver's decision: drop {plan.UserWebhooks.KeepFailurePolicy}"))
	}
	if serviceTarget.MatchString(s.Target) && s.CAFile != "" {
		errs = append(errs, field.Clause("plan.ShadowConfig.CAFile", "", fmt.Sprintf("verifies a {plan.ShadowConfig.Target} URL; %s is reached through the apiserver's service proxy, verified with your kubeconfig: drop {plan.ShadowConfig.CAFile}", s.Target)))
	}
	if !serviceTarget.MatchString(s.Target) {
		if _, err := upstream.NewShadowTarget(upstream.ShadowTarget{URL: s.Target, CAFile: s.CAFile}, "/", upstream.Options{}); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Service is a NAMESPACE/SERVICE[:PORT] Target as its submatches
// (namespace, name, port or ""), nil for a URL.
func (s ShadowConfig) Service() []string {
	m := serviceTarget.FindStringSubmatch(s.Target)
	if m == nil {
		return nil
	}
	return m[1:]
}
