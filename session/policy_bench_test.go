package session

import (
	"bytes"
	"context"
	"testing"

	"github.com/hookback/hookback/admission"
)

// BenchmarkPolicyMigration: a webhook's handler alone (the anchor) and the
// same handler wrapped by start --policy's migration (the docs' policy
// evaluated alone on the review, compared with the answer, published to
// the inspector's store and the log), on the same Deployment review.
func BenchmarkPolicyMigration(b *testing.B) {
	var logs bytes.Buffer
	p, _, _ := livePoliciesFor(b, docsPolicy, &logs)
	p.out.dir = "" // the disk is not what is measured
	deny := admission.HandlerFunc(func(context.Context, admission.Request) admission.Response {
		return admission.Denied("failed expression: object.spec.replicas <= 5")
	})
	req := deploymentRequest("bench", 7)
	for _, bc := range []struct {
		name string
		h    admission.Handler
	}{
		{"webhook alone", deny},
		{"webhook beside the policy", p.wrap([]admission.Webhook{{Name: "replicas", Path: "/replicas", Handler: deny}})[0].Handler},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				bc.h.Handle(context.Background(), req)
			}
		})
	}
}
