package cli

import (
	"fmt"
	"io"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/hookback/hookback/crdvalidate"
	"github.com/hookback/hookback/manifests"
	"github.com/hookback/hookback/suite"
)

// testCRDWebhooks are --crd's CRDs as the suite's webhooks: a case names
// one by the CRD's name (configuration CustomResourceDefinition) and is
// matched by its creates and updates, status included; each is judged
// with the apiserver's code (crdvalidate) and answers as the apiserver
// would: denied with its message, allowed with its warnings. It runs
// among the validating webhooks, after every mutating one, as the
// apiserver validates a custom resource after mutating admission.
func testCRDWebhooks(paths []string, stdin io.Reader) ([]*suite.Webhook, error) {
	docs, err := manifests.Load(paths, stdin)
	if err != nil {
		return nil, fmt.Errorf("--crd: %w", err)
	}
	none := admissionregistrationv1.SideEffectClassNone
	var out []*suite.Webhook
	for _, d := range docs {
		if d.Object.GetKind() != manifests.KindCRD {
			continue
		}
		c, err := crdvalidate.Compile(d.Object, d.Location())
		if err != nil {
			return nil, fmt.Errorf("--crd: %w", err)
		}
		out = append(out, &suite.Webhook{Configuration: "CustomResourceDefinition", Path: "/crd/" + c.Name, Handler: c.Handler(),
			Validating: &admissionregistrationv1.ValidatingWebhook{Name: c.Name, Rules: c.Rules(), SideEffects: &none, AdmissionReviewVersions: []string{"v1"}}})
	}
	return out, nil
}
