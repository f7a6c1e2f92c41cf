package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/client-go/openapi"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/policy"
	"github.com/hookback/hookback/session"
	"github.com/hookback/hookback/suite"
)

// testPolicyWebhooks are --policy's policies as the suite's webhooks: a
// case names one by its kind as configuration and its name as webhook
// (ValidatingAdmissionPolicy/NAME), and is matched by the policy's
// matchConstraints' resourceRules; each is evaluated offline with the
// apiserver's code (params and Namespaces from the policy files) and
// answers as the apiserver would. schemas are the custom resources'
// (the CRDs of --crd).
func testPolicyWebhooks(ctx context.Context, paths []string, stdin io.Reader, schemas openapi.Client) ([]*suite.Webhook, error) {
	set, err := policy.Load(paths, stdin)
	if err != nil {
		return nil, err
	}
	e, err := policy.New(ctx, set, policy.Options{OpenAPI: schemas})
	if err != nil {
		return nil, fmt.Errorf("--policy: %w", err)
	}
	none := admissionregistrationv1.SideEffectClassNone
	var out []*suite.Webhook
	for _, h := range session.PolicyWebhooks(e) {
		kind, name, _ := strings.Cut(h.Name, "/")
		w := &suite.Webhook{Configuration: kind, Path: "/policy/" + name, Handler: askForCRD(h.Handler), Policy: true}
		if h.Mutating {
			w.Mutating = &admissionregistrationv1.MutatingWebhook{Name: name, Rules: h.Rules, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}}
		} else {
			w.Validating = &admissionregistrationv1.ValidatingWebhook{Name: name, Rules: h.Rules, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}}
		}
		out = append(out, w)
	}
	return out, nil
}

// askForCRD adds to the dispatcher's answer for a kind it has no schema
// of (written for a CRD the apiserver has not loaded yet) what it means
// offline: the suite was given no CRD of that kind.
func askForCRD(h admission.Handler) admission.Handler {
	return admission.HandlerFunc(func(ctx context.Context, req admission.Request) admission.Response {
		resp := h.Handle(ctx, req)
		if resp.Result != nil && strings.Contains(resp.Result.Message, "There can be a delay between when CustomResourceDefinitions are created") {
			resp.Result.Message += fmt.Sprintf(" (hookback test: no CRD of %s was given; pass it with --crd)", req.Kind.Kind)
		}
		return resp
	})
}
