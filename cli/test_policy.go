package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/hookback/hookback/policy"
	"github.com/hookback/hookback/session"
	"github.com/hookback/hookback/suite"
)

// testPolicyWebhooks are --policy's policies as the suite's webhooks: a
// case names one by its kind as configuration and its name as webhook
// (ValidatingAdmissionPolicy/NAME), and is matched by the policy's
// matchConstraints' resourceRules; each is evaluated offline with the
// apiserver's code (params and Namespaces from the policy files) and
// answers as the apiserver would.
func testPolicyWebhooks(ctx context.Context, paths []string, stdin io.Reader) ([]*suite.Webhook, error) {
	set, err := policy.Load(paths, stdin)
	if err != nil {
		return nil, err
	}
	e, err := policy.New(ctx, set, policy.Options{})
	if err != nil {
		return nil, fmt.Errorf("--policy: %w", err)
	}
	none := admissionregistrationv1.SideEffectClassNone
	var out []*suite.Webhook
	for _, h := range session.PolicyWebhooks(e) {
		kind, name, _ := strings.Cut(h.Name, "/")
		w := &suite.Webhook{Configuration: kind, Path: "/policy/" + name, Handler: h.Handler, Policy: true}
		if h.Mutating {
			w.Mutating = &admissionregistrationv1.MutatingWebhook{Name: name, Rules: h.Rules, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}}
		} else {
			w.Validating = &admissionregistrationv1.ValidatingWebhook{Name: name, Rules: h.Rules, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}}
		}
		out = append(out, w)
	}
	return out, nil
}
